"""Repeated random tokens: the task on which induction heads form (notebook 09).

Each sequence is ``half`` random tokens followed by the same ``half`` tokens again:

    tokens:  [7, 2, 9, 4, 0,  7, 2, 9, 4, 0]        half = 5
              ───first half─── ──repeat──

The first half cannot be predicted (every token is a fresh uniform draw, so the best loss there is ln(vocab)); the
second half can, but only by looking back: to predict the token after a ``9`` in the repeat, find the earlier ``9``
and read the token that followed it. The offset between the copies changes from batch to batch (``half`` is drawn
from a range during training), so a model cannot learn one fixed offset instead.
"""

from __future__ import annotations

import torch

from ..._validate import CourseInputError, check_positive_int


def repeated_tokens(batch_size: int, half: int, vocab_size: int, generator: torch.Generator) -> torch.Tensor:
    """Draw ``(batch, 2 * half)`` int64 tokens: ``half`` uniform random ids in ``0..vocab_size-1``, then the same again."""
    check_positive_int("batch_size", batch_size)
    check_positive_int("half", half)
    check_positive_int("vocab_size", vocab_size)
    if not isinstance(generator, torch.Generator):
        raise CourseInputError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    first = torch.randint(vocab_size, (batch_size, half), generator=generator)  # (batch, half)
    return torch.cat([first, first], dim=1)  # (batch, 2 * half)


def repeated_batches(
    batch_size: int, vocab_size: int, generator: torch.Generator, min_half: int = 4, max_half: int = 16
):
    """An endless stream of repeated-token batches, each with its own ``half`` drawn from ``min_half..max_half``."""
    check_positive_int("min_half", min_half)
    check_positive_int("max_half", max_half)
    if min_half > max_half:
        raise CourseInputError(f"min_half={min_half} must not exceed max_half={max_half}")
    while True:
        half = int(torch.randint(min_half, max_half + 1, (), generator=generator))
        yield repeated_tokens(batch_size, half, vocab_size, generator)
