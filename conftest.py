"""Shared by every test, nbval's notebook runs included."""

import os

# Running the notebooks and checks in the test suite is not a learner's work: keep it out of the learning record
# (course_lib/record.py). Tests of the record point COURSE_RECORD at a file of their own.
os.environ.setdefault("COURSE_RECORD", "off")
