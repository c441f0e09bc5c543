"""The interactive quiz (ipywidgets) and its static fallback, in one displayable object.

``show_quiz("01")`` returns a ``QuizView``. Displayed in Jupyter (as the last line of a cell), its MIME bundle
carries three views of the same quiz:

- ``application/vnd.jupyter.widget-view+json``: the live widget, chosen by JupyterLab when the kernel runs;
- ``text/html``: the questions with each answer folded in ``<details>``, for GitHub, nbviewer, HTML exports and
  notebooks opened before running (JupyterLab shows untrusted stored outputs with its safe HTML renderer);
- ``text/plain``: the same in plain text, deterministic so stored outputs compare equal.

Why checkboxes for single-choice questions: ``ipywidgets.RadioButtons`` writes its labels as plain text, so the
LaTeX in an option stays raw, and long labels do not wrap (they overlap the next option). Each option is therefore a
``Checkbox`` whose label is HTML (math typeset), and in a single-choice question ticking one option unticks the
others, styled as round radio buttons. Numeric answers use a ``Text`` box (not ``FloatText``): it can start empty,
so "Check" with nothing typed asks for a number instead of silently checking 0, and it accepts "16,640".

Every widget carries stable CSS classes for tests: ``course-quiz``, ``quiz-question`` + ``quiz-q-<id>``,
``quiz-prompt``, ``quiz-option`` + ``quiz-option-<letter>``, ``quiz-number``, ``quiz-check``, ``quiz-feedback``
(+ ``quiz-correct`` / ``quiz-wrong`` after a check), ``quiz-score``, ``quiz-summary``.
"""

from __future__ import annotations

import html
from collections.abc import Iterable

import ipywidgets as widgets

from .. import record
from .errors import QuizAnswerError
from .loader import load_bank
from .model import Question, Quiz, Result, letter
from .render import KIND_HINT, markup, quiz_html, quiz_text, summary_html, summary_text

# Progressive enhancement, scoped to the quiz's classes: option labels wrap with a hanging indent, and the
# checkboxes of single-choice questions look like radio buttons.
STYLE = """<style>
.course-quiz .quiz-option { height: auto; width: auto; }
.course-quiz .quiz-option .widget-label-basic { display: flex; align-items: baseline; white-space: normal; line-height: 1.5; padding: 2px 0; }
.course-quiz .quiz-option input[type="checkbox"] { flex: none; margin: 0 8px 0 2px; position: relative; top: 2px; }
.course-quiz .quiz-single input[type="checkbox"] { appearance: none; -webkit-appearance: none; width: 15px; height: 15px;
  border: 1.5px solid #767676; border-radius: 50%; }
.course-quiz .quiz-single input[type="checkbox"]:checked { border-color: #1976d2;
  background: radial-gradient(circle, #1976d2 0 38%, transparent 44%); }
.course-quiz .quiz-question { border-left: 3px solid #c5cae9; padding: 2px 0 6px 12px; margin: 10px 0 14px 0; }
.course-quiz .quiz-feedback p { margin: 4px 0; }
.course-quiz .quiz-unit { padding-top: 4px; }
.quiz-summary a { color: #1565c0; text-decoration: underline; }
.quiz-summary table { border-collapse: collapse; }
.quiz-summary th, .quiz-summary td { padding: 3px 10px; text-align: left; border-bottom: 1px solid #ddd; line-height: 1.4; }
</style>"""

FEEDBACK_STYLE = {
    "correct": "border-left: 4px solid #2e7d32; background: #e8f5e9; padding: 6px 10px; color: #1b3d1e;",
    "wrong": "border-left: 4px solid #c62828; background: #ffebee; padding: 6px 10px; color: #4a1414;",
    "hint": "border-left: 4px solid #f9a825; background: #fff8e1; padding: 6px 10px; color: #3e2f00;",
}


def feedback_html(result: Result) -> str:
    """The feedback shown under a question after "Check"."""
    if result.correct:
        explanation = markup(result.explanation or "")
        return (
            f'<div style="{FEEDBACK_STYLE["correct"]}"><p><strong>✓ Correct.</strong></p>{markup(result.feedback)}'
            f"{explanation}</div>"
        )
    return (
        f'<div style="{FEEDBACK_STYLE["wrong"]}"><p><strong>✗ Not quite.</strong></p>{markup(result.feedback)}'
        "<p><em>Change your answer and check again.</em></p></div>"
    )


def hint_html(message: str) -> str:
    return f'<div style="{FEEDBACK_STYLE["hint"]}"><p>{html.escape(message)}</p></div>'


class QuestionWidget:
    """The widgets of one question: prompt, answer controls, a Check button and the feedback area."""

    def __init__(self, quiz: Quiz, question: Question, number: int, total: int, on_record=None):
        self.quiz = quiz
        self.question = question
        self.on_record = on_record or record.quiz_attempt  # review() records its answers as reviews
        heading = f"<p><strong>Question {number} of {total}</strong> · <em>{KIND_HINT[question.kind]}</em></p>"
        self.prompt = widgets.HTMLMath(heading + markup(question.prompt)).add_class("quiz-prompt")
        self.options: list[widgets.Checkbox] = []
        self.number_box: widgets.Text | None = None
        if question.kind == "numeric":
            self.number_box = widgets.Text(
                value="",
                placeholder="a number",
                description="Your answer:",
                style={"description_width": "initial"},
                layout=widgets.Layout(width="260px"),
            ).add_class("quiz-number")
            unit = widgets.HTMLMath(markup(question.unit, paragraphs=False)).add_class("quiz-unit")
            controls = widgets.HBox([self.number_box, unit])
        else:
            for i, option in enumerate(question.options):
                box = widgets.Checkbox(
                    value=False,
                    description=f"<strong>{letter(i)})</strong>&nbsp;" + markup(option.text, paragraphs=False),
                    description_allow_html=True,
                    indent=False,
                    layout=widgets.Layout(width="auto", height="auto"),
                )
                box.add_class("quiz-option").add_class(f"quiz-option-{letter(i)}")
                if question.kind == "single":
                    box.observe(self._keep_one, names="value")
                self.options.append(box)
            controls = widgets.VBox(self.options).add_class(f"quiz-{question.kind}")
        self.check_button = widgets.Button(description="Check", button_style="primary", icon="check")
        self.check_button.add_class("quiz-check")
        self.check_button.on_click(self.on_check)
        self.feedback = widgets.HTMLMath("").add_class("quiz-feedback")
        self.box = widgets.VBox([self.prompt, controls, self.check_button, self.feedback])
        self.box.add_class("quiz-question").add_class(f"quiz-q-{question.id}")

    def _keep_one(self, change) -> None:
        """Single choice: ticking one option unticks the others (radio-button behaviour)."""
        if change["new"]:
            for box in self.options:
                if box is not change["owner"] and box.value:
                    box.value = False

    def answer(self):
        """The learner's current answer, in the form ``Quiz.check`` takes."""
        if self.number_box is not None:
            return self.number_box.value
        chosen = [i for i, box in enumerate(self.options) if box.value]
        if self.question.kind == "single":
            return chosen[0] if chosen else None
        return chosen

    def on_check(self, _button=None) -> Result | None:
        """The Check button: check the answer, record it, show the feedback."""
        answer = self.answer()
        try:
            result = self.quiz.check(self.question.id, answer)
        except QuizAnswerError as exc:
            message = str(exc).split(": ", 1)[-1]
            self._show(hint_html(message[:1].upper() + message[1:]), None)
            return None
        self.on_record(self.quiz, self.question, answer, result)
        self._show(feedback_html(result), result.correct)
        return result

    def _show(self, value: str, correct: bool | None) -> None:
        self.feedback.remove_class("quiz-correct").remove_class("quiz-wrong")
        if correct is not None:
            self.feedback.add_class("quiz-correct" if correct else "quiz-wrong")
        self.feedback.value = value


class QuizView:
    """A quiz (or part of one) as widgets plus its static fallback. Display it as the last line of a cell."""

    def __init__(self, quiz: Quiz, questions: Iterable[Question] | None = None, title: str | None = None):
        self.quiz = quiz
        self.questions = list(quiz.questions if questions is None else questions)
        self.title = title or quiz.title
        total = len(self.questions)
        self.question_widgets = [QuestionWidget(quiz, q, n, total) for n, q in enumerate(self.questions, start=1)]
        intro = markup(quiz.intro) if quiz.intro and title is None else ""
        header = widgets.HTMLMath(f"<h4>{html.escape(self.title)}</h4>{intro}").add_class("quiz-title")
        self.score_label = widgets.HTML().add_class("quiz-score")
        self.widget = widgets.VBox(
            [widgets.HTML(STYLE), header, *(q.box for q in self.question_widgets), self.score_label]
        )
        self.widget.add_class("course-quiz").add_class(f"course-quiz-{quiz.id}")
        self._update_score()
        quiz.subscribe(lambda _quiz, _result: self._update_score())

    def question_widget(self, question_id: str) -> QuestionWidget:
        for item in self.question_widgets:
            if item.question.id == question_id:
                return item
        raise QuizAnswerError(f"this view has no question {question_id!r}.")

    @property
    def score(self):
        return self.quiz.score_of(q.id for q in self.questions)

    def _update_score(self) -> None:
        score = self.score
        self.score_label.value = (
            f"<p><strong>Score: {score.solved} / {score.total} solved</strong> "
            f"({score.first_try} right on the first try, {score.answered} answered)</p>"
        )

    def _repr_mimebundle_(self, include=None, exclude=None):
        data = dict(self.widget._repr_mimebundle_())
        data["text/html"] = quiz_html(self.quiz, self.questions, self.title)
        data["text/plain"] = quiz_text(self.quiz, self.questions, self.title)
        return data

    def __repr__(self) -> str:
        return quiz_text(self.quiz, self.questions, self.title)


class SummaryView:
    """The per-topic score table of a quiz; the widget updates after every checked answer."""

    def __init__(self, quiz: Quiz):
        self.quiz = quiz
        self.html = widgets.HTML()
        self.widget = widgets.VBox([widgets.HTML(STYLE), self.html]).add_class("quiz-summary")
        self._update()
        quiz.subscribe(lambda _quiz, _result: self._update())

    def _update(self) -> None:
        self.html.value = summary_html(self.quiz.topic_scores(), live=True)

    def _repr_mimebundle_(self, include=None, exclude=None):
        data = dict(self.widget._repr_mimebundle_())
        data["text/html"] = summary_html(self.quiz.topic_scores(), live=False)
        data["text/plain"] = summary_text(self.quiz.topic_scores(), live=False)
        return data

    def __repr__(self) -> str:
        return summary_text(self.quiz.topic_scores(), live=False)


def _as_quiz(bank: str | Quiz) -> Quiz:
    return bank if isinstance(bank, Quiz) else load_bank(bank)


def show_quiz(bank: str | Quiz, topics: Iterable[str] | None = None, title: str | None = None) -> QuizView:
    """The quiz of one notebook, e.g. ``show_quiz("01")``, as widgets with a static fallback.

    ``bank``: a bank name ("01" … "06", "final"), a path to a bank file, or a loaded ``Quiz`` (several views of one
    ``Quiz`` share its score). ``topics``: show only the questions on these topics (e.g. one part of the final
    check); ``title``: a heading for that part. Put the call on the last line of a cell so Jupyter displays it.
    """
    quiz = _as_quiz(bank)
    questions = list(quiz.questions)
    if topics is not None:
        wanted = list(topics)
        questions = [q for q in questions if q.topic in wanted]
        if not questions:
            raise QuizAnswerError(f"quiz {quiz.id!r} has no questions on the topics {wanted}.")
    return QuizView(quiz, questions, title)


def show_summary(quiz: Quiz) -> SummaryView:
    """The per-topic score table of ``quiz`` (it updates as the learner answers), with a static table fallback."""
    return SummaryView(_as_quiz(quiz))
