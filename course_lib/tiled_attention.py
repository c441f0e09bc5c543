"""Attention in tiles with the online softmax: memory linear in the sequence length (notebook 10).

Plain attention builds the whole ``(seq_q, seq_k)`` matrix of weights ``softmax(QKᵀ/√d_k)`` and keeps it for the
backward pass: 4 · seq² bytes per head in float32, the n² wall. The online softmax (Milakov & Gimelshein, 2018)
reads the keys a tile at a time and keeps, for every query row, only a running max ``m``, a running sum ``ℓ`` and
a running output ``o``. For a new tile of scores ``s`` (with values ``V_tile``):

    m_new = max(m, max_j s_j)
    ℓ_new = e^(m − m_new) · ℓ + Σ_j e^(s_j − m_new)
    o_new = e^(m − m_new) · o + Σ_j e^(s_j − m_new) · V_tile[j]

After the last tile, ``output = o / ℓ`` and the logsumexp of the row is ``L = m + log ℓ``. FlashAttention
(Dao et al., 2022) is this loop run in a GPU's fast memory; the backward pass saves only the output and ``L`` and
recomputes each tile's weights as ``P = e^(s − L)``. Here the same algorithm is written in plain PyTorch, for CPU:
it teaches the memory, not the speed (a Python loop over tiles is slower than one fused kernel).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from ._validate import CourseInputError, check_positive_int, check_tensor, shape_str

# the function tiled_attention shares this module's name: `from course_lib.tiled_attention import tiled_attention`
__all__ = ["online_softmax_step", "TiledAttention", "plain_attention", "saved_for_backward_bytes"]


def online_softmax_step(
    running_max: torch.Tensor,
    running_sum: torch.Tensor,
    output: torch.Tensor,
    scores: torch.Tensor,
    values: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One tile of the online softmax: fold ``scores`` ``(..., rows, tile)`` and ``values`` ``(..., tile, d_v)`` in.

    running_max, running_sum: ``(..., rows)`` (start at −inf and 0); output: ``(..., rows, d_v)`` (starts at 0),
    the *unnormalised* sum ``Σ_j e^(s_j − m) V[j]``. Returns the new ``(running_max, running_sum, output)``.
    """
    new_max = torch.maximum(running_max, scores.amax(dim=-1))  # m_new, (..., rows)
    rescale = torch.exp(running_max - new_max)  # e^(m − m_new): 0 on the first tile (m = −inf)
    weights = torch.exp(scores - new_max[..., None])  # e^(s_j − m_new), (..., rows, tile)
    new_sum = rescale * running_sum + weights.sum(dim=-1)  # ℓ_new
    new_output = rescale[..., None] * output + weights @ values  # o_new, (..., rows, d_v)
    return new_max, new_sum, new_output


def _tiles(length: int, tile_size: int):
    return [(start, min(start + tile_size, length)) for start in range(0, length, tile_size)]


def _scores(q_tile, k_tile, scale, q_start, k_start, causal):
    """``q_tile k_tileᵀ · scale`` ``(..., rows, cols)``, with −inf where the causal mask forbids (key after query).

    ``q_start`` is the absolute position of the tile's first query (see ``_query_offset``)."""
    scores = (q_tile @ k_tile.transpose(-2, -1)) * scale
    if causal:
        rows = torch.arange(q_start, q_start + q_tile.shape[-2], device=scores.device)[:, None]
        cols = torch.arange(k_start, k_start + k_tile.shape[-2], device=scores.device)[None, :]
        scores = scores.masked_fill(cols > rows, float("-inf"))
    return scores


def _query_offset(queries, keys) -> int:
    """The absolute position of query 0: the queries are the *last* seq_q of the seq_k positions (a KV cache holds
    the earlier ones), so the causal mask is aligned bottom-right, as a decoder's cache needs."""
    return keys.shape[-2] - queries.shape[-2]


def _forward(queries, keys, values, causal, tile_size):
    """Output ``(..., seq_q, d_v)`` and logsumexp ``(..., seq_q)``, one query tile and one key tile at a time."""
    scale = 1.0 / math.sqrt(queries.shape[-1])
    offset = _query_offset(queries, keys)
    output = queries.new_empty(*queries.shape[:-1], values.shape[-1])
    logsumexp = queries.new_empty(queries.shape[:-1])
    for q_start, q_end in _tiles(queries.shape[-2], tile_size):
        q_tile = queries[..., q_start:q_end, :]
        running_max = queries.new_full(q_tile.shape[:-1], float("-inf"))
        running_sum = queries.new_zeros(q_tile.shape[:-1])
        unnormalised = queries.new_zeros(*q_tile.shape[:-1], values.shape[-1])
        for k_start, k_end in _tiles(keys.shape[-2], tile_size):
            if causal and k_start > offset + q_end - 1:
                break  # every key of this tile and the next comes after every query of the tile
            scores = _scores(q_tile, keys[..., k_start:k_end, :], scale, offset + q_start, k_start, causal)
            running_max, running_sum, unnormalised = online_softmax_step(
                running_max, running_sum, unnormalised, scores, values[..., k_start:k_end, :]
            )
        output[..., q_start:q_end, :] = unnormalised / running_sum[..., None]
        logsumexp[..., q_start:q_end] = running_max + torch.log(running_sum)
    return output, logsumexp


def _backward(queries, keys, values, output, logsumexp, grad_output, causal, tile_size):
    """Gradients by recomputation: each tile's weights are ``P = e^(s − L)``, never the whole matrix at once.

    dV = Pᵀ dO,   dP = dO Vᵀ,   dS = P ⊙ (dP − D) with D = rowsum(dO ⊙ O),   dQ = dS K · scale,  dK = dSᵀ Q · scale
    """
    scale = 1.0 / math.sqrt(queries.shape[-1])
    offset = _query_offset(queries, keys)
    grad_q, grad_k, grad_v = torch.zeros_like(queries), torch.zeros_like(keys), torch.zeros_like(values)
    row_dot = (grad_output * output).sum(dim=-1)  # D, (..., seq_q)
    for q_start, q_end in _tiles(queries.shape[-2], tile_size):
        q_tile, d_out = queries[..., q_start:q_end, :], grad_output[..., q_start:q_end, :]
        for k_start, k_end in _tiles(keys.shape[-2], tile_size):
            if causal and k_start > offset + q_end - 1:
                break
            k_tile, v_tile = keys[..., k_start:k_end, :], values[..., k_start:k_end, :]
            scores = _scores(q_tile, k_tile, scale, offset + q_start, k_start, causal)
            weights = torch.exp(scores - logsumexp[..., q_start:q_end, None])  # P for this tile
            grad_v[..., k_start:k_end, :] += weights.transpose(-2, -1) @ d_out
            grad_weights = d_out @ v_tile.transpose(-2, -1)  # dP
            grad_scores = weights * (grad_weights - row_dot[..., q_start:q_end, None])  # dS
            grad_q[..., q_start:q_end, :] += (grad_scores @ k_tile) * scale
            grad_k[..., k_start:k_end, :] += (grad_scores.transpose(-2, -1) @ q_tile) * scale
    return grad_q, grad_k, grad_v


class TiledAttention(torch.autograd.Function):
    """``softmax(QKᵀ/√d_k) V`` by tiles; saves only Q, K, V, the output and the logsumexp for the backward pass."""

    @staticmethod
    def forward(ctx, queries, keys, values, causal, tile_size):
        output, logsumexp = _forward(queries, keys, values, causal, tile_size)
        ctx.save_for_backward(queries, keys, values, output, logsumexp)
        ctx.causal, ctx.tile_size = causal, tile_size
        return output

    @staticmethod
    def backward(ctx, grad_output):
        queries, keys, values, output, logsumexp = ctx.saved_tensors
        grads = _backward(queries, keys, values, output, logsumexp, grad_output, ctx.causal, ctx.tile_size)
        return *grads, None, None


def tiled_attention(
    queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, causal: bool = False, tile_size: int = 64
) -> torch.Tensor:
    """Attention by tiles of ``tile_size`` positions, equal to ``softmax(QKᵀ/√d_k) V``.

    queries ``(..., seq_q, d_k)``, keys ``(..., seq_k, d_k)``, values ``(..., seq_k, d_v)`` → ``(..., seq_q, d_v)``.
    ``causal``: the queries are the last ``seq_q`` of the ``seq_k`` positions, so query ``i`` sees keys
    ``0..seq_k − seq_q + i`` (for ``seq_q = seq_k``, keys ``0..i``, as ``scaled_dot_product_attention(is_causal=True)``;
    for fewer queries, the new tokens of a KV cache, the mask is aligned bottom-right, where PyTorch's ``is_causal``
    aligns it top-left).
    """
    for name, tensor in (("queries", queries), ("keys", keys), ("values", values)):
        check_tensor(name, tensor, "(..., seq, d)", min_dim=2)
    check_positive_int("tile_size", tile_size)
    if queries.shape[-1] != keys.shape[-1] or keys.shape[-2] != values.shape[-2]:
        raise CourseInputError(
            "queries (..., seq_q, d_k), keys (..., seq_k, d_k) and values (..., seq_k, d_v) do not fit: got "
            f"{shape_str(queries.shape)}, {shape_str(keys.shape)}, {shape_str(values.shape)}"
        )
    if queries.shape[:-2] != keys.shape[:-2] or keys.shape[:-2] != values.shape[:-2]:
        raise CourseInputError("queries, keys and values must share their leading (batch, heads) axes")
    _check_causal_lengths(queries, keys, causal)
    return TiledAttention.apply(queries, keys, values, bool(causal), tile_size)


def _check_causal_lengths(queries, keys, causal) -> None:
    if causal and queries.shape[-2] > keys.shape[-2]:
        raise CourseInputError(
            f"a causal mask needs at least as many keys as queries (the queries are the last positions), got "
            f"{queries.shape[-2]} queries and {keys.shape[-2]} keys"
        )


def plain_attention(queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, causal: bool = False):
    """The textbook ``softmax(QKᵀ/√d_k) V`` with the whole weight matrix, for comparisons; same shapes as above.

    ``causal`` aligns the mask bottom-right, as ``tiled_attention`` does (the queries are the last positions)."""
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1])  # (..., seq_q, seq_k)
    if causal:
        _check_causal_lengths(queries, keys, causal)
        later = torch.ones_like(scores, dtype=torch.bool).triu(1 + keys.shape[-2] - queries.shape[-2])
        scores = scores.masked_fill(later, float("-inf"))
    return torch.softmax(scores, dim=-1) @ values


def saved_for_backward_bytes(function: Callable[[], torch.Tensor]) -> int:
    """Bytes of the distinct tensors autograd keeps for the backward pass while ``function()`` runs.

    This is the memory a training step must hold between its forward and its backward pass; it is counted
    exactly (each storage once) with ``torch.autograd.graph.saved_tensors_hooks``, whatever the allocator does.
    """
    storages: dict[int, int] = {}

    def pack(tensor: torch.Tensor):
        storage = tensor.untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        function()
    return sum(storages.values())
