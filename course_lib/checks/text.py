"""Short, learner-readable words for values, shapes, dtypes and exceptions, used in every message."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .spec import CheckSpec, TupleOut


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
