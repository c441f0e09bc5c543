"""RMSNorm (Zhang & Sennrich, 2019): LayerNorm without the mean (notebook 10).

    RMS(x)     = sqrt(mean_j x_j² + ε)
    RMSNorm(x) = g ⊙ x / RMS(x)                       one gain g per feature, no bias, no mean subtracted

LayerNorm (notebook 05) centres each token's vector and rescales it, with a gain and a bias: ``2 · d_model``
parameters. RMSNorm only rescales: ``d_model`` parameters and one reduction fewer. Llama, Mistral and most models
since 2023 use it in pre-norm position.
"""

from __future__ import annotations

import torch
from torch import nn

from ._validate import check_features, check_positive_int

__all__ = ["rms_norm", "RMSNorm"]


def rms_norm(x: torch.Tensor, gain: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """``g ⊙ x / sqrt(mean(x²) + ε)`` over the last axis: x ``(..., d_model)``, gain ``(d_model,)``; same shape."""
    rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)  # (..., 1)
    return gain * x / rms  # (..., d_model)


class RMSNorm(nn.Module):
    """RMSNorm with a learned gain (starting at 1): forward(x ``(..., d_model)``) → same shape."""

    def __init__(self, d_model: int, eps: float = 1e-6):
        super().__init__()
        check_positive_int("d_model", d_model)
        self.d_model, self.eps = d_model, eps
        self.gain = nn.Parameter(torch.ones(d_model))  # g

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features("x", x, self.d_model, f"(..., d_model={self.d_model})")
        return rms_norm(x, self.gain, self.eps)
