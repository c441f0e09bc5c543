"""The untrusted half of grading: runs ONE submitted notebook, inside the sandbox, and returns only outputs.

    python -m course_lib.tools.grading.worker NOTEBOOK EXERCISE CELL_SECONDS CALL_SECONDS

Started by ``grading`` (through ``sandbox``), never by hand. It

1. keeps a private copy of its stdout for the result and points file descriptors 1 and 2 at /dev/null, so
   nothing the notebook prints can reach the grader (or fill its memory);
2. runs the notebook's code cells in order in an IPython shell in this process, every cell allowed to fail, each
   stopped when the cells' time (``CELL_SECONDS`` in all) runs out;
3. calls the exercise's functions on the checks' inputs (``checks.remote.harvest``, each call limited to
   ``CALL_SECONDS``) and writes that record, framed, to the private stdout, then exits without running the
   notebook's exit handlers.

The record holds outputs, never a verdict: the grader judges them against its own reference, so a notebook that
replaces the checks, prints fake results or writes a record itself can at most spoil its own grade.
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


def main(argv: list[str]) -> int:
    path, exercise, cell_seconds, call_seconds = argv[0], argv[1], float(argv[2]), float(argv[3])
    result_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.environ.setdefault("MPLBACKEND", "Agg")

    import torch  # noqa: F401  (imported before the notebook runs, so a notebook cannot replace it first)

    from course_lib.checks import core, remote

    harvest, time_limited = remote.harvest, core.call_with_time_limit  # kept before the notebook can replace them
    payload: dict = {"format": remote.FORMAT, "exercise": exercise, "cells": 0, "cell_errors": [], "stopped_cell": None}
    try:
        sources = read_cells(path)
    except Exception as exc:
        payload["unreadable"] = f"{type(exc).__name__}: {str(exc)[:200]}"
        sources = None
    if sources is not None:
        from IPython.core.interactiveshell import InteractiveShell

        shell = InteractiveShell.instance()
        deadline = time.monotonic() + cell_seconds
        code_number = 0
        for source in sources:
            code_number += 1
            if not source.strip():
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                payload["stopped_cell"] = code_number
                break
            payload["cells"] += 1
            try:
                outcome = core.call_with_time_limit(shell.run_cell, (source, True, False), remaining)
            except core.TimeLimitExceeded:
                payload["stopped_cell"] = code_number
                break
            error = outcome.error_in_exec or outcome.error_before_exec
            if isinstance(error, core.TimeLimitExceeded):
                payload["stopped_cell"] = code_number
                break
            if error is not None:
                message = core._safe_str(error).strip().splitlines()
                payload["cell_errors"].append(
                    f"code cell {code_number}: {type(error).__name__}: {core._shorten(message[0] if message else '', 200)}"
                )
        core.TIME_LIMIT = call_seconds
        try:
            from course_lib.checks.registry import EXERCISES

            budget = max(call_seconds * 6, 1.0) + core.extra_seconds(EXERCISES[exercise].specs)  # grading.CHECK_CALLS
            payload["record"] = time_limited(harvest, (exercise, dict(shell.user_ns)), budget)
        except BaseException as exc:  # the notebook broke the harvest (or hung it): no record, the grader says so
            payload["harvest_error"] = f"{type(exc).__name__}: {core._shorten(core._safe_str(exc), 200)}"
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    data = frame(buffer.getvalue())
    view = memoryview(data)
    while view:
        written = os.write(result_fd, view)
        view = view[written:]
    os._exit(0)  # no atexit handlers, no waiting for the notebook's threads


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
