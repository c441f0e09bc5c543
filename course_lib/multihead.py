"""Multi-head attention: several attention heads in parallel subspaces (taught in notebook 03).

    head_i = Attention(X W_Q_i, X W_K_i, X W_V_i)
    MultiHead(X) = Concat(head_1, ..., head_h) W_O

The heads are not a Python loop: one projection produces all heads at once and a reshape
(``split_heads``) gives every head its own slice of ``d_model``.

Grouped-query attention (GQA, notebook 10) keeps the h query heads but only ``n_kv_heads`` key/value heads; query
head i reads key/value head g(i) = i // (h / n_kv_heads), so a KV cache holds ``n_kv_heads`` heads (MQA at 1):

    head_i = Attention(X W_Q_i, X W_K_g(i), X W_V_g(i))
"""

from __future__ import annotations

from collections import namedtuple

import torch
from torch import nn

from . import _interop as interop
from ._validate import check_heads, check_kv_heads, check_multihead_inputs, check_tensor
from .attention import attention_fast, causal_mask, scaled_dot_product_attention

__all__ = ["split_heads", "merge_heads", "repeat_kv_heads", "AttentionRecord", "MultiHeadAttention"]


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """``(batch, seq, d_model)`` → ``(batch, num_heads, seq, d_head)`` with ``d_head = d_model // num_heads``.

    The reshape cuts each token's vector into ``num_heads`` consecutive chunks; the transpose then
    moves the head axis in front of ``seq`` so that each head sees a whole ``(seq, d_head)`` matrix.
    """
    check_tensor("x", x, "(batch, seq, d_model)", min_dim=3, max_dim=3)
    batch, seq, d_model = x.shape
    d_head = d_model // check_heads(d_model, num_heads)
    return x.reshape(batch, seq, num_heads, d_head).transpose(1, 2)  # (batch, num_heads, seq, d_head)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """``(batch, num_heads, seq, d_head)`` → ``(batch, seq, num_heads * d_head)``: the inverse of ``split_heads``.

    Transpose back first, so that each token's head outputs sit next to each other, then flatten.
    """
    check_tensor("x", x, "(batch, num_heads, seq, d_head)", min_dim=4, max_dim=4)
    batch, num_heads, seq, d_head = x.shape
    return x.transpose(1, 2).reshape(batch, seq, num_heads * d_head)  # (batch, seq, d_model)


def repeat_kv_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """``(batch, n_kv_heads, seq, d_head)`` → ``(batch, num_heads, seq, d_head)``.

    Each key/value head appears ``group = num_heads / n_kv_heads`` times in a row, once per query head it serves.
    """
    return x.repeat_interleave(num_heads // x.shape[1], dim=1)


# what the heads of one call computed (detached), per query head: queries (after rotate), keys and values (cached ones
# included) (batch, num_heads, seq, d_head), the mask they used and the weights (batch, num_heads, seq_q, seq_k)
AttentionRecord = namedtuple("AttentionRecord", "queries keys values mask weights")


class MultiHeadAttention(nn.Module):
    """Multi-head attention with learned projections ``W_Q, W_K, W_V, W_O`` (each ``d_model × d_model``).

    Options (off by default), the same module for every model of the course:
    ``n_kv_heads``: GQA, W_K and W_V are ``d_model × (n_kv_heads · d_head)``;
    ``causal``: query i attends to keys 0..i only (decoders, notebook 08), with or without a cache;
    ``rotate``: ``rotate(x, positions)`` turns q and k ``(batch, heads, seq, d_head)`` after the projection, v untouched
    (RoPE, notebook 10: ``rotary.apply_rotary``);
    ``head_mask``: ``(num_heads,)`` of 1.0 (on) / 0.0 (off): a head switched off writes zeros before W_O;
    ``fast``: attend with ``attention_fast`` (training sets it; the same numbers up to rounding).

    forward(queries, keys=None, values=None, mask=None, cache=None, index=0, head_mask=None):
        queries: ``(batch, seq_q, d_model)``; keys and values: ``(batch, seq_k, d_model)``
        (default: self-attention, keys = values = queries).
        mask: boolean, ``True`` = may attend, shaped ``(seq_q, seq_k)``, ``(batch, seq_q, seq_k)``
        or ``(batch, 1, seq_k)`` (e.g. from ``padding_mask``); it is shared by every head.
        cache: a ``KVCache`` (generation, notebook 08): the new keys and values are appended to slot ``index``
        and the queries attend to every position cached so far; the mask must cover them all. It holds
        ``(batch, n_kv_heads, positions, d_head)`` per block. head_mask: this call's, instead of the attribute's.
    Returns ``(output, weights)``: output ``(batch, seq_q, d_model)`` and the per-head attention
    weights ``(batch, num_heads, seq_q, seq_k)`` for plots. ``recorded``: the call's ``AttentionRecord``.
    """

    def __init__(self, d_model, num_heads, bias=True, n_kv_heads=None, causal=False, rotate=None):
        super().__init__()
        self.d_model, self.num_heads = d_model, check_heads(d_model, num_heads)
        self.d_head, self.n_kv_heads = d_model // num_heads, check_kv_heads(num_heads, n_kv_heads)
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, self.n_kv_heads * self.d_head, bias=bias)  # d_model × d_model unless GQA
        self.w_v = nn.Linear(d_model, self.n_kv_heads * self.d_head, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        self.causal, self.rotate, self.head_mask, self.fast = causal, rotate, None, False
        self.recorded: AttentionRecord | None = None

    def forward(self, queries, keys=None, values=None, mask=None, cache=None, index: int = 0, head_mask=None):
        keys = queries if keys is None else keys
        values = keys if values is None else values
        check_multihead_inputs(self.d_model, queries, keys, values, mask)
        # 1. project, 2. split into heads: (batch, num_heads, seq, d_head)
        q = split_heads(self.w_q(queries), self.num_heads)
        k = split_heads(self.w_k(keys), self.n_kv_heads)  # (batch, n_kv_heads, seq_k, d_head)
        v = split_heads(self.w_v(values), self.n_kv_heads)
        start = 0 if cache is None else cache.positions(index)  # absolute position of the first new token
        if self.rotate is not None:  # RoPE: q and k turned by their positions
            positions = torch.arange(start, start + q.shape[2], device=q.device)
            q, k = self.rotate(q, positions), self.rotate(k, positions)
        if cache is not None:  # generation: the keys and values of the earlier positions, computed once
            k, v = cache.append(index, k, v)  # (batch, n_kv_heads, cached + seq_k, d_head)
        if self.n_kv_heads < self.num_heads:  # GQA: key/value head g serves query heads g·group … (g+1)·group − 1
            k, v = repeat_kv_heads(k, self.num_heads), repeat_kv_heads(v, self.num_heads)
        if mask is not None and mask.dim() == 3:
            mask = mask[:, None, :, :]  # (batch, 1, seq_q or 1, seq_k), shared by every head
        if self.causal:  # new query i sees keys 0..start+i
            allowed = causal_mask(k.shape[2], device=q.device)[start:]  # (seq_q, seq_k)
            mask = allowed if mask is None else mask & allowed
        # 3. attend in every head at once
        attend = attention_fast if self.fast else scaled_dot_product_attention
        heads, weights = attend(q, k, v, mask)  # (batch, num_heads, seq_q, d_head)
        head_mask = self.head_mask if head_mask is None else head_mask
        if head_mask is not None:
            heads = heads * head_mask[:, None, None]  # a switched-off head writes zeros
        self.recorded = AttentionRecord(q.detach(), k.detach(), v.detach(), mask, weights.detach())
        # 4. concatenate the heads and mix them with W_O
        return self.w_o(merge_heads(heads)), weights  # (batch, seq_q, d_model)

    def load_from_torch(self, mha: nn.MultiheadAttention) -> MultiHeadAttention:
        """Copy the weights of a ``torch.nn.MultiheadAttention`` (same ``embed_dim`` and ``num_heads``) into this module.

        Refuses (``CourseInputError``) what cannot be copied exactly: biases on one side only, ``add_bias_kv``,
        ``add_zero_attn``, or key/value sizes other than ``embed_dim``.
        """
        return interop.copy_multihead(self, mha)
