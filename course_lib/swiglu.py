"""The SwiGLU feed-forward network (Shazeer, 2020): a gated feed-forward (notebook 10).

    FFN(x)    = W_2 ReLU(W_1 x)                       notebook 06: two matrices, d_model → d_ff → d_model
    SwiGLU(x) = W_2 (SiLU(W_1 x) ⊙ W_3 x)             three matrices; SiLU(z) = z · sigmoid(z)

One branch (``W_1``, through SiLU) decides how much of the other (``W_3``, linear) passes: a gate. With three
matrices instead of two, SwiGLU keeps the parameter count of a ReLU network of width ``d_ff`` when its own width
is ``2/3 · d_ff`` (Llama: ``8/3 · d_model`` for ``d_ff = 4 · d_model``). No biases, as in Llama.
"""

from __future__ import annotations

import torch
from torch import nn

from ._validate import check_features, check_positive_int

__all__ = ["swiglu_width", "SwiGLUFeedForward"]


def swiglu_width(d_ff: int) -> int:
    """The SwiGLU width with (about) the parameters of a two-matrix network of width ``d_ff``: ``round(2/3 · d_ff)``."""
    check_positive_int("d_ff", d_ff)
    return max(1, round(2 * d_ff / 3))


class SwiGLUFeedForward(nn.Module):
    """``W_2 (SiLU(W_1 x) ⊙ W_3 x)``: forward(x ``(..., d_model)``) → same shape. ``3 · d_model · d_hidden`` parameters."""

    def __init__(self, d_model: int, d_hidden: int):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("d_hidden", d_hidden)
        self.d_model, self.d_hidden = d_model, d_hidden
        self.w_1 = nn.Linear(d_model, d_hidden, bias=False)  # the gate's branch
        self.w_3 = nn.Linear(d_model, d_hidden, bias=False)  # the gated branch
        self.w_2 = nn.Linear(d_hidden, d_model, bias=False)  # back to d_model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features("x", x, self.d_model, f"(..., d_model={self.d_model})")
        return self.w_2(nn.functional.silu(self.w_1(x)) * self.w_3(x))  # (..., d_model)
