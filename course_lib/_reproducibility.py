"""One place to make a notebook reproducible: seeds, threads and the device."""

from __future__ import annotations

import os
import random

import numpy as np
import torch


def set_seed(seed: int = 0, threads: int | None = 1) -> torch.Generator:
    """Seed Python, NumPy and PyTorch, and return a ``torch.Generator`` seeded the same way.

    Call it once at the top of a notebook: every number the notebook prints and asserts then
    comes out the same on every run on the same machine.

    It also sets the number of CPU threads PyTorch uses (``threads=None`` leaves it alone). The course's models are
    tiny, and for them one thread is the fast choice: splitting a 64 × 64 matrix product across cores costs more in
    coordination than it saves, and when another program keeps a core busy it becomes very slow (measured on a
    2-core machine: 100 training steps of notebook 01's Transformer took 1.4 s on one thread, 27 s on two). One
    thread also makes the printed numbers independent of how many cores a machine has.
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be a whole number, got {seed!r}")
    if threads is not None:
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ValueError(f"threads must be a whole number ≥ 1 (or None), got {threads!r}")
        torch.set_num_threads(threads)
    os.environ.setdefault("PYTHONHASHSEED", str(seed))
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    _use_deterministic_algorithms()
    return torch.Generator().manual_seed(seed)


def _use_deterministic_algorithms() -> None:
    """``torch.use_deterministic_algorithms(True, warn_only=True)`` without its 1-second import.

    The public function first imports torch.compile's configuration, to set a flag that only compiled code reads;
    at the top of every notebook that was a second of waiting. The course never compiles, so this sets the flag
    PyTorch's ordinary kernels read (``torch.are_deterministic_algorithms_enabled()`` reports it the same way).
    """
    set_flag = getattr(torch._C, "_set_deterministic_algorithms", None)
    if set_flag is None:  # a PyTorch without the private setter: the public, slower way
        torch.use_deterministic_algorithms(True, warn_only=True)
        return
    set_flag(True, warn_only=True)


def get_device() -> torch.device:
    """The device the course trains on: a CUDA GPU if one is present, else the CPU.

    Every experiment is sized for a laptop CPU; a GPU only makes it faster.
    """
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")
