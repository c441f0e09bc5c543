"""Judging a learner's output: comparison, the catalogue of mistakes, gradients, and the messages that say why.

``_judge`` checks the form of the output (``_conform``), names a catalogued mistake that explains it
(``_recognise``), or describes the difference entry by entry (``_compare_tensor``). ``same`` and ``explains`` are
the tolerances a pass needs, shared with the mistake probes. Right values are not enough: the result must also
train, so the gradients of a fixed random projection of the outputs are compared with the reference's
(``_gradient_verdict``). What a call did instead of returning a value (raised, timed out, still a stub, not
callable, changed its inputs) gets its own message, and hints read a returned value or shape.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import torch

from .calling import (
    TIME_LIMIT,
    TimeLimitExceeded,
    _axis_names,
    _clone,
    _describe,
    _dtype,
    _exception_text,
    _frame_location,
    _item_axes,
    _item_names,
    _learner_frame,
    _safe_bool,
    _safe_str,
    _shape,
    _shorten,
    _unravel,
    _where,
    call_with_time_limit,
)
from .spec import (
    ERROR,
    ICONS,
    NOT_IMPLEMENTED,
    TIMEOUT,
    CheckResult,
    CheckSpec,
    Mistake,
    TensorOut,
    TupleOut,
    ValueOut,
    _result,
    _Verdict,
    generator,
    quiet_rng,
)

# --------------------------------------------------------------------------- describe


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


def _raised(spec: CheckSpec, exc: BaseException, where: str, args: tuple = ()) -> CheckResult:
    text = f"your function raised {_exception_text(exc)}"
    location = ""
    frame = _learner_frame(exc)
    if frame is not None:
        line = (frame.line or "").strip()
        location = f"At {_frame_location(frame)}" + (f":  {_shorten(line, 120)}" if line else ".")
    mistake_key, hint = None, ""
    for mistake in spec.mistakes:
        if (mistake.raises is not None and _safe_bool(mistake.raises, exc)) or (
            mistake.raises_on is not None and _safe_bool(mistake.raises_on, exc, _clone(args))
        ):
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
    if isinstance(spec.output, ValueOut):
        return (
            "Read the line above; print the values involved (a few ids, the pair, a token's bytes) on a small "
            "example to see what went wrong."
        )
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
    if isinstance(spec.output, ValueOut):
        return (
            "The caller still needs its list or dict as it was: build a new list (or dict) for the result instead of "
            "changing the one you were given (no `ids[t] = ...`, `ids.pop(...)`, `del ids[...]`, `ids[a:b] = ...`)."
        )
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


# --------------------------------------------------------------------------- compare


def _judge(
    spec: CheckSpec,
    value: Any,
    expected: Any,
    args: tuple,
    recognise: bool = True,
    confirm: Callable[[str], bool] | None = None,
) -> _Verdict | None:
    """None when the output is right; otherwise what is wrong (a catalogued mistake first, when ``recognise``: the
    first one that explains this output and that ``confirm(key)`` accepts, e.g. it explains the later tests too)."""
    if isinstance(spec.output, ValueOut):
        return _judge_value(spec, value, expected, args, recognise, confirm)
    got, problem = _conform(spec.output, value)
    expected_items = list(expected) if isinstance(spec.output, TupleOut) else [expected]
    if got is not None and _all_close(got, expected_items, spec.atol, spec.rtol):
        for tensor, reference, name in zip(got, expected_items, _item_names(spec.output)):
            if tensor.dtype != reference.dtype:
                return _Verdict(
                    f"{name}the values are right but the dtype is {_dtype(tensor.dtype)}, expected {_dtype(reference.dtype)}.",
                    spec.dtype_hint or f"Convert the result with .to({_dtype(reference.dtype, short=False)}).",
                    "wrong_dtype",
                )
        return None
    for mistake in spec.mistakes if recognise else ():
        if (
            mistake.raises is None
            and _recognise(spec, mistake, value, args, expected)
            and (confirm is None or confirm(mistake.key))
        ):
            return _Verdict(f"It looks like {mistake.title}.", mistake.hint, mistake.key)
    if problem:
        return _Verdict(problem[0], problem[1], None)
    plain = got[0] if isinstance(spec.output, TensorOut) else tuple(got)  # detached, plain tensors for diagnose()
    items = list(zip(got, expected_items, _item_names(spec.output)))
    wrong = [item for item in items if not _all_close([item[0]], [item[1]], spec.atol, spec.rtol)]
    if not wrong:  # pragma: no cover - _all_close said something differs, so one item must differ
        return None
    tensor, reference, name = wrong[0]
    verdict = _compare_tensor(spec, tensor, reference, name, plain, expected, args)
    if verdict is not None and isinstance(spec.output, TupleOut):
        right = [label.strip(": ") for _, _, label in items if label not in {w[2] for w in wrong}]
        others = [label.strip(": ") for _, _, label in wrong[1:]]
        if right:
            verdict.text = f"{_listed(right)} {'is' if len(right) == 1 else 'are'} right, but " + verdict.text
        if others:
            verdict.text += f" {_listed(others)} {'is' if len(others) == 1 else 'are'} wrong too."
    return verdict


def _judge_value(spec, value, expected, args, recognise, confirm) -> _Verdict | None:
    """``_judge`` for a plain value (``ValueOut``): equal or not, then a catalogued mistake, then the form, then
    ``diagnose`` (what differs, said without the expected value)."""
    got, problem = _conform_value(spec.output, value)
    if problem is None and got == _conform_value(spec.output, expected)[0]:
        return None
    for mistake in spec.mistakes if recognise else ():
        if (
            mistake.raises is None
            and _recognise(spec, mistake, value, args, expected)
            and (confirm is None or confirm(mistake.key))
        ):
            return _Verdict(f"It looks like {mistake.title}.", mistake.hint, mistake.key)
    if problem:
        return _Verdict(problem[0], problem[1], None)
    detail = _extra(spec, got, expected, args).strip()
    return _Verdict(
        f"your function returned {spec.output.what}, but not the right one.",
        detail or "Work through the smallest case by hand, with the formula in the exercise, and compare step by step.",
        "wrong_values",
    )


def _conform_value(output: ValueOut, value: Any) -> tuple[Any, tuple[str, str] | None]:
    """``output.conform(value)``, which never raises here (a learner's object may break it)."""
    try:
        plain, problem = output.conform(value)
    except Exception:
        return None, (f"your function returned {_describe(value)}, expected {output.what}.", _returned_hint(value))
    return (None, problem) if problem is not None else (plain, None)


def _listed(names: list[str]) -> str:
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]


def _compare_tensor(spec, tensor, reference, name, value, expected, args) -> _Verdict | None:
    axes = _item_axes(spec.output, name)
    if tuple(tensor.shape) != tuple(reference.shape):
        return _Verdict(
            f"{name}expected shape {_shape(reference.shape)} = {axes}, got {_shape(tensor.shape)}.",
            _shape_hint(tensor.shape, reference.shape, axes),
            "wrong_shape",
        )
    whole = tensor.is_floating_point() and not reference.is_floating_point()
    if whole and torch.equal(tensor, reference.to(tensor.dtype)):  # right numbers, stored as floats
        return _Verdict(
            f"{name}expected whole numbers ({_dtype(reference.dtype)}), got dtype {_dtype(tensor.dtype)}.",
            spec.dtype_hint or f"Keep the result in whole numbers ({_dtype(reference.dtype)}).",
            "wrong_dtype",
        )
    if not tensor.is_floating_point() and reference.is_floating_point():
        return _Verdict(
            f"{name}expected floating-point numbers ({_dtype(reference.dtype)}), got dtype {_dtype(tensor.dtype)}.",
            spec.dtype_hint
            or "Integer or boolean results usually come from integer inputs such as torch.arange(n); "
            "ask for floats with dtype=torch.float32.",
            "wrong_dtype",
        )
    finite = torch.isfinite(tensor)
    if not bool(finite.all()) and bool(torch.isfinite(reference).all()):
        nans, infs = int(torch.isnan(tensor).sum()), int(torch.isinf(tensor).sum())
        parts = [f"NaN in {nans}" if nans else "", f"±inf in {infs}" if infs else ""]
        found = " and ".join(part for part in parts if part)
        where = _where(~finite, axes)
        return _Verdict(
            f"{name}your output contains {found} of its {tensor.numel()} entries{where}.",
            "NaN comes from inf - inf, inf / inf or 0 / 0; inf from exp of a large number or a division by zero. "
            "Print the intermediate tensors to see where it first appears." + _extra(spec, value, expected, args),
            "not_finite",
        )
    misplaced = _misplaced_infinities(tensor, reference, axes)
    if misplaced is not None:
        text, has_nan = misplaced
        hint = _extra(spec, value, expected, args).strip()
        if has_nan:
            hint = (
                "NaN comes from inf - inf, 0 · inf or 0 / 0 (for example multiplying a mask of 0s and 1s by -inf): "
                "set the dropped entries with masked_fill or torch.where instead. " + hint
            ).strip()
        hint = hint or (
            "Compare which entries you set to ±inf with the rule in the docstring: a comparison the wrong way round "
            "(< instead of <=), a threshold from the wrong quantity, or a mask built from the wrong tensor moves them."
        )
        return _Verdict(f"{name}{text}", hint, "wrong_values")
    both = torch.isfinite(tensor) & torch.isfinite(reference)  # the ±inf and NaN entries are where they should be
    difference = torch.where(both, (tensor.double() - reference.double()).abs(), 0.0)
    tolerance = spec.atol + spec.rtol * reference.double().abs()
    wrong = both & (difference > tolerance)
    worst = int(difference.argmax())
    index = tuple(int(i) for i in _unravel(worst, tensor.shape))
    largest = float(difference.max())
    finite_reference = reference.double()[torch.isfinite(reference)]
    size = float(finite_reference.abs().max()) if finite_reference.numel() else 0.0
    relative = f" ({largest / size:.2g} of the largest expected value)" if size > 0 else ""
    text = (
        f"{name}the shape is right but the values are not: {int(wrong.sum())} of {tensor.numel()} entries differ from "
        f"the expected result{_where(wrong, axes)}, the largest by {largest:.3g}{relative} (at index {list(index)})."
    )
    hint = _extra(spec, value, expected, args).strip()
    if not hint and size > 0 and largest < 0.01 * size:
        hint = (
            "A difference this small usually means a small change to the formula: an extra constant (a + 1e-3 "
            "somewhere, another eps), a lower precision (float16) in one step, or a rounding shortcut."
        )
    hint = (
        hint
        or "Work through a tiny example by hand (batch of 1, a few positions) and compare each step with the formula."
    )
    return _Verdict(text, hint, "wrong_values")


def _misplaced_infinities(tensor: torch.Tensor, reference: torch.Tensor, axes: str) -> tuple[str, bool] | None:
    """Where the output's +inf, -inf and NaN entries are not the expected result's: ``(text, any NaN)`` or None.

    Each kind is counted with its first index and what the expected result holds there (a number, or ±inf), so a
    message never reads an infinite difference as a small one.
    """
    got, want = tensor.double(), reference.double()
    kinds = (
        ("NaN", torch.isnan(got) & ~torch.isnan(want)),
        ("+inf", torch.isposinf(got) & ~torch.isposinf(want)),
        ("-inf", torch.isneginf(got) & ~torch.isneginf(want)),
        ("a finite number", torch.isfinite(got) & ~torch.isfinite(want)),
    )
    parts, anywhere = [], torch.zeros_like(got, dtype=torch.bool)
    for kind, where in kinds:
        count = int(where.sum())
        if not count:
            continue
        anywhere |= where
        first = int(where.flatten().nonzero()[0])
        index = list(_unravel(first, tensor.shape))
        there = float(want.flatten()[first])
        expected = "a number" if math.isfinite(there) else ("NaN" if math.isnan(there) else f"{there:+}")
        entries = "entry" if count == 1 else "entries"
        parts.append(f"{kind} in {count} {entries} where the expected result has {expected} (first at index {index})")
    if not parts:
        return None
    text = (
        f"the infinities and NaNs are not where they should be: {'; '.join(parts)}, out of {tensor.numel()} "
        f"entries{_where(anywhere, axes)}."
    )
    return text, bool(torch.isnan(got).any())


def _passes(spec: CheckSpec, value: Any, expected: Any) -> bool:
    """Are the learner's values right on this test (its form and values, whatever the dtype)?"""
    if isinstance(spec.output, ValueOut):
        got, problem = _conform_value(spec.output, value)
        return problem is None and got == _conform_value(spec.output, expected)[0]
    got, _ = _conform(spec.output, value)
    expected_items = list(expected) if isinstance(spec.output, TupleOut) else [expected]
    return got is not None and _all_close(got, expected_items, spec.atol, spec.rtol)


def _extra(spec: CheckSpec, value, expected, args) -> str:
    if spec.diagnose is None:
        return ""
    try:
        text = spec.diagnose(value, expected, args)
    except Exception:
        return ""
    return f" {text}" if text else ""


def _recognise(spec: CheckSpec, mistake: Mistake, value: Any, args: tuple, expected: Any) -> bool:
    """Does ``mistake`` explain the learner's output on this test?

    Only if its buggy version differs from the reference here (a mistake that gives the right answer on this test
    cannot explain a wrong one) and equals the learner's output to the tolerance a pass needs.
    """
    if mistake.probe is not None:
        return _safe_bool(mistake.probe, value, _clone(args))
    plain = isinstance(spec.output, ValueOut)
    if plain:  # plain values: compared as the learner's form allows (a Counter equals the dict it counts)
        value, problem = _conform_value(spec.output, value)
        if problem is not None:
            return False
        expected = _conform_value(spec.output, expected)[0]
    for implementation in (mistake.example, *mistake.variants):
        try:
            buggy = implementation(*_clone(args))
        except Exception:
            continue
        if plain:
            buggy, problem = _conform_value(spec.output, buggy)
            if problem is None and value == buggy and buggy != expected:
                return True
        elif explains(value, buggy, expected, spec.atol, spec.rtol):
            return True
    return False


def explains(value: Any, buggy: Any, expected: Any, atol: float = 1e-5, rtol: float = 1e-4) -> bool:
    """True when ``buggy`` differs from ``expected`` and ``value`` equals ``buggy`` (both to ``atol``/``rtol``)."""
    return same(value, buggy, atol, rtol) and not same(buggy, expected, atol, rtol)


def same(value: Any, other: Any, atol: float = 1e-5, rtol: float = 1e-4) -> bool:
    """True when ``value`` and ``other`` are tensors (or tuples/lists of tensors) of equal shapes and close values.

    The default tolerance is the one a pass needs. NaN counts as equal to NaN, so a learner's NaN output can be
    matched with a buggy version's NaN.
    """
    if isinstance(value, torch.Tensor) != isinstance(other, torch.Tensor):
        return False  # a tensor never equals a tuple or list of tensors
    left, right = _tensors(value), _tensors(other)
    if left is None and right is None and not isinstance(value, torch.Tensor):  # plain values (token ids, counts, text)
        return _plain(value) == _plain(other)
    if left is None or right is None or len(left) != len(right):
        return False
    for a, b in zip(left, right):
        if tuple(a.shape) != tuple(b.shape) or a.is_complex() or b.is_complex():
            return False
        try:
            if not torch.allclose(a.detach().double(), b.detach().double(), rtol=rtol, atol=atol, equal_nan=True):
                return False
        except Exception:
            return False
    return True


def _plain(value: Any) -> Any:
    """A plain value in a form ``==`` compares by content: mappings as dicts, sequences as lists."""
    from collections.abc import Mapping

    if isinstance(value, Mapping):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _tensors(value: Any) -> list[torch.Tensor] | None:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)) and value and all(isinstance(item, torch.Tensor) for item in value):
        return list(value)
    return None


def _all_close(got: list[torch.Tensor], expected: list[torch.Tensor], atol: float, rtol: float) -> bool:
    for tensor, reference in zip(got, expected):
        if tuple(tensor.shape) != tuple(reference.shape):
            return False
        if not reference.is_floating_point():  # whole numbers (token ids): equal, not close
            if tensor.is_floating_point() or tensor.is_complex() or not torch.equal(tensor.long(), reference.long()):
                return False
            continue
        if not tensor.is_floating_point():
            return False
        if not torch.allclose(tensor.double(), reference.double(), rtol=rtol, atol=atol):
            return False
    return True


def _conform(output: TensorOut | TupleOut, value: Any) -> tuple[list[torch.Tensor] | None, tuple[str, str] | None]:
    """Check the type and structure of what the learner returned; return plain CPU tensors or a (text, hint) problem."""
    if isinstance(output, TensorOut):
        if isinstance(value, (tuple, list)):
            text = f"your function returned {_describe(value)}, but it should return a single tensor {output.axes}."
            if isinstance(value, list) and value and all(isinstance(item, torch.Tensor) for item in value):
                return None, (text, "To turn a list of tensors into one tensor, use torch.stack(...) along a new axis.")
            return None, (text, "Return only the tensor the docstring asks for (not a tuple of several results).")
        tensor, problem = _plain_tensor(value, "your function returned", output.axes)
        return ([tensor], None) if problem is None else (None, problem)
    names = output.names
    if isinstance(value, torch.Tensor):
        return None, (
            f"your function returned a single tensor of shape {_shape(value.shape)}, but it should return a pair {names}.",
            f"Return both, as a tuple: `return {names[1:-1]}`.",
        )
    if not isinstance(value, (tuple, list)):
        return None, (
            f"your function returned {_describe(value)}, but it should return a pair {names}.",
            _returned_hint(value),
        )
    if len(value) != len(output.items):
        return None, (
            f"your function returned {_describe(value)}, but it should return {len(output.items)} items {names}.",
            f"Return exactly `{names[1:-1]}`.",
        )
    tensors = []
    for item, (name, axes) in zip(value, output.items):
        if isinstance(item, list) and item and all(isinstance(x, torch.Tensor) for x in item):
            return None, (
                f"`{name}` is a Python list of {len(item)} tensors, not one tensor {axes}.",
                "Combine the list into one tensor with torch.stack(..., dim=...) so that the axes come out as in the docstring.",
            )
        tensor, problem = _plain_tensor(item, f"`{name}` is", axes)
        if problem is not None:
            return None, problem
        tensors.append(tensor)
    return tensors, None


def _plain_tensor(value: Any, subject: str, axes: str) -> tuple[torch.Tensor | None, tuple[str, str] | None]:
    if not isinstance(value, torch.Tensor):
        return None, (f"{subject} {_describe(value)}, expected a torch.Tensor {axes}.", _returned_hint(value))
    tensor = value if type(value) in (torch.Tensor, torch.nn.Parameter) else value.as_subclass(torch.Tensor)
    tensor = tensor.detach()
    if tensor.layout != torch.strided:
        return None, (
            f"{subject} a {tensor.layout} tensor, expected an ordinary (dense) tensor {axes}.",
            "Convert it with .to_dense().",
        )
    if tensor.device.type != "cpu":
        return None, (
            f"{subject} a tensor on the {tensor.device.type} device, expected it on the CPU like the inputs.",
            "Keep everything on the inputs' device: create new tensors with device=x.device, or move the result with .cpu().",
        )
    if tensor.is_complex():
        return None, (
            f"{subject} a complex tensor ({_dtype(tensor.dtype)}), expected real numbers {axes}.",
            "Keep the computation in real numbers.",
        )
    return tensor, None


def finite_close(a: torch.Tensor, b: torch.Tensor, atol: float = 1e-5, rtol: float = 1e-4) -> bool:
    """Same shape and close values (used by probes)."""
    return same(a, b, atol, rtol)


# --------------------------------------------------------------------------- gradients


def _differentiable(args: tuple) -> list[int]:
    return [i for i, arg in enumerate(args) if isinstance(arg, torch.Tensor) and arg.is_floating_point()]


def _leaves(args: tuple, wanted: list[int]) -> tuple:
    return tuple(arg.detach().clone().requires_grad_(True) if i in wanted else arg for i, arg in enumerate(args))


def _cotangents(shapes) -> list[torch.Tensor]:
    """Fixed random weights for the outputs: the loss is Σ output · weight (a plain sum gives softmax a zero gradient)."""
    gen = generator(1234)
    return [torch.randn(tuple(shape), generator=gen, dtype=torch.float64) for shape in shapes]


def learner_gradients(spec: CheckSpec, function: Any, args: tuple, seconds: float | None = None) -> dict:
    """The learner side of the gradient comparison, as plain data (``remote`` sends it out of a sandbox).

    ``{"kind": "grads", "grads": [...]}`` (one per differentiable argument, None where unused), ``{"kind": "cut",
    "items": [...]}`` (outputs with no gradient), ``{"kind": "raised", "text": ...}`` (the function fails on inputs
    that require gradients, e.g. through ``.numpy()``), ``{"kind": "error", "text": ...}`` or ``{"kind": "skip"}``.
    """
    wanted = _differentiable(args)
    if not wanted:
        return {"kind": "skip"}
    with torch.enable_grad(), quiet_rng():
        learner_args = _leaves(args, wanted)
        try:
            value = call_with_time_limit(function, learner_args, seconds)
        except (KeyboardInterrupt, TimeLimitExceeded):
            raise
        except BaseException as exc:  # it ran fine on the same inputs without gradients: autograd is what it fails on
            return {"kind": "raised", "text": _exception_text(exc)}
        got = _tensors(value)
        if got is None:
            return {"kind": "skip"}
        names = [name.strip(": ") for name in _item_names(spec.output)]
        cut = [name for out, name in zip(got, names) if not out.requires_grad]
        if cut:
            return {"kind": "cut", "items": cut}
        try:
            loss = sum((out.double() * c).sum() for out, c in zip(got, _cotangents(out.shape for out in got)))
            grads = torch.autograd.grad(loss, [learner_args[i] for i in wanted], allow_unused=True)
        except RuntimeError as exc:
            return {"kind": "error", "text": _exception_text(exc)}
    return {"kind": "grads", "grads": [None if g is None else g.detach().double() for g in grads]}


def _gradient_verdict(spec: CheckSpec, args: tuple, learner_side: Callable[[], dict]) -> _Verdict | None:
    """Compare the gradients of a fixed random projection of the outputs with the reference's (``spec.reference``).

    ``learner_side()`` gives the learner's gradients on ``args`` (``learner_gradients``, here or replayed).
    """
    names = list(spec.arg_names) + [f"argument {i + 1}" for i in range(len(spec.arg_names), len(args))]
    wanted = _differentiable(args)
    if not wanted:
        return None
    with torch.enable_grad(), quiet_rng():
        reference_args = _leaves(args, wanted)
        reference_out = _tensors(spec.reference(*reference_args))
        reference_loss = sum(
            (out.double() * c).sum() for out, c in zip(reference_out, _cotangents(out.shape for out in reference_out))
        )
        reference_grads = torch.autograd.grad(reference_loss, [reference_args[i] for i in wanted], allow_unused=True)
    learner = learner_side()
    kind = learner.get("kind") if isinstance(learner, dict) else None
    if kind == "cut":
        cut = [str(item) for item in learner.get("items", [])]
        subject = (
            f"no gradient flows back from {' and '.join(cut)}" if cut and cut != [""] else "no gradient flows back"
        )
        return _Verdict(
            f"the values are right, but {subject} to the inputs: something in your function cuts the computation "
            "graph, so a model built on it could not learn.",
            spec.gradient_hint
            or "Look for .detach(), .item(), .tolist(), .numpy(), torch.no_grad(), or a new tensor built from "
            "values (torch.tensor(...)); compute everything from the input tensors with torch operations.",
            "no_gradient",
        )
    if kind == "raised":
        return _Verdict(
            "the values are right, but your function fails when its inputs require gradients, as every tensor inside "
            f"a model that learns does ({_shorten(str(learner.get('text', '')), 300)}).",
            spec.gradient_hint
            or "Something leaves PyTorch's autograd (.numpy(), .tolist(), .item()) or changes an input in place "
            "(x -= ..., x[...] = ...). Compute new tensors from the inputs with torch operations.",
            "no_gradient",
        )
    if kind == "error":
        return _Verdict(
            f"the values are right, but the gradient cannot be computed through your function ({_shorten(str(learner.get('text', '')), 300)}).",
            "This usually comes from an in-place operation (x -= ..., x[...] = ..., .add_(), masked_fill_) on a tensor "
            "that autograd still needs. Use the out-of-place versions.",
            "no_gradient",
        )
    if kind != "grads":
        return None
    learner_grads = list(learner.get("grads", []))
    if len(learner_grads) != len(wanted):
        return None
    mine = {names[i]: g for i, g in zip(wanted, learner_grads)}
    theirs = {names[i]: g for i, g in zip(wanted, reference_grads)}
    wrong = []
    for name in mine:
        reference = theirs[name]
        b = torch.zeros(args[names.index(name)].shape, dtype=torch.float64) if reference is None else reference.double()
        a = torch.zeros_like(b) if mine[name] is None else mine[name]
        if not isinstance(a, torch.Tensor) or a.shape != b.shape:
            wrong.append(name)
            continue
        scale = max(1.0, float(b.abs().max())) if b.numel() else 1.0
        if not torch.allclose(a.double(), b, atol=1e-4 * scale, rtol=1e-3, equal_nan=False):
            wrong.append(name)
    if not wrong:
        return None
    detail = ""
    if spec.gradient_diagnose is not None:
        try:
            detail = spec.gradient_diagnose(mine, theirs, args) or ""
        except Exception:
            detail = ""
    listed = ", ".join(f"`{name}`" for name in wrong)
    return _Verdict(
        f"the values are right, but the gradients with respect to {listed} are not: part of the computation does "
        "not pass the gradient back." + (f" {detail}" if detail else ""),
        spec.gradient_hint
        or "Look for .detach(), .item(), .tolist(), torch.no_grad() or a tensor rebuilt from values in the middle of "
        "your function: the forward values stay the same, but the gradient stops there.",
        "wrong_gradient",
    )
