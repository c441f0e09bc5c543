"""Folds say what they hold, and nbval's markers are cell tags, not comments in the learner's code (issue 42).

- every ``<details>`` fold of a course notebook or an exercise has a ``<summary>`` that names its content ("Ten more
  seeds", "The check against PyTorch"), not the one title every fold once carried, "How sure are we?";
- no code cell starts with an nbval comment (``# NBVAL_CHECK_OUTPUT`` ...): the marker is a cell tag
  (``nbval-check-output``, ``nbval-ignore-output``, ``nbval-skip``, ``nbval-raises-exception``), which nbval reads the
  same way and the learner never sees;
- no open cell (code cells not folded, Markdown outside the folds) and no fold talks about CPUs, threads, test files or
  commands to run: that is bookkeeping for the repository, not the lesson.

Part 1 (notebooks 01-07, ex01-ex06) is retitled in a parallel change; until it lands, its notebooks are expected to
fail here (not strictly, so the test turns green by itself when they are done).
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from course_lib.tools.publish import reading_time

ROOT = Path(__file__).resolve().parents[1]
PART_2 = ("08", "09", "10", "11", "ex08", "ex09", "ex10")
SUMMARY = re.compile(r"<summary>(.*?)</summary>", re.DOTALL)
OLD_TITLE = "How sure are we?"
NBVAL_COMMENT = re.compile(r"^\s*#\s*NBVAL_[A-Z_]+", re.MULTILINE)
NBVAL_TAGS = {"nbval-check-output", "nbval-ignore-output", "nbval-skip", "nbval-raises-exception"}
BOOKKEEPING = re.compile(
    r"AVX[\w-]*|ATEN_CPU_CAPABILITY|\bCPU threads?\b|\bone CPU thread\b|\bthis machine'?s?\b|\bkernels? sets?\b|"
    r"\btests/test_\w+\.py\b|python -m course_lib (?:evidence|seeds|sweeps)\b|\bbenchmarks/\w+",
    re.IGNORECASE,
)


def notebooks():
    paths = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")) + sorted((ROOT / "exercises").glob("ex*.ipynb"))
    paths += sorted((ROOT / "exercises" / "solutions").glob("ex*.ipynb"))
    params = []
    for path in paths:
        prefix = path.name.split("_")[0]
        marks = [] if prefix in PART_2 else [pytest.mark.xfail(reason="Part 1 is retitled in a parallel change")]
        params.append(pytest.param(path, id=str(path.relative_to(ROOT)), marks=marks))
    return params


def folds(notebook) -> list[str]:
    return [
        fold
        for cell in notebook.cells
        if cell.cell_type == "markdown"
        for fold in reading_time.FOLD.findall(cell.source)
    ]


def fold_problems(notebook) -> list[str]:
    found = []
    for fold in folds(notebook):
        titles = SUMMARY.findall(fold)
        if not titles:
            found.append(f"a fold without a <summary>: {fold[:60]!r}")
        elif not titles[0].strip() or titles[0].strip() == OLD_TITLE:
            found.append(f"a fold titled {titles[0]!r}, not by what it holds: {fold[:80]!r}")
    return found


def marker_problems(notebook) -> list[str]:
    found = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        if NBVAL_COMMENT.search(cell.source):
            found.append(f"cell {index}: an nbval comment in the code (make it a cell tag)")
        unknown = {t for t in cell.metadata.get("tags", []) if t.startswith("nbval")} - NBVAL_TAGS
        if unknown:
            found.append(f"cell {index}: unknown nbval tag(s) {sorted(unknown)}")
    return found


def bookkeeping_problems(notebook) -> list[str]:
    found = []
    for index, cell in enumerate(notebook.cells):
        if "colab" in cell.metadata.get("tags", []) or cell.source.lstrip().startswith("**Speaker notes"):
            continue
        found += [f"cell {index}: {match.group(0)!r}" for match in BOOKKEEPING.finditer(cell.source)]
    return found


@pytest.mark.parametrize("path", notebooks())
def test_every_fold_names_what_it_holds(path):
    found = fold_problems(nbformat.read(path, as_version=4))
    assert not found, f"{path.name}: {found[:4]}"


@pytest.mark.parametrize("path", notebooks())
def test_nbval_markers_are_cell_tags(path):
    found = marker_problems(nbformat.read(path, as_version=4))
    assert not found, f"{path.name}: {found[:4]}"


@pytest.mark.parametrize("path", notebooks())
def test_no_machine_or_command_talk_in_the_lesson(path):
    found = bookkeeping_problems(nbformat.read(path, as_version=4))
    assert not found, f"{path.name}: CPU, thread, test-file or command talk a learner reads: {found[:6]}"


def test_the_checks_see_what_they_should():
    old = nbformat.v4.new_markdown_cell(f"Text.\n\n<details><summary>{OLD_TITLE}</summary>\n\nSeeds.\n</details>")
    bare = nbformat.v4.new_markdown_cell("<details>\n\nno title\n</details>")
    named = nbformat.v4.new_markdown_cell("<details><summary>Ten more seeds</summary>\n\n0.9-1.0\n</details>")
    assert len(fold_problems(nbformat.v4.new_notebook(cells=[old, bare, named]))) == 2
    commented = nbformat.v4.new_code_cell("# NBVAL_CHECK_OUTPUT\nprint(1)")
    tagged = nbformat.v4.new_code_cell("print(1)")
    tagged.metadata["tags"] = ["nbval-check-output"]
    typo = nbformat.v4.new_code_cell("print(1)")
    typo.metadata["tags"] = ["nbval-check"]
    assert len(marker_problems(nbformat.v4.new_notebook(cells=[commented, tagged, typo]))) == 2
    talk = nbformat.v4.new_code_cell(
        "set_seed(0)  # one CPU thread\n# other seeds: python -m course_lib seeds --notebooks 08"
    )
    prose = nbformat.v4.new_markdown_cell(
        "<details><summary>Seeds</summary>on this machine's AVX-512 kernels</details>"
    )
    clean = nbformat.v4.new_markdown_cell("The loss falls at step 120 in this run.")
    assert len(bookkeeping_problems(nbformat.v4.new_notebook(cells=[talk, prose, clean]))) == 4
