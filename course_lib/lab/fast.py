"""The fast path: the same attention and LayerNorm as the taught modules, rearranged for speed.

``attention.scaled_dot_product_attention`` and ``blocks.LayerNorm.forward`` are written as their formulas, for
reading. Training runs them thousands of times, so ``fast_kernels()`` swaps in these versions while a model
trains (``course_lib.lab.training`` and ``lm_baselines.train_lm`` do it):

- attention adds a table of 0 and −∞ for the mask (it broadcasts over batch and heads faster than
  ``masked_fill``), calls PyTorch's fused softmax, and, with no gradient to compute, overwrites the scores with the
  weights (one ``(seq_q, seq_k)`` table in memory instead of two);
- LayerNorm centres once and hands the rest to PyTorch's fused kernel (one pass forward and one backward instead of
  about ten small operations each way: a 6-block model trains about 1.4× faster).

Both return the same numbers as the taught versions up to float rounding, gradients included
(``tests/test_formula_first.py``). Inside ``fast_kernels()`` the input checks of the taught functions still run.
"""

from __future__ import annotations

import math
import threading
from contextlib import contextmanager

import torch
from torch import nn

from .. import blocks, multihead
from .._validate import check_attention_inputs, check_features

_TAUGHT = {"attention": multihead.scaled_dot_product_attention, "layer_norm": blocks.LayerNorm.forward}
_lock = threading.Lock()
_depth = 0  # how many fast_kernels() blocks are open (threads of train_side_by_side open one each)


def attention_fast(queries, keys, values, mask=None):
    """``scaled_dot_product_attention`` with an additive mask, the fused softmax and, without gradients, in place."""
    check_attention_inputs(queries, keys, values, mask)
    scores = (queries / math.sqrt(queries.shape[-1])) @ keys.transpose(-2, -1)  # (..., seq_q, seq_k)
    if mask is not None:
        blocked_rows = ~mask.any(dim=-1, keepdim=True)  # (..., seq_q, 1): a query that may attend to no key at all
        allowed = mask | blocked_rows  # such a row gets finite scores here (no 0/0 = NaN) and zero weights below
        scores += torch.zeros(allowed.shape, dtype=scores.dtype, device=scores.device).masked_fill_(
            ~allowed, float("-inf")
        )
    in_place = not (torch.is_grad_enabled() and any(t.requires_grad for t in (queries, keys, values)))
    weights = torch.softmax(scores, dim=-1, out=scores if in_place else None)  # (..., seq_q, seq_k)
    if mask is not None and blocked_rows.any():
        weights = weights.masked_fill(blocked_rows, 0.0)  # nothing to attend to: all-zero weights, output 0
    return weights @ values, weights


def layer_norm_fast(self: blocks.LayerNorm, x: torch.Tensor) -> torch.Tensor:
    """``LayerNorm.forward`` through PyTorch's fused kernel, after the same first centring."""
    check_features("x", x, self.d_model, f"(..., d_model={self.d_model})")
    centered = x - x.mean(dim=-1, keepdim=True)
    return nn.functional.layer_norm(centered, (self.d_model,), self.gamma, self.beta, self.eps)


@contextmanager
def fast_kernels():
    """Within this block, every ``MultiHeadAttention`` and ``LayerNorm`` runs the fast path. Nests; thread-safe."""
    global _depth
    with _lock:
        if _depth == 0:
            multihead.scaled_dot_product_attention = attention_fast
            blocks.LayerNorm.forward = layer_norm_fast
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                multihead.scaled_dot_product_attention = _TAUGHT["attention"]
                blocks.LayerNorm.forward = _TAUGHT["layer_norm"]
