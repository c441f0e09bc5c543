"""Grouped-query attention (GQA; Ainslie et al., 2023): fewer key/value heads than query heads (notebook 10).

    num_heads query heads, n_kv_heads key/value heads, group = num_heads / n_kv_heads
    head_i = Attention(X W_Q_i, X W_K_g(i), X W_V_g(i))      with g(i) = i // group

Query heads ``0 .. group−1`` share key/value head 0, the next ``group`` share head 1, and so on. The KV cache keeps
only the ``n_kv_heads`` key/value heads, so its bytes shrink by exactly ``num_heads / n_kv_heads``:

    cache bytes = 2 · n_blocks · batch · n_kv_heads · positions · d_head · bytes per number

``n_kv_heads = num_heads`` is notebook 03's multi-head attention; ``n_kv_heads = 1`` is multi-query attention
(MQA; Shazeer, 2019). Rotary positions (``course_lib.rotary``) turn the queries and keys inside each head.
"""

from __future__ import annotations

import torch
from torch import nn

from ._validate import CourseInputError, check_features, check_positive_int
from .attention import causal_mask, scaled_dot_product_attention
from .multihead import merge_heads, split_heads
from .rotary import apply_rotary


def repeat_kv_heads(x: torch.Tensor, group: int) -> torch.Tensor:
    """``(batch, n_kv_heads, seq, d_head)`` → ``(batch, n_kv_heads · group, seq, d_head)``: each head ``group`` times in a row."""
    return x.repeat_interleave(group, dim=1)


class GroupedQueryAttention(nn.Module):
    """Causal self-attention with ``num_heads`` query heads sharing ``n_kv_heads`` key/value heads.

    W_Q, W_O: ``d_model × d_model``; W_K, W_V: ``d_model × (n_kv_heads · d_head)``.
    forward(x, cache=None, index=0): x ``(batch, new, d_model)`` → ``(batch, new, d_model)``. With a
    ``course_lib.KVCache`` the new keys and values (``n_kv_heads`` heads, rotated if ``rotary``) are appended to slot
    ``index`` and the new queries attend to every cached position and to the new ones up to themselves.
    ``rotary``: ``None`` (no rotation), ``"halves"`` or ``"interleaved"`` (the RoPE pairing).
    """

    def __init__(
        self, d_model: int, num_heads: int, n_kv_heads: int | None = None, bias: bool = False, rotary: str | None = None
    ):
        super().__init__()
        n_kv_heads = num_heads if n_kv_heads is None else n_kv_heads
        for name, value in (("d_model", d_model), ("num_heads", num_heads), ("n_kv_heads", n_kv_heads)):
            check_positive_int(name, value)
        if d_model % num_heads:
            raise CourseInputError(f"d_model={d_model} must split evenly across num_heads={num_heads}")
        if num_heads % n_kv_heads:
            raise CourseInputError(f"num_heads={num_heads} must be a multiple of n_kv_heads={n_kv_heads}")
        self.d_model, self.num_heads, self.n_kv_heads = d_model, num_heads, n_kv_heads
        self.d_head, self.group = d_model // num_heads, num_heads // n_kv_heads
        self.rotary = rotary
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, n_kv_heads * self.d_head, bias=bias)
        self.w_v = nn.Linear(d_model, n_kv_heads * self.d_head, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        self.attention_weights: torch.Tensor | None = None

    def forward(self, x: torch.Tensor, cache=None, index: int = 0) -> torch.Tensor:
        check_features("x", x, self.d_model, f"(batch, seq, d_model={self.d_model})", min_dim=3, max_dim=3)
        q = split_heads(self.w_q(x), self.num_heads)  # (batch, num_heads, new, d_head)
        k = split_heads(self.w_k(x), self.n_kv_heads)  # (batch, n_kv_heads, new, d_head)
        v = split_heads(self.w_v(x), self.n_kv_heads)
        start = 0 if cache is None else cache.positions(index)  # absolute position of the first new token
        if self.rotary:
            positions = torch.arange(start, start + x.shape[1], device=x.device)
            q, k = apply_rotary(q, positions, self.rotary), apply_rotary(k, positions, self.rotary)  # not v
        if cache is not None:
            k, v = cache.append(index, k, v)  # the cache holds n_kv_heads heads: (batch, n_kv, start + new, d_head)
        mask = causal_mask(k.shape[2], device=x.device)[start:]  # (new, start + new)
        heads, weights = scaled_dot_product_attention(
            q, repeat_kv_heads(k, self.group), repeat_kv_heads(v, self.group), mask
        )
        self.attention_weights = weights.detach()
        return self.w_o(merge_heads(heads))  # (batch, new, d_model)
