"""Friendly input checks for everything a learner calls.

A learner who passes the wrong thing should read one short sentence naming the argument and what was
expected, e.g. ``queries must be (batch, seq, d_k), got (5, 8)``, not a traceback from deep inside torch.
"""

from __future__ import annotations

try:
    import torch
except (
    ModuleNotFoundError
):  # only the error classes are usable without torch (`python -m course_lib doctor` on a bare Python)
    torch = None


class CommandError(Exception):
    """A problem a user of ``python -m course_lib ...`` can fix; the command line prints it without a traceback."""


class CourseInputError(ValueError):
    """Raised when an argument has the wrong type, shape or dtype. The message names the argument."""


def shape_str(shape) -> str:
    """Format a shape as ``(5, 8)``."""
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def check_tensor(name: str, value, expected: str, min_dim: int = 1, max_dim: int | None = None) -> torch.Tensor:
    """Check that ``value`` is a floating-point tensor with between ``min_dim`` and ``max_dim`` axes.

    ``expected`` is the shape as the learner should read it, e.g. ``"(batch, seq, d_k)"``.
    """
    if not isinstance(value, torch.Tensor):
        kind = type(value).__name__
        hint = " (convert it with torch.as_tensor)" if kind == "ndarray" else ""
        raise CourseInputError(f"{name} must be a torch.Tensor of shape {expected}, got {kind}{hint}")
    if value.dim() < min_dim or (max_dim is not None and value.dim() > max_dim):
        raise CourseInputError(f"{name} must be {expected}, got {shape_str(value.shape)}")
    if not value.is_floating_point():
        raise CourseInputError(f"{name} must hold floating-point numbers (float32 or float64), got {value.dtype}")
    return value


def check_features(
    name: str, value, size: int, expected: str, min_dim: int = 1, max_dim: int | None = None
) -> torch.Tensor:
    """Check ``value`` like ``check_tensor`` and that its last axis (the features) has ``size`` entries."""
    check_tensor(name, value, expected, min_dim=min_dim, max_dim=max_dim)
    if value.shape[-1] != size:
        raise CourseInputError(f"{name} must be {expected}, got {shape_str(value.shape)}")
    return value


def check_positive_int(name: str, value) -> int:
    """Check that ``value`` is a positive whole number."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise CourseInputError(f"{name} must be a positive whole number, got {value!r}")
    return value


def broadcast_shape(*shapes) -> tuple[int, ...] | None:
    """The shape NumPy/PyTorch broadcasting gives ``shapes``, or None if they do not broadcast.

    The same rule as ``torch.broadcast_shapes``, in plain Python: that one imports a symbolic-maths library on its
    first call (0.3 s) and costs 40 µs a call after it, twice per attention layer per training step.
    """
    shapes = [tuple(shape) for shape in shapes]
    ndim = max((len(shape) for shape in shapes), default=0)
    result = []
    for axis in range(-ndim, 0):  # align the shapes at their last axis
        sizes = {shape[axis] for shape in shapes if len(shape) >= -axis} - {1}
        if len(sizes) > 1:
            return None
        result.append(sizes.pop() if sizes else 1)
    return tuple(result)


def check_mask(mask, scores_shape) -> torch.Tensor:
    """Check that ``mask`` is a boolean tensor that broadcasts to exactly ``scores_shape`` ``(..., seq_q, seq_k)``.

    A mask with more axes than the scores (e.g. ``(batch, 1, 1, seq_k)`` on 3-D queries) would make the result
    bigger than the scores, so it is refused with its shape and the shapes that fit.
    """
    if not isinstance(mask, torch.Tensor):
        raise CourseInputError(f"mask must be a boolean torch.Tensor (True = may attend), got {type(mask).__name__}")
    if mask.dtype != torch.bool:
        raise CourseInputError(f"mask must have dtype torch.bool (True = may attend), got {mask.dtype}")
    scores_shape = tuple(scores_shape)
    fits = broadcast_shape(mask.shape, scores_shape) == scores_shape
    if not fits:
        extra = (
            f"; it has {mask.dim()} axes but the scores have {len(scores_shape)}"
            if mask.dim() > len(scores_shape)
            else ""
        )
        raise CourseInputError(
            f"mask of shape {shape_str(mask.shape)} does not broadcast to the scores {shape_str(scores_shape)} "
            f"(..., seq_q, seq_k){extra}: each axis of the mask must be 1 or the scores' size, e.g. "
            f"(seq_q, seq_k) = {shape_str(scores_shape[-2:])} or (..., 1, seq_k)"
        )
    return mask
