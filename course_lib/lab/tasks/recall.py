"""Key–value recall: remember which value was stored under which key (notebooks 01, 05, 06).

A sequence holds ``num_items`` (key, value) pairs, then a query key with the placeholder value "?";
the answer is the value stored under that key. Each position carries two ids (fields): a key id in
``[0, num_keys)`` and a value id in ``[num_keys, num_keys + num_values]`` (the last one is "?").
A model that has to squeeze every pair into one fixed-size vector runs out of room as ``num_items``
grows; attention can look the key up directly.
"""

from __future__ import annotations

import torch

from ..._validate import CourseInputError

NUM_KEYS = 32
NUM_VALUES = 16
VOCAB_SIZE = NUM_KEYS + NUM_VALUES + 1  # keys, values, and the "?" placeholder
CHANCE = 1.0 / NUM_VALUES


def key_value_recall(
    batch_size: int,
    num_items: int,
    generator: torch.Generator,
    num_keys: int = NUM_KEYS,
    num_values: int = NUM_VALUES,
    return_positions: bool = False,
):
    """Draw a batch of recall problems.

    Returns ``(tokens, targets)``, or ``(tokens, targets, query_positions)`` with ``return_positions``:
    tokens ``(batch, num_items + 1, 2)`` int64 (key id, value id) per position; targets ``(batch,)``
    in ``[0, num_values)``; query_positions ``(batch,)``, which item was asked for.
    """
    if not 1 <= num_items <= num_keys:
        raise CourseInputError(f"num_items must lie between 1 and num_keys={num_keys}, got {num_items}")
    keys = torch.rand(batch_size, num_keys, generator=generator).argsort(dim=1)[:, :num_items]  # distinct keys
    values = torch.randint(0, num_values, (batch_size, num_items), generator=generator)
    query_positions = torch.randint(0, num_items, (batch_size,), generator=generator)
    rows = torch.arange(batch_size)
    tokens = torch.empty(batch_size, num_items + 1, 2, dtype=torch.long)
    tokens[:, :num_items, 0] = keys
    tokens[:, :num_items, 1] = num_keys + values
    tokens[:, num_items, 0] = keys[rows, query_positions]
    tokens[:, num_items, 1] = num_keys + num_values  # "?"
    targets = values[rows, query_positions]
    if return_positions:
        return tokens, targets, query_positions
    return tokens, targets


def recall_batches(item_counts=(4, 8, 16, 32)):
    """A ``make_batch(batch_size, generator)`` that cycles through ``item_counts``, one count per batch."""
    state = {"step": 0}

    def make_batch(batch_size: int, generator: torch.Generator):
        num_items = item_counts[state["step"] % len(item_counts)]
        state["step"] += 1
        return key_value_recall(batch_size, num_items, generator)

    return make_batch
