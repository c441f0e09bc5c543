"""Numbers that a quiz quotes from a notebook agree with what the executed notebook printed, so neither goes stale.

Each entry names a question, a pattern in its text (prompt, options, feedback or explanation) that captures the
quoted number or range, the notebook cell whose stored output it quotes (found by a line of its code), a pattern in
that output, and how the two must agree. Trained results vary a little from CPU to CPU, so a quiz quotes them as a
range or with "about", and the test checks that the stored output falls in it. When a notebook is re-executed and a
number moves outside what its quiz says, this test names the question to update.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from course_lib import syllabus
from course_lib.quiz import load_bank

ROOT = Path(__file__).resolve().parents[1]
NUMBER = r"([0-9][0-9,]*(?:\.[0-9]+)?(?:e-?[0-9]+)?)"


@dataclass(frozen=True)
class Quote:
    bank: str
    question: str
    quoted: str  # regex over the question's text; its groups are the quoted numbers
    notebook: str
    cell: str  # a line of the code cell whose stored output is quoted
    printed: str  # regex over that output; group(s) are the printed numbers
    agree: str  # "range": printed within [quoted 1, quoted 2]; "about": |printed − quoted| ≤ tolerance;
    # "below": printed < quoted; "at least": printed ≥ quoted; "equal": the same number
    tolerance: float = 0.0
    group: int = 1  # which printed group to compare (for "about", "below", "at least", "equal")


def number(text: str) -> float:
    return float(text.replace(",", ""))


def power(text: str) -> float:
    """'10^{-6}' or '$10^{-30}$' → 1e-6, 1e-30; plain numbers pass through."""
    match = re.fullmatch(r"10\^\{?(-?\d+)\}?", text)
    return 10.0 ** int(match.group(1)) if match else number(text)


QUOTES = [
    # 01 · Why RNNs struggle
    Quote(
        "01",
        "lstm-recall-drop",
        r"scores about (0\.\d+) to (0\.\d+) with\s+\$N = 4\$",
        "01",
        'accuracy["LSTM (hidden 64)"].append',
        r"LSTM \(hidden 64\)\s+(\S+)",
        "range",
    ),
    Quote(
        "01",
        "lstm-recall-drop",
        r"and about (0\.\d+) with \$N = 32\$",
        "01",
        'accuracy["LSTM (hidden 64)"].append',
        r"LSTM \(hidden 64\)\s+\S+\s+\S+\s+\S+\s+(\S+)",
        "about",
        0.05,
    ),
    Quote(
        "01",
        "lstm-recall-drop",
        r"scores (1\.00) at every \$N\$",
        "01",
        'accuracy["LSTM (hidden 64)"].append',
        r"Transformer \(1 block\)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)",
        "at least",
        0,
        1,
    ),
    Quote(
        "01",
        "lstm-recall-drop",
        r"queried item in (\d+)% or more of test problems",
        "01",
        "hits = (query_row.argmax",
        r"queried item in (\S+) of problems",
        "at least percent",
    ),
    Quote(
        "01",
        "rnn-recency",
        r"(0\.\d+)–(0\.\d+) on the first two items",
        "01",
        "first_two, last_two = ",
        r"first two items: (\S+)",
        "range",
    ),
    Quote(
        "01",
        "rnn-recency",
        r"and (0\.\d+)–(0\.\d+) on the last two",
        "01",
        "first_two, last_two = ",
        r"last two items: (\S+)",
        "range",
    ),
    Quote(
        "01",
        "vanishing-gradient-exponent",
        r"measured a ratio below \$(10\^\{-6\})\$",
        "01",
        'print("tanh RNN ratio:',
        r"tanh RNN ratio:\s+\S+\s+\S+\s+\S+\s+(\S+)",
        "below",
    ),
    Quote(
        "01",
        "gradient-statements",
        r"around \$(10\^\{-29\})\$ of the newest",
        "01",
        'print("tanh RNN ratio:',
        r"tanh RNN ratio:\s+\S+\s+\S+\s+\S+\s+\S+\s+\S+\s+(\S+)",
        "about power",
        2,
    ),
    # 02 · Attention
    Quote(
        "02",
        "unscaled-consequences",
        r"in about (\d+)% of rows",
        "02",
        'results[name]["saturated"].append',
        r"\n\s*1024\s+32 \|\s+\S+\s+(\S+)",
        "about percent",
        5,
    ),
    # 04 · Positional encoding
    Quote(
        "04",
        "who-did-it-ceiling",
        r"measured about (0\.5) without positions",
        "04",
        'print(f"{positions:>10}: test accuracy',
        r"none: test accuracy (\S+)",
        "about",
        0.06,
    ),
    # 05 · Residuals and LayerNorm
    Quote(
        "05",
        "collapse-without-skips",
        r"\$r \\approx (0\.\d+)\$ to \$(0\.\d+)\$ after 24 layers",
        "05",
        "for name, make_layer in stacks.items():",
        r"attention \+ skip\s+\S+\s+\S+\s+\S+\s+\S+\s+(\S+)",
        "range",
    ),
    Quote(
        "05",
        "collapse-without-skips",
        r"\$r \\approx (0\.\d+)\$ to \$(0\.\d+)\$ after 24 layers",
        "05",
        "for name, make_layer in stacks.items():",
        r"skip \+ MLP \+ pre-LN\s+\S+\s+\S+\s+\S+\s+\S+\s+(\S+)",
        "range",
    ),
    # 06 · The Transformer block
    Quote(
        "06",
        "first-token-payoff",
        r"same size about (0\.\d+) \(chance",
        "06",
        "for L, acc_t, acc_l in zip(",
        r"L= 50\s+Transformer \S+\s+LSTM (\S+)",
        "about",
        0.03,
    ),
    Quote(
        "06",
        "first-token-payoff",
        r"Transformer scores (1\.000)",
        "06",
        "for L, acc_t, acc_l in zip(",
        r"L= 50\s+Transformer (\S+)",
        "at least",
    ),
    Quote(
        "06",
        "first-token-payoff",
        r"\(([\d,]+) against [\d,]+ parameters\)",
        "06",
        "n_transformer, n_lstm =",
        r"Transformer parameters: ([\d,]+)",
        "equal",
    ),
    Quote(
        "06",
        "first-token-payoff",
        r"\([\d,]+ against ([\d,]+) parameters\)",
        "06",
        "n_transformer, n_lstm =",
        r"LSTM parameters:\s+([\d,]+)",
        "equal",
    ),
]


def question_text(bank: str, question_id: str) -> str:
    for question in load_bank(bank).questions:
        if question.id == question_id:
            parts = [question.prompt, question.explanation]
            parts += [option.text + "\n" + option.feedback for option in getattr(question, "options", ()) or ()]
            return "\n".join(parts)
    raise AssertionError(f"bank {bank} has no question {question_id!r}: renamed? update QUOTES in {__file__}")


def printed_output(notebook: str, needle: str) -> str:
    path = ROOT / "notebooks" / syllabus.notebook_file(notebook)
    cells = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code" and needle in c.source]
    assert len(cells) == 1, f"{path.name}: {len(cells)} code cells contain {needle!r}; make the needle unique"
    return "".join(o.get("text", "") for o in cells[0].outputs if o.get("output_type") == "stream")


@pytest.mark.parametrize("quote", QUOTES, ids=lambda q: f"{q.bank}-{q.question}-{q.agree}")
def test_a_quiz_number_agrees_with_the_notebook_it_quotes(quote):
    text = question_text(quote.bank, quote.question)
    quoted = re.search(quote.quoted, text)
    assert quoted, f"question {quote.question!r} no longer says {quote.quoted!r}: update QUOTES or the question"
    output = printed_output(quote.notebook, quote.cell)
    printed = re.search(quote.printed, output)
    assert printed, f"notebook {quote.notebook} no longer prints {quote.printed!r} in the cell with {quote.cell!r}"
    where = (
        f"question {quote.question!r} (bank {quote.bank}) quotes {quoted.group(0)!r}; notebook {quote.notebook} printed"
    )
    if quote.agree == "range":
        low, high = number(quoted.group(1)), number(quoted.group(2))
        value = number(printed.group(quote.group))
        assert low <= value <= high, f"{where} {value}"
    elif quote.agree in ("about", "about percent", "about power"):
        convert = {"about": number, "about percent": lambda t: number(t) / 100, "about power": power}[quote.agree]
        value = number(printed.group(quote.group)) * (100 if quote.agree == "about percent" else 1)
        claimed = convert(quoted.group(1)) * (100 if quote.agree == "about percent" else 1)
        if quote.agree == "about power":  # within `tolerance` powers of ten
            import math

            assert abs(math.log10(value) - math.log10(claimed)) <= quote.tolerance, f"{where} {value:.1e}"
        else:
            assert abs(value - claimed) <= quote.tolerance, f"{where} {value}"
    elif quote.agree == "below":
        assert number(printed.group(quote.group)) < power(quoted.group(1)), f"{where} {printed.group(quote.group)}"
    elif quote.agree == "at least":
        values = [number(v) for v in printed.groups()]
        assert min(values) >= number(quoted.group(1)) - 1e-9, f"{where} {values}"
    elif quote.agree == "at least percent":
        values = [number(v) for v in re.findall(quote.printed, output)]
        assert values and min(values) >= number(quoted.group(1)) / 100, f"{where} {values}"
    elif quote.agree == "equal":
        assert number(printed.group(quote.group)) == number(quoted.group(1)), f"{where} {printed.group(quote.group)}"
    else:
        raise AssertionError(f"unknown agreement {quote.agree!r}")


def test_lstm_budget_numbers_in_the_quiz_match_notebook_01():
    """The quiz and notebook 01 quote the same 15,000-step sweep: the numbers must be the same in both."""
    text = question_text("01", "lstm-recall-drop")
    quiz = re.search(
        r"to about (0\.\d+) with 4 items\), yet with 32 items it still\s+reaches only about (0\.\d+)", text
    )
    assert quiz, "lstm-recall-drop should quote the long run's accuracy with 4 and with 32 items"
    markdown = "\n".join(
        c.source
        for c in nbformat.read(ROOT / "notebooks" / syllabus.notebook_file("01"), as_version=4).cells
        if c.cell_type == "markdown"
    )
    long_run = re.search(r"15,000 steps, this LSTM reaches\s+(0\.\d+), (0\.\d+), (0\.\d+) and (0\.\d+)", markdown)
    assert long_run, "notebook 01 should quote the 15,000-step run"
    assert (quiz.group(1), quiz.group(2)) == (long_run.group(1), long_run.group(4))
