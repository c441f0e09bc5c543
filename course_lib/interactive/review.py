"""Spaced review: bring back quiz questions from earlier notebooks, at growing intervals (Leitner boxes).

    from course_lib.interactive.review import review
    review()                       # in any notebook: the questions due now, one at a time
    python -m course_lib review    # the same in a terminal; --list shows what is due next and when

Questions from the quizzes you have started come back by a simple schedule, read from your learning record:

- a question you missed (your first answer, or your last review) sits in box 0 and is due at once;
- a question of a quiz you started but never answered is due at once too, after the missed ones;
- each right answer moves a question up one box, and box ``b`` waits ``INTERVALS[b]`` days after its last answer;
  a wrong answer sends it back to box 0.

Nothing but the record is read, and each review answer is one more line in it (``"kind": "review"``), so deleting
or resetting the record (``python -m course_lib record reset``) starts the schedule over.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from . import record

INTERVALS = (0, 1, 3, 7, 16, 35)  # days a question waits in box 0, 1, 2, ... after its last answer
TOP_BOX = len(INTERVALS) - 1


@dataclass(frozen=True)
class Item:
    """One question's place in the schedule. ``last`` is None for a question never answered."""

    quiz: str
    question: str
    box: int
    last: datetime | None

    def due(self) -> datetime | None:
        """When it comes back (None: at once, it was never answered)."""
        return None if self.last is None else self.last + timedelta(days=INTERVALS[self.box])


def parse_time(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)


def schedule(events: list[dict], known: dict[tuple[str, str], object]) -> list[Item]:
    """Every question of every quiz the record has started, with its box and last answer.

    ``known``: (quiz, question) → anything, the questions the course has (others in the record are left out).
    Only the first answer to a quiz question counts (the retries after its feedback do not); each review answer
    moves the box.
    """
    boxes: dict[tuple[str, str], tuple[int, datetime]] = {}
    started: set[str] = set()
    for event in events:
        kind = event.get("kind")
        if kind not in ("quiz", "review"):
            continue
        key = (event.get("quiz"), event.get("question"))
        if key not in known:
            continue
        started.add(key[0])
        try:
            when = parse_time(event["time"])
        except (KeyError, TypeError, ValueError):
            continue
        if kind == "quiz":
            if key not in boxes:
                boxes[key] = (1 if event["correct"] else 0, when)
        else:
            box = boxes.get(key, (0, when))[0]
            boxes[key] = (min(box + 1, TOP_BOX) if event["correct"] else 0, when)
    items = []
    for key in known:
        if key[0] not in started:
            continue
        box, last = boxes.get(key, (0, None))
        items.append(Item(key[0], key[1], box, last))
    return items


def due_items(items: list[Item], now: datetime) -> list[Item]:
    """The items due at ``now``: missed ones first (longest overdue first), then never-answered ones, then the rest."""

    def order(item: Item):
        if item.last is None:
            return (1, datetime.min.replace(tzinfo=timezone.utc), item.quiz, item.question)
        return (0 if item.box == 0 else 2, item.due(), item.quiz, item.question)

    return sorted((item for item in items if item.last is None or item.due() <= now), key=order)


def upcoming(items: list[Item], now: datetime) -> list[Item]:
    """The items not yet due, soonest first."""
    waiting = [item for item in items if item.last is not None and item.due() > now]
    return sorted(waiting, key=lambda item: (item.due(), item.quiz, item.question))


def known_questions() -> dict[tuple[str, str], tuple]:
    """(quiz, question) → (quiz, question objects) for every bank of the course."""
    from .quiz import available_banks, load_bank

    found = {}
    for bank in available_banks():
        quiz = load_bank(bank)
        for question in quiz.questions:
            found[(quiz.id, question.id)] = (quiz, question)
    return found


def when_text(moment: datetime, now: datetime) -> str:
    days = (moment - now).total_seconds() / 86400
    if days < 1:
        return f"in {max(1, round(days * 24))} h"
    return f"in {days:.0f} day{'s' if round(days) != 1 else ''} ({moment:%Y-%m-%d})"


def plan_text(items: list[Item], now: datetime, limit: int = 5) -> str:
    """What is due now and what comes next, in a few lines."""
    due = due_items(items, now)
    lines = [
        f"{len(due)} question(s) due now"
        + (f" (from quizzes {', '.join(sorted({i.quiz for i in due}))})" if due else "")
    ]
    coming = upcoming(items, now)[:limit]
    if coming:
        lines.append("Next: " + "; ".join(f"{i.quiz}/{i.question} {when_text(i.due(), now)}" for i in coming))
    if not items:
        lines = ["Nothing to review yet: answer a notebook's closing quiz first; its questions then come back here."]
    return "\n".join(lines)


class ReviewView:
    """The due questions as a widget, one at a time: Check, then Next."""

    def __init__(self, events: list[dict] | None = None, now: datetime | None = None, limit: int = 5):
        import ipywidgets as widgets

        from .quiz.widget import STYLE, QuestionWidget

        self._QuestionWidget = QuestionWidget
        self.known = known_questions()
        self.now = now or datetime.now(timezone.utc)
        events = events if events is not None else _my_events()
        self.items = schedule(events, self.known)
        self.queue = due_items(self.items, self.now)[:limit]
        self.position = 0
        self.header = widgets.HTML().add_class("review-header")
        self.slot = widgets.VBox([])
        self.next_button = widgets.Button(
            description="Next question", icon="arrow-right", layout=widgets.Layout(width="auto")
        ).add_class("review-next")
        self.next_button.on_click(self.on_next)
        self.next_button.layout.display = "none"
        self.widget = widgets.VBox([widgets.HTML(STYLE), self.header, self.slot, self.next_button])
        self.widget.add_class("course-quiz").add_class("course-review")
        self._show()

    def _show(self) -> None:
        import ipywidgets as widgets

        if self.position >= len(self.queue):
            self.header.value = f"<p><strong>Review done.</strong> {_html(plan_text(self.items, self.now))}</p>"
            self.slot.children = [widgets.HTML("")]
            self.next_button.layout.display = "none"
            return
        item = self.queue[self.position]
        quiz, question = self.known[(item.quiz, item.question)]
        self.header.value = (
            f"<p><strong>Review {self.position + 1} of {len(self.queue)}</strong> · from quiz {item.quiz}"
            f" · box {item.box}</p>"
        )
        self.current = self._QuestionWidget(
            quiz, question, self.position + 1, len(self.queue), on_record=record.review_attempt
        )
        self.current.check_button.on_click(lambda _b: self._after_check())
        self.slot.children = [self.current.box]
        self.next_button.layout.display = "none"

    def _after_check(self) -> None:
        if "quiz-correct" in self.current.feedback._dom_classes or "quiz-wrong" in self.current.feedback._dom_classes:
            self.next_button.layout.display = None

    def on_next(self, _button=None) -> None:
        self.position += 1
        self._show()
        if self.position < len(self.queue):  # the Next button hides: keep a keyboard user's place on the new question
            (self.current.number_box or self.current.options[0]).focus()

    def text(self) -> str:
        return "Spaced review: " + plan_text(self.items, self.now)

    def _repr_mimebundle_(self, include=None, exclude=None):
        data = dict(self.widget._repr_mimebundle_())
        data["text/plain"] = self.text()
        return data

    def __repr__(self) -> str:
        return self.text()


def _html(text: str) -> str:
    import html

    return html.escape(text).replace("\n", "<br>")


def _my_events() -> list[dict]:
    import warnings

    path = record.record_path()
    if path is None:
        return []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return record.read(path).events


def review(limit: int = 5) -> ReviewView:
    """The questions due for review now (at most ``limit``), one at a time; put it on the last line of a cell."""
    return ReviewView(limit=limit)
