"""CONTRIBUTING.md's "Add a notebook" walk-through, followed end to end in a copy of the repository.

The syllabus row and the quiz bank are the code blocks of CONTRIBUTING.md itself, so the page cannot drift from
what works. In the copy, the new notebook must be picked up by everything that reads the syllabus: the quiz bank
check, the slide decks, the layout and notebook-structure tests, and nbval.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from notebook_reading import NEEDS_THE_CHECKOUT, NOT_ON_THE_COPY, NOTEBOOK_READING_TESTS

ROOT = Path(__file__).resolve().parents[1]
GUIDE = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
SECTION = GUIDE.split("## Add a notebook", 1)[1].split("\n## ", 1)[0]


READS_THE_COURSE = re.compile(r"\bsyllabus\b|[\"'/]notebooks[\"'/]|load_bank\(|quiz[./]banks")


def code_block(language: str, number: int = 0) -> str:
    """The ``number``-th (from 0) ```language block of the walk-through, dedented."""
    matches = list(re.finditer(rf"^( *)```{language}\n(.*?)^\1```", SECTION, flags=re.M | re.S))
    assert len(matches) > number, f"CONTRIBUTING.md's walk-through has no ```{language} block number {number}"
    match = matches[number]
    indent = len(match.group(1))
    return "\n".join(line[indent:] for line in match.group(2).splitlines()) + "\n"


def new_notebook(number: str, title: str) -> nbformat.NotebookNode:
    """A small notebook that follows the course standard (what step 1 asks for)."""
    cells = [
        nbformat.v4.new_markdown_cell(
            f"# {number} · {title}\n\n**What you will learn.** Where the keys and values come from.\n\n"
            "**Prerequisites.** Notebook 02.\n\n**Estimated time:** 10–15 minutes."
        ),
        nbformat.v4.new_code_cell("import torch\n\nfrom course_lib import scaled_dot_product_attention, set_seed"),
        nbformat.v4.new_markdown_cell("## Queries from one sequence, keys and values from another"),
        nbformat.v4.new_markdown_cell("**Predict first**, then run the experiment."),
        nbformat.v4.new_code_cell(
            f'from course_lib.interactive.predict import predict, reveal\n\npredict("{number}-columns")'
        ),
        nbformat.v4.new_code_cell(
            "set_seed(0)\n"
            "decoder_states = torch.randn(1, 3, 8)  # (batch, seq_q, d_model)\n"
            "encoder_states = torch.randn(1, 5, 8)  # (batch, seq_k, d_model)\n"
            "output, weights = scaled_dot_product_attention(decoder_states, encoder_states, encoder_states)\n"
            "assert weights.shape == (1, 3, 5), 'one row per decoder position, one column per encoder position'\n"
            "print(tuple(weights.shape))"
        ),
        nbformat.v4.new_code_cell(f'reveal("{number}-columns", measured=weights.shape[-1])'),
        nbformat.v4.new_markdown_cell(
            "**Speaker notes.** Ask the class which sequence the rows belong to before showing the shape."
        ),
        nbformat.v4.new_markdown_cell("## Each row sums to one"),
        nbformat.v4.new_code_cell(
            "assert torch.allclose(weights.sum(dim=-1), torch.ones(1, 3)), 'a softmax over the encoder'\n"
            "print(weights.sum(dim=-1))"
        ),
        nbformat.v4.new_markdown_cell("## Summary\n\nEach decoder position reads the whole encoder sequence."),
        nbformat.v4.new_markdown_cell("## Check your understanding"),
        nbformat.v4.new_code_cell(f'from course_lib.interactive.quiz import show_quiz\n\nshow_quiz("{number}")'),
    ]
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return notebook


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("contributing") / "course"
    ignore = shutil.ignore_patterns(
        ".venv", ".git", "__pycache__", "*.egg-info", "test-output", "backups", "slides", "node_modules"
    )
    for entry in ROOT.iterdir():  # the whole repository as a contributor has it (the guides link every part)
        if (entry.name.startswith(".") and entry.name != ".importlinter") or entry.name in {
            "site",
            "slides",
            "build",
            "dist",
            "test-output",
        }:
            continue
        if entry.is_dir():
            shutil.copytree(entry, target / entry.name, ignore=ignore)
        else:
            shutil.copy2(entry, target / entry.name)
    return target


def run(copy: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(copy)}  # the copy's course_lib wins over the installed one
    return subprocess.run(
        [sys.executable, *args], cwd=copy, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.mark.slow
def test_adding_a_notebook_as_contributing_md_says(copy):
    number, title = "12", "Cross-attention"
    row = code_block("python")
    assert f'Notebook("{number}"' in row, "the example row is the one this test adds"

    # step 1: the notebook
    path = copy / "notebooks" / f"{number}_cross_attention.ipynb"
    nbformat.write(new_notebook(number, title), path)

    # step 2: its row in the syllabus, at the end of COURSE
    syllabus = copy / "course_lib" / "_syllabus.py"
    text = syllabus.read_text(encoding="utf-8")
    end = text.index("\n)\n", text.index("COURSE: tuple[Notebook, ...] = ("))
    syllabus.write_text(text[:end] + "\n    " + row.strip() + text[end:], encoding="utf-8")

    # step 4: its quiz bank
    (copy / "course_lib" / "interactive" / "quiz" / "banks" / f"{number}.yaml").write_text(
        code_block("yaml"), encoding="utf-8"
    )
    quiz_tests = copy / "tests" / "test_quiz.py"
    text = quiz_tests.read_text(encoding="utf-8")
    anchor = text.index('@pytest.mark.parametrize("question_id", sorted(CONSISTENCY))')
    quiz_tests.write_text(text[:anchor] + code_block("python", 1) + "\n\n" + text[anchor:], encoding="utf-8")
    # step 4, continued: its prediction checkpoint
    checkpoints = copy / "course_lib" / "interactive" / "checkpoints.yaml"
    checkpoints.write_text(checkpoints.read_text(encoding="utf-8").rstrip("\n") + "\n" + code_block("yaml", 1))
    checked = run(copy, "-m", "course_lib", "quiz", "check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"{number}.yaml" in checked.stdout

    # step 5: slides and the guide's section
    annotated = run(copy, "-m", "course_lib", "slides", "annotate", str(path))
    assert annotated.returncode == 0, annotated.stdout + annotated.stderr
    guide = copy / "INSTRUCTORS.md"
    guide.write_text(guide.read_text(encoding="utf-8") + "\n" + code_block("markdown"), encoding="utf-8")

    # step 6: prepare and execute it with the page's one command
    command = code_block("bash").split()
    assert command[:4] == ["python", "-m", "course_lib", "notebook"], command
    executed = run(copy, *command[1:-1], str(path), timeout=600)
    assert executed.returncode == 0, executed.stdout[-2000:] + executed.stderr[-2000:]
    # everything that reads the syllabus sees the new notebook
    seen = run(
        copy, "-c",
        "from course_lib import _syllabus as syllabus; from course_lib.tools.publish import slides; import course_lib;"
        "print(course_lib.__file__); print(syllabus.notebook_label('12'));"
        "print([p.name for p in slides.course_notebooks()][-1])",
    )  # fmt: skip
    assert seen.returncode == 0, seen.stderr
    lines = seen.stdout.splitlines()
    assert lines[0].startswith(str(copy)), "the test must import the copy's course_lib"
    assert lines[1] == f"{number} · {title}" and lines[2] == path.name

    # step 7: verify, with every test of the copy that reads the notebooks (and the notebook itself with nbval)
    verified = run(
        copy, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-m", "not slow", *NOTEBOOK_READING_TESTS,
        str(path.relative_to(copy)), timeout=1200,
    )  # fmt: skip
    assert verified.returncode == 0, verified.stdout[-6000:]  # the failures, then the summary that names them
    assert f"test_lesson_follows_the_course_standard[{path.name}]" not in verified.stdout  # quiet on success
    assert re.search(r"\d+ passed", verified.stdout)
    # `make test` runs these tests here only (tests/conftest.py): one that skips on the copy must run on the repository
    skipped = set(re.findall(r"^SKIPPED \[\d+\] (tests/[\w/]+\.py)", verified.stdout, flags=re.M))
    assert skipped <= NEEDS_THE_CHECKOUT, (
        f"tests of {sorted(skipped - NEEDS_THE_CHECKOUT)} skip on the walk-through's copy; `make test` runs them nowhere "
        "else: add the module to NEEDS_THE_CHECKOUT in tests/notebook_reading.py (or make it run on a copy)"
    )


def test_every_notebook_reading_test_is_in_the_walk_through():
    reading = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "tests").glob("test_*.py")
        if READS_THE_COURSE.search(path.read_text(encoding="utf-8"))
    }
    listed = set(NOTEBOOK_READING_TESTS) | set(NOT_ON_THE_COPY)
    assert not reading - listed, (
        f"{sorted(reading - listed)} read the course but the walk-through does not run them on its copy: add them to "
        "NOTEBOOK_READING_TESTS (or to NOT_ON_THE_COPY with the reason)"
    )
    assert not listed - {path.relative_to(ROOT).as_posix() for path in (ROOT / "tests").glob("test_*.py")}, (
        "the walk-through names test modules that do not exist"
    )


@pytest.mark.slow
def test_make_test_runs_the_notebook_reading_tests_once_inside_the_walk_through():
    """With the walk-through selected, the fast tests it runs on its copy are deselected on the repository, except
    those of modules that need the git checkout; without it, nothing is deselected."""
    modules = ["tests/test_quiz_quotes.py", "tests/test_repository_address.py"]
    assert not set(modules) - set(NOTEBOOK_READING_TESTS) and "tests/test_repository_address.py" in NEEDS_THE_CHECKOUT

    listing = run(
        ROOT, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "tests/test_contributing.py", *modules
    )
    assert listing.returncode == 0, listing.stdout[-2000:] + listing.stderr[-2000:]
    with_it = [line.split("::")[0] for line in listing.stdout.splitlines() if "::" in line]
    assert "tests/test_quiz_quotes.py" not in with_it, "the walk-through runs these; make test should not repeat them"
    assert "tests/test_repository_address.py" in with_it, "they skip on the copy, so they run on the repository"
    assert "tests/test_contributing.py" in with_it

    # tests/conftest.py, loaded by path (another conftest may own the name in this process): without the walk-through
    # among the tests, its hook deselects nothing
    spec = importlib.util.spec_from_file_location("course_tests_conftest", ROOT / "tests" / "conftest.py")
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)

    class Collected:  # what the hook reads of a test
        def __init__(self, nodeid: str):
            self.nodeid = nodeid

        def get_closest_marker(self, name: str):
            return None

    items = [Collected(f"{module}::test_something") for module in modules]
    conftest.pytest_collection_modifyitems(None, None, items)
    assert [item.nodeid.split("::")[0] for item in items] == modules, "without the walk-through they run here"
