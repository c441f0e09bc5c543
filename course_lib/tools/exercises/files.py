"""The exercise tools behind ``python -m course_lib exercises ...``: list, reset, progress, build.

Every function takes the exercises folder (or the submissions folder) as a parameter, so tests run them on
temporary copies. Problems a user can fix (an unknown exercise name, a missing folder) raise ``ExerciseToolError``
with a message written for them; the command line prints it without a traceback.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from course_lib._errors import CommandError
from course_lib._syllabus import current_exercise
from course_lib.checks import EXERCISES, Exercise
from course_lib.tools.exercises import build as generate
from course_lib.tools.grading.runner import NotebookRun, run_notebooks

OUTCOMES = ("pass", "fail", "error", "timeout", "missing")


class ExerciseToolError(CommandError):
    """A problem the user can fix; the message says what and how."""


# --------------------------------------------------------------------------- names and folders


PRISTINE_DIR = "pristine"  # fresh learner copies, shipped instead of solutions/ in a learner bundle


def default_exercises_dir() -> Path:
    """``exercises/`` next to the course_lib package (the repository or a learner bundle), else ``./exercises``."""
    beside_package = Path(__file__).resolve().parents[3] / "exercises"
    if (beside_package / "solutions").is_dir() or (beside_package / PRISTINE_DIR).is_dir():
        return beside_package
    return Path.cwd() / "exercises"


def exercise_list() -> str:
    return "\n".join(f"  {exercise.name:<26} {exercise.title}" for exercise in EXERCISES.values())


def resolve(name: str) -> Exercise:
    """Accept ``ex02_attention``, ``ex02_attention.ipynb``, ``exercises/ex02_attention.ipynb``, ``ex02`` or ``2``."""
    text = Path(str(name).strip()).name
    text = current_exercise(text[:-6] if text.endswith(".ipynb") else text)  # ex07_language_model is ex08 now
    if text in EXERCISES:
        return EXERCISES[text]
    match = re.fullmatch(r"(?:ex)?0*(\d+)", text, flags=re.IGNORECASE)
    if match:
        for exercise in EXERCISES.values():
            if int(exercise.name[2:4]) == int(match.group(1)):
                return exercise
    raise ExerciseToolError(f"There is no exercise called {name!r}. The exercises are:\n{exercise_list()}")


def _check_dir(exercises_dir: Path) -> Path:
    exercises_dir = Path(exercises_dir)
    if not ((exercises_dir / "solutions").is_dir() or (exercises_dir / PRISTINE_DIR).is_dir()):
        raise ExerciseToolError(
            f"{exercises_dir} does not look like the course's exercises folder (it has no solutions/ subfolder, "
            f"nor the {PRISTINE_DIR}/ subfolder of a learner bundle). "
            "Run the command from the course folder, or pass --dir PATH/TO/exercises."
        )
    return exercises_dir


def require_solutions(exercises_dir: Path) -> Path:
    """Instructor tools (build) need the solution notebooks; a learner bundle ships without them."""
    exercises_dir = _check_dir(exercises_dir)
    if not (exercises_dir / "solutions").is_dir():
        raise ExerciseToolError(
            f"{exercises_dir} has no solutions/ folder: this is a learner copy of the course, so the learner "
            "notebooks cannot be regenerated here. Run `exercises build` in the instructor's copy (the repository)."
        )
    return exercises_dir


def fresh_text(exercises_dir: Path, name: str) -> str:
    """A fresh learner notebook: generated from solutions/ when present, else the pristine copy of a learner bundle."""
    exercises_dir = Path(exercises_dir)
    if (exercises_dir / "solutions").is_dir():
        return generate.generate_text(exercises_dir, name)
    pristine = exercises_dir / PRISTINE_DIR / f"{name}.ipynb"
    if not pristine.is_file():
        raise ExerciseToolError(
            f"There is no fresh copy of {name}: neither solutions/ nor {pristine} exists. Nothing was changed. "
            "Ask your instructor for the exercise notebook, or get a new copy of the course."
        )
    return pristine.read_text(encoding="utf-8")


# --------------------------------------------------------------------------- reset


@dataclass
class ResetOutcome:
    exercise: str
    path: Path
    backup: Path | None
    message: str


def reset(name: str, exercises_dir: Path | None = None, now: _dt.datetime | None = None) -> ResetOutcome:
    """Give the learner a fresh copy of one exercise notebook, after saving their version to ``backups/``.

    The learner's file is first copied to ``backups/<name>-YYYYmmdd-HHMMSS.ipynb`` (never overwriting an existing
    backup) and the copy is read back and compared; only then is the notebook replaced, atomically. If the backup
    cannot be written, nothing is changed and ``ExerciseToolError`` explains why.
    """
    exercise = resolve(name)
    exercises_dir = _check_dir(Path(exercises_dir) if exercises_dir else default_exercises_dir())
    target = generate.learner_path(exercises_dir, exercise.name)
    try:
        fresh = fresh_text(exercises_dir, exercise.name).encode("utf-8")
    except ExerciseToolError:
        raise
    except Exception as exc:
        raise ExerciseToolError(
            f"Could not build a fresh copy of {exercise.name}: {exc}. Nothing was changed."
        ) from None

    backup = None
    if target.exists():
        try:
            current = target.read_bytes()
        except OSError as exc:
            raise ExerciseToolError(f"Could not read {target} ({exc.strerror or exc}). Nothing was changed.") from None
        if current == fresh:
            return ResetOutcome(exercise.name, target, None, f"{target} is already a fresh copy; nothing to do.")
        backup = _write_backup(exercises_dir / "backups", exercise.name, current, now or _dt.datetime.now())
    try:
        _atomic_write(target, fresh)
    except OSError as exc:
        saved = f" Your work is safe in {backup}." if backup else ""
        raise ExerciseToolError(f"Could not write {target} ({exc.strerror or exc}).{saved}") from None
    if backup:
        message = f"Saved your version as {backup}\nReset {target} to a fresh copy."
    else:
        message = f"Created a fresh copy at {target}."
    message += "\nIf the notebook is open in JupyterLab, reload it from disk (File → Reload Notebook from Disk)."
    return ResetOutcome(exercise.name, target, backup, message)


def _write_backup(folder: Path, name: str, content: bytes, now: _dt.datetime) -> Path:
    stamp = now.strftime("%Y%m%d-%H%M%S")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for attempt in range(1, 1000):
            suffix = "" if attempt == 1 else f"-{attempt}"
            path = folder / f"{name}-{stamp}{suffix}.ipynb"
            try:
                with open(path, "xb") as handle:  # "x": never overwrite an earlier backup
                    handle.write(content)
                    handle.flush()
                    os.fsync(handle.fileno())
            except FileExistsError:
                continue
            if path.read_bytes() != content:
                raise OSError(f"the backup {path} does not read back identical")
            return path
        raise OSError("too many backups with the same time stamp")
    except OSError as exc:
        raise ExerciseToolError(
            f"Could not save a backup of your notebook in {folder} ({getattr(exc, 'strerror', None) or exc}). "
            "Nothing was changed: your notebook is as you left it."
        ) from None


def _atomic_write(target: Path, content: bytes) -> None:
    temporary = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    try:
        with open(temporary, "wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    finally:
        if temporary.exists():
            temporary.unlink()


# --------------------------------------------------------------------------- progress


@dataclass
class ProgressRow:
    exercise: str
    state: str  # passes | in progress | not started | error | timeout | missing
    checks: list[dict] = field(default_factory=list)
    detail: str = ""


def progress(
    exercises_dir: Path | None = None,
    names: list[str] | None = None,
    timeout: float = 60.0,
    jobs: int = 2,
    echo: Callable[[str], None] | None = print,
) -> list[ProgressRow]:
    """Run each learner notebook headless and report which exercises pass; print a table if ``echo``."""
    exercises_dir = _check_dir(Path(exercises_dir) if exercises_dir else default_exercises_dir())
    chosen = [resolve(name) for name in names] if names else list(EXERCISES.values())
    rows: dict[str, ProgressRow] = {}
    items = []
    for exercise in chosen:
        path = generate.learner_path(exercises_dir, exercise.name)
        if path.exists():
            items.append((path, exercise.name))
        else:
            rows[exercise.name] = ProgressRow(
                exercise.name, "missing", detail=f"no {path.name}: `exercises reset {exercise.name}` makes a fresh one"
            )
    if echo and items:
        echo(f"Running {len(items)} exercise notebook(s), each in a fresh kernel (this takes a few seconds each)...")
    for run in run_notebooks(items, timeout=timeout, jobs=jobs):
        rows[run.exercise] = _progress_row(run)
    ordered = [rows[exercise.name] for exercise in chosen]
    if echo:
        echo(format_progress(ordered))
    return ordered


def _progress_row(run: NotebookRun) -> ProgressRow:
    outcome = run.outcome
    if outcome == "pass":
        return ProgressRow(run.exercise, "passes", run.checks)
    if outcome == "timeout":
        return ProgressRow(run.exercise, "timeout", run.checks, f"the notebook did not finish ({run.detail})")
    if run.status != "ran":
        return ProgressRow(run.exercise, "error", run.checks, run.detail)
    if all(check["status"] == "not_implemented" for check in run.checks):
        return ProgressRow(run.exercise, "not started", run.checks)
    detail = run.cell_errors[0] if run.cell_errors else ""
    return ProgressRow(run.exercise, "in progress", run.checks, detail)


_ICON = {"passes": "✅", "in progress": "🔧", "not started": "⏳", "error": "❌", "timeout": "⌛", "missing": "❔"}
_CHECK_ICON = {"passed": "✅", "failed": "❌", "error": "❌", "not_implemented": "⏳", "missing": "❔", "timeout": "⌛"}


def format_progress(rows: list[ProgressRow]) -> str:
    lines = []
    for row in rows:
        checks = "  ".join(f"{_CHECK_ICON.get(c['status'], '?')} {c['function']}" for c in row.checks)
        lines.append(f"{_ICON[row.state]} {row.exercise:<26} {row.state:<12} {checks}".rstrip())
        if row.detail:
            lines.append(f"   {row.detail}")
    done = sum(row.state == "passes" for row in rows)
    lines.append(f"{done} of {len(rows)} exercises pass.")
    if any(row.state in ("in progress", "error") for row in rows):
        lines.append("Open an exercise and run its check cells to see the hints.")
    return "\n".join(lines)


# --------------------------------------------------------------------------- build


def build(
    exercises_dir: Path | None = None, execute: bool = False, timeout: float = 120.0, echo=print
) -> list[tuple[str, bool]]:
    """Generate the learner notebooks; with ``execute``, first re-run the solutions in place and require every check to pass.

    A learner notebook that is about to change is first saved to ``backups/`` (as ``reset`` does), so running
    ``build`` by mistake never loses a learner's work. Every solution is read and every learner notebook generated
    before anything is written: one malformed solution notebook leaves every file as it was.
    """
    exercises_dir = require_solutions(Path(exercises_dir) if exercises_dir else default_exercises_dir())
    fresh_texts = _generate_all(exercises_dir)  # validate everything first ...
    if execute:
        execute_solutions(exercises_dir, timeout=timeout, echo=echo)
        fresh_texts = _generate_all(exercises_dir)  # the executed solutions carry new outputs; regenerate from them
    results = []
    for name in EXERCISES:  # ... then write
        fresh = fresh_texts[name]
        target = generate.learner_path(exercises_dir, name)
        old = target.read_bytes() if target.exists() else None
        backup = None
        if old is not None and old != fresh:
            # a learner may have worked in this file: keep it, exactly as for reset
            backup = _write_backup(exercises_dir / "backups", name, old, _dt.datetime.now())
        if old != fresh:
            _atomic_write(target, fresh)
        results.append((name, old != fresh))
        if echo:
            state = "written" if old != fresh else "up to date"
            echo(f"  {name:<26} {state}" + (f" (the previous version is saved as {backup})" if backup else ""))
    return results


def _generate_all(exercises_dir: Path) -> dict[str, bytes]:
    texts = {}
    for name in EXERCISES:
        try:
            texts[name] = generate.generate_text(exercises_dir, name).encode("utf-8")
        except generate.GenerationError as exc:
            raise ExerciseToolError(f"{exc}. Nothing was written.") from None
    return texts


def execute_solutions(exercises_dir: Path, timeout: float = 120.0, echo=print) -> None:
    """Run each solution notebook top to bottom in a fresh kernel and store its outputs (execution counts in order).

    Every solution runs first; the files are written only when all of them ran and every check passed.
    """
    import subprocess

    from nbclient import NotebookClient

    failures = []
    executed = []
    for name in EXERCISES:
        path = generate.solution_path(exercises_dir, name)
        try:
            notebook = generate.read_solution(path)
        except generate.GenerationError as exc:
            raise ExerciseToolError(f"{exc}. Nothing was written.") from None
        client = NotebookClient(
            notebook,
            kernel_name="python3",
            timeout=int(timeout),
            record_timing=False,
            shutdown_kernel="immediate",
            resources={"metadata": {"path": str(path.parent)}},
        )
        try:
            client.execute(stderr=subprocess.DEVNULL)
        except Exception as exc:  # a solution cell raised or hung: say which, leave the file as it was
            first = re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).strip().splitlines()[-1:] or [type(exc).__name__]
            raise ExerciseToolError(f"solutions/{path.name} does not run: {first[0]}. Nothing was written.") from None
        for cell in notebook.cells:
            cell.metadata.pop("execution", None)
            if generate.checks_output(cell):
                text = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")
                if not text.startswith("✅") or "❌" in text or "⏳" in text:
                    failures.append(f"{name}: {text.strip() or 'no output'}")
        executed.append((path, notebook))
        if echo:
            echo(f"  executed solutions/{path.name}")
    if failures:
        raise ExerciseToolError("Some solution checks do not pass (nothing was written):\n" + "\n".join(failures))
    for path, notebook in executed:
        path.write_text(generate.render(notebook), encoding="utf-8")
