"""Scaled dot-product attention: a soft search over keys (taught in notebook 02).

    Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V

Every function works on any number of leading batch axes, e.g. ``(batch, seq, d_k)`` or
``(batch, heads, seq, d_k)``, in float32 or float64. Masks are boolean: ``True`` means "may attend".
Models that train run ``attention_fast``, the same function rearranged for speed (tested equal to it).
"""

from __future__ import annotations

import math
from collections import namedtuple

import torch

from ._validate import check_attention_inputs, check_lengths, check_positive_int, check_softmax

__all__ = [
    "softmax",
    "AttentionStages",
    "attention_stages",
    "scaled_dot_product_attention",
    "attention_fast",
    "causal_mask",
    "padding_mask",
]


def softmax(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Numerically stable softmax along ``dim``: exp(s − max s) / Σ exp(s − max s).

    Subtracting the row maximum changes nothing mathematically (it cancels in the ratio) but keeps ``exp``
    from overflowing for large scores. A row whose scores are all ``-inf`` (every position masked) gets
    all-zero weights instead of NaN.

    scores: any shape, e.g. ``(batch, seq_q, seq_k)``. Returns weights of the same shape, each
    slice along ``dim`` non-negative and summing to 1 (or all zero for a fully masked slice).
    """
    check_softmax(scores, dim)
    row_max = scores.amax(dim=dim, keepdim=True).nan_to_num(neginf=0.0)  # a fully masked row: max −inf → 0
    exps = (scores - row_max).exp()
    return exps / exps.sum(dim=dim, keepdim=True).clamp_min(torch.finfo(scores.dtype).tiny)


# the lines of the formula, by name: scores, scaled, masked, weights (..., seq_q, seq_k) and output (..., seq_q, d_v)
AttentionStages = namedtuple("AttentionStages", "scores scaled masked weights output")


def attention_stages(queries, keys, values, mask=None) -> AttentionStages:
    """softmax(Q Kᵀ / √d_k) V line by line: the one place the formula is written (the explorer and the checks show
    these lines; ``scaled_dot_product_attention`` returns the last two). Shapes as below."""
    check_attention_inputs(queries, keys, values, mask)
    d_k = queries.shape[-1]
    scores = queries @ keys.transpose(-2, -1)  # Q Kᵀ: (..., seq_q, seq_k)
    scaled = scores / math.sqrt(d_k)  # ÷ √d_k
    masked = scaled if mask is None else scaled.masked_fill(~mask, float("-inf"))  # blocked: weight exp(−inf) = 0
    weights = softmax(masked, dim=-1)  # (..., seq_q, seq_k)
    output = weights @ values  # (..., seq_q, d_v)
    return AttentionStages(scores, scaled, masked, weights, output)


def scaled_dot_product_attention(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(Q Kᵀ / √d_k) V: every query's weighted average of the value rows (the lines: ``attention_stages``).

    queries: ``(..., seq_q, d_k)``
    keys:    ``(..., seq_k, d_k)``
    values:  ``(..., seq_k, d_v)``
    mask:    boolean, broadcastable to ``(..., seq_q, seq_k)``; ``True`` = may attend, ``False`` = blocked.

    Returns ``(output, weights)``:
    output:  ``(..., seq_q, d_v)``, each row a weighted average of the value rows
    weights: ``(..., seq_q, seq_k)``, each row non-negative and summing to 1 (all 0 if the mask blocks the row)
    """
    stages = attention_stages(queries, keys, values, mask)
    return stages.output, stages.weights


def attention_fast(queries, keys, values, mask=None) -> tuple[torch.Tensor, torch.Tensor]:
    """``scaled_dot_product_attention`` rearranged for speed, the same numbers up to rounding: the mask added as 0 or
    −∞, PyTorch's fused softmax and, without gradients, the weights written over the scores (one table, not two).
    A ``MultiHeadAttention`` whose ``fast`` is set runs it (training sets it)."""
    check_attention_inputs(queries, keys, values, mask)
    scores = (queries / math.sqrt(queries.shape[-1])) @ keys.transpose(-2, -1)  # (..., seq_q, seq_k)
    if mask is not None:
        blocked_rows = ~mask.any(dim=-1, keepdim=True)  # a query that may attend to no key: finite scores, weights 0
        allowed = mask | blocked_rows
        scores += torch.zeros(allowed.shape, dtype=scores.dtype, device=scores.device).masked_fill_(~allowed, -math.inf)
    in_place = not (torch.is_grad_enabled() and any(t.requires_grad for t in (queries, keys, values)))
    weights = torch.softmax(scores, dim=-1, out=scores if in_place else None)  # (..., seq_q, seq_k)
    if mask is not None and blocked_rows.any():
        weights = weights.masked_fill(blocked_rows, 0.0)
    return weights @ values, weights


def causal_mask(seq_len: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Lower-triangular mask: position ``i`` may attend to positions ``0..i`` only.

    Returns a boolean ``(seq_len, seq_len)`` tensor, ``True`` on and below the diagonal.
    """
    check_positive_int("seq_len", seq_len)
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()


def padding_mask(lengths: torch.Tensor, seq_len: int) -> torch.Tensor:
    """Mask out the padding at the end of each sequence.

    lengths: ``(batch,)`` integer count of real tokens in each sequence.
    Returns a boolean ``(batch, 1, seq_len)`` tensor, ``True`` for real tokens; it broadcasts
    against scores ``(batch, seq_q, seq_k)``.
    """
    lengths = check_lengths(torch.as_tensor(lengths), seq_len)
    positions = torch.arange(seq_len, device=lengths.device)  # (seq_len,)
    return (positions[None, :] < lengths[:, None])[:, None, :]  # (batch, 1, seq_len)
