"""Shared by every test in tests/ (loaded before anything runs, so nbval's notebook runs in the same session see it)."""

import os

# Running the notebooks and checks in the test suite is not a learner's work: keep it out of the learning record
# (course_lib/record.py). Tests of the record point COURSE_RECORD at a file of their own. This file lives in tests/
# and not at the root: a conftest.py at the root would put the repository first on sys.path, and the mutation tests
# (tests/test_mutations.py) need their mutated copy of course_lib to be the one imported.
os.environ.setdefault("COURSE_RECORD", "off")
