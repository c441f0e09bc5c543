"""Numbers in the quizzes cannot go stale: each one is read from a notebook's stored outputs or declared exact.

A question that quotes a measured number (``0.17``, ``98%``) lists it under ``quotes:`` with a regular expression
whose first group finds the number in the stored outputs of the notebook the question points to; the number as
written must be that output rounded to the decimals the text shows. A range the text gives ("about 0.6 to 0.8")
goes under ``range:`` and must contain the printed number, a bound ("less than 0.3") under ``below:``. A number the
notebook states in its prose from a sweep it names (``source: text``) is read from the notebook's Markdown, so quiz
and notebook cannot drift apart. Numbers that are arithmetic or settings rather than measurements (``0.2447`` from a
worked softmax, ``0.02`` as a standard deviation, ``1,500`` steps) go under ``exact:``. Every decimal number, every
number written with thousands separators (``37,456``) and every percentage in a question's text must be one or the
other.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from course_lib._syllabus import NOTEBOOKS

ROOT = Path(__file__).resolve().parents[1]
BANKS = sorted((ROOT / "course_lib" / "interactive" / "quiz" / "banks").glob("*.yaml"))
# a percentage, a count with thousands separators (37,456), or a decimal number (0.7, 0.735)
NUMBER = re.compile(r"(?<![\w.,])(\d+(?:\.\d+)?%|\d{1,3}(?:,\d{3})+(?![\d])|\d+\.\d+)(?![\w%])")


def _texts(question: dict) -> list[str]:
    texts = [question.get("prompt", ""), question.get("explanation", ""), question.get("wrong_feedback", "")]
    for option in question.get("options", []):
        texts += [str(option.get("text", "")), option.get("feedback", "")]
    for mistake in question.get("mistakes", []):
        texts.append(mistake.get("feedback", ""))
    return [text for text in texts if text]


def _outputs(number: str, source: str = "outputs") -> str:
    """The text of every stored output of notebook ``number``, one after the other (``source="text"``: its Markdown)."""
    notebook = json.loads((ROOT / "notebooks" / NOTEBOOKS[number][0]).read_text(encoding="utf-8"))
    if source == "text":
        return "\n".join("".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "markdown")
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
    digits = number.rstrip("%").replace(",", "")
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    return float(digits), decimals, percent


def _claimed(quote: dict) -> list[str]:
    """The numbers one entry of ``quotes:`` accounts for, as the text writes them."""
    if "range" in quote:
        return [str(value) for value in quote["range"]]
    return [str(quote["below"] if "below" in quote else quote["number"])]


def _questions():
    for path in BANKS:
        bank = yaml.safe_load(path.read_text(encoding="utf-8"))
        for question in bank["questions"]:
            yield pytest.param(bank, question, id=f"{path.stem}:{question['id']}")


@pytest.mark.parametrize(("bank", "question"), list(_questions()))
def test_every_number_is_quoted_or_exact(bank, question):
    declared = {number for quote in question.get("quotes", []) for number in _claimed(quote)}
    declared |= set(question.get("exact", []))
    found = {number for text in _texts(question) for number in NUMBER.findall(text)}
    undeclared = sorted(found - declared)
    assert not undeclared, (
        f"{question['id']} states {', '.join(undeclared)} without saying where it comes from: add each one to "
        "quotes: (a number read from the notebook's outputs) or exact: (arithmetic or a setting)"
    )
    unused = sorted(declared - found)
    assert not unused, f"{question['id']} declares {', '.join(unused)}, which its text no longer states"


def _mismatch(quote: dict, text: str) -> str | None:
    """Why ``quote`` does not hold for ``text`` (a notebook's outputs or prose), or None when it does."""
    match = re.search(quote["output"], text)
    if not match:
        return f"nothing matches {quote['output']!r}"
    printed = match.group(1)
    stated = [_as_written(number) for number in _claimed(quote)]
    measured = float(printed.rstrip("%").replace(",", ""))
    if stated[0][2] and not printed.endswith("%") and measured <= 1:
        measured *= 100
    if "range" in quote:
        (low, low_decimals, _), (high, high_decimals, _) = stated
        holds = low - 0.5 * 10**-low_decimals <= measured <= high + 0.5 * 10**-high_decimals
        claim = f"{quote['range'][0]} to {quote['range'][1]}"
    elif "below" in quote:
        holds, claim = measured < stated[0][0], f"below {quote['below']}"
    else:
        value, decimals, _ = stated[0]
        holds, claim = abs(measured - value) <= 0.5 * 10**-decimals + 1e-9, str(quote["number"])
    return None if holds else f"it says {claim}, the notebook has {printed} (matched by {quote['output']!r})"


@pytest.mark.parametrize(("bank", "question"), [p for p in _questions() if p.values[1].get("quotes")])
def test_quoted_numbers_match_the_stored_outputs(bank, question):
    for quote in question["quotes"]:
        notebook = str(quote.get("notebook") or question.get("notebook") or bank["notebook"])
        source = quote.get("source", "outputs")
        problem = _mismatch(quote, _outputs(notebook, source))
        assert problem is None, f"{question['id']} (notebook {notebook}, {source}): {problem}"


@pytest.mark.parametrize(
    ("quote", "text", "holds"),
    [
        ({"number": "0.7", "output": r"N=4: ([0-9.]+)"}, "N=4: 0.744", True),
        ({"number": "0.7", "output": r"N=4: ([0-9.]+)"}, "N=4: 0.640", False),
        ({"number": "37,456", "output": r"LSTM: ([0-9,]+)"}, "LSTM: 37,456", True),
        ({"number": "37,456", "output": r"LSTM: ([0-9,]+)"}, "LSTM: 37,465", False),
        ({"range": ["0.6", "0.8"], "output": r"r = ([0-9.e+-]+)"}, "r = 6.4e-01", True),
        ({"range": ["0.6", "0.8"], "output": r"r = ([0-9.e+-]+)"}, "r = 0.86", False),
        ({"range": ["0.6", "0.8"], "output": r"r = ([0-9.e+-]+)"}, "r = 0.52", False),
        ({"below": "0.3", "output": r"at most ([0-9.]+)"}, "at most 0.29", True),
        ({"below": "0.3", "output": r"at most ([0-9.]+)"}, "at most 0.31", False),
        ({"number": "98%", "output": r"acc ([0-9.]+)"}, "acc 0.981", True),
        ({"number": "0.7", "output": r"N=4: ([0-9.]+)"}, "no such line", False),
    ],
)
def test_a_quote_fails_when_the_notebook_says_otherwise(quote, text, holds):
    assert (_mismatch(quote, text) is None) == holds


def test_the_number_pattern_finds_counts_decimals_and_percentages():
    text = "an LSTM with 37,456 parameters scores about 0.7 (chance 0.06, 98% for the other), in 2024 at lr 3e-3"
    assert NUMBER.findall(text) == ["37,456", "0.7", "0.06", "98%"]


def test_markdown_is_read_for_quotes_from_the_notebooks_prose():
    prose, outputs = _outputs("01", "text"), _outputs("01")
    assert prose.startswith("# 01") and "primacy effect" in prose
    assert "# 01" not in outputs
