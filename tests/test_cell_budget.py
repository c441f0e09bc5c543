"""Lighter cells and honest reading times (issue 15).

- A code cell a learner reads holds the idea being taught: at most ``MAX_LINES`` lines (its source as shown, trailing
  blank lines not counted), unless it carries the tag ``lesson-code`` (the code *is* the lesson). The Colab setup
  cell (tag ``colab``) is exempt. Plotting and diagram code belongs in ``course_lib.lab.plots``.
- Each notebook's first cell states its time as a range that contains the estimate of
  ``course_lib/tools/publish/reading_time.py`` (words, code lines, figures and quiz questions at stated rates).

Both fail on notebooks that predate the rule; ``python -m course_lib reading-time --write`` fixes the second.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from course_lib.tools.publish import reading_time, slides

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = slides.course_notebooks(ROOT / "notebooks")
MAX_LINES = 25
EXEMPT_TAGS = {"colab", "lesson-code"}


def shown_lines(source: str) -> int:
    return len(source.rstrip().splitlines())


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_code_cells_stay_within_the_budget(path):
    notebook = nbformat.read(path, as_version=4)
    long = [
        f"cell {index} ({shown_lines(cell.source)} lines): {cell.source.strip().splitlines()[0][:60]!r}"
        for index, cell in enumerate(notebook.cells)
        if cell.cell_type == "code"
        and not EXEMPT_TAGS & set(cell.metadata.get("tags", []))
        and shown_lines(cell.source) > MAX_LINES
    ]
    assert not long, (
        f"{path.name}: code cells over {MAX_LINES} lines (move plotting into course_lib.lab.plots, split the cell, or "
        "tag it lesson-code if the code is the lesson):\n  " + "\n  ".join(long)
    )


def test_the_budget_counts_lines_as_shown():
    assert shown_lines("a = 1\n\nb = 2\n\n\n") == 3
    assert shown_lines("\n".join(["x = 1"] * 26)) == 26 > MAX_LINES


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_the_stated_time_contains_the_estimate(path):
    notebook = nbformat.read(path, as_version=4)
    guess = reading_time.estimate(notebook)
    said = reading_time.stated(notebook)
    assert said is not None, f'{path.name}: the first cell states no "**Estimated time:** A–B minutes."'
    assert reading_time.contains(said, guess), (
        f"{path.name} states {said[0]}–{said[1]} minutes; its {guess.words} words, {guess.code_lines} code lines, "
        f"{guess.figures} figures and {guess.questions} quiz questions take {guess.low:.0f}–{guess.high:.0f} "
        "(python -m course_lib reading-time --write)"
    )


def test_the_estimate_follows_the_stated_rates():
    cells = [
        nbformat.v4.new_markdown_cell(" ".join(["word"] * 300)),
        nbformat.v4.new_markdown_cell("**Speaker notes.** " + " ".join(["spoiler"] * 500)),  # not read by learners
        nbformat.v4.new_code_cell(
            "a = 1\n\nb = 2\n" * 5, outputs=[nbformat.v4.new_output("display_data", data={"image/png": "x"})]
        ),
        nbformat.v4.new_code_cell("!pip install x\n" * 9, metadata={"tags": ["colab"]}),  # setup, not lesson
    ]
    guess = reading_time.estimate(nbformat.v4.new_notebook(cells=cells), questions=4)
    assert (guess.words, guess.code_lines, guess.figures, guess.questions) == (300, 10, 1, 4)
    assert guess.high == pytest.approx(300 / 150 + 10 * 0.25 + 1 * 1.0 + 4 * 1.5)
    assert guess.low == pytest.approx(300 / 250 + 10 * 0.1 + 1 * 0.5 + 4 * 0.75)
    assert guess.stated_range() == (5, 15)


@pytest.mark.slow
def test_write_states_a_range_that_check_accepts_on_copies(tmp_path):
    copies = []
    for path in NOTEBOOKS:
        shutil.copy(path, tmp_path / path.name)
        copies.append(tmp_path / path.name)
    command = [sys.executable, "-m", "course_lib", "reading-time"]
    written = subprocess.run([*command, "--write", *map(str, copies)], capture_output=True, text=True, cwd=ROOT)
    assert written.returncode == 0, written.stdout + written.stderr
    checked = subprocess.run([*command, "--check", *map(str, copies)], capture_output=True, text=True, cwd=ROOT)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    for original, copy in zip(NOTEBOOKS, copies):
        before, after = nbformat.read(original, as_version=4), nbformat.read(copy, as_version=4)
        low, high = reading_time.stated(after)
        assert low < high and f"**Estimated time:** {low}–{high} minutes." in after.cells[0].source
        assert before.cells[1:] == after.cells[1:], "only the first cell's time sentence changes"
        rest = reading_time.STATED.sub("", before.cells[0].source, count=1)
        assert rest == reading_time.STATED.sub("", after.cells[0].source, count=1)
    # a stated time that misses the estimate fails --check
    first = nbformat.read(copies[0], as_version=4)
    first.cells[0].source = reading_time.STATED.sub("**Estimated time:** 5–10 minutes.", first.cells[0].source, count=1)
    nbformat.write(first, copies[0])
    failed = subprocess.run([*command, "--check", str(copies[0])], capture_output=True, text=True, cwd=ROOT)
    assert failed.returncode == 1 and "does not contain the estimate" in failed.stdout
