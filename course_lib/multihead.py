"""Multi-head attention: several attention heads in parallel subspaces (taught in notebook 03).

    head_i = Attention(X W_Q_i, X W_K_i, X W_V_i)
    MultiHead(X) = Concat(head_1, ..., head_h) W_O

The heads are not a Python loop: one projection produces all heads at once and a reshape
(``split_heads``) gives every head its own slice of ``d_model``.
"""

from __future__ import annotations

import torch
from torch import nn

from ._validate import CourseInputError, check_positive_int, check_tensor, shape_str
from .attention import scaled_dot_product_attention


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """``(batch, seq, d_model)`` → ``(batch, num_heads, seq, d_head)`` with ``d_head = d_model // num_heads``.

    The reshape cuts each token's vector into ``num_heads`` consecutive chunks; the transpose then
    moves the head axis in front of ``seq`` so that each head sees a whole ``(seq, d_head)`` matrix.
    """
    check_tensor("x", x, "(batch, seq, d_model)", min_dim=3, max_dim=3)
    check_positive_int("num_heads", num_heads)
    batch, seq, d_model = x.shape
    if d_model % num_heads != 0:
        raise CourseInputError(f"d_model={d_model} must split evenly across num_heads={num_heads}")
    d_head = d_model // num_heads
    return x.reshape(batch, seq, num_heads, d_head).transpose(1, 2)  # (batch, num_heads, seq, d_head)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """``(batch, num_heads, seq, d_head)`` → ``(batch, seq, num_heads * d_head)``: the inverse of ``split_heads``.

    Transpose back first, so that each token's head outputs sit next to each other, then flatten.
    """
    check_tensor("x", x, "(batch, num_heads, seq, d_head)", min_dim=4, max_dim=4)
    batch, num_heads, seq, d_head = x.shape
    return x.transpose(1, 2).reshape(batch, seq, num_heads * d_head)  # (batch, seq, d_model)


class MultiHeadAttention(nn.Module):
    """Multi-head attention with learned projections ``W_Q, W_K, W_V, W_O`` (each ``d_model × d_model``).

    forward(queries, keys=None, values=None, mask=None):
        queries: ``(batch, seq_q, d_model)``; keys and values: ``(batch, seq_k, d_model)``
        (default: self-attention, keys = values = queries).
        mask: boolean, ``True`` = may attend, shaped ``(seq_q, seq_k)``, ``(batch, seq_q, seq_k)``
        or ``(batch, 1, seq_k)`` (e.g. from ``padding_mask``); it is shared by every head.
    Returns ``(output, weights)``: output ``(batch, seq_q, d_model)`` and the per-head attention
    weights ``(batch, num_heads, seq_q, seq_k)`` for plots.
    """

    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("num_heads", num_heads)
        if d_model % num_heads != 0:
            raise CourseInputError(f"d_model={d_model} must split evenly across num_heads={num_heads}")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(
        self,
        queries: torch.Tensor,
        keys: torch.Tensor | None = None,
        values: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        keys = queries if keys is None else keys
        values = keys if values is None else values
        for name, tensor in (("queries", queries), ("keys", keys), ("values", values)):
            check_tensor(name, tensor, "(batch, seq, d_model)", min_dim=3, max_dim=3)
            if tensor.shape[-1] != self.d_model:
                raise CourseInputError(
                    f"{name} must be (batch, seq, d_model={self.d_model}), got {shape_str(tensor.shape)}"
                )
        if not keys.shape[0] == values.shape[0] == queries.shape[0]:
            raise CourseInputError(
                f"queries, keys and values must have the same batch size, got queries {shape_str(queries.shape)}, "
                f"keys {shape_str(keys.shape)} and values {shape_str(values.shape)}"
            )
        if keys.shape[1] != values.shape[1]:
            raise CourseInputError(
                f"keys and values must have one row per position (same seq_k), got keys {shape_str(keys.shape)} "
                f"and values {shape_str(values.shape)}"
            )
        if mask is not None and isinstance(mask, torch.Tensor) and mask.dim() not in (1, 2, 3, 4):
            raise CourseInputError(
                f"mask must be (seq_q, seq_k), (batch, seq_q, seq_k) or (batch, 1, seq_k), got {shape_str(mask.shape)}"
            )
        # 1. project, 2. split into heads: (batch, num_heads, seq, d_head)
        q = split_heads(self.w_q(queries), self.num_heads)
        k = split_heads(self.w_k(keys), self.num_heads)
        v = split_heads(self.w_v(values), self.num_heads)
        # 3. attend in every head at once; a (batch, seq_q, seq_k) mask gains a head axis after the batch axis
        if mask is not None and mask.dim() == 3:
            mask = mask[:, None, :, :]  # (batch, 1, seq_q or 1, seq_k), shared by every head
        heads, weights = scaled_dot_product_attention(q, k, v, mask)  # (batch, num_heads, seq_q, d_head)
        # 4. concatenate the heads and mix them with W_O
        output = self.w_o(merge_heads(heads))  # (batch, seq_q, d_model)
        return output, weights

    @torch.no_grad()
    def load_from_torch(self, mha: nn.MultiheadAttention) -> MultiHeadAttention:
        """Copy the weights of a ``torch.nn.MultiheadAttention`` (same ``embed_dim`` and ``num_heads``) into this module.

        Refuses (``CourseInputError``) what cannot be copied exactly: biases on one side only, ``add_bias_kv``,
        ``add_zero_attn``, or key/value sizes other than ``embed_dim``.
        """
        if not isinstance(mha, nn.MultiheadAttention):
            raise CourseInputError(f"mha must be a torch.nn.MultiheadAttention, got {type(mha).__name__}")
        if mha.embed_dim != self.d_model or mha.num_heads != self.num_heads:
            raise CourseInputError(
                f"cannot copy from embed_dim={mha.embed_dim}, num_heads={mha.num_heads} "
                f"into d_model={self.d_model}, num_heads={self.num_heads}"
            )
        if mha.in_proj_weight is None:
            raise CourseInputError(
                "only nn.MultiheadAttention with equal query/key/value sizes (kdim = vdim = embed_dim) can be copied"
            )
        if mha.bias_k is not None or mha.bias_v is not None or mha.add_zero_attn:
            raise CourseInputError(
                "cannot copy an nn.MultiheadAttention with add_bias_kv=True or add_zero_attn=True: they add a key and "
                "value that this module does not have"
            )
        theirs, ours = mha.in_proj_bias is not None, self.w_q.bias is not None
        if theirs != ours or (mha.out_proj.bias is not None) != ours:
            raise CourseInputError(
                f"cannot copy: the torch module has {'biases' if theirs else 'no biases'} and this one "
                f"{'has' if ours else 'has none'}; create MultiHeadAttention({self.d_model}, {self.num_heads}, bias={theirs})"
            )
        w_q, w_k, w_v = mha.in_proj_weight.chunk(3, dim=0)
        for linear, weight in ((self.w_q, w_q), (self.w_k, w_k), (self.w_v, w_v)):
            linear.weight.copy_(weight)
        self.w_o.weight.copy_(mha.out_proj.weight)
        if ours:
            b_q, b_k, b_v = mha.in_proj_bias.chunk(3, dim=0)
            for linear, bias in ((self.w_q, b_q), (self.w_k, b_k), (self.w_v, b_v)):
                linear.bias.copy_(bias)
            self.w_o.bias.copy_(mha.out_proj.bias)
        return self
