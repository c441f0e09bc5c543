"""Updating the course with nbgitpuller keeps every learner edit and brings the rest of the instructor's changes.

This is nbgitpuller's own pull (the code an nbgitpuller link runs in the learner's server), on the course's real
notebooks, from a local upstream repository. No hub and no network are needed; the hub test (tests/test_hub.py)
runs the same pull through a real hub.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest

nbgitpuller = pytest.importorskip("nbgitpuller", reason="nbgitpuller is installed by requirements-dev.txt")

ROOT = Path(__file__).resolve().parents[1]
EXERCISE = "exercises/ex02_attention.ipynb"
LESSON = "notebooks/02_attention_qkv.ipynb"
SOLUTION = (
    "def softmax(scores):\n"
    "    shifted = scores - scores.amax(dim=-1, keepdim=True)\n"
    "    weights = shifted.exp()\n"
    "    return weights / weights.sum(dim=-1, keepdim=True)  # my own solution"
)


def git(cwd: Path, *args: str) -> str:
    identity = ["-c", "user.name=Instructor", "-c", "user.email=instructor@localhost"]
    return subprocess.run(["git", *identity, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def pull(upstream: Path, clone: Path) -> list[str]:
    return list(nbgitpuller.GitPuller(str(upstream), str(clone), branch="main", depth=None).pull())


@pytest.fixture
def course(tmp_path):
    """An upstream course repository (notebooks + exercises) and a learner's first pull of it."""
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    for folder in ("notebooks", "exercises"):
        shutil.copytree(
            ROOT / folder,
            upstream / folder,
            ignore=shutil.ignore_patterns("solutions", "backups", ".ipynb_checkpoints"),
        )
    git(upstream, "init", "-q", "-b", "main")
    git(upstream, "add", "-A")
    git(upstream, "commit", "-q", "-m", "Course, first version")
    clone = tmp_path / "home" / "transformers-course"
    clone.parent.mkdir()
    pull(upstream, clone)
    return upstream, clone


def edit_cell(path: Path, index: int, source: str) -> None:
    notebook = nbformat.read(path, as_version=4)
    notebook.cells[index].source = source
    nbformat.write(notebook, path)


def cell(path: Path, index: int) -> str:
    return nbformat.read(path, as_version=4).cells[index].source


def softmax_cell(path: Path) -> int:
    """The index of the code cell where the learner writes softmax (the check cell follows it)."""
    cells = nbformat.read(path, as_version=4).cells
    return next(i for i, c in enumerate(cells) if c.cell_type == "code" and c.source.startswith("def softmax"))


def title_cell(path: Path) -> int:
    """The index of the notebook's title (the first markdown cell; a setup cell may come before it)."""
    cells = nbformat.read(path, as_version=4).cells
    return next(i for i, c in enumerate(cells) if c.cell_type == "markdown" and c.source.startswith("# "))


def learner_solves_softmax(clone: Path) -> None:
    """The learner writes softmax and runs its check cell (an output and an execution count appear)."""
    notebook = nbformat.read(clone / EXERCISE, as_version=4)
    code = softmax_cell(clone / EXERCISE)
    notebook.cells[code].source = SOLUTION
    notebook.cells[code].execution_count = 1
    notebook.cells[code + 1].execution_count = 2
    notebook.cells[code + 1].outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="✅ softmax: all tests passed.\n")
    ]
    nbformat.write(notebook, clone / EXERCISE)


def test_update_keeps_the_learners_edits_and_brings_the_rest(course):
    upstream, clone = course
    learner_solves_softmax(clone)
    (clone / "my_notes.md").write_text("my own notes\n")

    # The instructor fixes the exercise's introduction, changes a lesson, adds a new notebook.
    title, lesson_title = title_cell(upstream / EXERCISE), title_cell(upstream / LESSON)
    fixed_title = cell(upstream / EXERCISE, title).replace("# Exercise 02", "# Exercise 02 (revised)")
    assert fixed_title != cell(upstream / EXERCISE, title), "the instructor's fix must change the title"
    edit_cell(upstream / EXERCISE, title, fixed_title)
    lesson_cell = cell(upstream / LESSON, lesson_title) + "\n\n*Updated for this term.*"
    edit_cell(upstream / LESSON, lesson_title, lesson_cell)
    (upstream / "notebooks" / "09_new.ipynb").write_text(json.dumps(nbformat.v4.new_notebook(), indent=1))
    git(upstream, "add", "-A")
    git(upstream, "commit", "-q", "-m", "Term update")

    pull(upstream, clone)

    exercise = nbformat.read(clone / EXERCISE, as_version=4)
    nbformat.validate(exercise)  # the merged notebook is still a valid notebook
    code = softmax_cell(clone / EXERCISE)
    assert exercise.cells[code].source == SOLUTION, "the learner's solution was lost"
    assert exercise.cells[code + 1].outputs[0]["text"].startswith("✅"), "the learner's output was lost"
    assert exercise.cells[title].source == fixed_title, "the instructor's fix in the same notebook did not arrive"
    assert cell(clone / LESSON, lesson_title) == lesson_cell, "the changed lesson did not arrive"
    assert (clone / "notebooks" / "09_new.ipynb").exists(), "the new notebook did not arrive"
    assert (clone / "my_notes.md").read_text() == "my own notes\n", "the learner's own file was touched"


def test_a_conflicting_change_keeps_the_learners_version(course):
    """Upstream changes the very cell the learner edited: nbgitpuller merges with -Xours, the learner's side wins."""
    upstream, clone = course
    learner_solves_softmax(clone)
    code = softmax_cell(upstream / EXERCISE)
    changed = cell(upstream / EXERCISE, code).replace("Numerically stable", "A numerically stable")
    assert changed != cell(upstream / EXERCISE, code), "upstream must change the learner's cell"
    edit_cell(upstream / EXERCISE, code, changed)
    git(upstream, "commit", "-q", "-am", "Docstring")

    pull(upstream, clone)

    exercise = nbformat.read(clone / EXERCISE, as_version=4)
    nbformat.validate(exercise)
    assert exercise.cells[code].source == SOLUTION


def test_a_deleted_notebook_comes_back_fresh_and_a_clashing_file_is_renamed(course):
    """Deleting a notebook and pulling again restores it; a learner file where upstream adds one is kept aside."""
    upstream, clone = course
    (clone / EXERCISE).unlink()
    (clone / "notebooks" / "09_new.ipynb").write_text("the learner's own file\n")
    (upstream / "notebooks" / "09_new.ipynb").write_text(json.dumps(nbformat.v4.new_notebook(), indent=1))
    git(upstream, "add", "-A")
    git(upstream, "commit", "-q", "-m", "New notebook")

    pull(upstream, clone)

    assert (clone / EXERCISE).read_text() == (upstream / EXERCISE).read_text()
    kept = [path for path in (clone / "notebooks").glob("09_new__*.ipynb")]
    assert len(kept) == 1 and kept[0].read_text() == "the learner's own file\n", "the learner's clashing file was lost"
    nbformat.validate(nbformat.read(clone / "notebooks" / "09_new.ipynb", as_version=4))
