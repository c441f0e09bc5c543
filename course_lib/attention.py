"""Scaled dot-product attention: a soft search over keys (taught in notebook 02).

    Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V

Every function works on any number of leading batch axes, e.g. ``(batch, seq, d_k)`` or
``(batch, heads, seq, d_k)``, in float32 or float64. Masks are boolean: ``True`` means "may attend".
"""

from __future__ import annotations

import math

import torch

from ._validate import CourseInputError, broadcast_shape, check_mask, check_positive_int, check_tensor, shape_str


def softmax(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Numerically stable softmax along ``dim``.

    Subtracting the row maximum before ``exp`` changes nothing mathematically (it cancels in the
    ratio) but keeps ``exp`` from overflowing for large scores. A row whose scores are all ``-inf``
    (every position masked) gets all-zero weights instead of NaN.

    scores: any shape, e.g. ``(batch, seq_q, seq_k)``. Returns weights of the same shape, each
    slice along ``dim`` non-negative and summing to 1 (or all zero for a fully masked slice).
    """
    check_tensor("scores", scores, "a tensor of scores, e.g. (batch, seq_q, seq_k)")
    if isinstance(dim, bool) or not isinstance(dim, int) or not -scores.dim() <= dim < scores.dim():
        raise CourseInputError(
            f"dim must be an axis of scores {shape_str(scores.shape)}, between {-scores.dim()} and {scores.dim() - 1}, got {dim!r}"
        )
    row_max = scores.amax(dim=dim, keepdim=True)
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    exps = (scores - row_max).exp_()
    totals = exps.sum(dim=dim, keepdim=True)
    return exps / totals.clamp_min(torch.finfo(scores.dtype).tiny)


def scaled_dot_product_attention(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attend from every query to every key and return the weighted sum of the values.

    queries: ``(..., seq_q, d_k)``
    keys:    ``(..., seq_k, d_k)``
    values:  ``(..., seq_k, d_v)``
    mask:    boolean, broadcastable to ``(..., seq_q, seq_k)``; ``True`` = may attend, ``False`` = blocked.

    Returns ``(output, weights)``:
    output:  ``(..., seq_q, d_v)``, each row a weighted average of the value rows
    weights: ``(..., seq_q, seq_k)``, each row non-negative and summing to 1
    """
    check_tensor("queries", queries, "(batch, seq_q, d_k)", min_dim=2)
    check_tensor("keys", keys, "(batch, seq_k, d_k)", min_dim=2)
    check_tensor("values", values, "(batch, seq_k, d_v)", min_dim=2)
    if queries.shape[-1] != keys.shape[-1]:
        raise CourseInputError(
            f"queries and keys must share their last axis d_k, got queries {shape_str(queries.shape)} "
            f"and keys {shape_str(keys.shape)}"
        )
    if keys.shape[-2] != values.shape[-2]:
        raise CourseInputError(
            f"keys and values must have one row per position (same seq_k), got keys {shape_str(keys.shape)} "
            f"and values {shape_str(values.shape)}"
        )
    for name, other in (("keys", keys), ("values", values)):
        if broadcast_shape(queries.shape[:-2], other.shape[:-2]) is None:
            raise CourseInputError(
                f"queries and {name} must have the same leading (batch, ...) axes, got queries {shape_str(queries.shape)} "
                f"and {name} {shape_str(other.shape)}"
            )
    d_k = queries.shape[-1]
    # (Q / √d_k) Kᵀ equals Q Kᵀ / √d_k; scaling the (seq_q, d_k) queries is cheaper than the (seq_q, seq_k) scores
    scores = (queries / math.sqrt(d_k)) @ keys.transpose(-2, -1)  # (..., seq_q, seq_k)
    if mask is not None:
        check_mask(mask, scores.shape)
        blocked_rows = ~mask.any(dim=-1, keepdim=True)  # (..., seq_q, 1): a query that may attend to no key at all
        allowed = mask | blocked_rows  # such a row gets finite scores here (no 0/0 = NaN) and zero weights below
        # blocked keys get a score of −inf, so weight exp(−inf) = 0; adding a table of 0 and −inf broadcasts over
        # batch and heads faster than masked_fill on the scores
        scores += torch.zeros(allowed.shape, dtype=scores.dtype, device=scores.device).masked_fill_(
            ~allowed, float("-inf")
        )
    # The stable softmax above (subtract the row maximum, exponentiate, normalise), which PyTorch fuses into one pass.
    # With no gradient to compute (inference, plots) it overwrites the scores: one (seq_q, seq_k) table in memory
    # instead of two. Training keeps both, because the backward pass of softmax needs its output.
    in_place = not (torch.is_grad_enabled() and any(t.requires_grad for t in (queries, keys, values)))
    weights = torch.softmax(scores, dim=-1, out=scores if in_place else None)  # (..., seq_q, seq_k)
    if mask is not None and blocked_rows.any():
        weights = weights.masked_fill(blocked_rows, 0.0)  # nothing to attend to: all-zero weights, output 0
    output = weights @ values  # (..., seq_q, d_v)
    return output, weights


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
    check_positive_int("seq_len", seq_len)
    lengths = torch.as_tensor(lengths)
    if lengths.dim() != 1 or lengths.is_floating_point():
        raise CourseInputError(
            f"lengths must be a 1-D integer tensor (batch,), got {lengths.dtype} {shape_str(lengths.shape)}"
        )
    if (lengths < 0).any() or (lengths > seq_len).any():
        raise CourseInputError(f"lengths must lie between 0 and seq_len={seq_len}, got {lengths.tolist()}")
    positions = torch.arange(seq_len, device=lengths.device)  # (seq_len,)
    return (positions[None, :] < lengths[:, None])[:, None, :]  # (batch, 1, seq_len)
