"""Shared by every test in tests/ (loaded before anything runs, so nbval's notebook runs in the same session see it)."""

import os
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

# The suite's longest modules, longest first (measured: benchmarks/README.md). `make test` runs on two processes with
# `--dist loadfile --no-loadscope-reorder`: each module goes whole to whichever process is free, in the order below
# and then in collection order. Starting the long ones first keeps both processes busy to the end; pytest-xdist's own
# order (most tests first) used to leave these single long tests for last, with one process idle while they ran.
LONGEST_FIRST = (
    "tests/test_portable.py",
    "tests/test_contributing.py",
    "tests/browser/test_notebooks_browser.py",
    "tests/test_hub.py",
    "tests/test_grading_sandbox.py",
    "tests/browser/test_site_browser.py",
    "tests/browser/test_slides_browser.py",
    "tests/test_mutations.py",
)


# The walk-through (tests/test_contributing.py) runs every notebook-reading module's fast tests on a copy of the
# repository that holds the whole course plus one new notebook (tests/notebook_reading.py). Where it runs, the same
# tests are not run a second time on the repository: a failure among them fails the walk-through, which prints it.
# Run a module by itself (or `make test-fast`, which leaves the walk-through out) to see its tests one by one.
WALK_THROUGH = "tests/test_contributing.py::test_adding_a_notebook_as_contributing_md_says"


@pytest.hookimpl(trylast=True)  # after `-m` and `-k` have deselected what they deselect
def pytest_collection_modifyitems(session, config, items):
    rank = {path: index for index, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))  # stable: the rest keep their order
    if any(item.nodeid == WALK_THROUGH for item in items):
        share_with_the_walk_through(config, items)


def share_with_the_walk_through(config, items) -> None:
    """Deselect the tests that the walk-through runs on its copy (the notebook-reading modules' tests not marked slow)."""
    from notebook_reading import NEEDS_THE_CHECKOUT, NOTEBOOK_READING_TESTS

    on_the_copy = set(NOTEBOOK_READING_TESTS) - NEEDS_THE_CHECKOUT
    shared = [
        item
        for item in items
        if item.nodeid.split("::", 1)[0] in on_the_copy and item.get_closest_marker("slow") is None
    ]
    if shared:
        config.hook.pytest_deselected(items=shared)
        kept = set(map(id, shared))
        items[:] = [item for item in items if id(item) not in kept]
        config._course_shared_with_walk_through = len(shared)


def pytest_report_collectionfinish(config, start_path, items):
    shared = getattr(config, "_course_shared_with_walk_through", 0)
    if shared:
        return (
            f"{shared} notebook-reading tests run inside the walk-through's copy (tests/notebook_reading.py), not twice"
        )
    return None
