"""Run exercise notebooks headless (nbclient) and read their check results.

Each notebook runs as a copy in a temporary folder (its working directory), in a fresh kernel, with every cell
allowed to fail, under one time limit for the whole notebook. After the learner's cells, one extra cell runs every
check of the exercise quietly on the functions the notebook defined and prints the results as JSON; that is what
``exercises progress`` reads (a learner deleting or editing a check cell changes nothing). The file itself is never
written to. Several notebooks run at once (``jobs``), each in its own kernel.

This is for a learner's own notebooks. Grading other people's notebooks does not trust what a notebook prints:
``grading`` runs each one in a sandbox and judges its functions' outputs itself.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

SENTINEL = "@@course-checks@@"

RAN, TIMEOUT, CRASHED, UNREADABLE = "ran", "timeout", "crashed", "unreadable"


@dataclass
class RunResult:
    """What one run of a notebook gave, and what it means for the score table.

    The one rule for a run's outcome, shared by ``exercises progress`` (``NotebookRun``, here) and ``exercises
    grade`` (``grade.Graded``). status: ``"ran"`` (all cells ran, some may have raised), ``"timeout"``, or a reason
    it did not run (``"crashed"``, ``"unreadable"``, ...). checks: one dict per check (``check``, ``function``,
    ``status``, ``passed``, ``message``, ``mistake``). cell_errors: ``"cell 5: NameError: ..."`` for each cell that
    raised.
    """

    path: str
    exercise: str
    status: str
    checks: list[dict] = field(default_factory=list)
    cell_errors: list[str] = field(default_factory=list)
    detail: str = ""
    seconds: float = 0.0

    @property
    def outcome(self) -> str:
        """``pass`` (every check passed), ``fail`` (a check failed), ``error`` (a check failed and a cell raised, or
        the notebook did not run to its end) or ``timeout``."""
        if self.status == TIMEOUT:
            return "timeout"
        if self.status != RAN or not self.checks:
            return "error"
        if all(check["passed"] for check in self.checks):
            return "pass"
        return "error" if self.cell_errors else "fail"

    @property
    def checks_passed(self) -> int:
        return sum(bool(check["passed"]) for check in self.checks)


@dataclass
class NotebookRun(RunResult):
    """What happened when one of a learner's own notebooks ran (``"crashed"``: the kernel died or could not start;
    ``"unreadable"``: not a valid notebook)."""


def grading_cell_source(exercise: str) -> str:
    return (
        "import json as _course_json\n"
        "from course_lib.checks import run_exercise_checks as _course_run_checks\n"
        f"print({SENTINEL!r} + _course_json.dumps(_course_run_checks({exercise!r}, globals())))\n"
    )


def run_notebooks(
    items: list[tuple[Path, str]], timeout: float = 60.0, jobs: int = 2, on_done=None
) -> list[NotebookRun]:
    """Run each ``(path, exercise)`` notebook; ``on_done(run)`` is called as each one finishes. Never raises for a bad notebook."""

    async def main() -> list[NotebookRun]:
        limit = asyncio.Semaphore(max(1, int(jobs)))

        async def one(path: Path, exercise: str) -> NotebookRun:
            async with limit:
                run = await _run_one(Path(path), exercise, timeout)
            if on_done is not None:
                on_done(run)
            return run

        return list(await asyncio.gather(*(one(path, exercise) for path, exercise in items)))

    return _run_async(main)


def _run_async(main):
    """``asyncio.run(main())``, also from inside a running event loop (e.g. when called from a notebook)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    box: dict = {}

    def target():
        try:
            box["value"] = asyncio.run(main())
        except BaseException as exc:  # pragma: no cover - re-raised below
            box["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


async def _run_one(path: Path, exercise: str, timeout: float) -> NotebookRun:
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    started = time.monotonic()
    run = NotebookRun(str(path), exercise, RAN)
    workdir = Path(tempfile.mkdtemp(prefix="course-exercise-"))
    try:
        try:
            copy = workdir / path.name
            shutil.copyfile(path, copy)  # execute a copy: the submission itself is only ever read
            with (
                warnings.catch_warnings()
            ):  # nbformat warns about missing cell ids and the like: not the learner's concern
                warnings.simplefilter("ignore")
                notebook = nbformat.read(copy, as_version=4)
                nbformat.validate(notebook)
        except Exception as exc:
            run.status, run.detail = UNREADABLE, f"not a valid notebook ({type(exc).__name__}: {_first_line(exc)})"
            return run
        notebook.cells.append(nbformat.v4.new_code_cell(grading_cell_source(exercise)))
        deadline = time.monotonic() + timeout
        client = NotebookClient(
            notebook,
            kernel_name="python3",
            timeout=max(1, int(timeout)),
            timeout_func=lambda cell: max(1, int(deadline - time.monotonic()) + 1),
            allow_errors=True,
            record_timing=False,
            shutdown_kernel="immediate",
            startup_timeout=60,
            resources={"metadata": {"path": str(workdir)}},
        )
        try:
            await client.async_execute(stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        except CellTimeoutError:
            run.status, run.detail = TIMEOUT, f"did not finish within {timeout:g} s"
        except DeadKernelError:
            run.status, run.detail = (
                CRASHED,
                "the kernel died (the notebook crashed Python, e.g. os._exit or running out of memory)",
            )
        except Exception as exc:
            run.status, run.detail = CRASHED, f"could not run: {type(exc).__name__}: {_first_line(exc)}"
        _read_outputs(notebook, run)
        return run
    finally:
        run.seconds = round(time.monotonic() - started, 2)
        shutil.rmtree(workdir, ignore_errors=True)


def _read_outputs(notebook, run: NotebookRun) -> None:
    last = len(notebook.cells) - 1
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        for output in cell.get("outputs", []):
            if index == last and output.get("output_type") == "stream" and output.get("name") == "stdout":
                for line in output.get("text", "").splitlines():
                    if line.startswith(SENTINEL):
                        try:
                            run.checks = json.loads(line[len(SENTINEL) :])
                        except ValueError:
                            pass
            elif index != last and output.get("output_type") == "error":
                run.cell_errors.append(
                    f"cell {index + 1}: {output.get('ename', 'Error')}: {_shorten(output.get('evalue', ''), 200)}"
                )
    if run.status == RAN and not run.checks:
        run.status, run.detail = CRASHED, "the checks could not run after the notebook's cells"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return _shorten(text[0], 200) if text else ""


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
