"""A quiz answered with the keyboard alone, in real JupyterLab in headless Chromium.

Part 1 of the knowledge check (notebooks/07_knowledge_check.ipynb, a temporary copy) has a numeric question and a
single-choice one. After Run All, the test puts the focus on the quiz (as a screen reader's "next region" would)
and from there uses only Tab, Space, Enter and the digits of the number: Tab to the number box, type it, Tab to
"Check", Enter; Tab to the right option, Space ticks it, Tab to "Check", Enter. Both must say "Correct" and the score
must read 2 / 2. A screenshot goes to test-output/.
"""

import json
from pathlib import Path

import pytest
from keyboard import focused, tab_to

from course_lib.interactive.quiz import load_bank

NOTEBOOK = "notebooks/07_knowledge_check.ipynb"


def _quiz_parts(path: str) -> int:
    """How many ``show_quiz`` cells the notebook has (each renders one quiz part)."""
    notebook = json.loads((Path(__file__).resolve().parents[2] / path).read_text(encoding="utf-8"))
    return sum("show_quiz(" in "".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code")


PARTS = _quiz_parts(NOTEBOOK)
pytestmark = pytest.mark.browser
MAX_TABS = 12


def test_a_quiz_answered_with_the_keyboard_alone(open_notebook):
    from playwright.sync_api import expect

    quiz = load_bank("final")
    numeric, single = quiz.question("final-rnn-memory"), quiz.question("final-rnn-gradient-meaning")
    nb = open_notebook(NOTEBOOK)
    page, notebook = nb.page, nb.notebook
    nb.run_all()
    expect(notebook.locator(".course-quiz")).to_have_count(PARTS, timeout=90_000)  # Run All on a busy machine
    part = notebook.locator(".course-quiz").first
    number_box, choice_box = part.locator(f".quiz-q-{numeric.id}"), part.locator(f".quiz-q-{single.id}")

    # the starting point: the focus on the quiz itself (no click on any control)
    part.evaluate("element => { element.tabIndex = -1; element.focus(); }")
    assert focused(page, ".course-quiz")

    tab_to(page, f".quiz-q-{numeric.id} .quiz-number", MAX_TABS)
    typed = f"{numeric.answer:g}"
    page.keyboard.type(typed, delay=50)  # a key at a time: a busy machine dropped keys typed at full speed
    expect(number_box.locator(".quiz-number input")).to_have_value(typed, timeout=30_000)
    tab_to(page, f".quiz-q-{numeric.id} .quiz-check", MAX_TABS)
    page.keyboard.press("Enter")
    expect(number_box.locator(".quiz-feedback")).to_contain_text("Correct", timeout=30_000)

    right = "abcd"[single.correct_indices[0]]
    tab_to(page, f".quiz-q-{single.id} .quiz-option-{right}", MAX_TABS)
    page.keyboard.press("Space")
    expect(choice_box.locator(f".quiz-option-{right} input")).to_be_checked()
    tab_to(page, f".quiz-q-{single.id} .quiz-check", MAX_TABS)
    page.keyboard.press("Enter")
    expect(choice_box.locator(".quiz-feedback")).to_contain_text("Correct", timeout=30_000)

    expect(part.locator(".quiz-score")).to_contain_text("2 / 2 solved")
    assert nb.error_outputs() == [] and nb.widget_errors() == []
    part.scroll_into_view_if_needed()
    nb.screenshot("quiz_keyboard", full_page=False)
