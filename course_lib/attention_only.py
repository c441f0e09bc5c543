"""An attention-only decoder: the smallest model in which heads compose (taught in notebook 09).

    x_0    = E[tokens] + P[positions]                       token embedding + learned position embedding
    x_l    = x_{l-1} + Σ_h head_{l,h}(x_{l-1}) W_O_{l,h}     causal multi-head attention, added to the residual
    logits = x_L U                                          the unembedding

No MLPs and no LayerNorm: every head reads the residual stream and writes back into it, so what a head in layer 1
can find depends on what the heads of layer 0 wrote. That is the composition behind an induction head: a layer-0 head
copies each token's *previous* token into its position, and a layer-1 head then matches "my token" against "the
previous token of that earlier position", and copies the token it lands on.

``forward(tokens, ablate=...)`` switches heads off: a head in ``ablate`` (a set of ``(layer, head)`` pairs) writes
nothing into the residual stream, as if it had been deleted.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import nn

from ._validate import CourseInputError, check_positive_int, check_token_ids
from .multihead import MultiHeadAttention, split_heads

__all__ = ["AttentionOnlyLayer", "AttentionOnlyLM", "per_token_loss", "previous_token_score", "prefix_matching_score"]


class AttentionOnlyLayer(nn.Module):
    """One causal multi-head attention layer and its residual sum: ``x + MultiHead(x)``.

    ``attention`` is a causal ``MultiHeadAttention`` without biases; its head mask switches single heads off before
    ``W_O`` mixes them.
    """

    def __init__(self, d_model: int, num_heads: int):
        super().__init__()
        self.attention = MultiHeadAttention(d_model, num_heads, bias=False, causal=True)
        self.num_heads = num_heads

    def project(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The queries, keys and values of every head: each ``(batch, num_heads, seq, d_head)``."""
        a = self.attention
        return tuple(split_heads(w(x), a.num_heads) for w in (a.w_q, a.w_k, a.w_v))

    def forward(self, x: torch.Tensor, head_on: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """x: ``(batch, seq, d_model)``; head_on: ``(num_heads,)`` of 1.0 (on) / 0.0 (off), or None for all on.

        Returns ``(x + attention output, weights (batch, num_heads, seq, seq))``.
        """
        output, weights = self.attention(x, head_mask=head_on)
        return x + output, weights


class AttentionOnlyLM(nn.Module):
    """A decoder of ``n_layers`` attention-only layers; ``forward`` returns ``(logits, weights)``.

    tokens: ``(batch, seq)`` int64 with ``seq ≤ max_len``.
    logits: ``(batch, seq, vocab_size)``; weights: a list with one ``(batch, num_heads, seq, seq)`` per layer.
    """

    def __init__(self, vocab_size: int, d_model: int = 32, num_heads: int = 2, n_layers: int = 2, max_len: int = 32):
        super().__init__()
        for name, value in (
            ("vocab_size", vocab_size),
            ("d_model", d_model),
            ("n_layers", n_layers),
            ("max_len", max_len),
        ):
            check_positive_int(name, value)
        self.vocab_size, self.d_model, self.num_heads, self.n_layers, self.max_len = (
            vocab_size,
            d_model,
            num_heads,
            n_layers,
            max_len,
        )
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(max_len, d_model)
        self.layers = nn.ModuleList(AttentionOnlyLayer(d_model, num_heads) for _ in range(n_layers))
        self.unembed = nn.Linear(d_model, vocab_size, bias=False)

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        """x_0 = E[tokens] + P[positions]: ``(batch, seq)`` → ``(batch, seq, d_model)``."""
        check_token_ids("tokens", tokens, self.vocab_size)
        if tokens.shape[1] > self.max_len:
            raise CourseInputError(f"sequences may be at most max_len={self.max_len} tokens, got {tokens.shape[1]}")
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        return self.token_embedding(tokens) + self.position_embedding(positions)

    def forward(
        self, tokens: torch.Tensor, ablate: Iterable[tuple[int, int]] = ()
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        switches = self.head_switches(ablate)
        x = self.embed(tokens)  # (batch, seq, d_model)
        all_weights = []
        for layer, head_on in zip(self.layers, switches):
            x, weights = layer(x, head_on)
            all_weights.append(weights)
        return self.unembed(x), all_weights

    def head_switches(self, ablate: Iterable[tuple[int, int]]) -> list[torch.Tensor | None]:
        """``(num_heads,)`` on/off vectors per layer (None where every head is on) for the ``(layer, head)`` pairs."""
        switches: list[torch.Tensor | None] = [None] * self.n_layers
        for pair in ablate:
            if not (isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(i, int) for i in pair)):
                raise CourseInputError(f"ablate must hold (layer, head) pairs of whole numbers, got {pair!r}")
            layer, head = pair
            if not (0 <= layer < self.n_layers and 0 <= head < self.num_heads):
                raise CourseInputError(
                    f"no head {pair}: layers are 0..{self.n_layers - 1} and heads 0..{self.num_heads - 1}"
                )
            if switches[layer] is None:
                switches[layer] = torch.ones(self.num_heads)
            switches[layer][head] = 0.0
        return switches


def per_token_loss(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """−log p(tokens_{t+1} | tokens_≤t) at every position: ``(batch, seq)`` logits ``(batch, seq, vocab)`` → ``(batch, seq - 1)``.

    Column ``t`` is the loss of predicting token ``t + 1``.
    """
    log_probs = logits[:, :-1].log_softmax(dim=-1)  # (batch, seq - 1, vocab)
    return -log_probs.gather(-1, tokens[:, 1:, None])[..., 0]  # (batch, seq - 1)


def previous_token_score(weights: torch.Tensor) -> torch.Tensor:
    """How much each head attends from every token to the token just before it.

    weights: ``(batch, num_heads, seq, seq)``. Returns ``(num_heads,)``: the mean of ``weights[..., t, t - 1]``
    over the batch and every query ``t ≥ 1`` (1.0 = a perfect previous-token head).
    """
    return weights.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(0, -1))


def prefix_matching_score(weights: torch.Tensor, half: int) -> torch.Tensor:
    """How much each head attends from every repeated token to the token AFTER its earlier copy.

    weights: ``(batch, num_heads, 2 * half, 2 * half)`` on repeated sequences. Query ``t`` (in the repeat,
    ``t ≥ half``) is a copy of token ``t - half``; the token after that copy sits at ``t - half + 1``. Returns
    ``(num_heads,)``: the mean of ``weights[..., t, t - half + 1]`` over the batch and the repeated half.
    """
    return weights.diagonal(offset=-(half - 1), dim1=-2, dim2=-1)[..., 1:].mean(dim=(0, -1))
