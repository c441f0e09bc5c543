"""Choosing the next token from a language model's logits (taught in notebook 08).

Every function takes logits ``(..., vocab)`` (one row of scores per sequence) and works on them, never on
probabilities: filtering sets the logits of the excluded tokens to ``-inf``, so the softmax afterwards gives them
probability 0 and renormalises the rest by itself.

    greedy:        argmax_v logits[v]
    temperature:   logits / τ            (τ < 1 sharpens, τ > 1 flattens, τ → 0 becomes greedy)
    top-k:         keep the k largest logits
    top-p:         keep the smallest set of most likely tokens whose probabilities sum to at least p (nucleus)
    sample:        draw v with probability softmax(filtered logits / τ)[v]
"""

from __future__ import annotations

from functools import partial

import torch

from ._validate import CourseInputError, check_tensor


def greedy(logits: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """The most likely token of every row: ``(..., vocab)`` → ``(...)`` ids. ``generator`` is ignored."""
    check_tensor("logits", logits, "(batch, vocab)")
    return logits.argmax(dim=-1)


def temperature(logits: torch.Tensor, tau: float) -> torch.Tensor:
    """``logits / τ``: the softmax of the result is sharper for τ < 1 and flatter for τ > 1."""
    if not tau > 0:
        raise CourseInputError(f"the temperature τ must be positive, got {tau} (τ → 0 is greedy: use greedy)")
    return logits / tau


def top_k_filter(logits: torch.Tensor, k: int) -> torch.Tensor:
    """Keep the ``k`` largest logits of each row, set the others to ``-inf``. Shape unchanged."""
    check_tensor("logits", logits, "(batch, vocab)")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k:
        raise CourseInputError(f"k must be an integer >= 1, got {k!r}")
    k = min(k, logits.shape[-1])
    best = logits.topk(k, dim=-1).indices  # (..., k)
    keep = torch.zeros_like(logits, dtype=torch.bool).scatter_(-1, best, True)
    return logits.masked_fill(~keep, float("-inf"))


def top_p_filter(logits: torch.Tensor, p: float) -> torch.Tensor:
    """Keep the smallest set of most likely tokens whose probabilities sum to at least ``p``; the rest get ``-inf``.

    Sort the probabilities in decreasing order; token number ``i`` in that order is kept if the mass of the tokens
    before it is still below ``p``. So the most likely token is always kept, and the token that first brings the
    sum to ``p`` is kept too.
    """
    check_tensor("logits", logits, "(batch, vocab)")
    if not 0 < p <= 1:
        raise CourseInputError(f"p must lie in (0, 1], got {p}")
    probs, order = torch.softmax(logits, dim=-1).sort(dim=-1, descending=True)  # (..., vocab)
    mass_before = probs.cumsum(dim=-1) - probs  # (..., vocab): the mass of the more likely tokens
    keep_sorted = mass_before < p
    keep = torch.zeros_like(keep_sorted).scatter_(-1, order, keep_sorted)  # back to vocabulary order
    return logits.masked_fill(~keep, float("-inf"))


def sample(
    logits: torch.Tensor,
    *,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Draw one token per row from ``softmax(filter(logits) / τ)``: ``(..., vocab)`` → ``(...)`` ids.

    ``temperature=0`` means greedy. ``top_k`` and ``top_p`` filter first (top-k, then top-p on what is left).
    ``generator`` makes the draw reproducible.
    """
    check_tensor("logits", logits, "(batch, vocab)")
    if temperature == 0:
        return greedy(logits)
    scaled = _temperature(logits, temperature)
    if top_k is not None:
        scaled = top_k_filter(scaled, top_k)
    if top_p is not None:
        scaled = top_p_filter(scaled, top_p)
    probs = torch.softmax(scaled, dim=-1)
    flat = probs.reshape(-1, probs.shape[-1])  # multinomial wants (rows, vocab)
    return torch.multinomial(flat, 1, generator=generator).reshape(probs.shape[:-1])


_temperature = temperature  # `sample` has an argument of the same name


def sampler(*, temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None):
    """``sample`` with its settings fixed, in the form ``generate`` expects: ``sampler(...)(logits, generator=g)``."""
    return partial(sample, temperature=temperature, top_k=top_k, top_p=top_p)
