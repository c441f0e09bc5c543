"""Seeded inputs for the checks' cases, built without touching the learner's global random state."""

from __future__ import annotations

import torch


def quiet_rng():
    """Build reference modules without touching the learner's global random state."""
    return torch.random.fork_rng(devices=[])


def generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def randn(gen: torch.Generator, *shape: int, scale: float = 1.0, shift: float = 0.0) -> torch.Tensor:
    return torch.randn(*shape, generator=gen) * scale + shift


def salt_scope(salt: int):  # placeholder until the salted checks land
    import contextlib

    return contextlib.nullcontext()
