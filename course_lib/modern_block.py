"""Today's decoder: notebook 08's language model with the four changes most models since 2023 make (notebook 10).

    x_0    = E[tokens]  (+ P[positions] for learned or sinusoidal positions; rotary turns q and k instead)
    x      = x + MHA(Norm(x))                      causal, grouped-query (n_kv_heads), rotary inside each head
    x      = x + FFN(Norm(x))                      SwiGLU (or notebook 06's ReLU network)
    logits = Norm(x_L) Eᵀ

Every change is a switch, so one change at a time can be measured against the 2017 block:
``norm="layer" | "rms"``, ``feed_forward="relu" | "swiglu"``, ``positions="learned" | "sinusoidal" | "rotary" |
"none"``, ``n_kv_heads`` (default ``num_heads``). With ``"layer"``, ``"relu"``, ``"learned"``, ``n_kv_heads =
num_heads`` and biases this is exactly ``course_lib.DecoderLM`` (``from_decoder`` copies one).
"""

from __future__ import annotations

from functools import partial

import torch
from torch import nn

from ._validate import CourseInputError, check_positive_int, check_token_ids
from .blocks import FeedForward, LayerNorm
from .decoder import DecoderLM, KVCache
from .multihead import MultiHeadAttention
from .positions import sinusoidal_encoding
from .rmsnorm import RMSNorm
from .rotary import apply_rotary
from .swiglu import SwiGLUFeedForward, swiglu_width

__all__ = ["ModernBlock", "ModernDecoderLM", "NORMS", "POSITIONS"]

NORMS = {"layer": LayerNorm, "rms": RMSNorm}
POSITIONS = ("learned", "sinusoidal", "rotary", "none")


class ModernBlock(nn.Module):
    """``x + MHA(Norm(x))`` then ``x + FFN(Norm(x))``: forward(x ``(batch, new, d_model)``, cache, index) → same shape.

    The attention is a causal ``MultiHeadAttention`` with ``n_kv_heads`` (GQA) whose ``rotate`` turns q and k by RoPE
    (``rotary``: ``"halves"`` or ``"interleaved"``, the pairing; ``None``: no rotation). SwiGLU gets width ``swiglu_width(d_ff)`` (2/3 of ``d_ff``), so both feed-forward kinds cost the same parameters.
    """

    def __init__(
        self, d_model, num_heads, d_ff, norm="rms", feed_forward="swiglu", n_kv_heads=None, rotary=None, bias=False
    ):
        super().__init__()
        if norm not in NORMS or feed_forward not in ("relu", "swiglu"):
            raise CourseInputError(
                f"norm must be 'layer' or 'rms' and feed_forward 'relu' or 'swiglu', got {norm!r}, {feed_forward!r}"
            )
        self.attention_norm, self.feed_forward_norm = NORMS[norm](d_model), NORMS[norm](d_model)
        rotate = None if rotary is None else partial(apply_rotary, pairing=rotary)  # RoPE inside each head
        self.attention = MultiHeadAttention(d_model, num_heads, bias, n_kv_heads, causal=True, rotate=rotate)
        self.feed_forward = (
            FeedForward(d_model, d_ff) if feed_forward == "relu" else SwiGLUFeedForward(d_model, swiglu_width(d_ff))
        )

    def forward(self, x: torch.Tensor, cache: KVCache | None = None, index: int = 0) -> torch.Tensor:
        x = x + self.attention(self.attention_norm(x), cache=cache, index=index)[0]
        return x + self.feed_forward(self.feed_forward_norm(x))


class ModernDecoderLM(nn.Module):
    """A decoder-only language model built from ``ModernBlock``s; tokens ``(batch, seq)`` → logits ``(batch, seq, vocab)``.

    forward(tokens, cache=None) works as ``DecoderLM``'s (with a cache, ``tokens`` are the new ones); ``new_cache()``
    gives an empty ``KVCache`` whose blocks hold ``n_kv_heads`` key/value heads each.
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        num_heads: int,
        n_blocks: int,
        d_ff: int,
        max_len: int,
        *,
        norm: str = "rms",
        feed_forward: str = "swiglu",
        positions: str = "rotary",
        n_kv_heads: int | None = None,
        pairing: str = "halves",
        bias: bool = False,
    ):
        super().__init__()
        for name, value in (("vocab_size", vocab_size), ("n_blocks", n_blocks), ("max_len", max_len)):
            check_positive_int(name, value)
        if positions not in POSITIONS:
            raise CourseInputError(f"positions must be one of {', '.join(POSITIONS)}, got {positions!r}")
        self.vocab_size, self.d_model, self.max_len, self.n_blocks = vocab_size, d_model, max_len, n_blocks
        self.position_kind = positions
        self.embed = nn.Embedding(vocab_size, d_model)
        nn.init.normal_(self.embed.weight, std=0.02)
        if positions == "learned":
            self.positions = nn.Embedding(max_len, d_model)
            nn.init.normal_(self.positions.weight, std=0.01)
        elif positions == "sinusoidal":
            self.register_buffer("table", sinusoidal_encoding(max_len, d_model), persistent=False)
        rotary = pairing if positions == "rotary" else None
        self.blocks = nn.ModuleList(
            ModernBlock(d_model, num_heads, d_ff, norm, feed_forward, n_kv_heads, rotary, bias) for _ in range(n_blocks)
        )
        self.final_norm = NORMS[norm](d_model)
        self.unembed = nn.Linear(d_model, vocab_size, bias=False)
        self.unembed.weight = self.embed.weight  # tied, as in notebook 08

    def new_cache(self) -> KVCache:
        return KVCache(self.n_blocks)

    def forward(self, tokens: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        check_token_ids("tokens", tokens, self.vocab_size)
        start = 0 if cache is None else cache.length
        if self.position_kind in ("learned", "sinusoidal") and start + tokens.shape[1] > self.max_len:
            raise CourseInputError(
                f"{start + tokens.shape[1]} positions exceed max_len={self.max_len} (no position vector)"
            )
        x = self.embed(tokens)  # (batch, seq, d_model)
        positions = torch.arange(start, start + tokens.shape[1], device=tokens.device)
        if self.position_kind == "learned":
            x = x + self.positions(positions)
        elif self.position_kind == "sinusoidal":
            x = x + self.table[positions]
        for index, block in enumerate(self.blocks):
            x = block(x, cache, index)
        return self.unembed(self.final_norm(x))  # (batch, seq, vocab_size)

    @classmethod
    def from_decoder(cls, lm: DecoderLM) -> ModernDecoderLM:
        """The 2017 configuration (LayerNorm, ReLU, learned positions, all heads, biases) with ``lm``'s weights."""
        first = lm.blocks[0]
        model = cls(
            lm.vocab_size,
            lm.d_model,
            first.self_attention.num_heads,
            lm.n_blocks,
            first.feed_forward.linear1.out_features,
            lm.max_len,
            norm="layer",
            feed_forward="relu",
            positions="learned",
            bias=True,
        )
        renames = (
            (".norm1.", ".attention_norm."),
            (".norm2.", ".feed_forward_norm."),
            (".self_attention.", ".attention."),
        )
        state = {}
        for key, value in lm.state_dict().items():
            for old, new in renames:
                key = key.replace(old, new)
            state[key] = value
        model.load_state_dict(state)
        return model
