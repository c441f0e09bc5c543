"""Messages for what a call did instead of returning a value: raised, timed out, still a stub, not callable,
changed its inputs; and hints that read a returned value or shape."""

from __future__ import annotations

import itertools
import math
from typing import Any

import torch

from .calling import TIME_LIMIT, _frame_location, _learner_frame
from .spec import ERROR, ICONS, NOT_IMPLEMENTED, TIMEOUT, CheckResult, CheckSpec, _result
from .text import _axis_names, _describe, _exception_text, _safe_bool, _safe_str, _shorten


def _timed_out(spec: CheckSpec, exc: BaseException, where: str) -> CheckResult:
    limit = exc.args[0] if exc.args else TIME_LIMIT
    frame = _learner_frame(exc)
    location = ""
    if frame is not None:
        line = (frame.line or "").strip()
        location = f"It was running {_frame_location(frame)}" + (f":  {_shorten(line, 120)}" if line else ".")
    text = f"your function did not finish within {limit:g} s, so the check stopped it: it probably loops forever."
    hint = (
        "Look at the loops in your function: a `while` loop ends only when something inside it changes its "
        "condition; a `for t in range(...)` loop always ends. (The ■ button stops a cell that hangs.)"
    )
    return _result(spec, TIMEOUT, text, hint, "time_limit", where=where, location=location)


def _not_a_function(spec: CheckSpec, function: Any) -> str | None:
    usage = f"{spec.name}({spec.function})"
    if function is None:
        return f"got None instead of your function. Call it as {usage}."
    if isinstance(function, torch.Tensor) or type(function).__module__.startswith("numpy"):
        return (
            f"got {_describe(function)} instead of your function: pass the function itself, without calling it: "
            f"{usage} (no parentheses after {spec.function})."
        )
    if not callable(function):
        return f"expects your function, e.g. {usage}, but got {_describe(function)}."
    return None


def _not_implemented(spec: CheckSpec, exc: BaseException | None) -> CheckResult:
    frame = _learner_frame(exc) if exc is not None else None
    other = frame is not None and frame.name not in (spec.function, "<module>", "<lambda>")
    if other:
        text = (
            f"not implemented yet: {spec.function} calls {frame.name}, which still raises NotImplementedError. "
            f"Finish {frame.name} first, then run this check again."
        )
    else:
        text = (
            f"not implemented yet. Replace the line `raise NotImplementedError(...)` in {spec.function} with your "
            "code, run that cell, then run this check again."
        )
    return CheckResult(spec.name, False, NOT_IMPLEMENTED, f"{ICONS[NOT_IMPLEMENTED]} {spec.name}: {text}")


def _raised(spec: CheckSpec, exc: BaseException, where: str) -> CheckResult:
    text = f"your function raised {_exception_text(exc)}"
    location = ""
    frame = _learner_frame(exc)
    if frame is not None:
        line = (frame.line or "").strip()
        location = f"At {_frame_location(frame)}" + (f":  {_shorten(line, 120)}" if line else ".")
    mistake_key, hint = None, ""
    for mistake in spec.mistakes:
        if mistake.raises is not None and _safe_bool(mistake.raises, exc):
            mistake_key, hint = mistake.key, f"It looks like {mistake.title}. {mistake.hint}"
            break
    if not hint:
        hint = _generic_exception_hint(spec, exc)
    return _result(spec, ERROR, text, hint, mistake_key, where=where, location=location)


def _generic_exception_hint(spec: CheckSpec, exc: BaseException) -> str:
    message = _safe_str(exc)
    kind = type(exc).__name__
    if isinstance(exc, TypeError) and ("positional argument" in message or "keyword argument" in message):
        return (
            "A function called inside yours got the wrong number of arguments: compare the call on the line above "
            "with that function's definition."
        )
    if isinstance(exc, NameError):
        return (
            "A name your function uses is not defined: run the first cell of the notebook (the imports), check the "
            "spelling, and run the cells that define any helper you call."
        )
    if isinstance(exc, RecursionError):
        return (
            f"Your function calls itself over and over. Did you call {spec.function}(...) inside {spec.function}, "
            "meaning torch's version (torch.softmax, torch.tanh, ...)?"
        )
    if kind == "CourseInputError":
        return "A course_lib function refused its input: the message above says which argument and what it expected."
    shape_words = (
        "shape",
        "size of tensor",
        "must match the size",
        "cannot be multiplied",
        "Dimension out of range",
        "dimension",
    )
    if any(word in message for word in shape_words):
        return (
            "A shape did not fit. Print the .shape of each intermediate tensor and compare with the shapes in the "
            "docstring; the names (batch, seq, d_k, ...) say which axis is which."
        )
    return "Read the line above; print the shapes and values of the tensors involved to see what went wrong."


def _returned_hint(value: Any) -> str:
    if value is None:
        return "Did you forget the `return` statement at the end of your function?"
    if type(value).__module__.startswith("numpy"):
        return (
            "The course works with torch tensors: use torch functions (torch.exp, torch.tanh, tensor.sum(...)) on the "
            "tensors you were given instead of NumPy ones, or convert at the end with torch.from_numpy(...)."
        )
    if isinstance(value, (int, float, bool)):
        return "A single number usually means a reduction went too far, e.g. .sum() or .mean() without dim=."
    return "Return the tensor the docstring describes."


def _shape_hint(shape, expected, axes: str = "") -> str:
    shape, expected = tuple(shape), tuple(expected)
    reading = _read_shape(shape, expected, axes)
    if reading:
        return reading
    if sorted(shape) == sorted(expected):
        return "It has the right sizes in a different order: check the axis you stack along, transpose or permute."
    if len(shape) == len(expected) - 1:
        return "One axis is missing: a reduction (.sum, .mean, .max) without keepdim=True, a squeeze, or indexing drops an axis."
    if len(shape) == len(expected) + 1:
        return "There is one axis too many: check unsqueeze/stack calls, or an extra batch axis."
    return "Print the shapes of your intermediate tensors and compare them with the docstring, step by step."


def _read_shape(shape: tuple, expected: tuple, axes: str) -> str:
    """Explain a shape that holds the right number of entries as the expected axes reordered, merged or split."""
    names = _axis_names(axes, len(expected))
    if names is None or math.prod(shape) != math.prod(expected) or shape == expected or len(expected) > 5:
        return ""

    def groupings(order):
        """Every way to merge neighbouring axes of ``order`` into len(shape) groups."""
        n, k = len(order), len(shape)
        for cuts in itertools.combinations(range(1, n), k - 1):
            bounds = (0, *cuts, n)
            yield [order[bounds[i] : bounds[i + 1]] for i in range(k)]

    if len(shape) > len(expected):
        return ""  # an axis split in two: the generic hint says so
    for order in itertools.permutations(range(len(expected))):
        for groups in groupings(order):
            if all(math.prod(expected[a] for a in group) == size for group, size in zip(groups, shape)):
                read = ", ".join(" * ".join(names[a] for a in group) for group in groups)
                merged = [group for group in groups if len(group) > 1]
                what = []
                if merged:
                    what.append(
                        "; ".join(
                            " and ".join(names[a] for a in group) + " are merged into one axis" for group in merged
                        )
                    )
                if list(order) != sorted(order):
                    what.append("the axes are in another order")
                return f"Your shape reads as ({read}): {', and '.join(what)}. The docstring asks for {axes}."
    return ""


def _mutation_hint(spec: CheckSpec, changed: list[str]) -> str:
    modules = set(spec.extra.get("module_args", ()))
    if any(name in modules for name in changed):
        return (
            "The caller's model must stay as it was: leave its weights alone (no `.weight[...] = 0`, `.zero_()` or "
            "`.data` assignments) and change only what your own forward pass computes."
        )
    return (
        "The caller still needs the original values. Use operations that make a new tensor "
        "(`x = x - m` instead of `x -= m`, `masked_fill` instead of `masked_fill_`, no `out=`/`.add_()`)."
    )
