"""The two errors the course raises on purpose (no torch needed: the command line imports them on a bare Python)."""


class CommandError(Exception):
    """A problem a user of ``python -m course_lib ...`` can fix; the command line prints it without a traceback."""


class CourseInputError(ValueError):
    """Raised when an argument has the wrong type, shape or dtype. The message names the argument."""
