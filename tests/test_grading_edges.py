"""Malformed input at every parse the course does: a notebook, a quiz bank, a learning record.

A submission that is not a notebook, or one the grader itself fails on, becomes a row of the class's report with its
reason, and the rest of the class is graded; a byte-order mark is not an error; JSON or YAML nested thousands deep is
refused with a message, never a RecursionError; a quote's ``below:`` or ``range:`` that is not a number is refused.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from course_lib.interactive import record
from course_lib.interactive.quiz import QuizBankError, parse_bank
from course_lib.tools.exercises import build as generate
from course_lib.tools.grading import grade as grading
from course_lib.tools.grading import serve

ROOT = Path(__file__).resolve().parents[1]
DEEP = 100_000  # far past Python's recursion limit


def test_a_notebook_with_a_byte_order_mark_is_read():
    data = generate.solution_path(ROOT / "exercises", "ex04_positional_encoding").read_bytes()
    assert grading._notebook_problem(b"\xef\xbb\xbf" + data) is None


def test_the_sandbox_reads_a_notebook_with_a_byte_order_mark(tmp_path):
    path = tmp_path / "bom.ipynb"
    cells = [{"cell_type": "code", "source": ["x = 1\n", "y = 2"], "metadata": {}, "outputs": []}]
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"cells": cells}).encode())
    assert serve.read_cells(str(path)) == ["x = 1\ny = 2"]


def test_json_nested_too_deeply_is_a_reason_not_a_traceback():
    assert "nested too deeply" in grading._notebook_problem(b"[" * DEEP + b"]" * DEEP)


@pytest.mark.slow  # grades two notebooks in subprocesses
def test_a_class_with_a_malformed_notebook_and_a_grader_fault_is_still_graded(tmp_path, monkeypatch):
    solution = generate.solution_path(ROOT / "exercises", "ex04_positional_encoding").read_bytes()
    submissions = tmp_path / "submissions"
    for learner, data in [("ana", b"\xef\xbb\xbf" + solution), ("ben", b"[" * DEEP + b"]" * DEEP), ("cy", solution)]:
        (submissions / learner).mkdir(parents=True)
        (submissions / learner / "ex04_positional_encoding.ipynb").write_bytes(data)
    real = grading.grade_notebook

    def faulty(path, exercise, *args, **kwargs):  # the grader's own fault on one notebook (a full disk, a bug)
        if "cy" in Path(path).parts:
            raise OSError(28, "No space left on device")
        return real(path, exercise, *args, **kwargs)

    monkeypatch.setattr(grading, "grade_notebook", faulty)
    report = grading.grade(submissions, tmp_path / "out", timeout=60, jobs=1, echo=None, exercises=["ex04"])
    rows = {learner: report.cells[(learner, "ex04_positional_encoding")] for learner in ("ana", "ben", "cy")}
    assert rows["ana"].outcome == "pass", rows["ana"]
    assert rows["ben"].outcome == "error" and "nested too deeply" in rows["ben"].detail
    assert rows["cy"].outcome == "error" and "could not grade this notebook" in rows["cy"].detail
    assert "No space left" in rows["cy"].detail
    markdown = (tmp_path / "out" / "scores.md").read_text(encoding="utf-8")
    assert "| ana | pass" in markdown and "| ben | error" in markdown and "| cy | error" in markdown


def test_a_quiz_bank_nested_too_deeply_is_refused_with_a_message():
    with pytest.raises(QuizBankError, match="nested too deeply"):
        parse_bank("questions: " + "[" * DEEP + "]" * DEEP, "deep.yaml")


BANK = """
title: Edges
notebook: '02'
questions:
  - id: edge-q
    kind: single
    topic: scaling
    prompt: Which one?
    options:
      - text: this
        correct: true
        feedback: Right, because.
      - text: that
        feedback: No, because.
    explanation: Because.
    quotes:
      - {claim}
        output: 'x: ([0-9.]+)'
"""


@pytest.mark.parametrize(
    "claim, problem",
    [
        ("below: 'small'", '"below:" must be one number'),
        ("below: 0.3", '"below:" must be one number'),
        ("below: '.nan'", '"below:" must be one number'),
        ("range: ['0.8', '0.6']", '"range:" must be two numbers, the lower first'),
        ("range: ['0.6', 'high']", '"range:" must be two numbers, the lower first'),
    ],
)
def test_a_quote_that_is_not_a_number_is_refused(claim, problem):
    with pytest.raises(QuizBankError, match=problem.replace("(", r"\(")):
        parse_bank(BANK.format(claim=claim), "edges.yaml")


@pytest.mark.parametrize("claim", ["below: '0.3'", "below: '1e-5'", "range: ['0.6', '0.8']", "range: ['96%', '98%']"])
def test_a_quote_with_numbers_is_accepted(claim):
    parse_bank(BANK.format(claim=claim), "edges.yaml")


def test_a_record_line_nested_too_deeply_is_skipped_and_the_others_kept(tmp_path):
    path = tmp_path / "learning-record.jsonl"
    good = {"v": 1, "time": "2026-12-05T10:00:00Z", "kind": "quiz", "quiz": "02", "question": "q", "topic": "scaling"}
    good |= {"answer": "a", "correct": True}
    path.write_bytes(json.dumps(good).encode() + b"\n" + b"[" * DEEP + b"]" * DEEP + b"\n" + json.dumps(good).encode())
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        read = record.read(path)
    assert len(read.events) == 2 and any("nested too deeply" in message for message in read.skipped)
