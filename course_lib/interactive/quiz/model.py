"""The quiz engine: questions, checking an answer, and score keeping. Pure Python, no widgets.

    quiz = load_bank("01")                       # the bank course_lib/interactive/quiz/banks/01.yaml (quiz.loader)
    result = quiz.check("rnn-loop-bug", "a")     # Result(correct, feedback, explanation)
    quiz.score                                   # Score(total=7, answered=1, solved=0, first_try=0)

Answers: a single-choice question takes one option, as its letter (``"b"``) or its 0-based index (``1``);
a multiple-choice question takes the set of options that hold (``"a, c"``, ``["a", "c"]`` or ``{0, 2}``);
a numeric question takes a number (``16640``, ``"16,640"``).

Options are shown in a shuffled order that depends only on the question's id (``display_order``): the same for every
learner, every run and every rendering, so a class can discuss "option c" and stored outputs stay stable. The loader
stores a question's options in that display order, so letters and 0-based indices always mean what the learner
sees; ``Option.bank_index`` keeps the option's place in the bank file.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..._syllabus import TOPICS, notebook_label
from .errors import QuizAnswerError

KINDS = ("single", "multiple", "numeric")
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def letter(index: int) -> str:
    """0 → ``"a"``, 1 → ``"b"``, ..."""
    return LETTERS[index]


# The salt makes the order the course's own; changing it reshuffles every question (do not, once a class has started).
ORDER_SALT = "course-quiz-order"


def display_order(question_id: str, count: int) -> tuple[int, ...]:
    """The bank indices of a question's ``count`` options in the order they are shown, e.g. ``(2, 0, 3, 1)``.

    Each option ``i`` gets the key ``sha256(f"{ORDER_SALT}:{question_id}:{i}")`` and the options are sorted by key:
    a uniformly shuffled order that depends on nothing but the id and the number of options (not on Python's salted
    ``hash()``, the machine, the option texts or the other questions), so editing a text never moves an option.
    """
    keys = [hashlib.sha256(f"{ORDER_SALT}:{question_id}:{i}".encode()).digest() for i in range(count)]
    return tuple(sorted(range(count), key=keys.__getitem__))


def format_number(value: float) -> str:
    """16640 → ``"16,640"``, 0.5 → ``"0.5"``, 1e-4 → ``"0.0001"``."""
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:,.6g}"


@dataclass(frozen=True)
class Option:
    """One answer option of a choice question; ``feedback`` explains why it is right or wrong."""

    text: str
    correct: bool
    feedback: str
    bank_index: int | None = None  # its place in the bank file (0-based); the tuple of options is in display order


@dataclass(frozen=True)
class Mistake:
    """A typical wrong number for a numeric question, with the misconception behind it."""

    answer: float
    feedback: str


@dataclass(frozen=True)
class Result:
    """The outcome of checking one answer.

    ``feedback`` explains the chosen answer (for a wrong option: the misconception behind it);
    ``explanation`` is the question's full explanation, given only once the answer is right (else ``None``),
    so that a wrong attempt does not give the answer away.
    """

    question_id: str
    correct: bool
    feedback: str
    explanation: str | None


@dataclass(frozen=True)
class Question:
    """One question of a bank. ``kind`` is ``"single"``, ``"multiple"`` or ``"numeric"``."""

    id: str
    kind: str
    topic: str
    notebook: str
    prompt: str
    explanation: str
    options: tuple[Option, ...] = ()
    answer: float | None = None
    tolerance: float | None = None
    unit: str = ""
    mistakes: tuple[Mistake, ...] = ()
    wrong_feedback: str = ""

    # -- what is right ---------------------------------------------------------------------------------
    @property
    def correct_indices(self) -> tuple[int, ...]:
        """0-based indices of the correct options (empty for a numeric question)."""
        return tuple(i for i, option in enumerate(self.options) if option.correct)

    def answer_text(self) -> str:
        """The right answer in words, e.g. ``"b"``, ``"a, c"`` or ``"16,640 parameters"``."""
        if self.kind == "numeric":
            text = format_number(self.answer)
            if self.tolerance:
                text += f" (± {format_number(self.tolerance)})"
            return f"{text} {self.unit}".strip()
        return ", ".join(letter(i) for i in self.correct_indices)

    # -- checking ----------------------------------------------------------------------------------------
    def check(self, answer: Any) -> Result:
        """Check one answer. Raises ``QuizAnswerError`` if the answer cannot be read (e.g. nothing chosen)."""
        if self.kind == "single":
            return self._check_single(self._choice_index(answer))
        if self.kind == "multiple":
            return self._check_multiple(self._choice_set(answer))
        return self._check_numeric(self._number(answer))

    def _check_single(self, chosen: int) -> Result:
        option = self.options[chosen]
        return Result(self.id, option.correct, option.feedback, self.explanation if option.correct else None)

    def _check_multiple(self, chosen: frozenset[int]) -> Result:
        right = set(self.correct_indices)
        wrongly_ticked = sorted(chosen - right)
        missing = right - chosen
        if not wrongly_ticked and not missing:
            feedback = "\n\n".join(f"({letter(i)}) {self.options[i].feedback}" for i in sorted(right))
            return Result(self.id, True, feedback, self.explanation)
        parts = [f"({letter(i)}) {self.options[i].feedback}" for i in wrongly_ticked]
        if missing:
            count = "one more statement holds" if len(missing) == 1 else f"{len(missing)} more statements hold"
            lead = "Besides," if wrongly_ticked else "Everything you ticked holds, but"
            parts.append(f"{lead} {count} that you did not tick.")
        return Result(self.id, False, "\n\n".join(parts), None)

    def _check_numeric(self, value: float) -> Result:
        if within(value, self.answer, self.tolerance):
            return Result(self.id, True, f"Yes: {self.answer_text()}.", self.explanation)
        for mistake in self.mistakes:
            if within(value, mistake.answer, self.tolerance):
                return Result(self.id, False, mistake.feedback, None)
        return Result(self.id, False, self.wrong_feedback, None)

    # -- reading answers ---------------------------------------------------------------------------------
    def _choice_index(self, answer: Any) -> int:
        if answer is None or (isinstance(answer, str) and not answer.strip()):
            raise QuizAnswerError(f"question {self.id!r}: choose an option first.")
        if isinstance(answer, str):
            key = answer.strip().strip("()").lower()
            if len(key) == 1 and key in LETTERS[: len(self.options)]:
                return LETTERS.index(key)
        elif isinstance(answer, int) and not isinstance(answer, bool) and 0 <= answer < len(self.options):
            return answer
        valid = ", ".join(letter(i) for i in range(len(self.options)))
        raise QuizAnswerError(
            f"question {self.id!r}: {answer!r} is not an option; answer with one letter ({valid}) or a 0-based index."
        )

    def _choice_set(self, answer: Any) -> frozenset[int]:
        if isinstance(answer, str):
            items: Iterable[Any] = [part for part in answer.replace(",", " ").split()]
        elif answer is None:
            items = []
        else:
            try:
                items = list(answer)
            except TypeError:
                items = [answer]
        chosen = frozenset(self._choice_index(item) for item in items)
        if not chosen:
            raise QuizAnswerError(f"question {self.id!r}: tick at least one option first.")
        return chosen

    def _number(self, answer: Any) -> float:
        if isinstance(answer, str):
            text = answer.strip().replace(",", "").replace("_", "").replace(" ", "")
            if not text:
                raise QuizAnswerError(f"question {self.id!r}: type a number first.")
            try:
                value = float(text)
            except ValueError:
                raise QuizAnswerError(f"question {self.id!r}: {answer!r} is not a number.") from None
        elif isinstance(answer, (int, float)) and not isinstance(answer, bool):
            value = float(answer)
        elif answer is None:
            raise QuizAnswerError(f"question {self.id!r}: type a number first.")
        else:
            raise QuizAnswerError(f"question {self.id!r}: {answer!r} is not a number.")
        if not math.isfinite(value):
            raise QuizAnswerError(f"question {self.id!r}: the answer must be a finite number, got {value}.")
        return value


def within(value: float, target: float, tolerance: float) -> bool:
    """``|value - target| <= tolerance``, forgiving float rounding of the decimal inputs (e.g. 0.1 + 0.05)."""
    slack = 1e-9 * max(1.0, abs(target), abs(tolerance))
    return abs(value - target) <= tolerance + slack


@dataclass(frozen=True)
class Score:
    """``solved``: answered right at some attempt; ``first_try``: right at the first attempt."""

    total: int
    answered: int
    solved: int
    first_try: int

    def __str__(self) -> str:
        return f"{self.solved} / {self.total} solved ({self.first_try} on the first try)"


@dataclass(frozen=True)
class TopicScore:
    """How the learner did on one topic. ``revisit``: notebooks teaching the questions missed at the first try."""

    topic: str
    label: str
    total: int
    answered: int
    first_try: int
    notebooks: tuple[str, ...]
    revisit: tuple[str, ...]

    @property
    def status(self) -> str:
        if self.answered == 0:
            return "not answered yet"
        if self.revisit:
            return "revisit " + ", ".join(notebook_label(n) for n in self.revisit)
        if self.answered < self.total:
            return "good so far"
        return "solid"


@dataclass
class _Progress:
    attempts: int = 0
    first_try: bool = False
    solved: bool = False


@dataclass
class Quiz:
    """A bank of questions plus the learner's progress on them.

    ``load_bank("01")`` (in ``quiz.loader``) reads ``course_lib/interactive/quiz/banks/01.yaml`` (or a path to any bank file) and validates it;
    a malformed bank raises ``QuizBankError`` naming the file and the question.
    """

    id: str
    title: str
    questions: tuple[Question, ...]
    path: Path | None = None
    notebook: str | None = None
    intro: str = ""
    _progress: dict[str, _Progress] = field(default_factory=dict, repr=False)
    _listeners: list[Callable[[Quiz, Result], None]] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self._by_id = {question.id: question for question in self.questions}
        self.reset()

    def __len__(self) -> int:
        return len(self.questions)

    def __repr__(self) -> str:
        return f"Quiz({self.id!r}, {len(self.questions)} questions, score {self.score})"

    def question(self, question_id: str) -> Question:
        """The question with this id."""
        try:
            return self._by_id[question_id]
        except (KeyError, TypeError):
            ids = ", ".join(self._by_id)
            raise QuizAnswerError(
                f"quiz {self.id!r} has no question {question_id!r}; its questions are: {ids}."
            ) from None

    def check(self, question_id: str, answer: Any) -> Result:
        """Check an answer and record the attempt (an answer that cannot be read is not an attempt)."""
        question = self.question(question_id)
        result = question.check(answer)
        progress = self._progress[question_id]
        progress.attempts += 1
        if result.correct:
            progress.first_try = progress.first_try or progress.attempts == 1
            progress.solved = True
        for listener in list(self._listeners):
            listener(self, result)
        return result

    def attempts(self, question_id: str) -> int:
        return self._progress[self.question(question_id).id].attempts

    def is_solved(self, question_id: str) -> bool:
        return self._progress[self.question(question_id).id].solved

    @property
    def score(self) -> Score:
        return self.score_of(question.id for question in self.questions)

    def score_of(self, question_ids: Iterable[str]) -> Score:
        """The score over some of the questions (e.g. one part of a long quiz)."""
        progress = [self._progress[self.question(qid).id] for qid in question_ids]
        return Score(
            total=len(progress),
            answered=sum(p.attempts > 0 for p in progress),
            solved=sum(p.solved for p in progress),
            first_try=sum(p.first_try for p in progress),
        )

    def topic_scores(self) -> list[TopicScore]:
        """One row per topic that has questions, in the course's teaching order."""
        rows = []
        for topic, label in TOPICS.items():
            questions = [q for q in self.questions if q.topic == topic]
            if not questions:
                continue
            progress = [self._progress[q.id] for q in questions]
            missed = [q for q, p in zip(questions, progress) if p.attempts > 0 and not p.first_try]
            rows.append(
                TopicScore(
                    topic=topic,
                    label=label,
                    total=len(questions),
                    answered=sum(p.attempts > 0 for p in progress),
                    first_try=sum(p.first_try for p in progress),
                    notebooks=tuple(sorted({q.notebook for q in questions})),
                    revisit=tuple(sorted({q.notebook for q in missed})),
                )
            )
        return rows

    def reset(self) -> None:
        """Forget every attempt."""
        self._progress = {question.id: _Progress() for question in self.questions}

    def subscribe(self, listener: Callable[[Quiz, Result], None]) -> None:
        """Call ``listener(quiz, result)`` after every recorded attempt (the widgets use this to update)."""
        self._listeners.append(listener)
