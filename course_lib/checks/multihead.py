"""Checks for exercise 03: splitting and merging heads, and multi-head self-attention.

Learner signatures (weights as plain ``(d_model, d_model)`` matrices applied on the right: ``Q = x @ w_q``):

    split_heads(x, num_heads) -> (batch, num_heads, seq, d_head)
    merge_heads(x) -> (batch, seq, num_heads * d_head)
    multi_head_attention(x, w_q, w_k, w_v, w_o, num_heads) -> (batch, seq, d_model)

References: ``course_lib.split_heads``, ``course_lib.merge_heads`` and ``course_lib.MultiHeadAttention`` (no biases)
with the weights copied in (``nn.Linear`` stores the transpose, so ``linear.weight = w.T``).
"""

from __future__ import annotations

import math

import torch

from ..multihead import MultiHeadAttention, merge_heads, split_heads
from .core import export_checks
from .spec import Case, CheckSpec, Mistake, TensorOut, generator, quiet_rng, randn

# --------------------------------------------------------------------------- split_heads


def _split_case(seed: int, batch: int, seq: int, d_model: int, num_heads: int):
    def build():
        x = randn(generator(seed), batch, seq, d_model)
        return (x, num_heads), split_heads(x, num_heads)

    return build


def split_reshape_only(x, num_heads):
    batch, seq, d_model = x.shape
    return x.reshape(batch, num_heads, seq, d_model // num_heads)


def split_no_transpose(x, num_heads):
    batch, seq, d_model = x.shape
    return x.reshape(batch, seq, num_heads, d_model // num_heads)


def split_strided(x, num_heads):
    batch, seq, d_model = x.shape
    return x.reshape(batch, seq, d_model // num_heads, num_heads).permute(0, 3, 1, 2)


def split_wrong_transpose(x, num_heads):
    batch, seq, d_model = x.shape
    return x.reshape(batch, seq, num_heads, d_model // num_heads).transpose(1, 3)


SPLIT_MISTAKES = [
    Mistake(
        "reshape_without_transpose",
        "you reshape straight to (batch, num_heads, seq, d_head), which scrambles tokens and features",
        "A reshape keeps the memory order, in which each token's d_model features sit together. Reshape to "
        "(batch, seq, num_heads, d_head) first (cut each token's vector into heads), then swap the seq and head axes "
        "with .transpose(1, 2).",
        split_reshape_only,
    ),
    Mistake(
        "no_transpose",
        "the head axis is still after the seq axis: (batch, seq, num_heads, d_head)",
        "The cut is right; now move the head axis in front of seq with .transpose(1, 2), so that each head sees a "
        "whole (seq, d_head) matrix.",
        split_no_transpose,
    ),
    Mistake(
        "strided_heads",
        "each head gets every num_heads-th feature instead of a block of d_head neighbouring features",
        "Reshape to (batch, seq, num_heads, d_head), in that order: the first d_head features go to head 0, the next "
        "d_head to head 1, and so on. Then .transpose(1, 2).",
        split_strided,
    ),
    Mistake(
        "wrong_transpose",
        "the transpose swaps the wrong axes",
        "After reshaping to (batch, seq, num_heads, d_head), swap axes 1 and 2 (seq and heads): .transpose(1, 2).",
        split_wrong_transpose,
    ),
]


SPLIT_SPEC = CheckSpec(
    name="check_split_heads",
    function="split_heads",
    own=("course_lib.multihead", "split_heads"),
    arg_names=("x", "num_heads"),
    output=TensorOut("(batch, num_heads, seq, d_head)"),
    cases=[
        Case("3 heads", _split_case(301, 2, 5, 12, 3)),
        Case("2 heads", _split_case(302, 1, 4, 6, 2)),
    ],
    mistakes=SPLIT_MISTAKES,
    success="Each head gets its own block of d_head features for every token.",
    reference=split_heads,
)


# --------------------------------------------------------------------------- merge_heads


def _merge_case(seed: int, batch: int, num_heads: int, seq: int, d_head: int):
    def build():
        x = randn(generator(seed), batch, num_heads, seq, d_head)
        return (x,), merge_heads(x)

    return build


def merge_no_transpose(x):
    batch, num_heads, seq, d_head = x.shape
    return x.reshape(batch, seq, num_heads * d_head)


def merge_interleaved(x):
    batch, num_heads, seq, d_head = x.shape
    return x.permute(0, 2, 3, 1).reshape(batch, seq, num_heads * d_head)


def merge_mean(x):
    return x.mean(dim=1)


def merge_sum(x):
    return x.sum(dim=1)


def merge_not_flattened(x):
    return x.transpose(1, 2)


MERGE_MISTAKES = [
    Mistake(
        "no_transpose_back",
        "the heads are merged without transposing back first",
        "x is (batch, num_heads, seq, d_head). A reshape straight to (batch, seq, d_model) mixes tokens and heads; "
        "first .transpose(1, 2) to (batch, seq, num_heads, d_head), then reshape, so each token's head outputs sit "
        "side by side.",
        merge_no_transpose,
    ),
    Mistake(
        "interleaved",
        "the head outputs are interleaved feature by feature instead of placed one after the other",
        "Concatenate the heads: (batch, seq, num_heads, d_head) reshaped gives head 0's d_head features, then head "
        "1's, ... This must undo split_heads exactly.",
        merge_interleaved,
    ),
    Mistake(
        "averaged_heads",
        "the heads are averaged (or summed) instead of concatenated",
        "Multi-head attention keeps every head's output: concatenate them to (batch, seq, num_heads * d_head); "
        "W_O mixes them afterwards.",
        merge_mean,
        variants=(merge_sum,),
    ),
    Mistake(
        "not_flattened",
        "the heads are transposed back but not flattened into one feature axis",
        "Finish with .reshape(batch, seq, num_heads * d_head) so the last two axes become one.",
        merge_not_flattened,
    ),
]


def _merge_diagnose(value, expected, args) -> str | None:
    return "merge_heads must undo split_heads: merge_heads(split_heads(x, h)) should give back x exactly."


MERGE_SPEC = CheckSpec(
    name="check_merge_heads",
    function="merge_heads",
    own=("course_lib.multihead", "merge_heads"),
    arg_names=("x",),
    output=TensorOut("(batch, seq, num_heads * d_head)"),
    cases=[
        Case("3 heads", _merge_case(311, 2, 3, 5, 4)),
        Case("2 heads", _merge_case(312, 1, 2, 4, 3)),
    ],
    mistakes=MERGE_MISTAKES,
    success="merge_heads undoes split_heads: the head outputs of each token sit side by side.",
    diagnose=_merge_diagnose,
    reference=merge_heads,
)


# --------------------------------------------------------------------------- multi_head_attention


def _mha_case(seed: int, batch: int, seq: int, d_model: int, num_heads: int):
    def build():
        gen = generator(seed)
        x = randn(gen, batch, seq, d_model)
        weights = [randn(gen, d_model, d_model, scale=1.0 / math.sqrt(d_model) * 1.5) for _ in range(4)]
        with quiet_rng():
            module = MultiHeadAttention(d_model, num_heads, bias=False)
        with torch.no_grad():
            for linear, weight in zip((module.w_q, module.w_k, module.w_v, module.w_o), weights):
                linear.weight.copy_(weight.T)  # nn.Linear computes x @ weight.T
        module.requires_grad_(False)
        output, _ = module(x)
        return (x, *weights, num_heads), output

    return build


def _mha(
    x,
    w_q,
    w_k,
    w_v,
    w_o,
    num_heads,
    scale=None,
    output_projection=True,
    transposed=False,
    merge=None,
    split=None,
    heads=None,
):
    """Multi-head attention with switches to reproduce each typical mistake."""
    batch, seq, d_model = x.shape
    if transposed:
        w_q, w_k, w_v, w_o = w_q.T, w_k.T, w_v.T, w_o.T
    h = num_heads if heads is None else heads
    d_head = d_model // h

    def do_split(t):
        if split == "reshape_only":
            return t.reshape(batch, h, seq, d_head)
        return t.reshape(batch, seq, h, d_head).transpose(1, 2)

    q, k, v = do_split(x @ w_q), do_split(x @ w_k), do_split(x @ w_v)
    scale = math.sqrt(d_head) if scale is None else scale
    weights = torch.softmax(q @ k.transpose(-2, -1) / scale, dim=-1)
    out = weights @ v  # (batch, h, seq, d_head)
    if merge == "no_transpose":
        merged = out.reshape(batch, seq, d_model)
    else:
        merged = out.transpose(1, 2).reshape(batch, seq, d_model)
    return merged @ w_o if output_projection else merged


def mha_scale_by_d_model(x, w_q, w_k, w_v, w_o, num_heads):
    return _mha(x, w_q, w_k, w_v, w_o, num_heads, scale=math.sqrt(x.shape[-1]))


def mha_no_scaling(x, w_q, w_k, w_v, w_o, num_heads):
    return _mha(x, w_q, w_k, w_v, w_o, num_heads, scale=1.0)


def mha_no_output_projection(x, w_q, w_k, w_v, w_o, num_heads):
    return _mha(x, w_q, w_k, w_v, w_o, num_heads, output_projection=False)


def mha_weights_transposed(x, w_q, w_k, w_v, w_o, num_heads):
    return _mha(x, w_q, w_k, w_v, w_o, num_heads, transposed=True)


def mha_merge_without_transpose(x, w_q, w_k, w_v, w_o, num_heads):
    return _mha(x, w_q, w_k, w_v, w_o, num_heads, merge="no_transpose")


def mha_split_without_transpose(x, w_q, w_k, w_v, w_o, num_heads):
    return _mha(x, w_q, w_k, w_v, w_o, num_heads, split="reshape_only")


def mha_single_head(x, w_q, w_k, w_v, w_o, num_heads):
    return _mha(x, w_q, w_k, w_v, w_o, num_heads, heads=1)


def mha_tuple_from_attention(x, w_q, w_k, w_v, w_o, num_heads):
    from ..attention import scaled_dot_product_attention

    q, k, v = (split_heads(x @ w, num_heads) for w in (w_q, w_k, w_v))
    heads = scaled_dot_product_attention(q, k, v)  # a pair (output, weights), not unpacked
    return merge_heads(heads) @ w_o


def _tuple_not_unpacked(exc: BaseException) -> bool:
    text = str(exc)
    return "tuple" in text and (
        isinstance(exc, (AttributeError, TypeError)) or type(exc).__name__ == "CourseInputError"
    )


MHA_MISTAKES = [
    Mistake(
        "scale_by_d_model",
        "the scores are scaled by √d_model instead of √d_head",
        "Each head attends in its own d_head-dimensional space, so its dot products have d_head terms: divide by "
        "math.sqrt(d_head), with d_head = d_model // num_heads (the last axis of the split queries).",
        mha_scale_by_d_model,
    ),
    Mistake(
        "no_scaling",
        "the scores are not scaled at all",
        "Inside each head, divide the scores by math.sqrt(d_head) before the softmax, as in single-head attention.",
        mha_no_scaling,
    ),
    Mistake(
        "no_output_projection",
        "the merged heads are returned without the output projection W_O",
        "After merging the heads, multiply by w_o: it mixes what the different heads found.",
        mha_no_output_projection,
    ),
    Mistake(
        "weights_transposed",
        "the projection matrices are applied transposed",
        "In this exercise the weights act on the right: Q = x @ w_q (and K, V, the output likewise), with no .T.",
        mha_weights_transposed,
    ),
    Mistake(
        "merge_without_transpose",
        "the heads are merged without transposing back first",
        "Before flattening, bring the heads back next to each other: (batch, num_heads, seq, d_head) → "
        ".transpose(1, 2) → (batch, seq, num_heads, d_head) → reshape to (batch, seq, d_model). check_merge_heads "
        "tests this on its own.",
        mha_merge_without_transpose,
    ),
    Mistake(
        "split_without_transpose",
        "the heads are split with a single reshape to (batch, num_heads, seq, d_head)",
        "Reshape to (batch, seq, num_heads, d_head) and then .transpose(1, 2); check_split_heads tests this on its own.",
        mha_split_without_transpose,
    ),
    Mistake(
        "single_head",
        "the heads are never split: this is one big attention over all of d_model",
        "Split the projected queries, keys and values into num_heads heads with split_heads, attend in every head, "
        "then merge_heads and apply w_o.",
        mha_single_head,
    ),
    Mistake(
        "attention_tuple_not_unpacked",
        "the pair returned by scaled_dot_product_attention is used as if it were a tensor",
        "course_lib's scaled_dot_product_attention returns a pair (output, weights): unpack it into two names and "
        "keep the output.",
        mha_tuple_from_attention,
        raises=_tuple_not_unpacked,
    ),
]


def reference_mha(x, w_q, w_k, w_v, w_o, num_heads):
    """course_lib's MultiHeadAttention (no biases) with these matrices as its weights, differentiable in all of them."""
    with quiet_rng():
        module = MultiHeadAttention(x.shape[-1], num_heads, bias=False)
    weights = {"w_q.weight": w_q.T, "w_k.weight": w_k.T, "w_v.weight": w_v.T, "w_o.weight": w_o.T}
    return torch.func.functional_call(module, weights, (x,))[0]


MHA_SPEC = CheckSpec(
    name="check_multi_head_attention",
    function="multi_head_attention",
    arg_names=("x", "w_q", "w_k", "w_v", "w_o", "num_heads"),
    output=TensorOut("(batch, seq, d_model)"),
    cases=[
        Case("3 heads of size 4", _mha_case(321, 2, 5, 12, 3)),
        Case("2 heads of size 4", _mha_case(322, 1, 4, 8, 2)),
    ],
    mistakes=MHA_MISTAKES,
    success="Project, split into heads, attend with √d_head scaling, merge, project with W_O.",
    reference=reference_mha,
)


__all__ = export_checks(globals())  # check_* functions, one per CheckSpec above
