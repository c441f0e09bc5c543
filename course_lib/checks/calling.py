"""Calling the learner's function safely: a time limit, fresh copies of the arguments, what the call left behind,
and short learner-readable words for whatever it returned or raised.

``call_with_time_limit`` stops a call after ``TIME_LIMIT`` seconds; ``_clone`` hands the learner copies so that a
change in place can be seen (``_changed_inputs``); ``_learner_frame`` finds the learner's own line in a traceback
(``_is_stub``: is it still the exercise's ``raise NotImplementedError``?). The ``_safe_str`` family turns values,
shapes, dtypes and exceptions into text without trusting the learner's objects (their ``__str__`` may raise or lie).
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import math
import signal
import sys
import sysconfig
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from .spec import CheckSpec, TupleOut

# --------------------------------------------------------------------------- text


def _axis_names(axes: str, ndim: int) -> list[str] | None:
    """``"(batch, seq_q, d_v)"`` → ``["batch", "seq_q", "d_v"]`` when it names exactly ``ndim`` axes."""
    inner = axes.strip()
    if not (inner.startswith("(") and inner.endswith(")")):
        return None
    names = [part.strip() for part in inner[1:-1].split(",")]
    if len(names) != ndim or not all(names) or any(" " in n and "*" not in n for n in names):
        return None
    return names


def _where(wrong: torch.Tensor, axes: str) -> str:
    """Where the wrong entries are, when they sit at some indices of an axis only: ' (only at seq_q = 1, 3)'."""
    if wrong.dim() == 0 or not bool(wrong.any()) or bool(wrong.all()):
        return ""
    names = _axis_names(axes, wrong.dim()) or [f"axis {d}" for d in range(wrong.dim())]
    parts = []
    for dim in range(wrong.dim()):
        others = [d for d in range(wrong.dim()) if d != dim]
        hit = wrong.any(dim=others) if others else wrong
        indices = [int(i) for i in hit.nonzero().flatten()]
        if 0 < len(indices) < wrong.shape[dim]:
            shown = ", ".join(str(i) for i in indices[:8]) + (", ..." if len(indices) > 8 else "")
            parts.append(f"{names[dim]} = {shown} out of 0–{wrong.shape[dim] - 1}")
    return f" (only at {'; '.join(parts)})" if parts else " (spread over every axis)"


def _call_text(spec: CheckSpec, args: tuple) -> str:
    parts = []
    for name, arg in zip(spec.arg_names, args):
        if isinstance(arg, torch.Tensor):
            parts.append(f"{name} {_shape(arg.shape)}")
        elif isinstance(arg, (int, float, bool)):
            parts.append(f"{name}={arg!r}")
        elif isinstance(arg, tuple) and len(arg) <= 4 and all(type(item) is int for item in arg):
            parts.append(f"{name}={arg!r}")
        elif isinstance(arg, str):
            parts.append(f"{name} (a string of {len(arg)} characters)")
        elif isinstance(arg, list):
            parts.append(f"{name} (a list of {len(arg)} items)")
        elif isinstance(arg, dict):
            parts.append(f"{name} (a dict of {len(arg)} entries)")
    return ", ".join(parts)


def _item_names(output) -> list[str]:
    if isinstance(output, TupleOut):
        return [f"`{name}`: " for name, _ in output.items]
    return [""]


def _item_axes(output, label: str) -> str:
    if isinstance(output, TupleOut):
        for name, axes in output.items:
            if label == f"`{name}`: ":
                return axes
    return output.axes


def _shape(shape) -> str:
    shape = tuple(int(s) for s in shape)
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def _dtype(dtype, short: bool = True) -> str:
    text = str(dtype)
    return text.replace("torch.", "") if short else text


def _unravel(index: int, shape) -> list[int]:
    out = []
    for size in reversed(tuple(shape)):
        out.append(index % size if size else 0)
        index = index // size if size else 0
    return list(reversed(out))


def _describe(value: Any) -> str:
    """A short, learner-readable description of any value: 'None', 'a NumPy array of shape (2, 3)', ..."""
    if value is None:
        return "None"
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {_shape(value.shape)}"
    module = type(value).__module__ or ""
    if module.startswith("numpy"):
        shape = getattr(value, "shape", None)
        if shape:
            return f"a NumPy array of shape {_shape(shape)}"
        return f"a NumPy {type(value).__name__}"
    if isinstance(value, bool):
        return f"a bool ({value})"
    if isinstance(value, (int, float)):
        return f"{_article(type(value).__name__)} ({_shorten(repr(value), 30)})"
    if isinstance(value, str):
        return f"a string ({_shorten(repr(value), 30)})"
    if isinstance(value, (tuple, list)):
        kinds = {type(item).__name__ for item in value}
        kind = f" {kinds.pop()}s" if len(kinds) == 1 and value else " items"
        if kind == " Tensors":
            kind = " tensors"
        return f"a {type(value).__name__} of {len(value)}{kind}"
    return _article(type(value).__name__)


def _article(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _exception_text(exc: BaseException) -> str:
    message = _safe_str(exc).strip()
    if len(message.splitlines()) > 3:
        message = " ".join(message.splitlines()[:3]) + " ..."
    return f"{type(exc).__name__}: {_shorten(message, 300)}" if message else type(exc).__name__


def _safe_str(value: Any) -> str:
    try:
        return str(value)
    except Exception:
        try:
            return repr(value)
        except Exception:
            return "<unprintable>"


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _safe_bool(predicate: Callable, *args) -> bool:
    try:
        return bool(predicate(*args))
    except Exception:
        return False


# --------------------------------------------------------------------------- calling

#: Seconds one call of the learner's function may take before the check stops it (the solutions take milliseconds).
TIME_LIMIT = 5.0


def _signature_mismatch(spec: CheckSpec, function: Any, args: tuple) -> str | None:
    """Does ``function`` accept the check's arguments at all? (A TypeError raised inside it is another matter.)"""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # builtins and some callables have no signature: just call them
        return None
    try:
        signature.bind(*args)
    except TypeError as exc:
        return (
            f"your function cannot be called as {spec.function}({', '.join(spec.arg_names)}): {_safe_str(exc)} "
            f"(it is defined as {spec.function}{_shorten(str(signature), 120)})."
        )
    return None


class TimeLimitExceeded(BaseException):
    """Raised inside the learner's function when it runs longer than the time limit.

    A ``BaseException`` (like ``KeyboardInterrupt``), so that an ``except Exception:`` in the learner's loop does
    not swallow it.
    """


def call_with_time_limit(function: Callable, args: Sequence, seconds: float | None = None):
    """``function(*args)``, stopped with ``TimeLimitExceeded`` after ``seconds`` (default ``TIME_LIMIT``).

    In the main thread on POSIX a timer signal interrupts the function (any earlier timer, e.g. a test runner's,
    is re-armed afterwards); elsewhere a trace function checks the clock at every line of Python.
    """
    seconds = TIME_LIMIT if seconds is None else seconds
    if not seconds or seconds <= 0 or not math.isfinite(seconds):
        return function(*args)
    if hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread():
        return _call_with_alarm(function, args, seconds)
    return _call_with_trace(function, args, seconds)


def _call_with_alarm(function: Callable, args: Sequence, seconds: float):
    state = {"active": True}

    def on_alarm(signum, frame):
        if state["active"]:
            raise TimeLimitExceeded(seconds)

    started = time.monotonic()
    previous_handler = signal.signal(signal.SIGALRM, on_alarm)
    previous_timer = signal.setitimer(signal.ITIMER_REAL, seconds, 0.25)  # repeats, in case a bare except swallows it
    try:
        try:
            return function(*args)
        finally:
            state["active"] = False
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous_handler)
        remaining, interval = previous_timer
        if remaining > 0:  # give an outer timer (pytest-timeout, a notebook's own alarm) back what is left of it
            signal.setitimer(signal.ITIMER_REAL, max(remaining - (time.monotonic() - started), 0.001), interval)


def _call_with_trace(function: Callable, args: Sequence, seconds: float):
    deadline = time.monotonic() + seconds
    previous = sys.gettrace()

    def tracer(frame, event, arg):
        if time.monotonic() > deadline:
            raise TimeLimitExceeded(seconds)
        return tracer

    sys.settrace(tracer)
    try:
        return function(*args)
    finally:
        sys.settrace(previous)


def own_code(spec: CheckSpec):
    """The code object of course_lib's own implementation of the function ``spec`` grades (``spec.own``), or None."""
    if spec.own is None:
        return None
    module, name = spec.own
    function: Any = importlib.import_module(module)
    for part in name.split("."):
        function = getattr(function, part)
    return inspect.unwrap(function).__code__  # the body itself, not a decorator's wrapper shared by many functions


@contextlib.contextmanager
def watch_for(code) -> Iterator[list]:
    """Note every call of ``code`` (a code object, or None: watch nothing) made inside the block, in this thread or in
    threads it starts: the list it yields holds one entry per call. A profile hook, so that it composes with the
    trace function of ``_call_with_trace``; it only notes, the caller decides once the call has returned."""
    seen: list = []
    if code is None:
        yield seen
        return
    previous, previous_in_threads = sys.getprofile(), threading.getprofile()

    def profile(frame, event, arg):
        if event == "call" and frame.f_code is code:
            seen.append(code.co_name)

    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        yield seen
    finally:
        sys.setprofile(previous)
        threading.setprofile(previous_in_threads)


def extra_seconds(specs) -> float:
    """The time the checks of ``specs`` may take beyond the ordinary per-call limits (learner runs of a training)."""
    return sum(len(spec.cases) * spec.time_limit for spec in specs if spec.time_limit)


def _same_module(old: torch.nn.Module, new: Any) -> bool:
    """Do two modules hold the same parameters and buffers (names, shapes, dtypes, values)?"""
    if not isinstance(new, torch.nn.Module):
        return False
    left, right = old.state_dict(), new.state_dict()
    return left.keys() == right.keys() and all(
        left[k].shape == right[k].shape and left[k].dtype == right[k].dtype and torch.equal(left[k], right[k])
        for k in left
    )


def _changed_inputs(spec: CheckSpec, before: tuple, after: tuple) -> list[str]:
    changed = []
    for index, (old, new) in enumerate(zip(before, after)):
        if isinstance(old, torch.nn.Module):  # a model handed to the learner (a copy of it): are its weights intact?
            try:
                intact = _same_module(old, new)
            except Exception:
                intact = False
            if not intact:
                changed.append(spec.arg_names[index] if index < len(spec.arg_names) else f"argument {index + 1}")
        elif isinstance(old, torch.Tensor):
            try:
                same_values = (
                    isinstance(new, torch.Tensor)
                    and old.shape == new.shape
                    and old.dtype == new.dtype
                    and torch.equal(old, new)
                )
            except Exception:
                same_values = False
            if not same_values:
                changed.append(spec.arg_names[index] if index < len(spec.arg_names) else f"argument {index + 1}")
        elif isinstance(old, (list, dict)):  # plain data handed over (token ids, merges): compared by content
            try:
                same_values = type(new) is type(old) and new == old
            except Exception:
                same_values = False
            if not same_values:
                changed.append(spec.arg_names[index] if index < len(spec.arg_names) else f"argument {index + 1}")
    return changed


def _library_roots() -> tuple[str, ...]:
    roots = {str(Path(__file__).resolve().parents[1])}  # course_lib itself
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            roots.add(str(Path(sysconfig.get_paths()[key]).resolve()))
        except Exception:
            pass
    for module in ("torch", "numpy"):
        loaded = sys.modules.get(module)
        if loaded is not None and getattr(loaded, "__file__", None):
            roots.add(str(Path(loaded.__file__).resolve().parent))
    return tuple(roots)


_ROOTS: tuple[str, ...] | None = None


def _is_library(filename: str) -> bool:
    global _ROOTS
    if filename.startswith("<frozen") or filename.startswith("<built-in"):
        return True
    if _ROOTS is None:
        _ROOTS = _library_roots()
    try:
        resolved = str(Path(filename).resolve())
    except Exception:
        resolved = filename
    return any(
        resolved == root or resolved.startswith(root + "/") or resolved.startswith(root + "\\") for root in _ROOTS
    )


@dataclass(frozen=True)
class RecordedFrame:
    """A learner frame described in a sandbox: the function's name, the source line, and where it is."""

    name: str
    line: str
    location: str


def _learner_frame(exc: BaseException | None):
    """The deepest frame of the traceback that belongs to the learner's code (a notebook cell or their file)."""
    if exc is None:
        return None
    recorded = getattr(exc, "_course_frame", None)
    if isinstance(recorded, RecordedFrame):
        return recorded
    try:
        frames = traceback.extract_tb(exc.__traceback__)
    except Exception:
        return None
    for frame in reversed(frames):
        if not _is_library(frame.filename):
            return frame
    return None


def _frame_location(frame) -> str:
    if isinstance(frame, RecordedFrame):
        return frame.location
    try:
        from IPython import get_ipython  # only inside Jupyter/IPython

        shell = get_ipython()
        if shell is not None:
            named = shell.compile.format_code_name(frame.filename)
            if named:
                return f"{named[0].lower()} {named[1]}, line {frame.lineno}"
    except Exception:
        pass
    return f"{Path(frame.filename).name}, line {frame.lineno}"


def _is_stub(exc: BaseException) -> bool:
    """True for the exercise's ``raise NotImplementedError(...)`` line (not for a NotImplementedError raised by torch)."""
    if not isinstance(exc, NotImplementedError):
        return False
    if hasattr(exc, "_course_stub"):
        return bool(exc._course_stub)
    frame = _learner_frame(exc)
    if frame is None:
        return False
    line = frame.line or ""
    return "NotImplementedError" in line or not line  # no source (e.g. exec'd code): trust the exception type


def _clone(args: Sequence) -> tuple:
    """Fresh copies of the tensor arguments, of lists and dicts, and of every model marked ``_course_copy_per_call``
    (so that a learner who changes them in place changes a copy, and the check can tell)."""
    return tuple(_copy(arg) for arg in args)


def _copy(arg: Any) -> Any:
    if isinstance(arg, torch.Tensor):
        return arg.clone()
    if isinstance(arg, (list, dict)):  # plain data (token ids, merges): a copy the learner may change
        import copy

        return copy.deepcopy(arg)
    if isinstance(arg, torch.nn.Module) and getattr(arg, "_course_copy_per_call", False):
        import copy

        return copy.deepcopy(arg)
    return arg
