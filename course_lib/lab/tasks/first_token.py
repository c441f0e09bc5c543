"""What was the first token? A long-range memory test (notebook 06).

A sequence starts with one **class token** (one of ``NUM_CLASSES`` = 8, so chance is 1/8 = 0.125), followed by
``length`` **distractor** tokens drawn from a separate vocabulary; the answer is the class token. Read from the end
of the sequence, the answer lies ``length`` steps back:

    tokens:  [C5, d3, d11, d0, d7, ..., d2]      target: 5

Ids ``0 .. NUM_CLASSES - 1`` are class tokens, ``NUM_CLASSES .. VOCAB_SIZE - 1`` are distractors, so a class
token is never confused with a distractor. A recurrent network must carry the class through every step of its
hidden state; attention can look straight back at position 0, however long the sequence.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ..._validate import CourseInputError, check_positive_int

NUM_CLASSES = 8
NUM_DISTRACTORS = 16
VOCAB_SIZE = NUM_CLASSES + NUM_DISTRACTORS
CHANCE = 1.0 / NUM_CLASSES


def first_token(
    batch_size: int,
    length: int,
    generator: torch.Generator,
    num_classes: int = NUM_CLASSES,
    num_distractors: int = NUM_DISTRACTORS,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw a batch of "what was the first token?" problems.

    Returns ``(tokens, targets)``: tokens ``(batch, length + 1)`` int64, a class id in ``[0, num_classes)`` at
    position 0 and distractor ids in ``[num_classes, num_classes + num_distractors)`` after it; targets
    ``(batch,)`` int64, the class at position 0. The same ``generator`` state gives the same batch.
    """
    check_positive_int("batch_size", batch_size)
    check_positive_int("length", length)
    check_positive_int("num_classes", num_classes)
    check_positive_int("num_distractors", num_distractors)
    if not isinstance(generator, torch.Generator):
        raise CourseInputError(
            f"generator must be a torch.Generator, e.g. torch.Generator().manual_seed(0), got {type(generator).__name__}"
        )
    targets = torch.randint(0, num_classes, (batch_size,), generator=generator)  # (batch,)
    distractors = torch.randint(num_classes, num_classes + num_distractors, (batch_size, length), generator=generator)
    tokens = torch.cat([targets[:, None], distractors], dim=1)  # (batch, length + 1)
    return tokens, targets


def first_token_batches(lengths: Sequence[int] = (10, 20, 50, 100)):
    """A ``make_batch(batch_size, generator)`` for ``train_classifier`` that cycles through ``lengths``.

    Batch 1 has ``lengths[0]`` distractors, batch 2 ``lengths[1]``, and so on round again, so one model
    trains on every length (each batch holds sequences of one length, so no padding is needed).
    """
    lengths = tuple(lengths)
    if not lengths:
        raise CourseInputError("lengths must name at least one sequence length, e.g. (10, 20, 50, 100)")
    for length in lengths:
        check_positive_int("each length", length)
    state = {"step": 0}

    def make_batch(batch_size: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        length = lengths[state["step"] % len(lengths)]
        state["step"] += 1
        return first_token(batch_size, length, generator)

    return make_batch


def token_names(tokens: torch.Tensor, num_classes: int = NUM_CLASSES) -> list[str]:
    """Readable labels for one sequence ``(seq,)``: class tokens ``C0..C7``, distractors ``d0..d15``."""
    return [f"C{t}" if t < num_classes else f"d{t - num_classes}" for t in torch.as_tensor(tokens).tolist()]
