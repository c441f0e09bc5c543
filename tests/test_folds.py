"""Folds say what they hold, and nbval's markers are cell tags, not comments in the learner's code (issue 42).

- Every fold of a notebook (a ``<details>`` block in Markdown) has a ``<summary>`` that names its content ("Five
  more seeds", "The check against PyTorch"), never the generic "How sure are we?" alone.
- No code cell of any notebook (``notebooks/``, ``exercises/`` and ``exercises/solutions/``) carries nbval's
  ``# NBVAL_...`` comment: nbval reads the cell tags ``nbval-check-output``, ``nbval-ignore-output``, ``nbval-skip``
  and ``nbval-raises-exception`` natively, and a tag stays out of the code a learner reads.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted([*(ROOT / "notebooks").glob("*.ipynb"), *(ROOT / "exercises").rglob("*.ipynb")])
FOLD = re.compile(r"<details\b.*?</details>", re.DOTALL | re.IGNORECASE)
SUMMARY = re.compile(r"<summary>(.*?)</summary>", re.DOTALL | re.IGNORECASE)
GENERIC = {"how sure are we?", "how sure are we", "details", "more", "evidence", ""}
COMMENT_MARKER = re.compile(r"^\s*#\s*NBVAL_\w+", re.MULTILINE)
NBVAL_TAGS = {"nbval-check-output", "nbval-ignore-output", "nbval-skip", "nbval-raises-exception"}


def fold_titles(notebook) -> list[str]:
    """The ``<summary>`` text of every fold in the notebook's Markdown ("" for a fold without one)."""
    titles = []
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            for fold in FOLD.findall(cell.source):
                found = SUMMARY.search(fold)
                titles.append(re.sub(r"<[^>]+>|\s+", " ", found.group(1)).strip() if found else "")
    return titles


def untitled_folds(notebook) -> list[str]:
    return [title or "(no summary)" for title in fold_titles(notebook) if title.lower() in GENERIC]


def comment_markers(notebook) -> list[str]:
    return [
        f"cell {index}: {match.group(0).strip()}"
        for index, cell in enumerate(notebook.cells)
        if cell.cell_type == "code"
        for match in COMMENT_MARKER.finditer(cell.source)
    ]


def ids(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_every_fold_is_titled_by_what_it_holds(path):
    found = untitled_folds(nbformat.read(path, as_version=4))
    assert not found, f"{path.name}: {len(found)} fold(s) titled only {found[:3]}: name what the fold holds"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_nbval_markers_are_cell_tags_not_comments(path):
    found = comment_markers(nbformat.read(path, as_version=4))
    assert not found, f"{path.name}: nbval comment markers in the code ({found[:3]}); use the cell tag instead"


def test_the_tags_used_are_ones_nbval_reads():
    used = {
        tag
        for path in NOTEBOOKS
        for cell in nbformat.read(path, as_version=4).cells
        for tag in cell.metadata.get("tags", [])
        if tag.startswith("nbval")
    }
    assert used <= NBVAL_TAGS, f"unknown nbval tags {used - NBVAL_TAGS}: nbval would ignore them"


def test_the_fold_course_explains_what_a_fold_is():
    first = nbformat.read(ROOT / "notebooks" / "01_why_rnns_struggle.ipynb", as_version=4)
    story = " ".join(FOLD.sub(" ", cell.source) for cell in first.cells if cell.cell_type == "markdown")
    assert re.search(r"\bfold\b[^.]*\b(?:click|open)", story, re.IGNORECASE), (
        "notebook 01, where the folds first appear, should say in its open text what a fold is and how to open it"
    )


def test_the_checks_see_a_generic_title_and_a_comment_marker():
    bad = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("Story.\n\n<details><summary>How sure are we?</summary>\n\nx\n</details>"),
            nbformat.v4.new_markdown_cell("<details><summary>Five more seeds</summary>y</details>"),
            nbformat.v4.new_code_cell("# NBVAL_CHECK_OUTPUT\nprint(1)"),
            nbformat.v4.new_code_cell("x = 1  # NBVAL is named in a comment, not a marker"),
        ]
    )
    assert untitled_folds(bad) == ["How sure are we?"]
    assert fold_titles(bad) == ["How sure are we?", "Five more seeds"]
    assert comment_markers(bad) == ["cell 2: # NBVAL_CHECK_OUTPUT"]


# What a learner reads on the main path (Markdown outside the folds, code cells not folded) holds no bookkeeping of the
# repository: CPU kernels, threads, test files, sweep commands. A fold may name the command that reruns its numbers.
BOOKKEEPING = re.compile(
    r"AVX[\w-]*|ATEN_CPU_CAPABILITY|\bCPU threads?\b|\bone CPU thread\b|\bthis machine'?s?\b|\bkernels? sets?\b|"
    r"\btests/test_\w+\.py\b|python -m course_lib (?:evidence|seeds|sweeps)\b|\bbenchmarks/\w+",
    re.IGNORECASE,
)


def bookkeeping_in_the_open(notebook) -> list[str]:
    from course_lib.tools.publish import reading_time

    found = []
    for index, cell in enumerate(notebook.cells):
        tags = cell.metadata.get("tags", [])
        if "colab" in tags or cell.source.lstrip().startswith("**Speaker notes"):
            continue
        if cell.cell_type == "code" and reading_time.is_folded_code(cell):
            continue
        text = reading_time.FOLD.sub(" ", cell.source) if cell.cell_type == "markdown" else cell.source
        found += [f"cell {index}: {match.group(0)!r}" for match in BOOKKEEPING.finditer(text)]
    return found


LESSONS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")) + sorted((ROOT / "exercises").glob("ex*.ipynb"))


@pytest.mark.parametrize("path", LESSONS, ids=ids)
def test_no_machine_or_command_talk_in_the_open_lesson(path):
    found = bookkeeping_in_the_open(nbformat.read(path, as_version=4))
    assert not found, f"{path.name}: CPU, thread, test-file or command talk on the main path: {found[:6]}"


def test_the_bookkeeping_check_sees_open_talk_and_spares_folds():
    talk = nbformat.v4.new_code_cell("set_seed(0)  # one CPU thread\n# other seeds: python -m course_lib seeds 08")
    prose = nbformat.v4.new_markdown_cell("On this machine's AVX-512 kernels the loss falls.")
    folded = nbformat.v4.new_markdown_cell(
        "<details><summary>Ten more seeds</summary>python -m course_lib evidence 08</details>"
    )
    clean = nbformat.v4.new_markdown_cell("The loss falls at step 120 in this run.")
    assert len(bookkeeping_in_the_open(nbformat.v4.new_notebook(cells=[talk, prose, folded, clean]))) == 4
