"""Which step went wrong first: compare the learner's intermediate results with the reference's, stage by stage.

When no catalogued mistake explains a wrong output, a check can still say where the computation first leaves the
reference. Two recorders do that:

- ``record_tensors`` runs the learner's function under a ``torch.overrides.TorchFunctionMode`` and keeps every
  intermediate tensor of a given shape (for attention: the ``(…, seq_q, seq_k)`` tables). ``attention_stages`` then
  looks for the reference's stages among them (scores Q Kᵀ, scaled scores, masked scores, weights) and says, e.g.,
  "your scores match Q Kᵀ; your scaled scores equal Q Kᵀ / 4, not Q Kᵀ / √d_k = Q Kᵀ / 2".
- ``Recording`` wraps the parts a check hands to the learner (the sublayer, the norms) and logs what each one
  receives; ``part_stages`` compares that with what the reference wiring gives each part.

The messages describe what the learner's own code computed and which stage differs; they never print the solution.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from ..attention import attention_stages as reference_stages
from .calling import call_with_time_limit
from .judging import same

MAX_RECORDED = 400


class _Recorder(TorchFunctionMode):
    """Keeps a copy of every floating-point tensor of ``shape`` that a torch operation returns."""

    def __init__(self, shape: torch.Size):
        super().__init__()
        self.shape = tuple(shape)
        self.tensors: list[torch.Tensor] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        try:
            items = result if isinstance(result, (tuple, list)) else (result,)
            for item in items:
                if (
                    type(item) in (torch.Tensor, torch.nn.Parameter)
                    and tuple(item.shape) == self.shape
                    and item.is_floating_point()
                    and len(self.tensors) < MAX_RECORDED
                ):
                    self.tensors.append(item.detach().clone())
        except Exception:  # recording must never change what the learner's code does
            pass
        return result


def record_tensors(function: Callable, args: Sequence, shape: torch.Size) -> tuple[Any, list[torch.Tensor]]:
    """Run ``function(*args)`` (with the check's time limit) and return its value and the recorded tensors."""
    recorder = _Recorder(shape)
    with recorder:
        value = call_with_time_limit(function, args)
    return value, recorder.tensors


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal to the pass tolerance, with -inf (blocked scores) matching -inf."""
    return same(a, b)


def _divided_by(tensor: torch.Tensor, raw: torch.Tensor) -> float | None:
    """``c`` when ``tensor`` equals ``raw / c`` for one positive constant ``c`` (other than 1), else None."""
    finite = torch.isfinite(tensor) & torch.isfinite(raw) & (tensor.abs() > 1e-6)
    if int(finite.sum()) < 2:
        return None
    ratios = raw[finite].double() / tensor[finite].double()
    c = float(ratios.median())
    if not math.isfinite(c) or c <= 0 or abs(c - 1) < 1e-4:
        return None
    if _close(tensor, raw / c):
        return c
    return None


def _rows_sum_to_one(tensor: torch.Tensor, dim: int) -> bool:
    sums = tensor.double().sum(dim=dim)
    return (
        bool(torch.isfinite(tensor).all())
        and bool((tensor >= 0).all())
        and torch.allclose(sums, torch.ones_like(sums), atol=1e-4)
    )


def attention_stages(function: Callable, args: Sequence, expected: Any, causal: bool = False) -> str | None:
    """Which stage of softmax(Q Kᵀ / √d_k) V (with a causal mask if ``causal``) the learner's function gets wrong first."""
    queries, keys, values = args[:3]
    d_k = queries.shape[-1]
    allowed = torch.ones(queries.shape[-2], keys.shape[-2], dtype=torch.bool).tril() if causal else None
    # the reference: the taught formula's own lines, in float64
    raw, scaled, masked, weights, _ = reference_stages(queries.double(), keys.double(), values.double(), allowed)
    try:
        _, recorded = record_tensors(function, args, raw.shape)
    except BaseException as exc:  # KeyboardInterrupt stops the check; anything else: no stage report
        if isinstance(exc, KeyboardInterrupt):
            raise
        return None
    recorded = [t.double() for t in recorded]
    if not recorded:
        return (
            "Your function computed no (…, seq_q, seq_k) table of scores with torch, so the steps cannot be compared: "
            "compute the scores of every query with every key first."
        )

    def first(predicate, start: int = 0) -> int | None:
        for index in range(start, len(recorded)):
            try:
                if predicate(recorded[index]):
                    return index
            except Exception:
                continue
        return None

    steps: list[str] = []
    raw_at = first(lambda t: _close(t, raw))
    if raw_at is not None:
        steps.append("✓ your scores match Q Kᵀ")
    # the scaled scores are the LAST table equal to Q Kᵀ / c for a constant c: that is the scaling the softmax sees
    scalings = [(index, c) for index in range(len(recorded)) if (c := _divided_by(recorded[index], raw)) is not None]
    if not scalings:
        if raw_at is not None:
            steps.append("✗ no tensor equal to Q Kᵀ / √d_k follows: the scaling step is missing or different")
        else:
            steps.append(
                "✗ none of your (…, seq_q, seq_k) tensors equals Q Kᵀ or Q Kᵀ / √d_k: look at how you compute the scores"
            )
        return _join(steps)
    at, c = scalings[-1]
    if abs(c - math.sqrt(d_k)) > 1e-6 * math.sqrt(d_k):
        size = _name_of_size(c, queries, keys, values)
        steps.append(
            f"✗ your scaled scores equal Q Kᵀ / {c:.4g}{size}, not Q Kᵀ / √d_k = Q Kᵀ / {math.sqrt(d_k):.4g} (d_k = {d_k})"
        )
        return _join(steps)
    steps.append("✓ your scaled scores match Q Kᵀ / √d_k")
    if causal:
        blocked_at = [index for index in range(at, len(recorded)) if _blocks_something(recorded[index])]
        if not blocked_at or not _same_blocking(recorded[blocked_at[-1]], masked, scaled):
            steps.append("✗ " + _describe_masking(recorded[at:], scaled, allowed))
            return _join(steps)
        steps.append("✓ your masked scores block exactly the positions after each query")
        at = blocked_at[-1]
    final = recorded[-1]  # the last (…, seq_q, seq_k) table: the one the values are combined with
    if _close(final, weights):
        steps.append("✓ your weights match the softmax over the keys")
        steps.append("✗ so the last step differs: the output should combine the value rows with these weights")
    elif first(lambda t: _close(t, weights), at) is not None:
        steps.append(
            "✓ your function computes the softmax over the keys; ✗ but changes it afterwards: the last "
            "(…, seq_q, seq_k) table it computes is no longer the softmax"
        )
    elif first(lambda t: _close(t, torch.softmax(masked, dim=-2)), at) is not None:
        steps.append("✗ your weights are a softmax over the queries (each column sums to 1), not over the keys")
    elif first(lambda t: _rows_sum_to_one(t, -1), at) is not None:
        steps.append("✗ your weights have rows that sum to 1 but are not the softmax of the scores before them")
    else:
        steps.append("✗ no tensor with rows that sum to 1 follows the scores: the softmax step is missing or different")
    return _join(steps)


def _blocks_something(tensor: torch.Tensor) -> bool:
    return bool(((tensor < -1e8) | torch.isneginf(tensor)).any())


def _same_blocking(tensor: torch.Tensor, masked: torch.Tensor, scaled: torch.Tensor) -> bool:
    """Blocked where the reference blocks (-inf or a very negative fill such as -1e9) and equal elsewhere."""
    blocked = torch.isneginf(masked)
    theirs = (tensor < -1e8) | torch.isneginf(tensor)
    return bool(torch.equal(theirs, blocked)) and same(tensor[~blocked], scaled[~blocked])


def _describe_masking(candidates: list[torch.Tensor], scaled: torch.Tensor, allowed: torch.Tensor) -> str:
    """What the learner's masked scores block, compared with the causal pattern."""
    for tensor in candidates:
        blocked = ((tensor < -1e8) | torch.isneginf(tensor)).reshape(-1, *allowed.shape).any(dim=0)
        if not bool(blocked.any()):
            zero = (tensor == 0).reshape(-1, *allowed.shape).all(dim=0)
            if bool(zero[~allowed].all()) and not bool(zero[allowed].all()):
                return "your masked scores set the positions after each query to 0, which still gets a positive weight; blocked scores need -inf"
            continue
        if torch.equal(blocked, ~allowed):
            continue
        if torch.equal(blocked, allowed):
            return "your mask blocks the positions each query may see (on and below the diagonal) and lets the later ones through"
        if torch.equal(blocked, ~allowed | torch.eye(len(allowed), dtype=torch.bool)):
            return "your mask also blocks the diagonal: a position may not attend to itself"
        leaks = int((~blocked & ~allowed).sum())
        extra = int((blocked & allowed).sum())
        return f"your mask lets {leaks} later position(s) through and blocks {extra} allowed one(s)"
    return "no tensor with blocked (-inf) scores follows the scaled scores: the positions after each query are never blocked"


def _name_of_size(c: float, queries, keys, values) -> str:
    d_k, seq_q, seq_k, d_v = queries.shape[-1], queries.shape[-2], keys.shape[-2], values.shape[-1]
    for label, size in (("d_k", d_k), ("d_v", d_v), ("seq_k", seq_k), ("seq_q", seq_q)):
        if abs(c - size) < 1e-6 * size:
            return f" (that is, divided by {label} = {size})"
        if abs(c - math.sqrt(size)) < 1e-6 * size and label != "d_k":
            return f" (that is, divided by √{label} = √{size})"
    return ""


def _join(steps: list[str]) -> str:
    return "Step by step, from the tensors your function computed: " + "; ".join(steps) + "."


# ---------------------------------------------------------------------------------------------------------------
# The parts a check hands to the learner
# ---------------------------------------------------------------------------------------------------------------


class Recording:
    """Wraps a part (a function of one tensor) and logs ``(name, input, output)`` each time it is called."""

    def __init__(self, name: str, part: Callable, log: list):
        self.name, self.part, self.log = name, part, log

    def __call__(self, tensor):
        output = self.part(tensor)
        try:
            self.log.append((self.name, tensor.detach().clone(), output.detach().clone()))
        except Exception:
            self.log.append((self.name, None, None))
        return output

    def __repr__(self) -> str:
        return self.name


def part_stages(
    function: Callable,
    args: tuple,
    parts: dict[int, str],
    wiring: Callable[..., Any],
    variant: str,
) -> str | None:
    """Compare what each part receives from the learner's function with what ``wiring`` (the reference) gives it.

    parts: argument index → part name (e.g. ``{1: "self_attention", 3: "norm1"}``); ``wiring`` takes the same
    arguments as the learner's function. ``variant`` names the reference in the message, e.g. ``"post-LN"``.
    """
    mine: list = []
    theirs: list = []

    def wrapped(log):
        return tuple(Recording(parts[i], arg, log) if i in parts else arg for i, arg in enumerate(args))

    with torch.no_grad():
        wiring(*wrapped(theirs))
        try:
            call_with_time_limit(function, wrapped(mine))
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            return None
    x = args[0]
    known = {"x": x}
    for name, _, output in mine:
        if output is not None and f"{name}'s output" not in known:
            known[f"{name}'s output"] = output
    steps = []
    for name, reference_input, _ in theirs:
        calls = [entry for entry in mine if entry[0] == name]
        if not calls:
            steps.append(f"✗ {name} is never called")
            return _parts_text(variant, steps)
        received = calls[0][1]
        if received is None or not same(received, reference_input):
            steps.append(
                f"✗ {name} receives {_identify(received, known, exclude=name)}, which is not what the {variant} block gives it"
            )
            return _parts_text(variant, steps)
        steps.append(f"✓ {name} receives the right input")
    counts = {name: sum(entry[0] == name for entry in mine) for name in parts.values()}
    expected_counts = {name: sum(entry[0] == name for entry in theirs) for name in parts.values()}
    for name in parts.values():
        if counts[name] > expected_counts[name]:
            steps.append(
                f"✗ {name} is called {counts[name]} times, but the {variant} block calls it {expected_counts[name]} time(s)"
            )
            return _parts_text(variant, steps)
    steps.append("✗ so the last step differs: how you combine the last part's output into the result")
    return _parts_text(variant, steps)


def _identify(tensor, known: dict, exclude: str) -> str:
    """Name ``tensor`` in terms of the learner's own tensors: 'x', "norm1's output", "x + self_attention's output"."""
    if tensor is None:
        return "something that is not a tensor"
    names = [name for name in known if not name.startswith(exclude)]
    for name in names:
        if same(tensor, known[name]):
            return name
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            try:
                if same(tensor, known[a] + known[b]):
                    return f"{a} + {b}"
            except Exception:
                continue
    return "a tensor that is none of x, a part's output or a sum of two of them"


def _parts_text(variant: str, steps: list[str]) -> str:
    return f"Step by step, comparing what each part receives with the {variant} block: " + "; ".join(steps) + "."
