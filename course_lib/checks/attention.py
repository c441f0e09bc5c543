"""Checks for exercise 02: a stable softmax, scaled dot-product attention, and attention with a causal mask.

Learner signatures:

    softmax(scores) -> weights                                 over the last axis
    attention(queries, keys, values) -> output                 softmax(Q Kᵀ / √d_k) V, output only
    causal_attention(queries, keys, values) -> output          the same, position i only sees keys 0..i

References: ``course_lib.softmax``, ``course_lib.scaled_dot_product_attention`` and ``course_lib.causal_mask``.
``softmax`` is tested on every input form its docstring promises, ``(..., seq_k)``: 1-D to 4-D. When no catalogued
mistake explains a wrong attention output, ``trace.attention_stages`` says which step went wrong first.
"""

from __future__ import annotations

import math

import torch

from ..attention import causal_mask, scaled_dot_product_attention
from ..attention import softmax as reference_softmax
from . import trace
from .core import export_checks
from .judging import explains
from .spec import Case, CheckSpec, Mistake, TensorOut, generator, randn

# --------------------------------------------------------------------------- softmax


def _softmax_case(kind: str, seed: int):
    def build():
        gen = generator(seed)
        if kind == "3d":
            scores = randn(gen, 2, 3, 5, scale=2.0)
        elif kind == "2d":
            scores = randn(gen, 4, 7, scale=2.0)
        elif kind == "1d":
            scores = randn(gen, 6, scale=2.0)
        elif kind == "4d":
            scores = randn(gen, 2, 3, 3, 4, scale=2.0)  # batch 2, 3 heads: no size is the 3-D case's alone
        elif kind == "large":
            # rows far above and far below zero: exp overflows (naive) or underflows (global max)
            offsets = torch.tensor([1000.0, -1000.0, 0.0]).repeat(2).reshape(2, 3, 1)
            scores = randn(gen, 2, 3, 6, scale=10.0) + offsets
        else:  # masked: -inf above the diagonal, as a causal mask leaves them
            scores = randn(gen, 2, 4, 4, scale=2.0).masked_fill(~causal_mask(4), float("-inf"))
        return (scores,), reference_softmax(scores, dim=-1)

    return build


def softmax_naive(scores):
    exps = scores.exp()
    return exps / exps.sum(dim=-1, keepdim=True)


def softmax_global_max(scores):
    exps = (scores - scores.max()).exp()
    return exps / exps.sum(dim=-1, keepdim=True)


def softmax_dim0(scores):
    return torch.softmax(scores, dim=0)


def _wrong_axis_probe(value, args) -> bool:
    (scores,) = args
    expected = torch.softmax(scores, dim=-1)
    return any(explains(value, torch.softmax(scores, dim=d), expected) for d in range(scores.dim() - 1))


def softmax_not_normalised(scores):
    return (scores - scores.amax(dim=-1, keepdim=True)).exp()


def softmax_sum_over_everything(scores):
    exps = (scores - scores.amax(dim=-1, keepdim=True)).exp()
    return exps / exps.sum()


def softmax_no_keepdim(scores):
    exps = (scores - scores.amax(dim=-1)).exp()
    return exps / exps.sum(dim=-1)


def _no_keepdim(exc: BaseException) -> bool:
    return isinstance(exc, RuntimeError) and "must match the size of tensor" in str(exc)


def softmax_max_tuple(scores):
    exps = (scores - scores.max(dim=-1, keepdim=True)).exp()
    return exps / exps.sum(dim=-1, keepdim=True)


def _max_tuple(exc: BaseException) -> bool:
    return isinstance(exc, TypeError) and "return_types.max" in str(exc)


def softmax_fixed_dim(scores):
    exps = (scores - scores.amax(dim=2, keepdim=True)).exp()
    return exps / exps.sum(dim=2, keepdim=True)


def _dim_out_of_range(exc: BaseException) -> bool:
    return isinstance(exc, IndexError) and "Dimension out of range" in str(exc)


SOFTMAX_MISTAKES = [
    Mistake(
        "no_max_subtraction",
        "the row maximum is not subtracted before exp, so exp overflows on large scores",
        "exp(1000) is inf in float32, and inf / inf is NaN. Subtract each row's maximum before exp (amax over the "
        "last axis, with keepdim=True so that it broadcasts). The shift cancels in the ratio, so the result is "
        "unchanged, but the largest exponent is now exp(0) = 1.",
        softmax_naive,
    ),
    Mistake(
        "global_max",
        "you subtract the maximum of the whole tensor instead of each row's maximum",
        "A row whose scores all sit far below the global maximum underflows to exp(-2000) = 0 everywhere, and 0 / 0 is "
        "NaN. Take the maximum per row: scores.amax(dim=-1, keepdim=True).",
        softmax_global_max,
    ),
    Mistake(
        "wrong_axis",
        "the softmax is taken over the wrong axis",
        "Normalise over the last axis (dim=-1): for attention, each query's row of scores over the keys must sum to 1. "
        "dim=-1 also works whatever the number of leading axes.",
        softmax_dim0,
        probe=_wrong_axis_probe,
    ),
    Mistake(
        "not_normalised",
        "the exponentials are not divided by their row sums",
        "After exp, divide each row by its sum (exps.sum(dim=-1, keepdim=True)) so that it adds up to 1.",
        softmax_not_normalised,
    ),
    Mistake(
        "sum_over_everything",
        "you divide by the sum over the whole tensor instead of each row's sum",
        "Sum over the last axis only and keep it for broadcasting: exps.sum(dim=-1, keepdim=True). Then every row "
        "sums to 1 on its own.",
        softmax_sum_over_everything,
    ),
    Mistake(
        "no_keepdim",
        "a reduction over the last axis dropped that axis (keepdim=True is missing)",
        "scores.amax(dim=-1) has shape (..., seq_q), which does not line up with scores (..., seq_q, seq_k). "
        "Pass keepdim=True so the result is (..., seq_q, 1) and broadcasts over each row.",
        softmax_no_keepdim,
        raises=_no_keepdim,
    ),
    Mistake(
        "max_returns_tuple",
        "tensor.max(dim=...) was used as a tensor, but it returns a pair (values, indices)",
        "Use scores.amax(dim=-1, keepdim=True), or take .values of scores.max(dim=-1, keepdim=True).",
        softmax_max_tuple,
        raises=_max_tuple,
    ),
    Mistake(
        "fixed_axis_number",
        "the axis is given as a fixed number that does not exist for inputs with fewer axes",
        "Use dim=-1 (the last axis): it works for (seq_q, seq_k), (batch, seq_q, seq_k) and any other number of axes.",
        softmax_fixed_dim,
        raises=_dim_out_of_range,
    ),
]


def _softmax_diagnose(value, expected, args) -> str | None:
    if not isinstance(value, torch.Tensor) or value.shape != expected.shape:
        return None
    sums = value.double().sum(dim=-1)
    if not torch.allclose(sums, torch.ones_like(sums), atol=1e-4):
        off = float((sums - 1).abs().nan_to_num(nan=math.inf).max())
        return f"Every row (along the last axis) should sum to 1; yours sum to between {float(sums.min()):.6g} and {float(sums.max()):.6g} (up to {off:.2g} away from 1)."
    if bool((value < 0).any()):
        return "Softmax weights are never negative, but some of yours are."
    return None


SOFTMAX_SPEC = CheckSpec(
    name="check_softmax",
    function="softmax",
    own=("course_lib.attention", "softmax"),
    arg_names=("scores",),
    output=TensorOut("(same shape as scores)"),
    cases=[
        Case("a batch of scores", _softmax_case("3d", 201)),
        Case("2-D scores", _softmax_case("2d", 202)),
        Case("one row of scores (seq_k,)", _softmax_case("1d", 205)),
        Case("4-D scores (batch, heads, seq_q, seq_k)", _softmax_case("4d", 206)),
        Case("scores around ±1000", _softmax_case("large", 203)),
        Case("scores with -inf where a mask blocks", _softmax_case("masked", 204)),
    ],
    mistakes=SOFTMAX_MISTAKES,
    success="Rows sum to 1, scores of ±1000 do not overflow, and -inf gets weight 0.",
    diagnose=_softmax_diagnose,
    reference=lambda scores: reference_softmax(scores, dim=-1),
)


# --------------------------------------------------------------------------- attention


def _attention_case(seed: int, batch: int, seq_q: int, seq_k: int, d_k: int, d_v: int, causal: bool = False):
    def build():
        gen = generator(seed)
        queries = randn(gen, batch, seq_q, d_k, scale=1.5)
        keys = randn(gen, batch, seq_k, d_k, scale=1.5)
        values = randn(gen, batch, seq_k, d_v)
        mask = causal_mask(seq_q) if causal else None
        output, _ = scaled_dot_product_attention(queries, keys, values, mask)
        return (queries, keys, values), output

    return build


def _attend(
    queries,
    keys,
    values,
    scale=None,
    softmax_dim=-1,
    mask=None,
    fill=float("-inf"),
    transpose=True,
    after=None,
    return_weights=False,
):
    """Attention with switches to reproduce each typical mistake."""
    d_k = queries.shape[-1]
    scale = math.sqrt(d_k) if scale is None else scale
    scores = queries @ (keys.transpose(-2, -1) if transpose else keys) / scale
    if mask is not None and after is None:
        scores = scores.masked_fill(~mask, fill)
    weights = torch.softmax(scores, dim=softmax_dim)
    if after == "multiply":
        weights = weights * mask
    if return_weights:
        return weights
    return weights @ values


def attention_no_scaling(queries, keys, values):
    return _attend(queries, keys, values, scale=1.0)


def attention_divide_by_d_k(queries, keys, values):
    return _attend(queries, keys, values, scale=queries.shape[-1])


def attention_scale_by_d_v(queries, keys, values):
    return _attend(queries, keys, values, scale=math.sqrt(values.shape[-1]))


def attention_scale_by_seq_k(queries, keys, values):
    return _attend(queries, keys, values, scale=math.sqrt(keys.shape[-2]))


def _wrong_dimension_probe(value, args) -> bool:
    queries, keys, values = args
    d_k = queries.shape[-1]
    expected = _attend(queries, keys, values)
    return any(
        size != d_k and explains(value, _attend(queries, keys, values, scale=math.sqrt(size)), expected)
        for size in (values.shape[-1], keys.shape[-2], queries.shape[-2])
    )


def attention_softmax_over_queries(queries, keys, values):
    return _attend(queries, keys, values, softmax_dim=-2)


def _attention_axis_probe(value, args) -> bool:
    queries, keys, values = args
    expected = _attend(queries, keys, values)
    return any(
        explains(value, _attend(queries, keys, values, softmax_dim=d), expected) for d in range(queries.dim() - 1)
    )


def attention_keys_not_transposed(queries, keys, values):
    return _attend(queries, keys, values, transpose=False)


def attention_returns_weights(queries, keys, values):
    return _attend(queries, keys, values, return_weights=True)


def attention_scaled_after_softmax(queries, keys, values):
    d_k = queries.shape[-1]
    weights = torch.softmax(queries @ keys.transpose(-2, -1), dim=-1) / math.sqrt(d_k)
    return weights @ values


def _matmul_mismatch(exc: BaseException) -> bool:
    text = str(exc)
    return isinstance(exc, RuntimeError) and (
        "cannot be multiplied" in text
        or "Expected size for first two dimensions" in text
        or "must match the size" in text
    )


def attention_values_first(queries, keys, values):
    weights = torch.softmax(queries @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1]), dim=-1)
    return values @ weights  # (…, seq_k, d_v) @ (…, seq_q, seq_k): the shapes do not fit


ATTENTION_MISTAKES = [
    Mistake(
        "no_scaling",
        "the scores are not divided by √d_k",
        "Divide the scores Q Kᵀ by √d_k, where d_k is the size of the last axis of the queries. Without it, the dot products grow "
        "with d_k and the softmax saturates: almost all the weight lands on one key and the gradients vanish.",
        attention_no_scaling,
    ),
    Mistake(
        "divide_by_d_k",
        "the scores are divided by d_k instead of √d_k",
        "The scaling is the square root: math.sqrt(d_k) (or d_k ** 0.5). A dot product of d_k random terms has a "
        "standard deviation of about √d_k, and that is what we divide out.",
        attention_divide_by_d_k,
    ),
    Mistake(
        "scale_by_wrong_size",
        "the scores are scaled by the square root of the wrong size",
        "d_k is the length of each query and key vector, the last axis of queries and keys. Not the size of the values, not "
        "the number of positions.",
        attention_scale_by_d_v,
        variants=(attention_scale_by_seq_k,),
        probe=_wrong_dimension_probe,
    ),
    Mistake(
        "softmax_wrong_axis",
        "the softmax runs over the wrong axis (over the queries instead of the keys)",
        "The scores are (batch, seq_q, seq_k); each query distributes its attention over the keys, so use "
        "softmax over the last axis (dim=-1).",
        attention_softmax_over_queries,
        probe=_attention_axis_probe,
    ),
    Mistake(
        "keys_not_transposed",
        "the keys are not transposed: you compute queries @ keys",
        "The scores need every query dotted with every key: queries (…, seq_q, d_k) @ keys.transpose(-2, -1) "
        "(…, d_k, seq_k) gives (…, seq_q, seq_k). Here seq_k happened to equal d_k, so the wrong product ran.",
        attention_keys_not_transposed,
    ),
    Mistake(
        "returns_weights",
        "you return the attention weights instead of the weighted sum of the values",
        "The weights (…, seq_q, seq_k) say how much each query takes from each key. The output is the weighted sum of the value rows, "
        "(…, seq_q, d_v).",
        attention_returns_weights,
    ),
    Mistake(
        "scaled_after_softmax",
        "the weights are divided by √d_k after the softmax instead of the scores before it",
        "Scale the scores, then apply the softmax: softmax(Q Kᵀ / √d_k). Dividing afterwards breaks the "
        "rows-sum-to-1 property and does not stop the softmax from saturating.",
        attention_scaled_after_softmax,
    ),
    Mistake(
        "matmul_shapes",
        "two tensors in a matrix product have shapes that do not fit",
        "Follow the shapes: queries (…, seq_q, d_k) @ keys.transpose(-2, -1) (…, d_k, seq_k) → scores (…, seq_q, seq_k); "
        "then weights (…, seq_q, seq_k) @ values (…, seq_k, d_v) → (…, seq_q, d_v).",
        attention_values_first,
        raises=_matmul_mismatch,
    ),
]


def _attention_diagnose(value, expected, args) -> str | None:
    queries, keys, values = args
    if isinstance(value, torch.Tensor) and tuple(value.shape) == tuple(queries.shape[:-1]) + (keys.shape[-2],):
        return "Your output has the shape of the weights (…, seq_q, seq_k); the output is the weighted sum of the value rows."
    return None


ATTENTION_SPEC = CheckSpec(
    name="check_attention",
    function="attention",
    own=("course_lib.attention", "scaled_dot_product_attention"),
    arg_names=("queries", "keys", "values"),
    output=TensorOut("(batch, seq_q, d_v)"),
    cases=[
        Case("3 queries, 4 keys", _attention_case(211, batch=2, seq_q=3, seq_k=4, d_k=4, d_v=5)),
        Case("5 queries, 6 keys", _attention_case(212, batch=1, seq_q=5, seq_k=6, d_k=8, d_v=3)),
    ],
    mistakes=ATTENTION_MISTAKES,
    success="softmax(Q Kᵀ / √d_k) V, with the softmax over the keys.",
    diagnose=_attention_diagnose,
    stages=lambda function, args, expected: trace.attention_stages(function, args, expected),
    reference=lambda queries, keys, values: scaled_dot_product_attention(queries, keys, values)[0],
)


# --------------------------------------------------------------------------- causal attention


def _tril(n: int) -> torch.Tensor:
    return torch.ones(n, n, dtype=torch.bool).tril()


def causal_no_mask(queries, keys, values):
    return _attend(queries, keys, values)


def causal_mask_after_softmax(queries, keys, values):
    return _attend(queries, keys, values, mask=_tril(queries.shape[-2]), after="multiply")


def causal_fill_zero(queries, keys, values):
    return _attend(queries, keys, values, mask=_tril(queries.shape[-2]), fill=0.0)


def causal_inverted_triu(queries, keys, values):
    n = queries.shape[-2]
    return _attend(queries, keys, values, mask=torch.ones(n, n, dtype=torch.bool).triu())


def causal_inverted_meaning(queries, keys, values):
    n = queries.shape[-2]
    return _attend(
        queries, keys, values, mask=~_tril(n)
    )  # blocks the allowed positions: the last row is all -inf → NaN


def causal_strictly_past(queries, keys, values):
    n = queries.shape[-2]
    return _attend(queries, keys, values, mask=torch.ones(n, n, dtype=torch.bool).tril(-1))


def causal_strictly_past_large_negative(queries, keys, values):
    n = queries.shape[-2]
    return _attend(queries, keys, values, mask=torch.ones(n, n, dtype=torch.bool).tril(-1), fill=-1e9)


def causal_no_scaling(queries, keys, values):
    return _attend(queries, keys, values, scale=1.0, mask=_tril(queries.shape[-2]))


def causal_keys_not_transposed(queries, keys, values):
    return _attend(queries, keys, values, transpose=False, mask=_tril(queries.shape[-2]))


def causal_float_mask(queries, keys, values):
    n = queries.shape[-2]
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1])
    scores = scores.masked_fill(1 - torch.ones(n, n).tril(), float("-inf"))  # a float mask: masked_fill refuses it
    return torch.softmax(scores, dim=-1) @ values


def _float_mask(exc: BaseException) -> bool:
    return isinstance(exc, RuntimeError) and "masked_fill" in str(exc) and "bool" in str(exc).lower()


CAUSAL_MISTAKES = [
    Mistake(
        "no_mask",
        "no mask is applied: every position also attends to later positions",
        "Build a lower-triangular boolean mask, mask = torch.tril(torch.ones(n, n, dtype=torch.bool)), and set the "
        "blocked scores (where mask is False) to -inf before the softmax, e.g. scores.masked_fill(~mask, float('-inf')).",
        causal_no_mask,
    ),
    Mistake(
        "mask_after_softmax",
        "the mask is applied after the softmax, so the remaining weights no longer sum to 1",
        "Mask the scores before the softmax (fill the blocked ones with -inf): exp(-inf) = 0, and the softmax "
        "then spreads each row's weight over the allowed positions only.",
        causal_mask_after_softmax,
    ),
    Mistake(
        "fill_zero",
        "blocked scores are set to 0 instead of -inf",
        "A score of 0 still gets weight exp(0) = 1 before normalising, so the future leaks in. Fill with "
        "float('-inf') (or a very negative number like -1e9), which the softmax turns into a weight of 0.",
        causal_fill_zero,
    ),
    Mistake(
        "mask_inverted",
        "the mask is the wrong way round: positions see the future and not the past",
        "Position i may attend to positions 0..i: True on and below the diagonal, torch.tril. masked_fill fills where "
        "its mask is True, so pass the blocked positions: scores.masked_fill(~mask, float('-inf')).",
        causal_inverted_triu,
        variants=(causal_inverted_meaning,),
    ),
    Mistake(
        "diagonal_blocked",
        "the diagonal is blocked too: a position may not attend to itself",
        "Causal means 'up to and including myself': keep the diagonal with torch.tril(...) (diagonal=0). With the "
        "diagonal blocked, the first position has nothing left to attend to.",
        causal_strictly_past,
        variants=(causal_strictly_past_large_negative,),
    ),
    Mistake(
        "no_scaling",
        "the mask is right but the scores are not divided by √d_k",
        "Scale the scores as in attention() (by √d_k), then mask, then softmax.",
        causal_no_scaling,
    ),
    Mistake(
        "keys_not_transposed",
        "the keys are not transposed: you compute queries @ keys",
        "The scores are queries @ keys.transpose(-2, -1), shape (…, seq, seq). Here seq happened to equal d_k, so the "
        "wrong product ran.",
        causal_keys_not_transposed,
    ),
    Mistake(
        "float_mask",
        "masked_fill received a mask of numbers instead of booleans",
        "Make the mask boolean: torch.tril(torch.ones(n, n, dtype=torch.bool)), or compare a 0/1 mask with == 0.",
        causal_float_mask,
        raises=_float_mask,
    ),
]


def _causal_diagnose(value, expected, args) -> str | None:
    queries, keys, values = args
    if not isinstance(value, torch.Tensor) or value.shape != expected.shape:
        return None
    if torch.allclose(value[..., 0, :].double(), expected[..., 0, :].double(), atol=1e-4):
        return "Your first position is right (it can only see itself); look at how the later rows mix the values."
    return "The first position can only attend to itself, so its output must equal values[:, 0]; yours does not."


CAUSAL_SPEC = CheckSpec(
    name="check_causal_attention",
    function="causal_attention",
    arg_names=("queries", "keys", "values"),
    output=TensorOut("(batch, seq, d_v)"),
    cases=[
        Case("4 positions", _attention_case(221, batch=2, seq_q=4, seq_k=4, d_k=4, d_v=3, causal=True)),
        Case("6 positions", _attention_case(222, batch=1, seq_q=6, seq_k=6, d_k=8, d_v=5, causal=True)),
    ],
    mistakes=CAUSAL_MISTAKES,
    success="Every position attends to itself and the past only, with weights that sum to 1.",
    diagnose=_causal_diagnose,
    stages=lambda function, args, expected: trace.attention_stages(function, args, expected, causal=True),
    reference=lambda queries, keys, values: scaled_dot_product_attention(
        queries, keys, values, causal_mask(queries.shape[-2])
    )[0],
)


__all__ = export_checks(globals())  # check_* functions, one per CheckSpec above
