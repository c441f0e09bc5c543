"""``bundle``: a learner-only copy of the course (no exercise solutions).

    python -m course_lib bundle --out ../course-for-learners
"""

from __future__ import annotations


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
    from .bundle import build_bundle

    build_bundle(args.out)  # a BundleError or ExerciseToolError is printed by the command line, without a traceback
    return 0
