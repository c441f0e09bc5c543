"""The reader's budget (issue 25), measured from the stored notebooks: story first, evidence folded, nothing repeated.

For every lesson notebook of the syllabus:
- at most ``MAX_WORDS`` words of Markdown outside the folds (``<details>`` blocks; speaker notes left out);
- no bookkeeping outside the folds: CPU kernels and capabilities, sweep commands, "N of 10 seeds" and seed lists
  belong in a fold, in the section the evidence backs;
- a main-path reading time (``course_lib/tools/publish/reading_time.py``, folds left out) of at most ``MAX_MINUTES`` at the
  slow end;
- no output that repeats a figure's alt text (an ``Out[n]`` under the figure), and no widget's text fallback printed
  again under the live widget;
- folds titled by what they hold: ``tests/test_folds.py``.

Each check runs per notebook, so a failure names the notebook and what is over budget.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest

from course_lib import _syllabus as syllabus
from course_lib.tools.publish import reading_time

ROOT = Path(__file__).resolve().parents[1]
MAX_WORDS = 2800
MAX_MINUTES = 75
FOLD_SUMMARY = "<summary>Ten more seeds</summary>"

# A notebook measured over a budget is listed here as a STRICT expected failure while its fix is under way: the run
# reports it every time and fails as soon as the notebook meets its budget (then remove it here). Since issue 25,
# every lesson meets both budgets, so both sets are empty.
OVER_WORD_BUDGET: set[str] = set()
OVER_TIME_BUDGET: set[str] = set()

BOOKKEEPING = {
    "CPU kernels": re.compile(
        r"\b(?:portable|vectori[sz]ed|native|CPU|AVX[\w-]*)\s+kernels?\b|ATEN_CPU_CAPABILITY|\bAVX[\w-]*|"
        r"\bCPU capabilit(?:y|ies)\b",
        re.IGNORECASE,
    ),
    "sweep command": re.compile(r"python -m course_lib(?:\.tools)?[ .](?:evidence|sweeps)\b|`evidence [\w-]+`"),
    "seed count": re.compile(
        r"\b(?:\d+|none|all|each|every one) of (?:the |its )?\d+(?: seeds| runs)?\b(?=[^.]*\bseed)|"
        r"\b(?:over|across|in|for) \d+ seeds\b|\b\d+ seeds\b|\bseeds? \d+(?:\s*(?:[-–,]|and|to)\s*\d+)+",
        re.IGNORECASE,
    ),
}


def lesson_params(over: set[str] = frozenset()):
    params = []
    for row in syllabus.lessons():
        marks = (
            [pytest.mark.xfail(reason="over budget today (issue 25 is open)", strict=True)]
            if row.number in over
            else []
        )
        params.append(pytest.param(ROOT / "notebooks" / row.file, id=row.number, marks=marks))
    return params


def markdown_cells(notebook) -> list[str]:
    return [
        cell.source
        for cell in notebook.cells
        if cell.cell_type == "markdown" and not cell.source.lstrip().startswith("**Speaker notes")
    ]


def main_path_words(notebook) -> int:
    return sum(reading_time.count_words(reading_time.main_path_markdown(text)) for text in markdown_cells(notebook))


def bookkeeping(notebook) -> list[str]:
    """Every bookkeeping mention outside the folds, as "kind: 'the words'"."""
    found = []
    for text in markdown_cells(notebook):
        story = reading_time.main_path_markdown(text)
        for kind, pattern in BOOKKEEPING.items():
            found += [f"{kind}: {match.group(0)!r}" for match in pattern.finditer(story)]
    return found


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def echoes(path: Path) -> list[str]:
    """Outputs that repeat what a reader already sees: a figure's alt text, or a widget's fallback under it."""
    found = []
    for index, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
        outputs = cell.get("outputs", [])
        alts = {_text(o.get("metadata", {}).get("image/png", {}).get("alt")).strip() for o in outputs} - {""}
        fallbacks = [
            _text(o["data"].get("text/plain"))
            for o in outputs
            if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
        ]
        for output in outputs:
            data = output.get("data", {})
            shown = (_text(data.get("text/plain")) if "image/png" not in data else "") + _text(output.get("text"))
            shown = shown.strip().strip("'\"")
            if shown and any(alt in shown or shown in alt for alt in alts):
                found.append(f"cell {index}: an output repeats a figure's alt text ({shown[:60]!r}...)")
            if output.get("output_type") == "stream":
                for fallback in fallbacks:
                    lines = [line for line in fallback.splitlines()[1:] if line.strip()]
                    if len(lines) >= 2 and all(line in shown for line in lines):
                        found.append(f"cell {index}: prints the widget's text fallback again under the live widget")
    return found


@pytest.mark.parametrize("path", lesson_params(OVER_WORD_BUDGET))
def test_main_path_words_within_budget(path):
    words = main_path_words(nbformat.read(path, as_version=4))
    assert words <= MAX_WORDS, f"{path.name}: {words} words of Markdown outside the folds (budget {MAX_WORDS})"


@pytest.mark.parametrize("path", lesson_params())
def test_no_bookkeeping_outside_the_folds(path):
    found = bookkeeping(nbformat.read(path, as_version=4))
    assert not found, f"{path.name}: {len(found)} mention(s) belong in a fold: {found[:6]}"


@pytest.mark.parametrize("path", lesson_params(OVER_TIME_BUDGET))
def test_main_path_reading_time_within_budget(path):
    guess = reading_time.estimate(nbformat.read(path, as_version=4))
    assert guess.high <= MAX_MINUTES, (
        f"{path.name}: {guess.high:.0f} minutes at the slow end on the main path ({guess.words} words, "
        f"{guess.code_lines} code lines, {guess.figures} figures, {guess.questions} questions; budget {MAX_MINUTES})"
    )


@pytest.mark.parametrize("path", lesson_params())
def test_no_output_repeats_what_the_reader_already_sees(path):
    found = echoes(path)
    assert not found, f"{path.name}: {found[:4]}"


# --------------------------------------------------------------------------- the measures themselves can fail


def test_the_measures_see_what_they_should():
    story = (
        "Twenty steps back the signal is weaker (in 9 of 10 seeds; `python -m course_lib evidence gradient-probe`), "
        "with AVX2 kernels and portable kernels alike, over 10 seeds.\n\n"
        f"<details>{FOLD_SUMMARY}Over 10 seeds with ATEN_CPU_CAPABILITY=default: 9 of 10.</details>"
    )
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(story)])
    kinds = sorted({found.split(":")[0] for found in bookkeeping(notebook)})
    assert kinds == ["CPU kernels", "seed count", "sweep command"], bookkeeping(notebook)
    assert len(bookkeeping(notebook)) == 5, "the fold's own mentions are not counted"
    assert main_path_words(notebook) == reading_time.count_words(story.split("<details>")[0])
    folded = nbformat.v4.new_code_cell("a = 1\nb = 2")
    folded.metadata["tags"] = ["fold"]
    with_code = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"), folded])
    assert reading_time.estimate(with_code, questions=0).code_lines == 1
    assert reading_time.estimate(with_code, questions=0, main_path=False).code_lines == 3


def test_an_alt_text_echo_and_a_printed_fallback_are_found(tmp_path):
    figure = {
        "output_type": "display_data",
        "data": {"image/png": "AAAA", "text/plain": "[figure] The loss falls"},
        "metadata": {"image/png": {"alt": "The loss falls"}},
    }
    echo = {"output_type": "execute_result", "execution_count": 1, "data": {"text/plain": "'The loss falls'"}}
    widget = {
        "output_type": "display_data",
        "data": {"application/vnd.jupyter.widget-view+json": {}, "text/plain": "[lab]\nrow 1 0.2\nrow 2 0.1"},
        "metadata": {},
    }
    printed = {"output_type": "stream", "name": "stdout", "text": "as text:\nrow 1 0.2\nrow 2 0.1\n"}
    cells = [
        {"cell_type": "code", "metadata": {}, "source": "", "execution_count": 1, "outputs": [figure, echo]},
        {"cell_type": "code", "metadata": {}, "source": "", "execution_count": 2, "outputs": [widget, printed]},
        {"cell_type": "code", "metadata": {}, "source": "", "execution_count": 3, "outputs": [figure]},
    ]
    path = tmp_path / "n.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    found = echoes(path)
    assert len(found) == 2 and found[0].startswith("cell 0") and found[1].startswith("cell 1"), found
