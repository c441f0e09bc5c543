"""The knowledge-check notebook in real JupyterLab, in headless Chromium.

Opens a temporary copy of notebooks/07_knowledge_check.ipynb and checks:
- before running: the stored outputs show the static quiz (answers folded away), no widget errors;
- after Run All: each quiz appears once, as widgets (no duplicate static copy, no "Error displaying widget"),
  with math typeset;
- a wrong option shows that option's own feedback, the right one shows success and the explanation, a wrong number
  shows its misconception, and the score and the per-topic summary update.
Screenshots go to test-output/ (gitignored).
"""

import json
import re
from pathlib import Path

import pytest

from course_lib.interactive.quiz import load_bank

NOTEBOOK = "notebooks/07_knowledge_check.ipynb"


def _quiz_parts(path: str) -> int:
    """How many ``show_quiz`` cells the notebook has (each renders one quiz part)."""
    notebook = json.loads((Path(__file__).resolve().parents[2] / path).read_text(encoding="utf-8"))
    return sum("show_quiz(" in "".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code")


PARTS = _quiz_parts(NOTEBOOK)  # show_quiz cells in the notebook
pytestmark = pytest.mark.browser


def first_sentence(text: str) -> str:
    """The opening words of a feedback text, free of math and markup, to look for on the page."""
    plain = re.split(r"[$`*]", text)[0]
    return " ".join(plain.split()[:8])


def test_knowledge_check_in_jupyterlab(open_notebook):
    from playwright.sync_api import expect

    quiz = load_bank("final")
    nb = open_notebook(NOTEBOOK)
    _page, notebook = nb.page, nb.notebook

    # -- stored outputs, before anything runs: the static fallback --------------------------------------------
    static = notebook.locator(".course-quiz-static")
    expect(static).to_have_count(PARTS + 1)  # the quiz parts and the summary table
    assert notebook.locator("details[open]").count() == 0, "answers must stay folded until the reader opens them"
    assert notebook.locator("details summary", has_text="Show the answer").count() == len(quiz)
    assert nb.widget_errors() == []
    static.nth(1).scroll_into_view_if_needed()
    nb.screenshot("quiz_browser_static", full_page=False)

    # -- run everything: the widgets replace the static views ------------------------------------------------
    nb.run_all()
    expect(notebook.locator(".course-quiz")).to_have_count(PARTS)
    expect(notebook.locator(".quiz-summary")).to_have_count(1)
    expect(notebook.locator(".course-quiz-static")).to_have_count(0)  # no duplicate rendering
    expect(notebook.locator(".quiz-question")).to_have_count(len(quiz))
    assert nb.error_outputs() == [], nb.error_outputs()
    assert nb.widget_errors() == []
    expect(notebook.locator(".course-quiz mjx-container").first).to_be_attached()  # LaTeX typeset by MathJax

    # -- a single-choice question: wrong, then right -----------------------------------------------------------
    question = quiz.question("final-rnn-gradient-meaning")
    right = question.correct_indices[0]
    wrong = next(i for i in range(len(question.options)) if i != right)
    box = notebook.locator(f".quiz-q-{question.id}")
    feedback = box.locator(".quiz-feedback")
    expect(feedback).to_have_text("")  # nothing revealed before answering
    assert first_sentence(question.explanation) not in box.inner_text()

    box.locator(f".quiz-option-{'abcd'[wrong]} input").click()
    box.locator(".quiz-check").click()
    expect(feedback).to_contain_text("Not quite")
    expect(feedback).to_contain_text(first_sentence(question.options[wrong].feedback))
    assert first_sentence(question.explanation) not in feedback.inner_text(), (
        "a wrong answer must not reveal the explanation"
    )

    box.locator(f".quiz-option-{'abcd'[right]} input").click()
    expect(box.locator(f".quiz-option-{'abcd'[wrong]} input")).not_to_be_checked()  # radio behaviour
    box.locator(".quiz-check").click()
    expect(feedback).to_contain_text("Correct")
    expect(feedback).to_contain_text(first_sentence(question.explanation))

    # -- a numeric question: a typical mistake gets its own feedback ---------------------------------------------
    numeric = quiz.question("final-rnn-memory")
    number_box = notebook.locator(f".quiz-q-{numeric.id}")
    number_box.locator(".quiz-number input").fill(f"{numeric.mistakes[0].answer:.0f}")
    number_box.locator(".quiz-check").click()
    expect(number_box.locator(".quiz-feedback")).to_contain_text(first_sentence(numeric.mistakes[0].feedback))
    number_box.locator(".quiz-number input").fill(str(numeric.answer))
    number_box.locator(".quiz-check").click()
    expect(number_box.locator(".quiz-feedback")).to_contain_text("Correct")

    # -- the running score and the per-topic summary follow --------------------------------------------------
    part = notebook.locator(".course-quiz").first
    expect(part.locator(".quiz-score")).to_contain_text("2 / 2 solved")
    expect(part.locator(".quiz-score")).to_contain_text("0 right on the first try")
    row = notebook.locator('.quiz-summary tr[data-topic="rnn_limits"]')
    expect(row).to_contain_text("revisit")
    expect(row).to_contain_text("01")
    assert nb.widget_errors() == []

    part.scroll_into_view_if_needed()
    part.screenshot(path=str(nb.screenshot("quiz_browser_page").with_name("quiz_browser_part1.png")))
    notebook.locator(".quiz-summary").scroll_into_view_if_needed()
    nb.screenshot("quiz_browser_summary", full_page=False)
