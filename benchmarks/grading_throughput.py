"""Grading throughput: submissions per minute, sandbox included.

    python benchmarks/grading_throughput.py                 # 24 submissions, --jobs 2
    python benchmarks/grading_throughput.py --count 48 --jobs 4
    python benchmarks/grading_throughput.py --no-sandbox    # the same without bubblewrap, for comparison

Builds a class of generated submissions in a temporary folder, a realistic mix over all six exercises: solution
notebooks (pass), learner notebooks still at the stubs (fail) and solutions with one function replaced by a wrong
learner solution from ``tests/adversarial`` (fail; the module goes into the notebook as a cell, since the sandbox
holds neither the checks nor their catalogue),
grades them with ``python -m course_lib exercises grade``'s own function, and prints the wall time, the
submissions per minute and the seconds per submission. A benchmark, not a test: nothing fails when it is slow.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from course_lib.checks import EXERCISES, SPECS  # noqa: E402
from course_lib.tools.exercises import build as generate  # noqa: E402
from course_lib.tools.grading import grade as grading  # noqa: E402
from course_lib.tools.grading import sandbox  # noqa: E402


def wrong_cells(exercise: str, rng: random.Random) -> list[str]:
    """Two cells that replace one graded function of ``exercise`` by a wrong learner solution from tests/adversarial:
    the adversarial module (made self-contained) and the rebinding."""
    from adversarial import all_solutions

    checks = {spec.name for spec in EXERCISES[exercise].specs}
    wrong = sorted(
        (s for s in all_solutions() if not s.correct and not s.slow and s.check in checks), key=lambda s: s.id
    )
    chosen = rng.choice(wrong)
    module = (ROOT / "tests" / "adversarial" / f"{exercise}.py").read_text(encoding="utf-8")
    module = module.replace("from . import right, wrong", "def right(*a, **k):\n    return lambda f: f\nwrong = right")
    return [module, f"{SPECS[chosen.check].function} = {chosen.function.__name__}"]


def build_class(folder: Path, count: int, seed: int = 0) -> dict[str, int]:
    """``count`` submissions, a third each right, stubs, and wrong; returns how many of each kind."""
    rng = random.Random(seed)
    exercises = list(EXERCISES.values())
    kinds = {"right": 0, "stubs": 0, "wrong": 0}
    for index in range(count):
        exercise = exercises[index % len(exercises)]
        kind = ("right", "stubs", "wrong")[(index + index // len(exercises)) % 3]
        kinds[kind] += 1
        if kind == "stubs":
            notebook = nbformat.read(generate.learner_path(ROOT / "exercises", exercise.name), as_version=4)
        else:
            notebook = nbformat.read(generate.solution_path(ROOT / "exercises", exercise.name), as_version=4)
        if kind == "wrong":
            for cell in wrong_cells(exercise.name, rng):
                notebook.cells.append(nbformat.v4.new_code_cell(cell))
        learner = folder / f"learner{index:03d}"
        learner.mkdir(parents=True)
        nbformat.write(notebook, learner / f"{exercise.name}.ipynb")
    return kinds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=24, help="number of submissions (default: 24)")
    parser.add_argument("--jobs", type=int, default=2, help="submissions graded at the same time (default: 2)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds for each notebook's cells (default: 60)")
    parser.add_argument("--no-sandbox", action="store_true", help="grade without bubblewrap (for comparison only)")
    args = parser.parse_args()

    status = sandbox.probe()
    if args.no_sandbox:
        sandbox._STATUS = sandbox.SandboxStatus(False, "switched off for this benchmark (--no-sandbox)")
    with tempfile.TemporaryDirectory(prefix="course-grading-benchmark-") as base:
        submissions, out = Path(base) / "submissions", Path(base) / "out"
        kinds = build_class(submissions, args.count)
        started = time.monotonic()
        report = grading.grade(submissions, out, timeout=args.timeout, jobs=args.jobs, echo=None)
        seconds = time.monotonic() - started
    outcomes = {}
    for graded in report.cells.values():
        if graded is not None:
            outcomes[graded.outcome] = outcomes.get(graded.outcome, 0) + 1
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, load average {load:.1f}"
    )
    print(
        f"sandbox: {'off (--no-sandbox)' if args.no_sandbox else status.reason if status.available else 'NONE: ' + status.reason}"
    )
    print(
        f"submissions: {args.count} ({kinds['right']} right, {kinds['stubs']} stubs, {kinds['wrong']} with a mistake); outcomes {outcomes}"
    )
    print(f"jobs: {args.jobs}   wall time: {seconds:.1f} s")
    print(f"throughput: {args.count / seconds * 60:.1f} submissions per minute ({seconds / args.count:.2f} s each)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
