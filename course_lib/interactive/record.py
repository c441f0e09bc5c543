"""Your learning record: every quiz answer you check and every exercise check you run, one line each.

The record is a plain text file, ``learning-record.jsonl``, in your course folder (the folder that holds
``notebooks/`` and ``exercises/``). Each line is one JSON object, for example::

    {"v": 1, "time": "2026-12-03T14:05:09Z", "kind": "quiz", "quiz": "02", "question": "soft-lookup",
     "topic": "qkv_attention", "answer": "B", "correct": false}
    {"v": 1, "time": "2026-12-03T14:21:40Z", "kind": "check", "check": "check_softmax", "status": "failed",
     "mistake": "no_max_subtraction", "correct": false}
    {"v": 1, "time": "2026-12-03T14:30:02Z", "kind": "prediction", "checkpoint": "01-lstm-32", "notebook": "01",
     "prediction": "B"}
    {"v": 1, "time": "2026-12-03T14:30:40Z", "kind": "observation", "checkpoint": "01-lstm-32", "notebook": "01",
     "prediction": "B", "measured": 0.21, "correct": false}
    {"v": 1, "time": "2026-12-04T09:00:12Z", "kind": "review", "quiz": "02", "question": "soft-lookup",
     "topic": "qkv_attention", "answer": "A", "correct": true}

Nothing else is stored (no name, no code, no outputs) and nothing is sent anywhere. A check run before the
function is written (it still raises ``NotImplementedError``) is not an attempt and is not recorded. ``python -m course_lib progress``
shows it as a summary; ``python -m course_lib record show | reset | delete`` prints, empties (after a backup) or
deletes it. An instructor collects it with the exercises (``exercises collect``) for the class misconception report.

Set the environment variable ``COURSE_RECORD`` to a file path to keep the record elsewhere, or to ``off`` to
record nothing. Outside a course folder nothing is recorded. Recording never interrupts a notebook: if the file
cannot be written, you get one warning and the cell goes on.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

FILENAME = "learning-record.jsonl"
VERSION = 1
# kind → the fields it must have. "correct" is true or false, except in an observation, where it is null when the
# checkpoint has no tolerance to judge a predicted number by.
KINDS = {
    "quiz": ("quiz", "question", "correct"),
    "check": ("check", "status", "correct"),
    "review": ("quiz", "question", "correct"),
    "prediction": ("checkpoint", "prediction"),
    "observation": ("checkpoint", "prediction", "measured", "correct"),
    "hindsight": ("checkpoint", "prediction", "measured"),  # a guess locked after its measurement had run
}
_warned = False


def course_folder(start: Path | None = None) -> Path | None:
    """The nearest folder at or above ``start`` (default: the working directory) with notebooks/ and exercises/."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "notebooks").is_dir() and (folder / "exercises").is_dir():
            return folder
    return None


def record_path(start: Path | None = None) -> Path | None:
    """Where the record is kept: ``$COURSE_RECORD``, else the course folder's learning-record.jsonl; None if off."""
    explicit = os.environ.get("COURSE_RECORD", "").strip()
    if explicit.lower() in ("off", "0", "no", "false"):
        return None
    if explicit:
        return Path(explicit).expanduser()
    folder = course_folder(start)
    return folder / FILENAME if folder is not None else None


def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def append(event: dict[str, Any], path: Path | None = None) -> bool:
    """Add one event as one line (one write, so a crash leaves at most one partial line). Never raises."""
    global _warned
    try:
        target = path if path is not None else record_path()
        if target is None:
            return False
        line = json.dumps({"v": VERSION, "time": now(), **event}, ensure_ascii=False, separators=(", ", ": "))
        descriptor = os.open(target, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            size = os.fstat(descriptor).st_size
            # after a cut-off last line (a crash mid-write), start a new line so this event stays readable
            start = b"\n" if size and os.pread(descriptor, 1, size - 1) != b"\n" else b""
            os.write(descriptor, start + (line + "\n").encode("utf-8"))
        finally:
            os.close(descriptor)
        return True
    except Exception as exc:  # the learner's cell must go on whatever happens here
        if not _warned:
            _warned = True
            warnings.warn(
                f"your learning record could not be written ({exc}); the notebook is not affected", stacklevel=2
            )
        return False


def _letters(answer: Any) -> Any:
    """Option indices as letters (1 → "B", [0, 2] → ["A", "C"]); numbers and text stay as typed."""
    if isinstance(answer, bool):
        return answer
    if isinstance(answer, int):
        return chr(ord("A") + answer)
    if isinstance(answer, (list, tuple, set, frozenset)) and all(isinstance(i, int) for i in answer):
        return sorted(chr(ord("A") + i) for i in answer)
    return str(answer)[:50]


def quiz_attempt(quiz, question, answer: Any, result) -> bool:
    """Called by the quiz widget after each checked answer."""
    return append(
        {
            "kind": "quiz",
            "quiz": str(getattr(quiz, "id", "")),
            "question": question.id,
            "topic": question.topic,
            "answer": _letters(answer),
            "correct": bool(result.correct),
        }
    )


def review_attempt(quiz, question, answer: Any, result, path: Path | None = None) -> bool:
    """Called by ``review`` (terminal or widget) after each checked answer: it moves the question's Leitner box."""
    return append(
        {
            "kind": "review",
            "quiz": str(getattr(quiz, "id", "")),
            "question": question.id,
            "topic": question.topic,
            "answer": _letters(answer),
            "correct": bool(result.correct),
        },
        path,
    )


def check_attempt(result) -> bool:
    """Called when a learner runs an exercise check in a notebook (not when tools run checks quietly).

    A check run before the function is written (``not_implemented``) is not an attempt and is not recorded.
    """
    if result.status == "not_implemented":
        return False
    return append(
        {
            "kind": "check",
            "check": result.check,
            "status": result.status,
            "mistake": result.mistake,
            "correct": bool(result.passed),
        }
    )


@dataclass
class Record:
    """The events of a record file, in order, and the lines that were skipped (with why)."""

    path: Path | None
    events: list[dict] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def read(path: Path) -> Record:
    """Read a record; a line that is not a complete event (corrupt, half-written) is skipped with a warning.

    A missing file is an empty record. Every readable line is kept whatever happens to the others.
    """
    record = Record(Path(path))
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return record
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        problem = None
        try:
            event = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            problem = f"not a complete JSON line ({type(exc).__name__})"
        except RecursionError:
            problem = "nested too deeply to be an event"
        else:
            problem = _problem(event)
        if problem:
            message = f"{path}: skipped line {number}: {problem}"
            record.skipped.append(message)
            warnings.warn(message, stacklevel=2)
        else:
            record.events.append(event)
    return record


def _problem(event: Any) -> str | None:
    if not isinstance(event, dict):
        return "not a JSON object"
    kind = event.get("kind")
    if kind not in KINDS:
        return f"unknown kind {kind!r}"
    missing = [name for name in (*KINDS[kind], "time") if name not in event]
    if missing:
        return f"missing {', '.join(missing)}"
    if not isinstance(event[KINDS[kind][0]], str):
        return "a field has the wrong type"
    if "correct" in KINDS[kind] and not isinstance(event["correct"], bool):
        if not (kind == "observation" and event["correct"] is None):
            return "a field has the wrong type"
    return None
