"""Right values are not enough: the result must also train. Gradients of a fixed random projection of the
outputs are compared with the reference's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .calling import TimeLimitExceeded, call_with_time_limit
from .compare import _tensors
from .spec import CheckSpec, _Verdict
from .tensors import generator, quiet_rng
from .text import _exception_text, _item_names, _shorten


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
    "items": [...]}`` (outputs with no gradient), ``{"kind": "error", "text": ...}`` or ``{"kind": "skip"}``.
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
        except BaseException:
            return {"kind": "skip"}  # it ran fine on the same inputs without gradients; nothing more to learn here
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
