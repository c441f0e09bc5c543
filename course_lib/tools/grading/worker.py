"""The untrusted half of grading: runs ONE submitted notebook, inside the sandbox, and returns only outputs.

    python -m course_lib.tools.grading.worker NOTEBOOK EXERCISE CELL_SECONDS CALL_SECONDS SALT

Started by ``grading`` (through ``sandbox``), never by hand. It

1. keeps a private copy of its stdout for the result and points file descriptors 1 and 2 at /dev/null, so
   nothing the notebook prints can reach the grader (or fill its memory);
2. runs the notebook's *definitions* only (``definitions``: imports, functions, classes, constants; no other
   statement of the notebook) in a fresh namespace, then calls the exercise's functions on the checks' inputs,
   drawn with the grader's ``SALT`` (``checks.remote.harvest``, each call limited to ``CALL_SECONDS``), and writes
   that record, framed, to the private stdout: the first frame, which is the only one the grader takes values from;
3. only then runs the notebook's code cells in order in an IPython shell (every cell allowed to fail, each stopped
   when the cells' time, ``CELL_SECONDS`` in all, runs out) and writes a second frame saying which cells raised or
   did not finish, for the report; then exits without running the notebook's exit handlers.

So none of the notebook's statements outside its definitions has run when its functions are called and their
values written: a cell that forges a record, replaces the harvest or ``torch.save``, or precomputes answers runs too
late to change the first frame. The record holds outputs, never a verdict: the grader judges them against its own
reference, on inputs drawn from a salt chosen for this run.
"""

from __future__ import annotations

import io
import json
import os
import struct
import sys
import time

MAGIC = b"COURSE-GRADE-RECORD\x00"
MAX_NOTEBOOK_BYTES = 20 * 1024 * 1024


def frame(payload: bytes) -> bytes:
    return MAGIC + struct.pack(">Q", len(payload)) + payload


def read_cells(path: str) -> list[str]:
    """The code cells' sources of a notebook file (plain JSON: no nbformat, no warnings)."""
    with open(path, "rb") as handle:
        data = handle.read(MAX_NOTEBOOK_BYTES + 1)
    if len(data) > MAX_NOTEBOOK_BYTES:
        raise ValueError("the notebook is larger than 20 MB")
    notebook = json.loads(data.decode("utf-8-sig"))  # a byte-order mark some editors write is not an error
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise ValueError("not a notebook (no list of cells)")
    sources = []
    for cell in notebook["cells"]:
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            source = cell.get("source", "")
            if isinstance(source, list):
                source = "".join(part for part in source if isinstance(part, str))
            sources.append(source if isinstance(source, str) else "")
    return sources


def _write(fd: int, payload: dict) -> None:
    import torch

    buffer = io.BytesIO()
    torch.save(payload, buffer)
    view = memoryview(frame(buffer.getvalue()))
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _define(sources: list[str], payload: dict, seconds: float) -> dict:
    """A fresh namespace holding what the notebook's definitions define (``definitions``); nothing else runs."""
    import builtins
    import linecache

    from course_lib.checks import core
    from course_lib.tools.grading.definitions import _python, definitions

    found = definitions(sources)
    payload["skipped"], payload["unparsable"] = found.skipped[:50], found.unparsable[:50]
    namespace: dict = {"__name__": "__main__", "__builtins__": builtins}
    deadline = time.monotonic() + seconds
    for cell, module in found.kept:
        filename = f"code cell {cell}"
        if filename not in linecache.cache:  # so that a message can quote the learner's line
            text = _python(sources[cell - 1])
            linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        try:
            code = compile(module, filename, "exec")
            core.call_with_time_limit(exec, (code, namespace), max(deadline - time.monotonic(), 0.1))
        except BaseException as exc:  # a definition that fails is the learner's own loss, reported
            if len(payload["definition_errors"]) < 20:
                message = core._safe_str(exc).strip().splitlines()
                payload["definition_errors"].append(
                    f"{filename}: {type(exc).__name__}: {core._shorten(message[0] if message else '', 200)}"
                )
    return namespace


def _run_cells(sources: list[str], seconds: float) -> dict:
    """Run every code cell in order, for the report: which raised, which did not finish."""
    from IPython.core.interactiveshell import InteractiveShell

    from course_lib.checks import core

    report: dict = {"cells": 0, "cell_errors": [], "stopped_cell": None}
    shell = InteractiveShell.instance()
    deadline = time.monotonic() + seconds
    for code_number, source in enumerate(sources, 1):
        if not source.strip():
            continue
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            report["stopped_cell"] = code_number
            break
        report["cells"] += 1
        try:
            outcome = core.call_with_time_limit(shell.run_cell, (source, True, False), remaining)
        except core.TimeLimitExceeded:
            report["stopped_cell"] = code_number
            break
        error = outcome.error_in_exec or outcome.error_before_exec
        if isinstance(error, core.TimeLimitExceeded):
            report["stopped_cell"] = code_number
            break
        if error is not None:
            message = core._safe_str(error).strip().splitlines()
            report["cell_errors"].append(
                f"code cell {code_number}: {type(error).__name__}: {core._shorten(message[0] if message else '', 200)}"
            )
    return report


def _snapshot() -> dict:
    """The grader's own functions in this process, with their code: a graded function that replaces or rewrites one
    while it is called (to change what the record says) is caught by comparing before and after the harvest."""
    import torch

    modules = [m for name, m in sorted(sys.modules.items()) if name.startswith("course_lib.checks") and m is not None]
    modules += [torch.serialization, io, struct, os]  # what writes the record (torch itself rewraps some functions)
    seen = {("torch", "save"): (id(torch.save), getattr(torch.save, "__code__", None))}
    for module in modules:
        for name, value in list(vars(module).items()):
            if callable(value):
                seen[(module.__name__, name)] = (id(value), getattr(value, "__code__", None))
    return seen


def main(argv: list[str]) -> int:
    path, exercise, cell_seconds, call_seconds = argv[0], argv[1], float(argv[2]), float(argv[3])
    salt = int(argv[4])
    result_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.environ.setdefault("MPLBACKEND", "Agg")

    import torch  # noqa: F401  (imported before any of the notebook's code)

    from course_lib.checks import core, remote, tensors
    from course_lib.checks.registry import EXERCISES

    payload: dict = {"format": remote.FORMAT, "exercise": exercise, "definition_errors": []}
    try:
        sources = read_cells(path)
    except Exception as exc:
        payload["unreadable"] = f"{type(exc).__name__}: {str(exc)[:200]}"
        _write(result_fd, payload)
        os._exit(0)
    core.TIME_LIMIT = call_seconds
    try:
        namespace = _define(sources, payload, call_seconds * 2)
        budget = max(call_seconds * 6, 1.0) + core.extra_seconds(EXERCISES[exercise].specs)  # grading.CHECK_CALLS
        before = _snapshot()
        with tensors.salt_scope(salt):
            record = core.call_with_time_limit(remote.harvest, (exercise, namespace), budget)
        after = _snapshot()
        if any(after.get(key) != value for key, value in before.items()):
            raise RuntimeError("the notebook's functions changed the grader's own code while they were called")
        payload["record"] = record
    except BaseException as exc:  # a function broke the harvest (or hung it): no record, the grader says so
        payload["harvest_error"] = f"{type(exc).__name__}: {core._shorten(core._safe_str(exc), 200)}"
    _write(result_fd, payload)  # the first frame: written before any other statement of the notebook runs
    try:
        report = _run_cells(sources, cell_seconds)
    except BaseException as exc:
        report = {"cells": 0, "cell_errors": [f"the cells could not run: {type(exc).__name__}"], "stopped_cell": None}
    _write(result_fd, {"format": remote.FORMAT, "report": report})
    os._exit(0)  # no atexit handlers, no waiting for the notebook's threads


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
