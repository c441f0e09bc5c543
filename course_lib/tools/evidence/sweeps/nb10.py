"""Notebook 10's sweep: the 2017 block against RMSNorm, SwiGLU and grouped-query attention on notebook 08's corpus."""

from __future__ import annotations

import contextlib
import io

import torch

from course_lib.lab.lm_baselines import train_lm, validation_loss
from course_lib.lab.models import count_parameters
from course_lib.lab.tasks import relative_clauses as rc
from course_lib.modern_block import ModernDecoderLM

from .common import Table, lesson_code, progress, span

THE_2017_BLOCK = {**lesson_code("10", "THE_2017_BLOCK").THE_2017_BLOCK, "n_kv_heads": None}  # the notebook's
CHANGES = {  # one change at a time, the three of sections 2-3 together, and today's block with rotary positions
    "2017 block": {},
    "RMSNorm": {"norm": "rms"},
    "SwiGLU": {"feed_forward": "swiglu"},
    "GQA, 1 KV head": {"n_kv_heads": 1},
    "all three": {"norm": "rms", "feed_forward": "swiglu", "n_kv_heads": 1},  # the notebook's second model
    "today's block": {"norm": "rms", "feed_forward": "swiglu", "positions": "rotary", "n_kv_heads": 1},
}


def block_model(vocab_size: int, change: str, d_model: int = 64, num_heads: int = 2, n_blocks: int = 1):
    """Notebook 08's model size (d_ff = 2 d_model; SwiGLU at width 2/3 of it) as a ``ModernDecoderLM`` with ``change``."""
    settings = {**THE_2017_BLOCK, **CHANGES[change]}
    return ModernDecoderLM(vocab_size, d_model, num_heads, n_blocks, 2 * d_model, rc.MAX_LEN, **settings)


def block_changes(
    seeds, *, steps: int = 300, lr: float = 3e-3, d_model: int = 64, num_heads: int = 2, n_blocks: int = 1
) -> Table:
    """Section 3: validation loss of each change on the notebook's corpus (seed 0); weights and batches from ``seed``."""
    table = Table(
        f"Notebook 10: one change at a time on notebook 08's corpus, {steps} steps at lr {lr} (batch 32)",
        ["seed", *(f"{change} loss" for change in CHANGES), "largest |change − 2017|"],
    )
    corpus = rc.RelativeClauseCorpus(6000, seed=0)
    vocab_size, validation = len(corpus.vocab), corpus.validation_batch()
    losses: dict[str, list[float]] = {change: [] for change in CHANGES}
    parameters = {change: count_parameters(block_model(vocab_size, change, d_model, num_heads)) for change in CHANGES}
    for seed in seeds:
        for change in CHANGES:
            torch.manual_seed(seed)
            model = block_model(vocab_size, change, d_model, num_heads, n_blocks)
            with contextlib.redirect_stdout(io.StringIO()):
                train_lm(model, corpus.batch, steps, lr=lr, seed=seed)
            losses[change].append(validation_loss(model, validation))
        gaps = [abs(losses[change][-1] - losses["2017 block"][-1]) for change in CHANGES]
        table.add(seed, *(losses[change][-1] for change in CHANGES), max(gaps))
        progress(f"seed {seed}: " + ", ".join(f"{change} {losses[change][-1]:.3f}" for change in CHANGES))
    baseline = losses["2017 block"]
    table.notes += [
        "Validation loss (nats/token): " + "; ".join(f"{change} {span(losses[change])}" for change in CHANGES) + ".",
        "Mean over the seeds: "
        + "; ".join(f"{change} {sum(losses[change]) / len(losses[change]):.3f}" for change in CHANGES)
        + ".",
        f"Seed-to-seed spread of the 2017 block: {max(baseline) - min(baseline):.3f}; of every run: "
        f"{max(map(max, losses.values())) - min(map(min, losses.values())):.3f}.",
        "Change − 2017 block, per seed: "
        + "; ".join(
            f"{change} {span([a - b for a, b in zip(losses[change], baseline)])}"
            for change in CHANGES
            if change != "2017 block"
        )
        + ".",
        "Parameters: " + ", ".join(f"{change} {parameters[change]:,}" for change in CHANGES) + ".",
    ]
    return table
