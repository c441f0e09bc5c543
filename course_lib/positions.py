"""Positional encoding: telling attention where each token stands (taught in notebook 04).

Attention treats its input as a set, so "the cat chased the dog" and "the dog chased the cat"
look alike to it. Adding a position vector to each token's embedding breaks that symmetry.

Sinusoidal encoding (Vaswani et al., 2017), for position ``pos`` and feature pair ``i``:

    PE[pos, 2i]   = sin(pos / base^(2i / d_model))
    PE[pos, 2i+1] = cos(pos / base^(2i / d_model))      with base = 10000
"""

from __future__ import annotations

import torch
from torch import nn

from ._validate import check_positions_input, check_positive_int

__all__ = ["sinusoidal_encoding", "SinusoidalPositionalEncoding", "LearnedPositionalEmbedding"]


def sinusoidal_encoding(
    seq_len: int, d_model: int, base: float = 10000.0, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """The fixed sinusoidal position codes, ``(seq_len, d_model)``.

    Even feature columns hold sines, odd columns cosines; the pair ``(2i, 2i+1)`` turns at the
    angular frequency ``1 / base^(2i / d_model)``, from one radian per position (i = 0) down to
    very slow waves, so every position gets a distinct code.
    """
    check_positive_int("seq_len", seq_len)
    check_positive_int("d_model", d_model)
    positions = torch.arange(seq_len, dtype=torch.float64)[:, None]  # (seq_len, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(d_model / 2),)
    frequencies = base ** (-two_i / d_model)  # 1 / base^(2i / d_model)
    angles = positions * frequencies  # (seq_len, ceil(d_model / 2))
    encoding = torch.zeros(seq_len, d_model, dtype=torch.float64)
    encoding[:, 0::2] = torch.sin(angles)
    encoding[:, 1::2] = torch.cos(angles[:, : d_model // 2])
    return encoding.to(dtype)


class SinusoidalPositionalEncoding(nn.Module):
    """Adds the fixed sinusoidal codes to token embeddings. No parameters to learn.

    forward(x): x ``(batch, seq, d_model)`` → ``x + PE[:seq]``, same shape.
    """

    def __init__(self, d_model: int, max_len: int = 512, base: float = 10000.0):
        super().__init__()
        self.d_model, self.max_len = d_model, max_len
        self.register_buffer("encoding", sinusoidal_encoding(max_len, d_model, base), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_positions_input(x, self.d_model, self.max_len)
        return x + self.encoding[: x.shape[1]].to(x.dtype)  # (batch, seq, d_model)


class LearnedPositionalEmbedding(nn.Module):
    """Adds a learned vector per position (as in BERT and GPT-2): one trainable row per position.

    forward(x): x ``(batch, seq, d_model)`` → ``x + P[:seq]``, same shape. Positions beyond
    ``max_len`` have no vector, so such a model cannot read longer sequences than it was built for.
    """

    def __init__(self, max_len: int, d_model: int):
        super().__init__()
        self.d_model, self.max_len = check_positive_int("d_model", d_model), check_positive_int("max_len", max_len)
        self.embedding = nn.Embedding(max_len, d_model)
        nn.init.normal_(self.embedding.weight, std=0.02)  # a small start, as in BERT (GPT-2 starts its table at 0.01)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_positions_input(x, self.d_model, self.max_len)
        positions = torch.arange(x.shape[1], device=x.device)
        return x + self.embedding(positions).to(x.dtype)  # (batch, seq, d_model)
