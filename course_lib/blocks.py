"""LayerNorm, residual connections, the feed-forward network and the Transformer encoder block.

LayerNorm and residual connections are taught in notebook 05; the assembled block in notebook 06.

    post-LN (Vaswani et al., 2017):  x = LayerNorm(x + Sublayer(x))
    pre-LN  (most models today):     x = x + Sublayer(LayerNorm(x))

Notebook 05 removes parts of the block (the skip, the LayerNorm) in its own cells to measure what breaks.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from . import _interop as interop
from ._validate import check_features, check_positive_int
from .multihead import MultiHeadAttention

__all__ = ["LayerNorm", "Residual", "FeedForward", "TransformerEncoderBlock", "TransformerEncoder"]


class LayerNorm(nn.Module):
    """Normalise each token's feature vector to mean 0 and variance 1, then scale by γ and shift by β.

        LayerNorm(x) = γ · (x − mean(x)) / √(var(x) + eps) + β

    The mean and the (biased) variance are taken over the last axis, the features of one token of one
    example, so the result does not depend on the other examples in the batch (unlike BatchNorm).

    forward(x): x ``(..., d_model)`` → same shape.

    The input is centred once before the formula, which changes no value: in float32 the mean of values near −1000
    is off by about 1e-4, a lot when they spread by only 1e-3; the mean of the centred values is exact. This makes it
    as accurate as torch's LayerNorm on ordinary inputs and more accurate on badly scaled ones (``tests/``).
    ``fast`` (training sets it): the lines after the centring run as PyTorch's one fused kernel, the same numbers.
    """

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.d_model, self.eps = check_positive_int("d_model", d_model), eps
        self.gamma = nn.Parameter(torch.ones(d_model))
        self.beta = nn.Parameter(torch.zeros(d_model))
        self.fast = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features("x", x, self.d_model, f"(..., d_model={self.d_model})")
        x = x - x.mean(dim=-1, keepdim=True)  # centre first: float32 rounding, see above
        if self.fast:
            return nn.functional.layer_norm(x, (self.d_model,), self.gamma, self.beta, self.eps)
        mean = x.mean(dim=-1, keepdim=True)  # (..., 1)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)  # (..., 1): the biased variance
        return self.gamma * (x - mean) / torch.sqrt(var + self.eps) + self.beta

    def load_from_torch(self, norm: nn.LayerNorm) -> LayerNorm:
        """Copy γ (``weight``) and β (``bias``) and eps from a ``torch.nn.LayerNorm`` over the last axis."""
        return interop.copy_layer_norm(self, norm)


class Residual(nn.Module):
    """A residual ("skip") connection around any sublayer, with LayerNorm before or after it.

        norm_first=False (post-LN): x → LayerNorm(x + dropout(sublayer(x)))
        norm_first=True  (pre-LN):  x → x + dropout(sublayer(LayerNorm(x)))

    With ``residual=False`` the ``x +`` is dropped; with ``layer_norm=False`` the LayerNorm is.
    forward(x, sublayer): x ``(batch, seq, d_model)``; ``sublayer`` maps that shape to itself.
    """

    def __init__(self, d_model, norm_first=False, dropout=0.0, residual=True, layer_norm=True):
        super().__init__()
        self.norm_first, self.residual = norm_first, residual
        self.norm = LayerNorm(d_model) if layer_norm else nn.Identity()
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, sublayer: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
        skip = x if self.residual else 0.0
        if self.norm_first:
            return skip + self.dropout(sublayer(self.norm(x)))
        return self.norm(skip + self.dropout(sublayer(x)))


class FeedForward(nn.Module):
    """Position-wise feed-forward network, the same two-layer MLP applied to every token on its own.

        FFN(x) = ReLU(x W_1 + b_1) W_2 + b_2,   x a token (row vector), W_1: (d_model, d_ff), W_2: (d_ff, d_model)

    forward(x): ``(batch, seq, d_model)`` → ``(batch, seq, d_model)``.
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        self.d_model = check_positive_int("d_model", d_model)
        check_positive_int("d_ff", d_ff)
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features("x", x, self.d_model, f"(batch, seq, d_model={self.d_model})")
        return self.linear2(self.dropout(torch.relu(self.linear1(x))))


class TransformerEncoderBlock(nn.Module):
    """One encoder block: multi-head self-attention and a feed-forward network, each with a skip and a LayerNorm.

        post-LN: x = LN₁(x + MHA(x));   x = LN₂(x + FFN(x))
        pre-LN:  x = x + MHA(LN₁(x));   x = x + FFN(LN₂(x))

    forward(x, mask=None): x ``(batch, seq, d_model)`` → ``(batch, seq, d_model)``; the attention weights
    of the last call are kept in ``self.attention_weights`` ``(batch, num_heads, seq, seq)`` for plots.
    """

    def __init__(self, d_model, num_heads, d_ff, dropout=0.0, norm_first=False, n_kv_heads=None):
        super().__init__()
        self.d_model, self.norm_first = d_model, norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads, n_kv_heads=n_kv_heads)  # n_kv_heads: GQA
        self.feed_forward = FeedForward(d_model, d_ff, dropout)
        self.norm1, self.norm2 = LayerNorm(d_model), LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.attention_weights: torch.Tensor | None = None

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        check_features("x", x, self.d_model, f"(batch, seq, d_model={self.d_model})", min_dim=3, max_dim=3)
        if self.norm_first:  # pre-LN
            x = x + self.dropout(self.attend(self.norm1(x), mask))
            x = x + self.dropout(self.feed_forward(self.norm2(x)))
        else:  # post-LN
            x = self.norm1(x + self.dropout(self.attend(x, mask)))
            x = self.norm2(x + self.dropout(self.feed_forward(x)))
        return x

    def attend(self, x: torch.Tensor, mask=None, cache=None, index: int = 0) -> torch.Tensor:
        """MHA(x): self-attention over ``x`` ``(batch, seq, d_model)``, keeping the weights for plots."""
        output, weights = self.self_attention(x, mask=mask, cache=cache, index=index)
        self.attention_weights = weights.detach()
        return output

    def load_from_torch(self, layer: nn.TransformerEncoderLayer) -> TransformerEncoderBlock:
        """Copy the weights of a ``torch.nn.TransformerEncoderLayer`` (ReLU activation, same sizes, eps included).

        Refuses (``CourseInputError``) what cannot be copied exactly: another activation, another ``d_model`` or
        ``d_ff``, another ``norm_first``, or torch's ``bias=False``.
        """
        return interop.copy_encoder_layer(self, layer)


class TransformerEncoder(nn.Module):
    """A stack of ``num_layers`` encoder blocks; pre-LN stacks end with a final LayerNorm, as in GPT-2.

    forward(x, mask=None): ``(batch, seq, d_model)`` → ``(batch, seq, d_model)``.
    ``attention_weights`` lists each block's last weights ``(batch, num_heads, seq, seq)``.
    """

    def __init__(self, num_layers, d_model, num_heads, d_ff, dropout=0.0, norm_first=False):
        super().__init__()
        check_positive_int("num_layers", num_layers)
        self.blocks = nn.ModuleList(
            TransformerEncoderBlock(d_model, num_heads, d_ff, dropout, norm_first) for _ in range(num_layers)
        )
        self.final_norm = LayerNorm(d_model) if norm_first else nn.Identity()

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        for block in self.blocks:
            x = block(x, mask)
        return self.final_norm(x)

    @property
    def attention_weights(self) -> list[torch.Tensor | None]:
        return [block.attention_weights for block in self.blocks]
