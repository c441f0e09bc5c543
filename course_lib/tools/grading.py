"""Grading a class: ``python -m course_lib exercises grade SUBMISSIONS --out RESULTS``.

Every submitted notebook runs headless (``notebook_runner``); the score table is written as Markdown and CSV.
"""

from __future__ import annotations

import csv
import datetime as _dt
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..checks.registry import EXERCISES
from .exercise_files import OUTCOMES, ExerciseToolError
from .notebook_runner import NotebookRun, run_notebooks



@dataclass
class Submission:
    learner: str
    exercise: str
    path: Path


@dataclass
class GradeReport:
    learners: list[str]
    cells: dict[tuple[str, str], NotebookRun | None]
    skipped: list[tuple[Path, str]]
    markdown: Path
    csv: Path


def discover(submissions_dir: Path) -> tuple[list[Submission], list[tuple[Path, str]]]:
    """Find the submitted notebooks. Two layouts (they may be mixed):

    - one subfolder per learner: ``SUBMISSIONS/alice/ex02_attention.ipynb``
    - flat files: ``SUBMISSIONS/alice__ex02_attention.ipynb`` (learner, two underscores, exercise)

    The exercise is read from the start of the file name (``ex02``, ``ex02_attention``, ``ex2_anything``).
    Returns the submissions and the files skipped, with the reason.
    """
    submissions: dict[tuple[str, str], Submission] = {}
    skipped: list[tuple[Path, str]] = []

    def add(learner: str, stem: str, path: Path) -> None:
        exercise = _exercise_from_stem(stem)
        if exercise is None:
            skipped.append((path, "the file name does not start with an exercise number like ex02"))
            return
        key = (learner, exercise)
        if key in submissions:
            kept = min(submissions[key].path, path, key=lambda p: (p.stem != exercise, p.name))
            dropped = path if kept == submissions[key].path else submissions[key].path
            submissions[key] = Submission(learner, exercise, kept)
            skipped.append((dropped, f"a second {exercise} for {learner}; graded {kept.name}"))
            return
        submissions[key] = Submission(learner, exercise, path)

    for entry in sorted(Path(submissions_dir).iterdir()):
        if entry.name.startswith(".") or entry.name.startswith("_"):
            continue
        if entry.is_dir():
            for path in sorted(entry.rglob("*.ipynb")):
                if ".ipynb_checkpoints" in path.parts or path.stem.endswith("-checkpoint"):
                    continue
                add(entry.name, path.stem, path)
        elif entry.suffix == ".ipynb":
            learner, sep, stem = entry.stem.partition("__")
            if not sep or not learner:
                skipped.append((entry, "a top-level file must be named LEARNER__exNN_name.ipynb"))
                continue
            add(learner, stem, entry)
    ordered = sorted(submissions.values(), key=lambda s: (s.learner, s.exercise))
    return ordered, skipped


def _exercise_from_stem(stem: str) -> str | None:
    match = re.match(r"ex0*(\d+)(?:_|\b|$)", stem, flags=re.IGNORECASE)
    if not match:
        return None
    for exercise in EXERCISES:
        if int(exercise[2:4]) == int(match.group(1)):
            return exercise
    return None


def grade(
    submissions_dir: Path,
    out_dir: Path,
    timeout: float = 60.0,
    jobs: int = 2,
    echo: Callable[[str], None] | None = print,
) -> GradeReport:
    """Run every submitted notebook headless (copies, with a time limit each) and write the score table.

    Writes ``scores.md`` and ``scores.csv`` into ``out_dir``. A submission that crashes, raises or hangs is
    recorded as ``error`` or ``timeout``; it never stops the grading. The submissions are only read.
    """
    submissions_dir, out_dir = Path(submissions_dir), Path(out_dir)
    if not submissions_dir.is_dir():
        raise ExerciseToolError(f"{submissions_dir} is not a folder. Pass the folder that holds the submitted notebooks.")
    inside = out_dir.resolve() == submissions_dir.resolve() or submissions_dir.resolve() in out_dir.resolve().parents
    if inside:
        raise ExerciseToolError("--out must be outside the submissions folder: grading never writes into the submissions.")
    submissions, skipped = discover(submissions_dir)
    if not submissions:
        raise ExerciseToolError(
            f"No exercise notebooks found in {submissions_dir}. Expected one subfolder per learner "
            "(alice/ex02_attention.ipynb) or files named alice__ex02_attention.ipynb."
        )
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ExerciseToolError(f"Could not create the output folder {out_dir} ({exc.strerror or exc}).") from None
    if echo:
        echo(f"Grading {len(submissions)} notebook(s) from {len({s.learner for s in submissions})} learner(s), "
             f"{timeout:g} s limit each, {jobs} at a time...")
    by_path = {str(s.path): s for s in submissions}

    def done(run: NotebookRun) -> None:
        if echo:
            submission = by_path[run.path]
            echo(f"  {submission.learner:<20} {submission.exercise:<26} {run.outcome:<8} ({run.seconds:.1f} s)")

    runs = run_notebooks([(s.path, s.exercise) for s in submissions], timeout=timeout, jobs=jobs, on_done=done)
    learners = sorted({s.learner for s in submissions})
    cells: dict[tuple[str, str], NotebookRun | None] = {(l, e): None for l in learners for e in EXERCISES}
    for submission, run in zip(submissions, runs):
        cells[(submission.learner, submission.exercise)] = run
    markdown_path, csv_path = out_dir / "scores.md", out_dir / "scores.csv"
    report = GradeReport(learners, cells, skipped, markdown_path, csv_path)
    csv_path.write_text(score_csv(report), encoding="utf-8")
    markdown_path.write_text(score_markdown(report, submissions_dir, timeout), encoding="utf-8")
    if echo:
        echo(f"Wrote {markdown_path} and {csv_path}.")
        if skipped:
            echo(f"Skipped {len(skipped)} file(s); see the end of {markdown_path.name}.")
    return report


def _outcome(run: NotebookRun | None) -> str:
    return "missing" if run is None else run.outcome


def _counts(report: GradeReport, learner: str) -> dict[str, int]:
    counts = {outcome: 0 for outcome in OUTCOMES}
    checks_passed = checks_total = 0
    for exercise in EXERCISES.values():
        run = report.cells[(learner, exercise.name)]
        counts[_outcome(run)] += 1
        checks_total += len(exercise.specs)
        checks_passed += run.checks_passed if run is not None else 0
    counts["checks_passed"], counts["checks_total"] = checks_passed, checks_total
    return counts


def score_csv(report: GradeReport) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["learner", *EXERCISES, *OUTCOMES, "checks_passed", "checks_total"])
    for learner in report.learners:
        counts = _counts(report, learner)
        writer.writerow(
            [learner, *(_outcome(report.cells[(learner, e)]) for e in EXERCISES), *(counts[o] for o in OUTCOMES),
             counts["checks_passed"], counts["checks_total"]]
        )
    return buffer.getvalue()


def score_markdown(report: GradeReport, submissions_dir: Path, timeout: float) -> str:
    short = [name.split("_")[0] for name in EXERCISES]
    lines = [
        "# Exercise scores",
        "",
        f"Graded {_dt.datetime.now():%Y-%m-%d %H:%M} from `{submissions_dir}`, each notebook run headless in a fresh "
        f"kernel with a {timeout:g} s limit. Per exercise: **pass** (every check passes), **fail** (the notebook ran, "
        "some check fails or is not implemented), **error** (the notebook could not run, crashed, or a cell raised), "
        "**timeout**, or **missing** (not submitted).",
        "",
        "| Learner | " + " | ".join(short) + " | pass | fail | error | timeout | missing | checks passed |",
        "|---|" + "---|" * len(short) + "---:|---:|---:|---:|---:|---:|",
    ]
    for learner in report.learners:
        counts = _counts(report, learner)
        row = [_outcome(report.cells[(learner, e)]) for e in EXERCISES]
        numbers = [str(counts[o]) for o in OUTCOMES] + [f"{counts['checks_passed']}/{counts['checks_total']}"]
        lines.append(f"| {_md(learner)} | " + " | ".join(row) + " | " + " | ".join(numbers) + " |")
    lines += ["", "Exercises: " + ", ".join(f"{s} = {name}" for s, name in zip(short, EXERCISES)), "", "## Details", ""]
    details = 0
    for learner in report.learners:
        for exercise in EXERCISES:
            run = report.cells[(learner, exercise)]
            if run is None or run.outcome == "pass":
                continue
            details += 1
            lines.append(f"- **{_md(learner)} / {exercise}**: {run.outcome}" + (f" ({_md(run.detail)})" if run.detail else ""))
            for error in run.cell_errors[:3]:
                lines.append(f"  - {_md(error)}")
            for check in run.checks:
                if not check["passed"]:
                    lines.append(f"  - {_md(_first_line(check))}")
    if not details:
        lines.append("Every submitted exercise passes.")
    if report.skipped:
        lines += ["", "## Skipped files", ""]
        lines += [f"- `{path}`: {reason}" for path, reason in report.skipped]
    return "\n".join(lines) + "\n"


def _first_line(check: dict) -> str:
    """What went wrong, in one line (the hint is for the learner)."""
    if check.get("status") == "not_implemented":
        return f"{check['check']}: not implemented yet"
    line = check["message"].splitlines()[0] if check["message"] else check["check"]
    line = line.lstrip("✅❌⏳ ")
    return line if len(line) <= 300 else line[:299] + "…"


def _md(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


