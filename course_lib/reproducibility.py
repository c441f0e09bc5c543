"""One place to make a notebook reproducible: seeds, threads and the device."""

from __future__ import annotations

import os
import random

import numpy as np
import torch


def set_seed(seed: int = 0) -> torch.Generator:
    """Seed Python, NumPy and PyTorch, and return a ``torch.Generator`` seeded the same way.

    Call it once at the top of a notebook: every number the notebook prints and asserts then
    comes out the same on every run on the same machine.
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be a whole number, got {seed!r}")
    os.environ.setdefault("PYTHONHASHSEED", str(seed))
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True, warn_only=True)
    return torch.Generator().manual_seed(seed)


def get_device() -> torch.device:
    """The device the course trains on: a CUDA GPU if one is present, else the CPU.

    Every experiment is sized for a laptop CPU; a GPU only makes it faster.
    """
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")
