"""LayerNorm, residual connections, the feed-forward network and the Transformer encoder block.

LayerNorm and residual connections are taught in notebook 05; the assembled block in notebook 06.

    post-LN (Vaswani et al., 2017):  x = LayerNorm(x + Sublayer(x))
    pre-LN  (most models today):     x = x + Sublayer(LayerNorm(x))

The flags ``residual`` and ``layer_norm`` exist so notebook 05 can remove a part and measure what breaks.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from ._validate import CourseInputError, check_features, check_positive_int
from .multihead import MultiHeadAttention


class LayerNorm(nn.Module):
    """Normalise each token's feature vector to mean 0 and variance 1, then scale by γ and shift by β.

        LayerNorm(x) = γ · (x − mean(x)) / √(var(x) + eps) + β

    The mean and the (biased) variance are taken over the last axis, the features of one token of one
    example, so the result does not depend on the other examples in the batch (unlike BatchNorm).

    forward(x): x ``(..., d_model)`` → same shape.

    The centring runs twice: in float32 the mean of values near −1000 is off by about 1e-4, which is a lot when the
    values spread by only 1e-3; subtracting the mean of the centred values removes what rounding left. This makes
    it as accurate as torch's LayerNorm on ordinary inputs and far more accurate on badly scaled ones
    (``tests/test_equivalence.py``).
    """

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        check_positive_int("d_model", d_model)
        self.d_model = d_model
        self.eps = eps
        self.gamma = nn.Parameter(torch.ones(d_model))
        self.beta = nn.Parameter(torch.zeros(d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features("x", x, self.d_model, f"(..., d_model={self.d_model})")
        centered = x - x.mean(dim=-1, keepdim=True)  # (..., d_model): x − mean(x), the first centring
        # The rest of the formula in PyTorch's fused kernel: it subtracts the mean of `centered` (the second
        # centring), divides by √(biased var + eps), then scales by γ and shifts by β, in one pass forward and one
        # backward instead of about ten small operations each way (a 6-block model trains ~1.4× faster).
        return nn.functional.layer_norm(centered, (self.d_model,), self.gamma, self.beta, self.eps)

    @torch.no_grad()
    def load_from_torch(self, norm: nn.LayerNorm) -> LayerNorm:
        """Copy γ (``weight``) and β (``bias``) and eps from a ``torch.nn.LayerNorm`` over the last axis."""
        if not isinstance(norm, nn.LayerNorm):
            raise CourseInputError(f"norm must be a torch.nn.LayerNorm, got {type(norm).__name__}")
        if tuple(norm.normalized_shape) != (self.d_model,):
            raise CourseInputError(
                f"cannot copy a LayerNorm over {tuple(norm.normalized_shape)} into one over the last axis of size {self.d_model}"
            )
        if norm.weight is None or norm.bias is None:
            raise CourseInputError(
                "cannot copy a torch LayerNorm without a learned scale and shift (elementwise_affine=False or "
                "bias=False): this LayerNorm always has both"
            )
        self.gamma.copy_(norm.weight)
        self.beta.copy_(norm.bias)
        self.eps = norm.eps
        return self


class Residual(nn.Module):
    """A residual ("skip") connection around a sublayer, with LayerNorm before or after it.

        norm_first=False (post-LN): x → LayerNorm(x + dropout(sublayer(x)))
        norm_first=True  (pre-LN):  x → x + dropout(sublayer(LayerNorm(x)))

    With ``residual=False`` the ``x +`` is dropped; with ``layer_norm=False`` the LayerNorm is.
    forward(x, sublayer): x ``(batch, seq, d_model)``; ``sublayer`` maps that shape to itself.
    """

    def __init__(
        self,
        d_model: int,
        norm_first: bool = False,
        dropout: float = 0.0,
        residual: bool = True,
        layer_norm: bool = True,
    ):
        super().__init__()
        self.norm_first = norm_first
        self.residual = residual
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
        check_positive_int("d_model", d_model)
        check_positive_int("d_ff", d_ff)
        self.d_model = d_model
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features("x", x, self.d_model, f"(batch, seq, d_model={self.d_model})")
        return self.linear2(self.dropout(torch.relu(self.linear1(x))))


class TransformerEncoderBlock(nn.Module):
    """One encoder block: multi-head self-attention and a feed-forward network, each wrapped in add & norm.

        post-LN: x = LN(x + MHA(x));   x = LN(x + FFN(x))
        pre-LN:  x = x + MHA(LN(x));   x = x + FFN(LN(x))

    forward(x, mask=None): x ``(batch, seq, d_model)`` → ``(batch, seq, d_model)``; the attention weights
    of the last call are kept in ``self.attention_weights`` ``(batch, num_heads, seq, seq)`` for plots.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.0,
        norm_first: bool = False,
        residual: bool = True,
        layer_norm: bool = True,
    ):
        super().__init__()
        self.d_model = d_model
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff, dropout)
        self.attention_residual = Residual(d_model, norm_first, dropout, residual, layer_norm)
        self.feed_forward_residual = Residual(d_model, norm_first, dropout, residual, layer_norm)
        self.attention_weights: torch.Tensor | None = None

    def _attend(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        output, weights = self.self_attention(x, mask=mask)
        self.attention_weights = weights.detach()
        return output

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        check_features("x", x, self.d_model, f"(batch, seq, d_model={self.d_model})", min_dim=3, max_dim=3)
        x = self.attention_residual(x, lambda h: self._attend(h, mask))  # add & norm around attention
        x = self.feed_forward_residual(x, self.feed_forward)  # add & norm around the FFN
        return x

    @torch.no_grad()
    def load_from_torch(self, layer: nn.TransformerEncoderLayer) -> TransformerEncoderBlock:
        """Copy the weights of a ``torch.nn.TransformerEncoderLayer`` (ReLU activation, same sizes, eps included).

        Refuses (``CourseInputError``) what cannot be copied exactly: another activation, another ``d_model`` or
        ``d_ff``, torch's ``bias=False``, or a block built without its residuals or LayerNorms.
        """
        if not isinstance(layer, nn.TransformerEncoderLayer):
            raise CourseInputError(f"layer must be a torch.nn.TransformerEncoderLayer, got {type(layer).__name__}")
        if layer.norm_first != self.attention_residual.norm_first:
            raise CourseInputError(
                f"layer.norm_first={layer.norm_first} but this block has norm_first={self.attention_residual.norm_first}"
            )
        activation = layer.activation
        if not (activation is torch.nn.functional.relu or isinstance(activation, nn.ReLU)):
            name = getattr(activation, "__name__", type(activation).__name__)
            raise CourseInputError(
                f"cannot copy a layer with activation {name}: this block's feed-forward network uses ReLU"
            )
        d_ff = self.feed_forward.linear1.out_features
        if (layer.linear1.in_features, layer.linear1.out_features) != (self.d_model, d_ff):
            raise CourseInputError(
                f"cannot copy d_model={layer.linear1.in_features}, dim_feedforward={layer.linear1.out_features} into "
                f"a block with d_model={self.d_model}, d_ff={d_ff}"
            )
        if layer.linear1.bias is None or layer.linear2.bias is None:
            raise CourseInputError("cannot copy a layer built with bias=False: this block's linear layers have biases")
        for ours in (self.attention_residual, self.feed_forward_residual):
            if not (ours.residual and isinstance(ours.norm, LayerNorm)):
                raise CourseInputError(
                    "cannot copy into a block built with residual=False or layer_norm=False: torch's layer has both"
                )
        self.self_attention.load_from_torch(layer.self_attn)
        self.feed_forward.linear1.load_state_dict(layer.linear1.state_dict())
        self.feed_forward.linear2.load_state_dict(layer.linear2.state_dict())
        for ours, theirs in ((self.attention_residual, layer.norm1), (self.feed_forward_residual, layer.norm2)):
            ours.norm.load_from_torch(theirs)
        return self


class TransformerEncoder(nn.Module):
    """A stack of ``num_layers`` encoder blocks; pre-LN stacks end with a final LayerNorm, as in GPT-2.

    forward(x, mask=None): ``(batch, seq, d_model)`` → ``(batch, seq, d_model)``.
    ``attention_weights`` lists each block's last weights ``(batch, num_heads, seq, seq)``.
    """

    def __init__(
        self,
        num_layers: int,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.0,
        norm_first: bool = False,
        residual: bool = True,
        layer_norm: bool = True,
    ):
        super().__init__()
        check_positive_int("num_layers", num_layers)
        self.blocks = nn.ModuleList(
            TransformerEncoderBlock(d_model, num_heads, d_ff, dropout, norm_first, residual, layer_norm)
            for _ in range(num_layers)
        )
        self.final_norm = LayerNorm(d_model) if (norm_first and layer_norm) else nn.Identity()

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        for block in self.blocks:
            x = block(x, mask)
        return self.final_norm(x)

    @property
    def attention_weights(self) -> list[torch.Tensor | None]:
        return [block.attention_weights for block in self.blocks]
