"""A prediction checkpoint and the spaced review, used with the keyboard alone in real JupyterLab (headless Chromium).

The test writes a small notebook into the server's temporary copy: a choice checkpoint (02's), a number checkpoint
(03's) and ``review(limit=2)``, with the learning record pointed at a temporary file that already holds one missed
answer of quiz 02. After Run All, the focus is put on each widget (as a screen reader's "next region" would) and from
there only Tab, Space, Enter and typed characters are used:

- the choice checkpoint: Tab to the options, Space picks one, Tab to "Lock in my prediction", Enter; the status says
  what was locked and the options can no longer change;
- the number checkpoint: a word is refused with a friendly message, then a number is locked;
- the review: each due question is answered right (Space on each right option, or the number typed), "Check" with
  Enter, then "Next question" with Enter, until it says "Review done".

The record file must then hold both predictions and both review answers, all correct. Screenshots go to test-output/.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from keyboard import tab_to

from course_lib.interactive.predict import LETTERS, checkpoints
from course_lib.interactive.quiz import load_bank
from course_lib.interactive.review import due_items, known_questions, schedule

pytestmark = pytest.mark.browser
NOTEBOOK = "notebooks/zz_keyboard_widgets.ipynb"
CHOICE, NUMBER = "02-unscaled", "03-one-head"
MISSED_QUIZ = "02"
MAX_TABS = 14


def expect_focus_in(page, selector: str, timeout: float = 10.0) -> None:
    """Wait until the keyboard focus is inside ``selector``."""
    page.wait_for_function(
        "s => !!(document.activeElement && document.activeElement.closest(s))", arg=selector, timeout=timeout * 1000
    )


def focus_on(locator) -> None:
    """Put the focus on a widget's outer box without clicking anything."""
    locator.evaluate("element => { element.tabIndex = -1; element.focus(); }")


def _clipped(locator) -> bool:
    """True when a control's text is cut off (wider than the control shows)."""
    return locator.evaluate("element => element.scrollWidth > element.clientWidth + 1")


def _cell(source: str) -> dict:
    return {"cell_type": "code", "metadata": {}, "source": source, "outputs": [], "execution_count": None}


def _write_notebook(path: Path, record_file: Path) -> None:
    cells = [
        _cell(
            "import os\n"
            f"os.environ['COURSE_RECORD'] = {str(record_file)!r}\n"
            "from course_lib.interactive.predict import predict\n"
            "from course_lib.interactive.review import review"
        ),
        _cell(f"predict({CHOICE!r})"),
        _cell(f"predict({NUMBER!r})"),
        _cell("review(limit=2)"),
    ]
    notebook = {
        "cells": cells,
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(notebook), encoding="utf-8")


def _missed_answer_record(record_file: Path) -> list[tuple[str, str]]:
    """One wrong first answer of quiz 02, two days old; returns the (quiz, question) pairs review will ask, in order."""
    bank = load_bank(MISSED_QUIZ)
    missed = bank.questions[0]
    when = (datetime.now(timezone.utc) - timedelta(days=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    event = {"v": 1, "time": when, "kind": "quiz", "quiz": MISSED_QUIZ, "question": missed.id}
    event |= {"topic": missed.topic, "answer": "", "correct": False}
    record_file.write_text(json.dumps(event) + "\n", encoding="utf-8")
    items = due_items(schedule([event], known_questions()), datetime.now(timezone.utc))[:2]
    assert (items[0].quiz, items[0].question) == (MISSED_QUIZ, missed.id), "the missed question must come first"
    return [(item.quiz, item.question) for item in items]


def _answer_right(page, question) -> None:
    """Answer one quiz question with the keyboard: the number typed, or Space on each right option; then Check."""
    scope = f".quiz-q-{question.id}"
    if question.kind == "numeric":
        tab_to(page, f"{scope} .quiz-number", MAX_TABS, already=True)
        page.keyboard.type(f"{question.answer:g}", delay=50)
    else:
        for index in question.correct_indices:
            tab_to(page, f"{scope} .quiz-option-{'abcdefgh'[index]}", MAX_TABS, already=True)
            page.keyboard.press("Space")
    tab_to(page, f"{scope} .quiz-check", MAX_TABS, already=True)
    page.keyboard.press("Enter")


def _events(record_file: Path) -> list[dict]:
    return [json.loads(line) for line in record_file.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_checkpoints_and_review_work_with_the_keyboard_alone(open_notebook, lab_server):
    from playwright.sync_api import expect

    record_file = lab_server.root_dir / "keyboard-record.jsonl"
    asked = _missed_answer_record(record_file)
    _write_notebook(lab_server.root_dir / NOTEBOOK, record_file)
    choice, number = checkpoints()[CHOICE], checkpoints()[NUMBER]
    assert choice.kind == "choice" and number.kind == "number"

    nb = open_notebook(NOTEBOOK)
    page, notebook = nb.page, nb.notebook
    nb.run_all()
    expect(notebook.locator(".course-checkpoint")).to_have_count(2, timeout=90_000)
    expect(notebook.locator(".course-review")).to_have_count(1, timeout=30_000)
    first, second = notebook.locator(".course-checkpoint").nth(0), notebook.locator(".course-checkpoint").nth(1)
    assert not _clipped(first.locator(".checkpoint-lock")), "the button's label must show whole"

    # the choice checkpoint: Space ticks the focused option, Enter on the button locks it
    focus_on(first)
    tab_to(page, ".course-checkpoint .checkpoint-options", MAX_TABS, already=True)
    page.keyboard.press("Space")
    picked = first.locator(".checkpoint-options input:checked")
    expect(picked).to_have_count(1)
    picked_label = picked.evaluate("input => input.closest('label').textContent.trim()")
    tab_to(page, ".course-checkpoint .checkpoint-lock", MAX_TABS, already=True)
    page.keyboard.press("Enter")
    expect(first.locator(".checkpoint-status")).to_contain_text("Locked:", timeout=30_000)
    expect(first.locator(".checkpoint-status")).to_contain_text(picked_label)
    expect(first.locator(".checkpoint-options input").first).to_be_disabled()
    expect(first.locator(".checkpoint-lock")).to_be_disabled()

    # the number checkpoint: a word gets a friendly message and nothing locks; then a number locks
    focus_on(second)
    tab_to(page, ".checkpoint-number", MAX_TABS, already=True)
    page.keyboard.type("lots", delay=50)
    tab_to(page, ".checkpoint-lock:not([disabled])", MAX_TABS, already=True)
    page.keyboard.press("Enter")
    expect(second.locator(".checkpoint-status")).to_contain_text("type a number", timeout=30_000)
    expect(second.locator(".checkpoint-lock")).to_be_enabled()
    focus_on(second)
    tab_to(page, ".checkpoint-number", MAX_TABS, already=True)
    page.keyboard.press("Control+A")
    page.keyboard.type("3", delay=50)
    expect(second.locator(".checkpoint-number input")).to_have_value("3")
    tab_to(page, ".checkpoint-lock:not([disabled])", MAX_TABS, already=True)
    page.keyboard.press("Enter")
    expect(second.locator(".checkpoint-status")).to_contain_text("Locked: 3 of 5 seeds", timeout=30_000)
    nb.screenshot("checkpoints_keyboard", full_page=False)

    # the review: the missed question first, then the next one due; Check, then Next, with Enter
    review = notebook.locator(".course-review")
    banks = {quiz: load_bank(quiz) for quiz, _ in asked}
    for position, (quiz, question_id) in enumerate(asked, start=1):
        expect(review.locator(".review-header")).to_contain_text(f"Review {position} of {len(asked)}", timeout=30_000)
        question = banks[quiz].question(question_id)
        expect(review.locator(f".quiz-q-{question.id} .quiz-check")).to_be_visible(timeout=30_000)
        if position == 1:
            focus_on(review)
        else:  # "Next question" hid itself and put the focus on the new question's first control
            expect_focus_in(page, f".quiz-q-{question.id}")
        _answer_right(page, question)
        expect(review.locator(f".quiz-q-{question.id} .quiz-feedback")).to_contain_text("Correct", timeout=30_000)
        assert not _clipped(review.locator(".review-next")), "the button's label must show whole"
        tab_to(page, ".course-review .review-next", MAX_TABS, already=True)
        page.keyboard.press("Enter")
    expect(review.locator(".review-header")).to_contain_text("Review done", timeout=30_000)
    nb.screenshot("review_keyboard", full_page=False)
    assert nb.error_outputs() == [] and nb.widget_errors() == []

    events = _events(record_file)
    predictions = {event["checkpoint"]: event["prediction"] for event in events if event["kind"] == "prediction"}
    assert predictions == {CHOICE: picked_label[0], NUMBER: 3.0}
    assert picked_label[0] in LETTERS[: len(choice.options)]
    reviews = [(event["quiz"], event["question"], event["correct"]) for event in events if event["kind"] == "review"]
    assert reviews == [(quiz, question_id, True) for quiz, question_id in asked]
