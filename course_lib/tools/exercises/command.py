"""``exercises``: build, reset, progress and grading for the exercise notebooks.

python -m course_lib exercises list
python -m course_lib exercises reset ex02_attention        # your version is backed up first
python -m course_lib exercises progress                    # which exercises pass
python -m course_lib exercises build [--execute]           # instructors: regenerate the learner notebooks
python -m course_lib exercises grade SUBMISSIONS --out DIR [--exercise ex02] [--gradebook CONFIG] [--roster CSV]
python -m course_lib exercises collect --homes /home --out SUBMISSIONS     # on a hub, before grading
"""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "exercises",
        help="reset an exercise, see your progress, build the learner notebooks, grade submissions",
        description="Tools for the exercise notebooks in exercises/.",
    )
    parser.set_defaults(handler=lambda args: _usage(parser))
    actions = parser.add_subparsers(dest="action", metavar="action")

    listing = actions.add_parser("list", help="list the exercises")
    _dir_option(listing)
    listing.set_defaults(handler=_list)

    reset = actions.add_parser(
        "reset",
        help="replace an exercise notebook with a fresh copy (your version is saved in exercises/backups/ first)",
        description="Replace one exercise notebook with a fresh copy. Your current version is first saved to "
        "exercises/backups/NAME-YYYYmmdd-HHMMSS.ipynb; if that backup cannot be written, nothing changes.",
    )
    reset.add_argument("name", help="the exercise, e.g. ex02_attention (or ex02, or 2)")
    _dir_option(reset)
    reset.set_defaults(handler=_reset)

    progress = actions.add_parser(
        "progress",
        help="run your exercise notebooks headless and show which ones pass",
        description="Run each exercise notebook in a fresh kernel (nothing is written to your files) and show "
        "which exercises pass.",
    )
    progress.add_argument("names", nargs="*", help="only these exercises (default: all)")
    _dir_option(progress)
    _run_options(progress)
    progress.set_defaults(handler=_progress)

    build = actions.add_parser(
        "build",
        help="instructors: generate the learner notebooks from exercises/solutions/",
        description="Generate exercises/exNN_*.ipynb from exercises/solutions/exNN_*.ipynb: solutions between "
        "'### BEGIN SOLUTION' and '### END SOLUTION' become `raise NotImplementedError(...)`, outputs are cleared. "
        "A learner notebook that changes is saved to exercises/backups/ first.",
    )
    _dir_option(build)
    build.add_argument(
        "--execute", action="store_true", help="first re-run the solution notebooks in place (every check must pass)"
    )
    build.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if a learner notebook is out of date"
    )
    build.set_defaults(handler=_build)

    grade = actions.add_parser(
        "grade",
        help="instructors: run submitted notebooks in a sandbox; write scores, feedback files and LMS imports",
        description="Run every submitted exercise notebook in a sandbox (bubblewrap where the machine allows it), "
        "judge what its functions return against course_lib, count points with partial credit (the course's "
        "gradebook.yaml, or --gradebook), and write scores.md, scores.csv, checks.csv, feedback/<student>.md and "
        ".html, canvas.csv and moodle.csv. Layout: one subfolder per learner (alice/ex02_attention.ipynb) or files "
        "named alice__ex02_attention.ipynb.",
    )
    grade.add_argument("submissions", help="folder with the submitted notebooks")
    grade.add_argument("--out", required=True, help="folder for the reports (outside the submissions)")
    grade.add_argument(
        "--exercise", action="append", default=None, metavar="NAME",
        help="grade only this exercise (ex02, 2 or ex02_attention); repeat for several (default: all)",
    )  # fmt: skip
    grade.add_argument("--require-sandbox", action="store_true", help="refuse to grade when no sandbox is available")
    grade.add_argument("--timeout", type=float, default=60.0, help="seconds for each notebook's cells (default: 60)")
    grade.add_argument(
        "--jobs", type=int, default=None, help="notebooks graded at the same time (default: one per CPU core)"
    )
    grade.add_argument(
        "--gradebook", metavar="CONFIG", default=None,
        help="how points are counted: the points per exercise and the credit for a named mistake (a YAML file; "
        "default: the course's course_lib/tools/grading/gradebook.yaml, also 'default')",
    )  # fmt: skip
    grade.add_argument(
        "--roster", metavar="CSV", default=None,
        help="the class roster (student_id,name,section,email): names and sections in the feedback files and LMS "
        "imports, and a row of 0 points for a student who submitted nothing",
    )  # fmt: skip
    grade.set_defaults(handler=_grade)

    from course_lib.tools.classroom.hub import register_collect  # exercises collect: from the home folders of a hub

    register_collect(actions)


def _dir_option(parser) -> None:
    parser.add_argument(
        "--dir", type=Path, default=None, help="the exercises folder (default: the course's exercises/)"
    )


def _run_options(parser) -> None:
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds allowed per notebook (default: 60)")
    parser.add_argument("--jobs", type=int, default=2, help="notebooks run at the same time (default: 2)")


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _list(args) -> int:
    from course_lib.tools.exercises import files as tools

    folder = args.dir or tools.default_exercises_dir()
    for exercise in tools.EXERCISES.values():
        present = (Path(folder) / exercise.filename).exists()
        print(f"  {exercise.name:<26} {exercise.title}{'' if present else '   (missing: use reset to create it)'}")
    return 0


def _reset(args) -> int:
    from course_lib.tools.exercises import files as tools

    print(tools.reset(args.name, args.dir).message)
    return 0


def _progress(args) -> int:
    from course_lib.tools.exercises import files as tools

    _check_run_options(args)
    rows = tools.progress(args.dir, args.names or None, timeout=args.timeout, jobs=args.jobs)
    return 0 if rows else 1


def _build(args) -> int:
    from course_lib.tools.exercises import build as generate
    from course_lib.tools.exercises import files as tools

    if args.check:
        folder = tools.require_solutions(args.dir or tools.default_exercises_dir())
        try:
            stale = generate.stale(folder)
        except generate.GenerationError as exc:
            raise tools.ExerciseToolError(str(exc)) from None
        if stale:
            print("Out of date (run `python -m course_lib exercises build`): " + ", ".join(stale))
            return 1
        print("Every learner notebook matches its solution.")
        return 0
    tools.build(args.dir, execute=args.execute)
    return 0


def _grade(args) -> int:

    _check_run_options(args)
    from course_lib.tools.classroom import roster
    from course_lib.tools.grading import grade as grading
    from course_lib.tools.grading import gradebook

    # read both before grading: a typo should not cost a class's grading run
    config = gradebook.load_config(None if args.gradebook in (None, "default") else Path(args.gradebook))
    students = roster.read(Path(args.roster)) if args.roster else None
    grading.grade(
        Path(args.submissions), Path(args.out), timeout=args.timeout, jobs=args.jobs, exercises=args.exercise,
        require_sandbox=args.require_sandbox, config=config, roster=students,
    )  # fmt: skip
    return 0


def _check_run_options(args) -> None:
    import math

    from course_lib.tools.exercises.files import ExerciseToolError

    if not math.isfinite(args.timeout) or args.timeout <= 0:
        raise ExerciseToolError(f"--timeout must be a positive number of seconds, got {args.timeout:g}.")
    if args.jobs is not None and args.jobs < 1:
        raise ExerciseToolError(f"--jobs must be at least 1, got {args.jobs}.")
