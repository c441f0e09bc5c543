"""``bundle``: a learner-only copy of the course (no exercise solutions).

    python -m course_lib bundle --out ../course-for-learners
"""

from __future__ import annotations

import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "bundle",
        help="instructors: write a learner-only copy of the course, without the exercise solutions",
        description="Write a copy of the course for learners into a new folder: the notebooks, the learner exercise "
        "notebooks (with fresh copies for `exercises reset`), course_lib, docs, README and requirements, and no "
        "solutions (exercises/solutions/ is left out and every file is scanned for solution code). The folder must "
        "be new or empty, and outside the course folder: nothing is ever overwritten.",
    )
    parser.add_argument("--out", required=True, help="a new (or empty) folder outside the course folder")
    parser.set_defaults(handler=_bundle)


def _bundle(args) -> int:
    from .bundle import BundleError, build_bundle
    from .checks.tools import ExerciseToolError

    try:
        build_bundle(args.out)
    except (BundleError, ExerciseToolError) as exc:
        print(exc, file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), file=sys.stderr)
        return 2
    return 0
