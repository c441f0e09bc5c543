"""Shared by every test in tests/ (loaded before anything runs, so nbval's notebook runs in the same session see it)."""

import os

# Running the notebooks and checks in the test suite is not a learner's work: keep it out of the learning record
# (course_lib/record.py). Tests of the record point COURSE_RECORD at a file of their own. This file lives in tests/
# and not at the root: a conftest.py at the root would put the repository first on sys.path, and the mutation tests
# (tests/test_mutations.py) need their mutated copy of course_lib to be the one imported.
os.environ.setdefault("COURSE_RECORD", "off")
# One CPU thread per process, as the notebooks use (course_lib.set_seed): the suite runs on two processes on two cores,
# and a process whose PyTorch splits tiny matrix products over both cores waits on the other process's core (set
# before anything imports torch; the kernels, the graders and the subprocesses the tests start inherit it).
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

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


def pytest_collection_modifyitems(session, config, items):
    rank = {path: index for index, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))  # stable: the rest keep their order
