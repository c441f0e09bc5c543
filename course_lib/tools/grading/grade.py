"""Grading a class: ``python -m course_lib exercises grade SUBMISSIONS --out RESULTS``.

The verdict comes from this process, which never runs a submission's code. For each submitted notebook it

1. reads the file (never through a symbolic link, at most 20 MB) and checks that it is a notebook;
2. runs the whole notebook, as the learner ran it, in a separate, sandboxed process (``sandbox``: bubblewrap where
   the machine allows it, with a copy of the course package that lacks what the exercise grades) under ``serve``,
   which then answers this process's calls;
3. draws each check's inputs here, under a salt drawn for each check, sends them as plain tensors (``wire``), gets
   back what the learner's function returned (and, where a check asks, the inputs' gradients), and computes the
   expected values and the verdict here (``remote.judge``: the checks' own code and messages). Nothing the
   notebook writes is read as a verdict, so replacing the checks, printing fake results or forging a reply gains
   nothing; a graded function that is a near-verbatim copy of course_lib's is flagged for the instructor.

4. where a check fails only because a function it calls carries a mistake an earlier check of the notebook named,
   says so in that check's result (``explain_knock_ons``).

Points have one meaning everywhere: ``gradebook.marks`` counts them (partial credit for a named mistake, weights per
exercise from ``gradebook.yaml`` or ``--gradebook CONFIG``). It writes ``scores.md`` (table of outcome, checks
passed and points, first-line diagnosis of every failed check, skipped files), ``scores.csv`` (one row per learner:
outcome, checks passed and points per exercise, one column per check), ``checks.csv`` (one row per check), and
through ``gradebook.write`` one feedback file per student (``feedback/<student>.md`` and ``.html``), ``canvas.csv``
and ``moodle.csv`` (the LMS imports). Several notebooks are graded at once (``jobs``).
"""

from __future__ import annotations

import csv
import datetime as _dt
import io
import json
import math
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from course_lib.checks import EXERCISES
from course_lib.tools.exercises.files import OUTCOMES, ExerciseToolError, resolve
from course_lib.tools.grading import gradebook, sandbox
from course_lib.tools.grading.runner import RunResult

MAX_NOTEBOOK_BYTES = 20 * 1024 * 1024
STARTUP_SECONDS = 20.0  # Python, torch and IPython starting inside the sandbox on a busy machine
CHECK_CALLS = 6  # the checks' calls together may take this many single-call limits
CHECK_STATUS = {
    "passed": "pass",
    "failed": "fail",
    "error": "error",
    "not_implemented": "not_implemented",
    "timeout": "timeout",
    "missing": "missing",
}


@dataclass
class Submission:
    learner: str
    exercise: str
    path: Path


@dataclass
class Graded(RunResult):
    """What happened to one submitted notebook (``outcome``: the rule in ``runner.RunResult``).

    status: ``"ran"`` (its cells ran, some may have raised), ``"timeout"`` (a cell, or the whole notebook, ran out
    of time), ``"crashed"`` (the process died or returned nothing readable), ``"unreadable"`` (not a notebook) or
    ``"too_much_output"``. checks: judged by the grader, not read from the notebook.
    """

    sandboxed: bool = False
    flags: list[str] = field(default_factory=list)  # for the instructor: e.g. a graded function copied from course_lib


@dataclass
class GradeReport:
    learners: list[str]
    exercises: list[str]
    cells: dict[tuple[str, str], Graded | None]
    skipped: list[tuple[Path, str]]
    markdown: Path
    csv: Path
    sandbox: sandbox.SandboxStatus | None = None
    files: list[Path] = field(default_factory=list)
    config: gradebook.Config = field(default_factory=gradebook.Config)  # how points are counted (``gradebook``)

    def mark(self, learner: str, exercise: str) -> gradebook.ExerciseMark:
        return gradebook.exercise_mark(exercise, self.cells.get((learner, exercise)), self.config)


# --------------------------------------------------------------------------- finding the submissions


def discover(submissions_dir: Path) -> tuple[list[Submission], list[tuple[Path, str]]]:
    """Find the submitted notebooks. Two layouts (they may be mixed):

    - one subfolder per learner: ``SUBMISSIONS/alice/ex02_attention.ipynb`` (nested folders are searched too)
    - flat files: ``SUBMISSIONS/alice__ex02_attention.ipynb`` (learner, two underscores, exercise)

    The exercise is read from the start of the file name (``ex02``, ``ex02_attention``, ``ex2_anything``).
    Symbolic links are never followed. Returns the submissions and every file skipped, with the reason.
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

    def file_problem(path: Path) -> str | None:
        if path.is_symlink():
            return "a symbolic link: links are not followed"
        if not path.is_file():
            return "not a regular file"
        return None

    for entry in sorted(Path(submissions_dir).iterdir()):
        if entry.name.startswith(".") or entry.name.startswith("_"):
            continue
        if entry.is_symlink():
            skipped.append((entry, "a symbolic link: links are not followed"))
        elif entry.is_dir():
            for folder, dirs, files in os.walk(entry, followlinks=False):
                here = Path(folder)
                for name in sorted(dirs):
                    if (here / name).is_symlink():
                        skipped.append((here / name, "a symbolic link: links are not followed"))
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not (here / d).is_symlink())
                for name in sorted(files):
                    path = here / name
                    if name.startswith(".") or name.endswith("-checkpoint.ipynb"):
                        continue
                    problem = file_problem(path)
                    if problem:
                        skipped.append((path, problem))
                    elif path.suffix != ".ipynb":
                        skipped.append((path, "not a notebook (.ipynb)"))
                    else:
                        add(entry.name, path.stem, path)
        elif entry.suffix == ".ipynb":
            problem = file_problem(entry)
            learner, sep, stem = entry.stem.partition("__")
            if problem:
                skipped.append((entry, problem))
            elif not sep or not learner:
                skipped.append((entry, "a top-level file must be named LEARNER__exNN_name.ipynb"))
            else:
                add(learner, stem, entry)
        else:
            skipped.append((entry, "not a notebook (.ipynb)"))
    ordered = sorted(submissions.values(), key=lambda s: (s.learner, s.exercise))
    return ordered, skipped


def _exercise_from_stem(stem: str) -> str | None:
    import re

    from course_lib._syllabus import current_exercise

    match = re.match(r"ex0*(\d+)(?:_|\b|$)", current_exercise(stem), flags=re.IGNORECASE)
    if not match:
        return None
    for exercise in EXERCISES:
        if int(exercise[2:4]) == int(match.group(1)):
            return exercise
    return None


def read_submission(path: Path) -> bytes:
    """The file's bytes, opened without following a symbolic link; at most ``MAX_NOTEBOOK_BYTES``."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    descriptor = os.open(path, flags)
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("not a regular file")
        if info.st_size > MAX_NOTEBOOK_BYTES:
            raise ValueError(f"larger than {MAX_NOTEBOOK_BYTES // (1024 * 1024)} MB")
        with os.fdopen(os.dup(descriptor), "rb") as handle:
            return handle.read(MAX_NOTEBOOK_BYTES + 1)[:MAX_NOTEBOOK_BYTES]
    finally:
        os.close(descriptor)


def _notebook_problem(data: bytes) -> str | None:
    try:
        notebook = json.loads(data.decode("utf-8-sig"))  # a byte-order mark some editors write is not an error
    except (UnicodeDecodeError, ValueError) as exc:
        return f"not a valid notebook ({type(exc).__name__}: {str(exc)[:150]})"
    except RecursionError:
        return "not a valid notebook (its JSON is nested too deeply)"
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        return "not a valid notebook (no list of cells)"
    return None


# --------------------------------------------------------------------------- grading one notebook


def grade_notebook(
    path: Path,
    exercise: str,
    timeout: float = 60.0,
    use_sandbox: bool | None = None,
    hidden: list[Path] | None = None,
    course_root: Path | None = None,
) -> Graded:
    """Run one notebook in a sandboxed process, call its functions from here and judge them. Never raises for a bad
    notebook.

    ``timeout`` is for the notebook's cells; each call of a check then gets ``min(5 s, timeout / 10)`` (a check
    that lets the learner's code train, its own limit), and the process is killed, with everything it started, at
    ``timeout`` plus ``CHECK_CALLS`` call limits, the training checks' time and ``STARTUP_SECONDS``.
    ``course_root``: the copy of the course package for ``exercise`` (``sandbox.course_copy``), made here if None.
    """
    from course_lib.checks import calling
    from course_lib.tools.grading import remote

    status = sandbox.probe()
    sandboxed = status.available if use_sandbox is None else (use_sandbox and status.available)
    graded = Graded(str(path), exercise, "ran", sandboxed=sandboxed)
    try:
        data = read_submission(Path(path))
    except (OSError, ValueError) as exc:
        graded.status, graded.detail = (
            "unreadable",
            f"could not read the file ({getattr(exc, 'strerror', None) or exc})",
        )
        return graded
    problem = _notebook_problem(data)
    if problem:
        graded.status, graded.detail = "unreadable", problem
        return graded
    graded.flags = copied_references(data, exercise)
    staging = Path(tempfile.mkdtemp(prefix="course-grade-"))
    session = None
    try:
        inside = staging / "in"
        inside.mkdir()
        (inside / "notebook.ipynb").write_bytes(data)
        _stage_modules(Path(path), inside)
        if course_root is None:
            course_root = sandbox.course_copy(exercise, staging / "course")
        os.chmod(staging, 0o755)
        os.chmod(inside, 0o755)
        work = staging / "work"
        work.mkdir(mode=0o777)
        os.chmod(work, 0o777)
        call_seconds = min(calling.TIME_LIMIT, max(0.5, timeout / 10))
        notebook = "/tmp/in/notebook.ipynb" if sandboxed else str(inside / "notebook.ipynb")
        serve = [sys.executable, "-m", "course_lib.tools.grading.serve", notebook, f"{timeout:g}"]
        extra = calling.extra_seconds(EXERCISES[exercise].specs)  # a check that lets the learner's code train
        hard_limit = timeout + CHECK_CALLS * call_seconds + extra + STARTUP_SECONDS
        if sandboxed:
            command = sandbox.bwrap_command(serve, inside, hidden or [], course_root=course_root)
            env, cwd, user = None, None, None
        else:
            command, cwd, user = serve, work, None
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work), "TMPDIR": str(work), "MPLBACKEND": "Agg",
                   "MPLCONFIGDIR": str(work / ".matplotlib"), "IPYTHONDIR": str(work / ".ipython"), "PYTHONDONTWRITEBYTECODE": "1",
                   "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "LANG": "C.UTF-8", "PYTHONPATH": str(course_root)}  # fmt: skip
            for module in inside.glob("*.py"):
                shutil.copyfile(module, work / module.name)
        session = sandbox.Session(command, hard_limit, env=env, cwd=cwd, user=user)
        try:
            ready = session.receive(timeout + STARTUP_SECONDS)
        except remote.SessionLost as exc:
            ready = None
            graded.status = "timeout" if session.timed_out or "no answer" in str(exc) else "crashed"
            graded.detail = (
                "the cells did not finish in time and the notebook was stopped, with every process it started"
                if graded.status == "timeout"
                else f"the notebook wrote into the grader's channel while its cells ran, and was stopped ({exc})"
                if "something else than the grader's frames" in str(exc)
                else f"the notebook's process died while its cells ran ({exc})"
            )
            if session.too_much_output:
                graded.status = "too_much_output"
                graded.detail = f"the notebook wrote more than {sandbox.OUTPUT_BYTES // (1024 * 1024)} MB to the grader"
        if ready is not None:
            _read_ready(graded, ready)
        ask = session.ask if ready is not None and graded.status != "unreadable" else None
        graded.checks = remote.judge(exercise, ask, call_seconds)
        explain_knock_ons(exercise, graded.checks, ask, call_seconds)
        graded.seconds = session.seconds
        return graded
    finally:
        if session is not None:
            session.close()
        shutil.rmtree(staging, ignore_errors=True)


MAX_MODULES, MAX_MODULE_BYTES = 20, 1024 * 1024


def _stage_modules(notebook: Path, into: Path) -> None:
    """The Python modules beside a notebook in a learner's folder (a submission may be a folder): regular files only,
    never through a link, at most ``MAX_MODULES`` of at most 1 MB each."""
    folder = notebook.parent
    if "__" in notebook.stem:  # a flat file LEARNER__exNN.ipynb: the folder is the whole class's
        return
    modules = sorted(p for p in folder.glob("*.py") if not p.is_symlink() and p.is_file())[:MAX_MODULES]
    for module in modules:
        try:
            if module.stat().st_size <= MAX_MODULE_BYTES:
                (into / module.name).write_bytes(read_submission(module))
                os.chmod(into / module.name, 0o644)
        except (OSError, ValueError):
            continue


def _read_ready(graded: Graded, ready: dict) -> None:
    """What the sandbox said about the cells (the notebook could have written it: it is shown, never trusted)."""
    if isinstance(ready.get("unreadable"), str):
        graded.status, graded.detail = "unreadable", f"not a valid notebook ({ready['unreadable'][:200]})"
        return
    errors = ready.get("cell_errors")
    if isinstance(errors, list):
        graded.cell_errors = [str(error)[:300] for error in errors if isinstance(error, str)][:20]
    stopped = ready.get("stopped_cell")
    if isinstance(stopped, int) and not isinstance(stopped, bool):
        graded.status = "timeout"
        graded.detail = f"code cell {stopped} did not finish within the time for the cells; later cells did not run"


def copied_references(data: bytes, exercise: str, threshold: float = 0.98) -> list[str]:
    """The graded functions of the notebook that are near-verbatim copies of course_lib's implementation (the same
    statements once names and docstrings are set aside): flagged for the instructor, never failed for it here."""
    import ast
    import difflib
    import importlib
    import inspect
    import textwrap

    def shape(node) -> list[str]:
        """The statements' structure with every name, argument and constant replaced by its kind."""
        names: dict[str, str] = {}
        body = [
            n for n in getattr(node, "body", []) if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))
        ]
        tokens = []
        for child in ast.walk(ast.Module(body=body, type_ignores=[])):
            if isinstance(child, ast.Name):
                tokens.append(names.setdefault(child.id, f"v{len(names)}"))
            elif isinstance(child, ast.arg):
                tokens.append(names.setdefault(child.arg, f"v{len(names)}"))
            elif isinstance(child, ast.Attribute):
                tokens.append("." + child.attr)
            elif isinstance(child, ast.Constant):
                tokens.append("const")
            elif not isinstance(child, (ast.Load, ast.Store, ast.expr_context)):
                tokens.append(type(child).__name__)
        return tokens

    try:
        notebook = json.loads(data.decode("utf-8-sig"))
        sources = ["".join(c.get("source", "")) if isinstance(c.get("source"), list) else str(c.get("source", ""))
                   for c in notebook.get("cells", []) if isinstance(c, dict) and c.get("cell_type") == "code"]  # fmt: skip
    except Exception:
        return []
    functions: dict[str, ast.AST] = {}
    for source in sources:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions[node.name] = node
    graded = {spec.function for spec in EXERCISES[exercise].specs}
    flags = []
    references = []
    for dotted in EXERCISES[exercise].withheld:
        module, qualified = dotted.split(":")
        try:
            target = importlib.import_module(module)
            for part in qualified.split("."):
                target = getattr(target, part)
            references.append((dotted, shape(ast.parse(textwrap.dedent(inspect.getsource(target))).body[0])))
        except Exception:
            continue
    for name in sorted(graded & functions.keys()):
        mine = shape(functions[name])
        for dotted, theirs in references:
            if len(mine) >= 12 and difflib.SequenceMatcher(None, mine, theirs, autojunk=False).ratio() >= threshold:
                flags.append(f"{name} is a near-verbatim copy of course_lib's {dotted.replace(':', '.')}")
                break
    return flags


# --------------------------------------------------------------------------- a failure that follows from another

#: A failed check's own verdicts that a knock-on can explain: wrong values (not a wrong dtype, a changed input, a
#: delegation to course_lib or a gradient problem, which a right upstream function would not mend).
KNOCK_ON_VERDICTS = (None, "wrong_values")


class _Unexplained(Exception):
    """The upstream function was called in a way the learner's version of it does not take."""


def upstream_implementations(exercise: str) -> dict[str, tuple[str, str]]:
    """``check name → (module, function)``: course_lib's implementation of the function an earlier check grades,
    where a later function may call it. The rule the sandbox follows (``sandbox.course_copy``): a withheld top-level
    function with the name of a graded function is the learner's own while the notebook is graded."""
    functions = {}
    for dotted in EXERCISES[exercise].withheld:
        module, qualified = dotted.split(":", 1)
        functions.setdefault(qualified, (module, qualified))
    return {spec.name: functions[spec.function] for spec in EXERCISES[exercise].specs if spec.function in functions}


def explain_knock_ons(exercise: str, checks: list[dict], ask, seconds: float) -> None:
    """Mark each failed check that fails only because of a named mistake in an earlier check's function.

    For a check D that failed with wrong values and an earlier check U of the notebook that failed with one of its
    catalogued mistakes, the grader rebuilds D's tests (under a new salt), calls the learner's D, and computes D's
    reference with course_lib's version of U's function replaced by the learner's own (called in the sandbox, as
    the learner's D would call it). When the learner's D equals that on every test, and it differs from the right
    answer on at least one, D's failure is the upstream mistake carried along: ``entry["explained_by"] = U``. A D
    wrong in any other way (its own bug, with or without the upstream one) matches on no such test and stays as it
    is. Never raises; does nothing without ``ask``.
    """
    from course_lib.tools.grading import remote

    if ask is None:
        return
    specs = EXERCISES[exercise].specs
    by_check = {entry.get("check"): entry for entry in checks}
    named = gradebook.named_mistakes(exercise, checks)
    implementations = upstream_implementations(exercise)
    upstream = [spec for spec in specs if spec.name in named and spec.name in implementations]
    for index, spec in enumerate(specs):
        entry = by_check.get(spec.name)
        if entry is None or entry.get("status") != "failed" or spec.reference is None:
            continue
        if entry.get("mistake") not in KNOCK_ON_VERDICTS:
            continue
        for earlier in (u for u in upstream if specs.index(u) < index):
            try:
                if _follows_from(spec, earlier, implementations[earlier.name], ask, seconds):
                    entry["explained_by"] = earlier.name
                    break
            except remote.SessionLost:
                return
            except Exception:  # anything unexpected: the failure stays unexplained
                continue


def _follows_from(spec, upstream, implementation: tuple[str, str], ask, seconds: float) -> bool:
    """Does the learner's ``spec.function`` equal ``spec.reference`` with course_lib's ``implementation`` replaced
    by the learner's ``upstream.function``, on every test of ``spec``, and differ from the right answer on one?"""
    import importlib
    import inspect

    import torch

    from course_lib.checks.calling import _clone
    from course_lib.checks.judging import same
    from course_lib.checks.spec import new_salt, salt_scope
    from course_lib.tools.grading import remote

    module_name, name = implementation
    original = getattr(importlib.import_module(module_name), name)
    signature = inspect.signature(original)
    parameters = list(signature.parameters.values())
    learner_upstream = remote.RemoteCalls(ask, upstream.function, seconds)
    learner_downstream = remote.RemoteCalls(ask, spec.function, seconds)
    calls = [0]

    def learners_version(*args, **kwargs):
        """course_lib's function called as the reference calls it, answered by the learner's (``_graded.forward``:
        trailing arguments left at their defaults are dropped, as the learner's signature leaves them out)."""
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        values = list(bound.arguments.values())
        while len(values) > len(upstream.arg_names):
            default = parameters[len(values) - 1].default
            if default is inspect.Parameter.empty or not (values[-1] is default or values[-1] == default):
                raise _Unexplained(f"{name} is called with {parameters[len(values) - 1].name}={values[-1]!r}")
            values.pop()
        if len(values) != len(upstream.arg_names):
            raise _Unexplained(f"{name} takes other arguments than the learner's {upstream.function}")
        calls[0] += 1
        plain = tuple(v.detach().clone() if isinstance(v, torch.Tensor) else v for v in values)
        return learner_upstream.call(upstream, 1000 + calls[0], plain)

    patched = [
        module
        for module_key, module in list(sys.modules.items())
        if module_key.split(".")[0] == "course_lib" and getattr(module, name, None) is original
    ]
    differs = False
    with salt_scope(new_salt()):
        for number, case in enumerate(spec.cases, 1):
            args = case.build()[0]
            value = learner_downstream.call(spec, number, _clone(args))  # raises what the learner's code raised
            expected = case.build()[1]
            try:
                for module in patched:
                    setattr(module, name, learners_version)
                with torch.no_grad():
                    carried = spec.reference(*_clone(args))
            finally:
                for module in patched:
                    setattr(module, name, original)
            if calls[0] == 0 or not same(value, carried, spec.atol, spec.rtol):
                return False
            differs = differs or not same(carried, expected, spec.atol, spec.rtol)
    return differs


# --------------------------------------------------------------------------- grading a class


def _check_timeout(timeout: float) -> float:
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not math.isfinite(timeout) or timeout <= 0:
        raise ExerciseToolError(f"--timeout must be a positive number of seconds, got {timeout!r}.")
    if timeout > 24 * 3600:
        raise ExerciseToolError(f"--timeout must be at most a day ({24 * 3600} s), got {timeout:g}.")
    return float(timeout)


def grade(
    submissions_dir: Path,
    out_dir: Path,
    timeout: float = 60.0,
    jobs: int | None = None,
    echo: Callable[[str], None] | None = print,
    exercises: list[str] | None = None,
    require_sandbox: bool = False,
    config: gradebook.Config | None = None,
    roster: list | None = None,
) -> GradeReport:
    """Run every submitted notebook in a sandbox (with a time limit each), judge it here, and write the reports.

    Writes ``scores.md``, ``scores.csv``, ``checks.csv``, ``feedback/<student>.md`` and ``.html``, ``canvas.csv`` and
    ``moodle.csv`` into ``out_dir``, every one with the points ``config`` counts (``gradebook.yaml`` when None). A
    submission that crashes, raises or hangs is recorded as ``error`` or ``timeout``; it never stops the grading.
    The submissions are only read. ``exercises``: grade only these (others found are listed as skipped).
    ``roster``: ``roster.Student`` list (names and sections; a student on it who submitted nothing gets a row, 0
    points everywhere).
    """
    config = config or gradebook.load_config()
    timeout = _check_timeout(timeout)
    jobs = os.cpu_count() or 1 if jobs is None else jobs
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ExerciseToolError(f"--jobs must be a whole number of at least 1, got {jobs!r}.")
    submissions_dir, out_dir = Path(submissions_dir), Path(out_dir)
    if not submissions_dir.is_dir():
        raise ExerciseToolError(
            f"{submissions_dir} is not a folder. Pass the folder that holds the submitted notebooks."
        )
    inside = out_dir.resolve() == submissions_dir.resolve() or submissions_dir.resolve() in out_dir.resolve().parents
    if inside:
        raise ExerciseToolError(
            "--out must be outside the submissions folder: grading never writes into the submissions."
        )
    assigned = [resolve(name).name for name in exercises] if exercises else list(EXERCISES)
    assigned = [name for name in EXERCISES if name in set(assigned)]
    status = sandbox.probe()
    if not status.available and require_sandbox:
        raise ExerciseToolError(f"No sandbox on this machine: {status.reason}. Nothing was graded (--require-sandbox).")
    found, skipped = discover(submissions_dir)
    submissions = [s for s in found if s.exercise in assigned]
    skipped += [
        (s.path, f"{s.exercise} is not among the exercises graded (--exercise)")
        for s in found
        if s.exercise not in assigned
    ]
    if not submissions:
        raise ExerciseToolError(
            f"No notebooks of {'the chosen exercises' if exercises else 'any exercise'} found in {submissions_dir}. "
            "Expected one subfolder per learner (alice/ex02_attention.ipynb) or files named alice__ex02_attention.ipynb."
        )
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ExerciseToolError(f"Could not create the output folder {out_dir} ({exc.strerror or exc}).") from None
    if echo:
        if status.available:
            echo(f"Sandbox: {status.reason}.")
        else:
            echo(_warning(status))
        echo(
            f"Grading {len(submissions)} notebook(s) from {len({s.learner for s in submissions})} learner(s), "
            f"{', '.join(assigned)}; {timeout:g} s for each notebook's cells, {jobs} at a time..."
        )
    solutions = Path(__file__).resolve().parents[3] / "exercises" / "solutions"
    copies = Path(tempfile.mkdtemp(prefix="course-copies-"))
    os.chmod(copies, 0o755)
    try:
        roots = {e: sandbox.course_copy(e, copies / e) for e in sorted({s.exercise for s in submissions})}
        hidden = [submissions_dir, out_dir, solutions]
        results = _grade_all(submissions, timeout, hidden, roots, jobs, echo, config)
    finally:
        shutil.rmtree(copies, ignore_errors=True)
    learners = sorted({s.learner for s in submissions} | {s.student_id for s in roster or []})
    cells: dict[tuple[str, str], Graded | None] = {(learner, e): None for learner in learners for e in assigned}
    for submission, graded in zip(submissions, results):
        cells[(submission.learner, submission.exercise)] = graded
    report = GradeReport(
        learners, assigned, cells, skipped, out_dir / "scores.md", out_dir / "scores.csv", status, config=config
    )
    outputs = {
        "scores.md": score_markdown(report, submissions_dir, timeout),
        "scores.csv": score_csv(report),
        "checks.csv": checks_csv(report),
    }
    for name, text in outputs.items():
        (out_dir / name).write_text(text, encoding="utf-8")
        report.files.append(out_dir / name)
    handed_back = gradebook.write(report, out_dir, config, roster)
    report.files += handed_back
    if echo:
        feedback = [p for p in handed_back if p.parent.name == "feedback"]
        echo(
            f"Wrote {', '.join(str(p) for p in report.files if p.parent == out_dir)}, "
            f"and {len(feedback)} feedback files in {out_dir / 'feedback'}."
        )
        if skipped:
            echo(f"Skipped {len(skipped)} file(s):")
            for path, reason in skipped:
                echo(f"  {path}: {reason}")
        if not status.available:
            echo(_warning(status))
    return report


def _grade_one(submission: Submission, timeout: float, hidden: list[Path], root: Path) -> Graded:
    from course_lib.tools.grading import remote

    try:
        return grade_notebook(submission.path, submission.exercise, timeout, hidden=hidden, course_root=root)
    except Exception as exc:  # a fault of ours or of the machine: this row says so; the class is still graded
        graded = Graded(str(submission.path), submission.exercise, "error")
        graded.detail = f"the grader could not grade this notebook ({type(exc).__name__}: {str(exc)[:150]})"
        graded.checks = remote.judge(submission.exercise, None)
        return graded


def _grader_process(threads: int) -> None:
    """The start of a grading process: torch computes on ``threads`` threads (the judge's reference models)."""
    import torch

    torch.set_num_threads(threads)


def _grade_all(submissions, timeout, hidden, roots, jobs, echo, config: gradebook.Config) -> list[Graded]:
    """Grade every submission, ``jobs`` at a time, each in a process of its own: the checks build their inputs and
    reference models with torch's random generators, which threads would share (and race on)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    def done(submission: Submission, graded: Graded) -> None:
        if echo:
            mark = gradebook.exercise_mark(submission.exercise, graded, config)
            echo(
                f"  {submission.learner:<20} {submission.exercise:<26} {graded.outcome:<8} "
                f"{_checks_text(mark):<14} {_points_text(mark)} ({graded.seconds:.1f} s)"
            )

    results: list[Graded | None] = [None] * len(submissions)
    if jobs == 1 or len(submissions) == 1:
        for index, submission in enumerate(submissions):
            results[index] = _grade_one(submission, timeout, hidden, roots[submission.exercise])
            done(submission, results[index])
        return results
    # On Linux a grading process is a fork of this one, which has imported torch and the checks already: a process
    # started fresh imports them again, 2 CPU-seconds each (30 notebooks at --jobs 2: 23 s instead of 27). It
    # computes on its share of the cores, since the sandboxes beside it compute too.
    workers = min(jobs, len(submissions))
    start = "fork" if sys.platform.startswith("linux") else "spawn"
    context = multiprocessing.get_context(start)
    from course_lib.lab.training import available_cores  # a container's CPU quota counts too

    threads = max(1, available_cores() // workers)
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_grader_process, initargs=(threads,)) as pool:
        futures = {
            pool.submit(_grade_one, submission, timeout, hidden, roots[submission.exercise]): index
            for index, submission in enumerate(submissions)
        }
        from concurrent.futures import as_completed

        for future in as_completed(futures):
            index = futures[future]
            try:
                results[index] = future.result()
            except Exception as exc:  # the grading process itself died
                graded = Graded(str(submissions[index].path), submissions[index].exercise, "error")
                graded.detail = f"the grader could not grade this notebook ({type(exc).__name__})"
                results[index] = graded
            done(submissions[index], results[index])
    return results


def _warning(status: sandbox.SandboxStatus) -> str:
    return (
        "WARNING: NOT SANDBOXED. " + status.reason + ". The submissions run as this user and can read and change "
        "your files, the network and other processes (time, memory and file-size limits still apply). Grade "
        "untrusted submissions only where bubblewrap works, or in a throw-away container; --require-sandbox refuses "
        "to grade without one."
    )


# --------------------------------------------------------------------------- reports


def _outcome(graded: Graded | None) -> str:
    return "missing" if graded is None else graded.outcome


def _points_text(mark: gradebook.ExerciseMark) -> str:
    return f"{gradebook._number(mark.points)} / {gradebook._number(mark.possible)} points"


def _checks_text(mark: gradebook.ExerciseMark) -> str:
    return f"{mark.passed}/{len(mark.checks)} checks"


def _counts(report: GradeReport, learner: str) -> dict:
    counts: dict = {outcome: 0 for outcome in OUTCOMES}
    marks = [report.mark(learner, exercise) for exercise in report.exercises]
    for exercise in report.exercises:
        counts[_outcome(report.cells[(learner, exercise)])] += 1
    counts["checks_passed"] = sum(mark.passed for mark in marks)
    counts["checks"] = sum(len(mark.checks) for mark in marks)
    counts["points"] = gradebook._number(gradebook._round(sum(mark.points for mark in marks)))
    counts["points_possible"] = gradebook._number(gradebook._round(sum(mark.possible for mark in marks)))
    return counts


def _check_status(graded: Graded | None, check: str) -> str:
    if graded is None:
        return "missing"
    for entry in graded.checks:
        if entry.get("check") == check:
            return CHECK_STATUS.get(entry.get("status"), "error")
    return "error"


def _cell(text) -> str:
    """A CSV field a spreadsheet will not run as a formula."""
    text = str(text)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def score_csv(report: GradeReport) -> str:
    """One row per learner: per exercise its outcome, checks passed, points (``gradebook``: partial credit, weights)
    and each check's result; then the counts of outcomes, checks passed and points."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")  # a field holding CR or LF is quoted
    header = ["student_id"]
    for exercise in report.exercises:
        header += [exercise, f"{exercise} checks passed", f"{exercise} points", f"{exercise} possible"]
        header += [f"{exercise}:{spec.name}" for spec in EXERCISES[exercise].specs]
    header += [*OUTCOMES, "checks_passed", "checks", "points", "points_possible"]
    writer.writerow(header)
    for learner in report.learners:
        counts = _counts(report, learner)
        row = [_cell(learner)]
        for exercise in report.exercises:
            graded = report.cells[(learner, exercise)]
            mark = report.mark(learner, exercise)
            row += [_outcome(graded), mark.passed, gradebook._number(mark.points), gradebook._number(mark.possible)]
            row += [_check_status(graded, spec.name) for spec in EXERCISES[exercise].specs]
        row += [counts[key] for key in (*OUTCOMES, "checks_passed", "checks", "points", "points_possible")]
        writer.writerow(row)
    return buffer.getvalue()


def checks_csv(report: GradeReport) -> str:
    """One row per learner and check, with the first line of the diagnosis of a check that did not pass."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")  # a field holding CR or LF is quoted
    header = ["student_id", "exercise", "check", "function", "result", "mistake", "follows_from", "points", "possible"]
    writer.writerow([*header, "diagnosis"])
    for learner in report.learners:
        for exercise in report.exercises:
            graded = report.cells[(learner, exercise)]
            by_check = {entry.get("check"): entry for entry in (graded.checks if graded else [])}
            points = {check.check: check for check in report.mark(learner, exercise).checks}
            for spec in EXERCISES[exercise].specs:
                entry = by_check.get(spec.name)
                result = _check_status(graded, spec.name)
                diagnosis = "" if entry is None or entry.get("passed") else _first_line(entry)
                if graded is None:
                    diagnosis = "not submitted"
                mistake = (entry or {}).get("mistake") or ""
                check = points[spec.name]
                writer.writerow([
                    _cell(learner), exercise, spec.name, spec.function, result, mistake, check.explained_by or "",
                    gradebook._number(check.points), gradebook._number(check.possible), _cell(diagnosis),
                ])  # fmt: skip
    return buffer.getvalue()


def score_markdown(report: GradeReport, submissions_dir: Path, timeout: float) -> str:
    short = [name.split("_")[0] for name in report.exercises]
    status = report.sandbox
    lines = ["# Exercise scores", ""]
    if status is not None and not status.available:
        lines += [f"> **{_warning(status)}**", ""]
    lines += [
        f"Graded {_dt.datetime.now():%Y-%m-%d %H:%M} from `{submissions_dir}`: "
        + (
            f"each notebook ran in a sandbox ({status.reason})"
            if status and status.available
            else "each notebook ran WITHOUT a sandbox"
        )
        + f", with {timeout:g} s for its cells; the grader judged what its functions returned. Per exercise: "
        "**pass** (every check passes), **fail** (the notebook ran, some check fails or is not implemented), "
        "**error** (the notebook could not run, crashed, or a cell raised), **timeout**, or **missing** (not "
        "submitted); then the checks passed and the points: a check's share of the exercise's points for a pass, "
        f"{gradebook._number(report.config.mistake_credit)} of it for a mistake the grader names (or a failure that "
        "only carries such a mistake from an earlier function), none otherwise (docs/exercises.md, Grading).",
        "",
        "| Learner | " + " | ".join(short) + " | pass | fail | error | timeout | missing | checks | points |",
        "|---|" + "---|" * len(short) + "---:|---:|---:|---:|---:|---:|---:|",
    ]
    for learner in report.learners:
        counts = _counts(report, learner)
        row = []
        for e in report.exercises:
            mark = report.mark(learner, e)
            row.append(f"{_outcome(report.cells[(learner, e)])} {_checks_text(mark)}, {_points_text(mark)}")
        numbers = [str(counts[o]) for o in OUTCOMES]
        numbers += [f"{counts['checks_passed']}/{counts['checks']}", f"{counts['points']}/{counts['points_possible']}"]
        lines.append(f"| {_md(learner)} | " + " | ".join(row) + " | " + " | ".join(numbers) + " |")
    lines += [
        "",
        "Exercises: " + ", ".join(f"{s} = {name}" for s, name in zip(short, report.exercises)),
        "",
        "## Details",
        "",
    ]
    details = 0
    for learner in report.learners:
        for exercise in report.exercises:
            graded = report.cells[(learner, exercise)]
            if graded is None or graded.outcome == "pass":
                continue
            details += 1
            lines.append(
                f"- **{_md(learner)} / {exercise}**: {graded.outcome}"
                + (f" ({_md(graded.detail)})" if graded.detail else "")
            )
            for error in graded.cell_errors[:3]:
                lines.append(f"  - {_md(error)}")
            for check in graded.checks:
                if not check["passed"]:
                    follows = check.get("explained_by")
                    note = f" (follows from the mistake {follows} names: partial credit)" if follows else ""
                    lines.append(f"  - {_md(_first_line(check) + note)}")
    if not details:
        lines.append("Every submitted exercise passes.")
    flagged = [
        (learner, exercise, flag)
        for learner in report.learners
        for exercise in report.exercises
        for flag in (getattr(report.cells[(learner, exercise)], "flags", None) or [])
    ]
    if flagged:  # graded as they ran (a copy that works passes): the instructor decides what it means
        lines += ["", "## For the instructor to look at", ""]
        lines += [f"- **{_md(learner)} / {exercise}**: {_md(flag)}" for learner, exercise, flag in flagged]
    if report.skipped:
        lines += ["", "## Skipped files", ""]
        lines += [f"- {_md(path)}: {_md(reason)}" for path, reason in report.skipped]
    return "\n".join(lines) + "\n"


def _first_line(check: dict) -> str:
    """What went wrong, in one line (the hint is for the learner)."""
    if check.get("status") == "not_implemented":
        return f"{check['check']}: not implemented yet"
    line = check["message"].splitlines()[0] if check.get("message") else check.get("check", "")
    line = line.lstrip("✅❌⏳⌛ ")
    return line if len(line) <= 300 else line[:299] + "…"


def _md(text) -> str:
    """``text`` as one line of Markdown that shows exactly these characters: no HTML, heading, link, table cell or
    emphasis of its own (a learner's folder name or exception message is data, never markup)."""
    import html
    import re

    text = html.escape(" ".join(str(text).split()), quote=False)  # CR, LF, tabs: one space; <img ...> shows as text
    return re.sub(r"([\\`*_\[\]{}()#+!|~>-])", r"\\\1", text)
