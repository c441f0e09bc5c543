"""Checks for the exercise notebooks: run your function, compare with course_lib, explain what went wrong.

In an exercise notebook::

    from course_lib.checks import check_softmax
    check_softmax(softmax)        # prints ✅, ❌ with a hint, or ⏳ not implemented yet

Every check also returns a ``CheckResult`` (``passed``, ``status``, ``message``, ``mistake``), never raises, and
never prints the reference solution. ``MISTAKES`` is the catalogue of typical mistakes each check recognises;
``EXERCISES`` lists the exercise notebooks and their checks. The tools behind
``python -m course_lib exercises build|reset|progress|grade`` live in ``course_lib.tools``.
"""

from .experiment import compare_with_prediction, short_training
from .registry import CHECKS, EXERCISES, MISTAKES, SPECS, Exercise, run_exercise_checks
from .spec import CheckResult, Mistake

globals().update(CHECKS)  # check_softmax, check_attention, ...: one per CheckSpec, named by the spec

__all__ = [
    *CHECKS,
    "compare_with_prediction",
    "short_training",
    "CheckResult",
    "Mistake",
    "Exercise",
    "EXERCISES",
    "CHECKS",
    "MISTAKES",
    "SPECS",
    "run_exercise_checks",
]
