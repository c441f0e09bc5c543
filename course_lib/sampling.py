"""Choosing the next token from a language model's logits (taught in notebook 08).

Every function takes logits ``(..., vocab)`` (one row of scores per sequence) and works on them, never on
probabilities: filtering sets the logits of the excluded tokens to ``-inf``, so the softmax afterwards gives them
probability 0 and renormalises the rest by itself.

    greedy:        argmax_v logits[v]
    temperature:   logits / τ            (τ < 1 sharpens, τ > 1 flattens, τ → 0 becomes greedy)
    top-k:         keep the k largest logits
    top-p:         keep the smallest set of most likely tokens whose probabilities sum to at least p (nucleus)
    sample:        draw v with probability softmax(filtered logits / τ)[v]

Ties at the boundary: a token whose logit equals that of the last kept token is kept too, so top-k may keep more
than k tokens when several share the k-th largest logit (the choice does not depend on the token's index).
"""

from __future__ import annotations

from functools import partial

import torch

from ._validate import check_logits, check_temperature, check_top_k, check_top_p

__all__ = ["greedy", "temperature", "top_k_filter", "top_p_filter", "sample", "sampler"]


def greedy(logits: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """The most likely token of every row: ``(..., vocab)`` → ``(...)`` ids. ``generator`` is ignored."""
    check_logits(logits)
    return logits.argmax(dim=-1)


def temperature(logits: torch.Tensor, tau: float) -> torch.Tensor:
    """``logits / τ``: the softmax of the result is sharper for τ < 1 and flatter for τ > 1."""
    check_temperature(tau)
    return logits / tau


def top_k_filter(logits: torch.Tensor, k: int) -> torch.Tensor:
    """Keep the ``k`` largest logits of each row (and any tied with the k-th), set the others to ``-inf``."""
    check_top_k(logits, k)
    kth_largest = logits.topk(min(k, logits.shape[-1]), dim=-1).values[..., -1:]  # (..., 1)
    return logits.masked_fill(logits < kth_largest, float("-inf"))


def top_p_filter(logits: torch.Tensor, p: float) -> torch.Tensor:
    """Keep the smallest set of most likely tokens whose probabilities sum to at least ``p``; the rest get ``-inf``.

    Sort the probabilities in decreasing order; token number ``i`` in that order is kept if the mass of the tokens
    before it is still below ``p``. So the most likely token is always kept, and the token that first brings the
    sum to ``p`` is kept too, with any token of the same probability. ``p = 1`` keeps every token.
    """
    check_top_p(logits, p)
    if p == 1:
        return logits.clone()  # all the mass (rounding must not drop the least likely tokens)
    probs = torch.softmax(logits, dim=-1)
    sorted_probs = probs.sort(dim=-1, descending=True).values  # (..., vocab)
    mass_before = sorted_probs.cumsum(dim=-1) - sorted_probs  # (..., vocab): the mass of the more likely tokens
    n_kept = (mass_before < p).sum(dim=-1, keepdim=True)  # (..., 1): the first n_kept tokens in that order
    smallest_kept = sorted_probs.gather(-1, n_kept - 1)  # (..., 1)
    return logits.masked_fill(probs < smallest_kept, float("-inf"))


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
    check_logits(logits)
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
