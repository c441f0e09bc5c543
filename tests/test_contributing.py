"""CONTRIBUTING.md's "Add a notebook" walk-through, followed end to end in a copy of the repository.

The syllabus row and the quiz bank are the code blocks of CONTRIBUTING.md itself, so the page cannot drift from
what works. In the copy, the new notebook must be picked up by everything that reads the syllabus: the quiz bank
check, the slide decks, the layout and notebook-structure tests, and nbval.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import nbformat
import pytest
from notebook_reading import NEEDS_THE_CHECKOUT, NOT_ON_THE_COPY, NOTEBOOK_READING_TESTS

ROOT = Path(__file__).resolve().parents[1]
GUIDE = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
SECTION = GUIDE.split("## Add a notebook", 1)[1].split("\n## ", 1)[0]


EXAMPLE = re.search(r'Notebook\("(\d\d)"', SECTION).group(1)  # the number the page's example uses


def next_free_number(syllabus_text: str) -> str:
    """One more than the highest notebook number in the syllabus's ``COURSE`` (read from its source)."""
    numbers = [int(n) for n in re.findall(r'Notebook\(\s*"(\d\d)"', syllabus_text)]
    return f"{max(numbers) + 1:02d}"


def as_number(block: str, number: str) -> str:
    """A code block of the page with its example number replaced by ``number`` (file names, ids, headings)."""
    return re.sub(rf"(?<!\d){EXAMPLE}(?!\d)", number, block)


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
    syllabus = copy / "course_lib" / "_syllabus.py"
    number, title = next_free_number(syllabus.read_text(encoding="utf-8")), "Cross-attention"
    row = as_number(code_block("python"), number)
    assert f'Notebook("{number}"' in row, "the example row is the one this test adds"

    # step 1: the notebook
    path = copy / "notebooks" / f"{number}_cross_attention.ipynb"
    assert not path.exists()
    nbformat.write(new_notebook(number, title), path)

    # step 2: its row in the syllabus, at the end of COURSE
    text = syllabus.read_text(encoding="utf-8")
    end = text.index("\n)\n", text.index("COURSE: tuple[Notebook, ...] = ("))
    syllabus.write_text(text[:end] + "\n    " + row.strip() + text[end:], encoding="utf-8")

    # step 4: its quiz bank
    (copy / "course_lib" / "interactive" / "quiz" / "banks" / f"{number}.yaml").write_text(
        as_number(code_block("yaml"), number), encoding="utf-8"
    )
    quiz_tests = copy / "tests" / "test_quiz.py"
    text = quiz_tests.read_text(encoding="utf-8")
    anchor = text.index('@pytest.mark.parametrize("question_id", sorted(CONSISTENCY))')
    quiz_tests.write_text(text[:anchor] + code_block("python", 1) + "\n\n" + text[anchor:], encoding="utf-8")
    # step 4, continued: its prediction checkpoint
    checkpoints = copy / "course_lib" / "interactive" / "checkpoints.yaml"
    checkpoints.write_text(
        checkpoints.read_text(encoding="utf-8").rstrip("\n") + "\n" + as_number(code_block("yaml", 1), number)
    )
    checked = run(copy, "-m", "course_lib", "quiz", "check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"{number}.yaml" in checked.stdout

    # step 5: slides and the guide's section
    annotated = run(copy, "-m", "course_lib", "slides", "annotate", str(path))
    assert annotated.returncode == 0, annotated.stdout + annotated.stderr
    guide = copy / "INSTRUCTORS.md"
    guide.write_text(
        guide.read_text(encoding="utf-8") + "\n" + as_number(code_block("markdown"), number), encoding="utf-8"
    )

    # step 6: prepare and execute it with the page's one command
    command = code_block("bash").split()
    assert command[:4] == ["python", "-m", "course_lib", "notebook"], command
    executed = run(copy, *command[1:-1], str(path), timeout=600)
    assert executed.returncode == 0, executed.stdout[-2000:] + executed.stderr[-2000:]
    # step 2, continued: its row in the README's learning path, with the minutes its header now states
    from course_lib.tools.publish import reading_time

    low, high = reading_time.stated(nbformat.read(path, as_version=4))
    readme = copy / "README.md"
    text = readme.read_text(encoding="utf-8")
    last = list(re.finditer(r"^\| \d{2} \| \[.*$", text, re.M))[-1]
    row = f"| {number} | [{title}](notebooks/{path.name}) | attention from one sequence to another | {low}–{high} |"
    readme.write_text(text[: last.end()] + "\n" + row + text[last.end() :], encoding="utf-8")
    # everything that reads the syllabus sees the new notebook
    seen = run(
        copy, "-c",
        "from course_lib import _syllabus as syllabus; from course_lib.tools.publish import slides; import course_lib;"
        f"print(course_lib.__file__); print(syllabus.notebook_label('{number}'));"
        "print([p.name for p in slides.course_notebooks()][-1])",
    )  # fmt: skip
    assert seen.returncode == 0, seen.stderr
    lines = seen.stdout.splitlines()
    assert lines[0].startswith(str(copy)), "the test must import the copy's course_lib"
    assert lines[1] == f"{number} · {title}" and lines[2] == path.name

    # step 7: verify with the copy's tests that read the course: those about the new notebook (its cells under nbval,
    # every test whose parameters name it: tests/conftest.py's --notebook) and those about no single notebook; `make
    # test` runs all of them on the repository too, so the ones about the other notebooks need not run twice
    verified = run(
        copy, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-m", "not slow", "--notebook", number,
        "--course-wide", "--junitxml=walk-through.xml", *NOTEBOOK_READING_TESTS, str(path.relative_to(copy)),
        timeout=1200,
    )  # fmt: skip
    assert verified.returncode == 0, verified.stdout[-6000:]  # the failures, then the summary that names them
    assert f"test_lesson_follows_the_course_standard[{path.name}]" not in verified.stdout  # quiet on success
    assert re.search(r"\d+ passed", verified.stdout)
    report = ET.parse(copy / "walk-through.xml").getroot()
    ran = {f"{case.get('classname')}::{case.get('name')}" for case in report.iter("testcase")}
    for test in (f"test_notebook_structure::test_lesson_follows_the_course_standard[{path.name}]",
                 f"test_reading_budget::test_main_path_words_within_budget[{number}]",
                 f"{path.stem}.ipynb::Cell 0"):  # fmt: skip
        assert any(name.endswith(test) for name in ran), f"{test} did not run on the new notebook: {sorted(ran)}"
    # a test that skips on the copy checks nothing of the new notebook; only those that need the git checkout may
    skipped = set(re.findall(r"^SKIPPED \[\d+\] (tests/[\w/]+\.py)", verified.stdout, flags=re.M))
    assert skipped <= NEEDS_THE_CHECKOUT, (
        f"tests of {sorted(skipped - NEEDS_THE_CHECKOUT)} skip on the walk-through's copy: make them run on a copy "
        "(or, if they need the git checkout, add the module to NEEDS_THE_CHECKOUT in tests/notebook_reading.py)"
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


def test_make_test_runs_the_notebook_reading_tests_directly():
    """With the walk-through among the tests, every notebook-reading test still runs on the repository: a failure of
    the walk-through hides none of them (they used to run only inside it)."""
    modules = ["tests/test_quiz_quotes.py", "tests/test_repository_address.py"]
    listing = run(
        ROOT, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-n", "0", "tests/test_contributing.py",
        *modules,
    )  # fmt: skip
    assert listing.returncode == 0, listing.stdout[-2000:] + listing.stderr[-2000:]
    collected = [line.split("::")[0] for line in listing.stdout.splitlines() if "::" in line]
    assert "tests/test_contributing.py" in collected and "deselected" not in listing.stdout, listing.stdout[-2000:]
    assert set(modules) <= set(collected), "make test must run the notebook-reading tests on the repository"


def test_the_next_free_number_follows_the_syllabus():
    text = (ROOT / "course_lib" / "_syllabus.py").read_text(encoding="utf-8")
    from course_lib._syllabus import COURSE

    assert next_free_number(text) == f"{max(int(row.number) for row in COURSE) + 1:02d}"
    assert next_free_number('Notebook("11", ...)\n    Notebook(\n        "12", ...)') == "13"
    row = as_number(code_block("python"), "27")
    assert 'Notebook("27", "27_cross_attention.ipynb"' in row and EXAMPLE not in row


def test_notebooks_of_reads_the_notebook_from_a_tests_file_module_or_parameters():
    import importlib.util

    from course_lib._syllabus import COURSE

    # tests/conftest.py by its path: under pytest-xdist `import conftest` can find tests/browser/conftest.py first
    spec = importlib.util.spec_from_file_location("suite_conftest", ROOT / "tests" / "conftest.py")
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    notebooks_of = conftest.notebooks_of

    cases = {
        ("tests/test_reading_budget.py::test_one_fold_for_the_evidence[04]", "04"): {"04"},
        ("tests/test_slides.py::test_x[04_positional_encoding.ipynb]", "04_positional_encoding.ipynb"): {"04"},
        (
            "tests/browser/test_site_browser.py::t[phone-exercises/ex04_positional_encoding.html]",
            "phone-exercises/ex04_positional_encoding.html",
        ): {"04"},  # fmt: skip
        ("tests/test_quiz_quotes.py::t[04:pe-frequencies]", "04:pe-frequencies"): {"04"},
        ("tests/test_quiz_balance.py::t[final]", "final"): {"07"},
        ("tests/test_figures_03_04.py::test_code_row_figure_shows_row_p", ""): {"03", "04"},
        ("notebooks/04_positional_encoding.ipynb::Cell 3", ""): {"04"},
        ("exercises/solutions/ex04_positional_encoding.ipynb::Cell 0", ""): {"04"},
        # numbers that are not notebooks, and words that only look like a bank's name
        ("tests/test_formula_first.py::t[dtype0-10]", "dtype0-10"): set(),
        ("tests/test_modern_block.py::t[dtype1-1e-10]", "dtype1-1e-10"): set(),
        ("tests/test_quiz.py::t[final-rnn-memory]", "final-rnn-memory"): set(),
        ("tests/test_layout.py::test_every_concept_is_exported", ""): set(),
    }
    for (nodeid, parameters), expected in cases.items():
        assert notebooks_of(nodeid, parameters, COURSE) == expected, nodeid


def test_make_test_notebook_runs_the_tests_about_the_notebook():
    recipe = (ROOT / "Makefile").read_text(encoding="utf-8").split("\ntest-notebook:", 1)[1].split("\n\n", 1)[0]
    assert "--notebook $(NB)" in recipe, "make test-notebook must select the tests about NB (tests/conftest.py)"
    modules = ["tests/test_reading_budget.py", "tests/test_quiz_quotes.py", "tests/test_figures_03_04.py"]
    listing = run(
        ROOT, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-n", "0", "--notebook", "04",
        *modules, "notebooks/04_positional_encoding.ipynb", "notebooks/05_residuals_and_layernorm.ipynb",
    )  # fmt: skip
    assert listing.returncode == 0, listing.stdout[-2000:] + listing.stderr[-2000:]
    selected = [line for line in listing.stdout.splitlines() if "::" in line]
    for expected in ("test_reading_budget.py::test_main_path_words_within_budget[04]", "[04:pe-frequencies]",
                     "test_figures_03_04.py::", "04_positional_encoding.ipynb::Cell 0"):  # fmt: skip
        assert any(expected in line for line in selected), f"{expected} is about notebook 04 but was not selected"
    assert not [line for line in selected if "[05]" in line or "05_residuals" in line], "notebook 05's tests ran"
    wrong = run(ROOT, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "--notebook", "99", modules[0])
    assert wrong.returncode != 0 and "not a notebook of course_lib/_syllabus.py" in wrong.stdout + wrong.stderr
