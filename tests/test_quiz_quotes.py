"""Numbers in the quizzes cannot go stale: each one is read from a notebook's stored outputs or declared exact.

A question that quotes a measured number (``0.17``, ``98%``) lists it under ``quotes:`` with a regular expression
whose first group finds the number in the stored outputs of the notebook the question points to; the number as
written must be that output rounded to the decimals the text shows. Numbers that are arithmetic or settings rather
than measurements (``0.2447`` from a worked softmax, ``0.02`` as a standard deviation) go under ``exact:``. Every
number with two or more decimals, and every percentage, in a question's text must be one or the other.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from course_lib.syllabus import NOTEBOOKS

ROOT = Path(__file__).resolve().parents[1]
BANKS = sorted((ROOT / "course_lib" / "quiz" / "banks").glob("*.yaml"))
NUMBER = re.compile(r"(?<![\w.])(\d+\.\d{2,}|\d+(?:\.\d+)?%)(?![\w])")


def _texts(question: dict) -> list[str]:
    texts = [question.get("prompt", ""), question.get("explanation", ""), question.get("wrong_feedback", "")]
    for option in question.get("options", []):
        texts += [str(option.get("text", "")), option.get("feedback", "")]
    for mistake in question.get("mistakes", []):
        texts.append(mistake.get("feedback", ""))
    return [text for text in texts if text]


def _outputs(number: str) -> str:
    """The text of every stored output of notebook ``number``, one after the other."""
    notebook = json.loads((ROOT / "notebooks" / NOTEBOOKS[number][0]).read_text(encoding="utf-8"))
    parts = []
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            if "text" in output:
                parts.append("".join(output["text"]))
            for kind in ("text/plain", "text/markdown", "text/html"):
                if kind in output.get("data", {}):
                    parts.append("".join(output["data"][kind]))
    return "\n".join(parts)


def _as_written(number: str) -> tuple[float, int, bool]:
    percent = number.endswith("%")
    digits = number.rstrip("%")
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    return float(digits), decimals, percent


def _questions():
    for path in BANKS:
        bank = yaml.safe_load(path.read_text(encoding="utf-8"))
        for question in bank["questions"]:
            yield pytest.param(bank, question, id=f"{path.stem}:{question['id']}")


@pytest.mark.parametrize(("bank", "question"), list(_questions()))
def test_every_number_is_quoted_or_exact(bank, question):
    declared = {str(quote["number"]) for quote in question.get("quotes", [])} | set(question.get("exact", []))
    found = {number for text in _texts(question) for number in NUMBER.findall(text)}
    undeclared = sorted(found - declared)
    assert not undeclared, (
        f"{question['id']} states {', '.join(undeclared)} without saying where it comes from: add each one to "
        "quotes: (a number read from the notebook's outputs) or exact: (arithmetic or a setting)"
    )
    unused = sorted(declared - found)
    assert not unused, f"{question['id']} declares {', '.join(unused)}, which its text no longer states"


@pytest.mark.parametrize(("bank", "question"), [p for p in _questions() if p.values[1].get("quotes")])
def test_quoted_numbers_match_the_stored_outputs(bank, question):
    for quote in question["quotes"]:
        notebook = str(quote.get("notebook") or question.get("notebook") or bank["notebook"])
        outputs = _outputs(notebook)
        match = re.search(quote["output"], outputs)
        assert match, f"{question['id']}: no output of notebook {notebook} matches {quote['output']!r}"
        printed = match.group(1)
        value, decimals, percent = _as_written(str(quote["number"]))
        measured = float(printed.rstrip("%"))
        if percent and not printed.endswith("%") and measured <= 1:
            measured *= 100
        assert abs(measured - value) <= 0.5 * 10**-decimals + 1e-9, (
            f"{question['id']} says {quote['number']} but notebook {notebook} prints {printed} "
            f"(matched by {quote['output']!r})"
        )
