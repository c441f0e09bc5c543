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


def learner_solves_softmax(clone: Path) -> None:
    """The learner writes softmax and runs its check cell (an output and an execution count appear)."""
    notebook = nbformat.read(clone / EXERCISE, as_version=4)
    notebook.cells[4].source = SOLUTION
    notebook.cells[4].execution_count = 1
    notebook.cells[5].execution_count = 2
    notebook.cells[5].outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="✅ softmax: all tests passed.\n")
    ]
    nbformat.write(notebook, clone / EXERCISE)


def test_update_keeps_the_learners_edits_and_brings_the_rest(course):
    upstream, clone = course
    learner_solves_softmax(clone)
    (clone / "my_notes.md").write_text("my own notes\n")

    # The instructor fixes the exercise's introduction, changes a lesson, adds a new notebook.
    fixed_title = cell(upstream / EXERCISE, 0).replace("# Exercise 02", "# Exercise 02 (revised)")
    edit_cell(upstream / EXERCISE, 0, fixed_title)
    lesson_cell = cell(upstream / LESSON, 0) + "\n\n*Updated for this term.*"
    edit_cell(upstream / LESSON, 0, lesson_cell)
    (upstream / "notebooks" / "09_new.ipynb").write_text(json.dumps(nbformat.v4.new_notebook(), indent=1))
    git(upstream, "add", "-A")
    git(upstream, "commit", "-q", "-m", "Term update")

    pull(upstream, clone)

    exercise = nbformat.read(clone / EXERCISE, as_version=4)
    nbformat.validate(exercise)  # the merged notebook is still a valid notebook
    assert exercise.cells[4].source == SOLUTION, "the learner's solution was lost"
    assert exercise.cells[5].outputs[0]["text"].startswith("✅"), "the learner's output was lost"
    assert exercise.cells[0].source == fixed_title, "the instructor's fix in the same notebook did not arrive"
    assert cell(clone / LESSON, 0) == lesson_cell, "the changed lesson did not arrive"
    assert (clone / "notebooks" / "09_new.ipynb").exists(), "the new notebook did not arrive"
    assert (clone / "my_notes.md").read_text() == "my own notes\n", "the learner's own file was touched"


def test_a_conflicting_change_keeps_the_learners_version(course):
    """Upstream changes the very cell the learner edited: nbgitpuller merges with -Xours, the learner's side wins."""
    upstream, clone = course
    learner_solves_softmax(clone)
    edit_cell(
        upstream / EXERCISE, 4, cell(upstream / EXERCISE, 4).replace("Numerically stable", "A numerically stable")
    )
    git(upstream, "commit", "-q", "-am", "Docstring")

    pull(upstream, clone)

    exercise = nbformat.read(clone / EXERCISE, as_version=4)
    nbformat.validate(exercise)
    assert exercise.cells[4].source == SOLUTION


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
