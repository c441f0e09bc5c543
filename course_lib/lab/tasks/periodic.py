"""Periodic sequences: a task that needs relative positions only (notebook 10's length-generalisation test).

A sequence starts with ``period`` random tokens and then repeats them: ``x_t = x_{t − period}``. From position
``period − 1`` on, the next token is the one ``period − 1`` places back, so a one-block model must learn to look a
fixed distance back, whatever the absolute position. Vocabulary: ids ``0 .. vocab_size − 1``, no padding.
"""

from __future__ import annotations

import torch


def periodic_batch(
    batch_size: int, length: int, period: int, vocab_size: int, generator: torch.Generator
) -> torch.Tensor:
    """``(batch_size, length)`` integer ids: ``period`` random tokens, repeated to ``length``."""
    seed = torch.randint(vocab_size, (batch_size, period), generator=generator)
    return seed.repeat(1, -(-length // period))[:, :length]


@torch.no_grad()
def next_token_accuracy(model, tokens: torch.Tensor, period: int, start: int = 0) -> float:
    """Share of predictable next tokens (targets at positions ``≥ max(period, start)``) the model's argmax gets right."""
    was_training = model.training
    model.eval()
    predictions = model(tokens)[:, :-1].argmax(dim=-1)  # position t predicts token t + 1
    model.train(was_training)
    targets = tokens[:, 1:]
    first = max(period, start) - 1  # predictions made at position t ≥ first have targets at t + 1 ≥ max(period, start)
    return (predictions[:, first:] == targets[:, first:]).float().mean().item()
