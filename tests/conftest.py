"""Shared by every test in tests/ (loaded before anything runs, so nbval's notebook runs in the same session see it)."""

import os
import re
import sys

import pytest

# Running the notebooks and checks in the test suite is not a learner's work: keep it out of the learning record
# (course_lib/interactive/record.py). Tests of the record point COURSE_RECORD at a file of their own. This file lives in tests/
# and not at the root: a conftest.py at the root would put the repository first on sys.path, and the mutation tests
# (tests/test_mutations.py) need their mutated copy of course_lib to be the one imported.
os.environ.setdefault("COURSE_RECORD", "off")
# One CPU thread per process, as the notebooks use (course_lib.set_seed): the suite runs on two processes on two cores,
# and a process whose PyTorch splits tiny matrix products over both cores waits on the other process's core (set
# before anything imports torch; the kernels, the graders and the subprocesses the tests start inherit it).
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
# The same saving as the command line's (course_lib/tools/cli.py): nbformat's jsonschema would build rfc3987-syntax's
# parser (1-1.5 s of CPU) in every test process, for a format no notebook schema uses.
sys.modules.setdefault("rfc3987_syntax", None)

# The suite's longest modules (measured: benchmarks/README.md). `make test` runs on two processes with
# `--dist loadfile --no-loadscope-reorder`: each module goes whole to whichever process is free, in the order below
# and then in collection order (pytest-xdist gives each process its first two modules at the start). Starting the
# long ones first keeps both processes busy to the end; pytest-xdist's own order (most tests first) used to leave
# these single long tests for last, with one process idle while they ran. The hub test comes second: it mostly
# waits (for servers, kernels and the culler), and it waits beside the portable-kernel run, which keeps both cores
# busy on its own (two notebook processes), instead of beside a test that leaves one core idle.
LONGEST_FIRST = (
    "tests/test_portable.py",
    "tests/test_hub.py",
    "tests/test_contributing.py",
    "tests/browser/test_notebooks_browser.py",
    "tests/test_grading_sandbox.py",
    "tests/browser/test_site_browser.py",
    "tests/browser/test_slides_browser.py",
    "tests/test_mutations.py",
)


def pytest_addoption(parser):
    group = parser.getgroup("course", "the course's own selections (tests/conftest.py)")
    group.addoption(
        "--notebook", metavar="NN", default=None,
        help="only the tests about notebook NN of the syllabus: its cells (nbval), its exercise, and every test whose "
        "parameters or module name name it (make test-notebook NB=NN)",
    )  # fmt: skip
    group.addoption(
        "--course-wide", action="store_true",
        help="with --notebook: also the tests about no single notebook (the walk-through's run on its copy)",
    )  # fmt: skip


@pytest.hookimpl(trylast=True)  # after `-m` and `-k` have deselected what they deselect
def pytest_collection_modifyitems(session, config, items):
    rank = {path: index for index, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))  # stable: the rest keep their order
    number = config.getoption("--notebook", default=None)
    if number:
        select_notebook(config, items, number, course_wide=config.getoption("--course-wide"))


def select_notebook(config, items, number: str, course_wide: bool = False) -> None:
    """Keep the tests about notebook ``number`` (and, with ``course_wide``, those about no single notebook)."""
    from course_lib._syllabus import COURSE

    rows = {row.number: row for row in COURSE}
    if number not in rows:
        raise pytest.UsageError(f"--notebook {number}: not a notebook of course_lib/_syllabus.py ({', '.join(rows)})")
    dropped = []
    kept = []
    for item in items:
        about = notebooks_of(item.nodeid, getattr(getattr(item, "callspec", None), "id", ""), COURSE)
        (kept if number in about or (course_wide and not about) else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def notebooks_of(nodeid: str, parameters: str, course) -> set[str]:
    """The numbers of the notebooks a test is about: named by its file (a notebook's or exercise's cells under nbval),
    by its module (``test_figures_03_04.py``), or by a parameter (``[04]``, ``[04_positional_encoding.ipynb]``,
    ``[ex04_positional_encoding]``, ``[desktop-notebooks/04_positional_encoding.html]``, a quiz id ``[04:pe-shape]``)."""
    from pathlib import PurePosixPath

    file = PurePosixPath(nodeid.split("::", 1)[0])
    module_words = set(file.stem.split("_")[1:]) if file.name.startswith("test_") else set()
    stems = {PurePosixPath(token).stem for token in re.split(r"[-/\s]", parameters) if token}
    whole = parameters.split(":", 1)[0]  # "04", "final", or the bank of a question id "04:pe-shape"
    about = set()
    for row in course:
        files = {row.file.removesuffix(".ipynb"), row.exercise} - {None}
        if file.stem in files or row.number in module_words or stems & files or whole in {row.number, row.quiz}:
            about.add(row.number)
    return about
