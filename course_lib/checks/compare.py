"""Comparing the learner's output with the reference, and saying what differs.

``_judge`` checks the form of the output (``_conform``), names a catalogued mistake that explains it
(``_recognise``), or describes the difference entry by entry (``_compare_tensor``). ``same`` and ``explains`` are
the tolerances a pass needs, shared with the mistake probes."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from .calling import _clone
from .describe import _returned_hint, _shape_hint
from .spec import CheckSpec, Mistake, TensorOut, TupleOut, _Verdict
from .text import _describe, _dtype, _item_axes, _item_names, _safe_bool, _shape, _unravel, _where


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
    for implementation in (mistake.example, *mistake.variants):
        try:
            buggy = implementation(*_clone(args))
        except Exception:
            continue
        if explains(value, buggy, expected, spec.atol, spec.rtol):
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
