"""Shared by every test in tests/ (loaded before anything runs, so nbval's notebook runs in the same session see it)."""

import os

# Running the notebooks and checks in the test suite is not a learner's work: keep it out of the learning record
# (course_lib/record.py). Tests of the record point COURSE_RECORD at a file of their own. This file lives in tests/
# and not at the root: a conftest.py at the root would put the repository first on sys.path, and the mutation tests
# (tests/test_mutations.py) need their mutated copy of course_lib to be the one imported.
os.environ.setdefault("COURSE_RECORD", "off")


# `make test` runs the suite on two processes (pytest-xdist, ``--dist loadgroup``). Each test module, and each
# notebook under nbval (its cells share one kernel, in order), goes whole to one process. Modules that start graders
# or count the grader's processes share one group, so they never run beside each other; so do the browser tests (one
# JupyterLab and one Chromium at a time) and the hub.
SHARED_GROUPS = {
    "grading": ("test_grading", "test_exercise_tooling", "test_hub_tools", "test_checks_fuzz"),
    "browser": ("browser/",),
    "hub": ("test_hub.py", "test_nbgitpuller", "test_make_lab"),
}


def _group(path: str) -> str:
    for group, prefixes in SHARED_GROUPS.items():
        if any(prefix in path for prefix in prefixes):
            return group
    return path


def pytest_collection_modifyitems(config, items):
    import pytest

    for item in items:
        item.add_marker(pytest.mark.xdist_group(_group(item.nodeid.split("::", 1)[0])))
