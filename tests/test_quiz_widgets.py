"""The quiz widgets, headless: build the widget, set a value, press Check, read the feedback.

Also the display contract: ``show_quiz("01")`` … ``show_quiz("06")`` give one MIME bundle with the live widget, a
static HTML fallback (answers only inside ``<details>``) and deterministic plain text; errors show as one line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import ipywidgets as widgets
import pytest
from IPython.core.formatters import DisplayFormatter
from IPython.core.interactiveshell import InteractiveShell

from course_lib.interactive.quiz import QuizAnswerError, QuizBankError, load_bank, show_quiz, show_summary
from course_lib.interactive.quiz.render import markup
from course_lib.interactive.quiz.widget import QuizView

ROOT = Path(__file__).resolve().parents[1]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def all_widgets(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from all_widgets(child)


def visible_text(view: QuizView) -> str:
    """Everything the widget tree shows before any answer: prompts, option labels, feedback areas."""
    parts = []
    for w in all_widgets(view.widget):
        for attribute in ("value", "description", "placeholder"):
            value = getattr(w, attribute, None)
            if isinstance(value, str):
                parts.append(value)
    return "\n".join(parts)


# -- display -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["01", "02", "03", "04", "05", "06"])
def test_show_quiz_for_each_notebook(name):
    view = show_quiz(name)
    data, _ = DisplayFormatter().format(view)  # what IPython stores as the cell's output
    assert {WIDGET_VIEW, "text/html", "text/plain"} <= set(data)
    assert data[WIDGET_VIEW]["model_id"] == view.widget.model_id
    quiz = view.quiz
    html = data["text/html"]
    assert html.count("<details>") == len(quiz) and html.count("<summary>Show the answer</summary>") == len(quiz)
    outside_details = re.sub(r"<details>.*?</details>", "", html, flags=re.S)
    for question in quiz.questions:
        assert question.explanation[:30] not in outside_details.replace("\n", " "), "explanations only inside <details>"
        for option in question.options:
            assert option.feedback[:30] not in outside_details, "feedback only inside <details>"
    assert (
        "Answer:" not in data["text/plain"] and data["text/plain"] == show_quiz(name)._repr_mimebundle_()["text/plain"]
    )
    assert "model_id" not in data["text/plain"] and "VBox" not in data["text/plain"]


def test_no_answer_in_the_widgets_before_answering():
    for name in ["01", "02", "03", "04", "05", "06", "final"]:
        view = show_quiz(name)
        shown = visible_text(view)
        for question in view.quiz.questions:
            assert question.explanation[:40] not in shown
            for option in question.options:
                assert option.feedback[:40] not in shown
            for mistake in question.mistakes:
                assert mistake.feedback[:40] not in shown


def test_widget_css_classes_are_stable():
    view = show_quiz("02")
    classes = {c for w in all_widgets(view.widget) for c in w._dom_classes}
    for expected in (
        "course-quiz",
        "course-quiz-02",
        "quiz-title",
        "quiz-question",
        "quiz-q-attention-shapes",
        "quiz-prompt",
        "quiz-option",
        "quiz-option-a",
        "quiz-single",
        "quiz-multiple",
        "quiz-number",
        "quiz-check",
        "quiz-feedback",
        "quiz-score",
    ):
        assert expected in classes, expected


def test_math_is_kept_for_mathjax():
    view = show_quiz("02")
    prompt = view.question_widget("dot-product-std").prompt
    assert isinstance(prompt, widgets.HTMLMath) and "$d_k = 64$" in prompt.value
    option = view.question_widget("unscaled-consequences").options[0]
    assert option.description_allow_html and "<strong>a)</strong>" in option.description


# -- pressing Check ---------------------------------------------------------------------------------------------------
def test_single_choice_wrong_then_right():
    view = show_quiz("01")
    item = view.question_widget("rnn-recency")
    question = item.question
    (right,) = question.correct_indices
    wrong = (right + 1) % len(question.options)
    assert item.feedback.value == ""
    item.options[wrong].value = True
    item.check_button.click()
    assert (
        "Not quite" in item.feedback.value
        and question.options[wrong].feedback.split("\n")[0][:40] in item.feedback.value
    )
    assert question.explanation[:40] not in item.feedback.value
    assert "quiz-wrong" in item.feedback._dom_classes
    assert "0 / 7 solved" in view.score_label.value and "1 answered" in view.score_label.value
    item.options[right].value = True
    assert [box.value for box in item.options].count(True) == 1, "single choice: one tick at a time"
    item.check_button.click()
    assert "Correct" in item.feedback.value and question.explanation.split("\n")[0][:40] in item.feedback.value
    assert "quiz-correct" in item.feedback._dom_classes and "quiz-wrong" not in item.feedback._dom_classes
    assert "1 / 7 solved" in view.score_label.value and "0 right on the first try" in view.score_label.value


def test_nothing_chosen_asks_for_an_answer():
    view = show_quiz("01")
    item = view.question_widget("rnn-recency")
    result = item.on_check()
    assert result is None and "Choose an option first" in item.feedback.value
    assert view.quiz.score.answered == 0


def test_multiple_choice_feedback():
    view = show_quiz("04")
    item = view.question_widget("pe-properties")
    question = item.question
    right = set(question.correct_indices)
    wrong = next(i for i in range(len(question.options)) if i not in right)
    for i in right:
        item.options[i].value = True
    item.options[wrong].value = True
    assert sum(box.value for box in item.options) == len(right) + 1, "multiple choice keeps every tick"
    item.check_button.click()
    shown = markup(question.options[wrong].feedback, paragraphs=False)  # the feedback as rendered Markdown
    assert "Not quite" in item.feedback.value and shown[:30] in item.feedback.value
    item.options[wrong].value = False
    item.options[min(right)].value = False
    item.check_button.click()
    assert "did not tick" in item.feedback.value
    item.options[min(right)].value = True
    item.check_button.click()
    assert "Correct" in item.feedback.value


def test_numeric_answers():
    view = show_quiz("03")
    item = view.question_widget("mha-parameters")
    question = item.question
    item.check_button.click()
    assert "Type a number first" in item.feedback.value
    item.number_box.value = "lots"
    item.check_button.click()
    assert "is not a number" in item.feedback.value
    assert view.quiz.score.answered == 0, "unreadable answers are not attempts"
    item.number_box.value = "16384"
    item.check_button.click()
    assert question.mistakes[0].feedback[:40] in item.feedback.value
    item.number_box.value = "12345"
    item.check_button.click()
    assert question.wrong_feedback[:40] in item.feedback.value
    item.number_box.value = "16,640"
    item.check_button.click()
    assert "Correct" in item.feedback.value and "16,640" in item.feedback.value


def test_parts_share_one_quiz_and_the_summary_follows():
    quiz = load_bank("final")
    part1 = show_quiz(quiz, topics=["rnn_limits"], title="Part 1")
    part4 = show_quiz(quiz, topics=["layernorm"], title="Part 4")
    summary = show_summary(quiz)
    assert [q.topic for q in part1.questions] == ["rnn_limits", "rnn_limits"]
    assert "Answer the questions above" in summary.html.value
    item = part1.question_widget("final-rnn-memory")
    item.number_box.value = "10000"
    item.check_button.click()
    assert 'data-topic="rnn_limits"' in summary.html.value
    row = re.search(r'<tr class="quiz-summary-row" data-topic="rnn_limits">.*?</tr>', summary.html.value).group(0)
    assert "revisit" in row and "01_why_rnns_struggle.ipynb" in row
    assert "Topics to revisit: Limits of RNNs" in summary.html.value
    assert "0 / 2 solved" in part1.score_label.value and "0 / 2 solved" in part4.score_label.value
    static = summary._repr_mimebundle_()
    assert {WIDGET_VIEW, "text/html", "text/plain"} <= set(static)
    assert "revisit" not in static["text/plain"], "the stored table shows no learner's score"
    assert "taught in 05" in static["text/plain"]


def test_show_quiz_errors():
    with pytest.raises(QuizAnswerError, match="no questions on the topics"):
        show_quiz("01", topics=["layernorm"])
    with pytest.raises(QuizBankError, match="there is no quiz called"):
        show_quiz("99")


def test_errors_in_a_notebook_are_one_line(capsys):
    shell = InteractiveShell.instance()
    try:
        shell.run_cell("from course_lib.interactive.quiz import show_quiz\nshow_quiz('not-a-bank')")
    finally:
        InteractiveShell.clear_instance()
    out = capsys.readouterr().out
    assert "QuizBankError: quiz bank not-a-bank.yaml" in out
    assert "Traceback" not in out and "File " not in out, out


# -- the stored notebooks -----------------------------------------------------------------------------------------------
def quiz_notebooks():
    return sorted(
        path for path in (ROOT / "notebooks").glob("*.ipynb") if "show_quiz(" in path.read_text(encoding="utf-8")
    )


@pytest.mark.parametrize("path", quiz_notebooks(), ids=lambda p: p.name)
def test_stored_quiz_outputs_read_well_without_widgets(path):
    """GitHub, nbviewer and HTML exports show the text/html fallback only when no widget state is stored."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    assert "widgets" not in notebook["metadata"], (
        f"{path.name} stores widget state, so static viewers try to rebuild the widgets instead of showing the "
        "static quiz. Execute it with: jupyter nbconvert --to notebook --execute --inplace "
        "--ExecutePreprocessor.store_widget_state=False " + path.name
    )
    outputs = [
        o
        for cell in notebook["cells"]
        if "show_quiz(" in "".join(cell.get("source", ""))
        for o in cell.get("outputs", [])
    ]
    assert outputs, f"{path.name}: the quiz cell has no stored output (execute the notebook)"
    for output in outputs:
        assert "text/html" in output.get("data", {}) and "<details>" in "".join(output["data"]["text/html"])
