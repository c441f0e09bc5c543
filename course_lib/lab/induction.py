"""Notebook 09's experiment in one place: train an attention-only decoder on repeated random tokens and watch an
induction head form. The notebook runs these functions with seed 0; its evidence sweep runs them over seeds.

    per-position loss   ℓ_t = −log p(token_{t+1} | tokens_≤t)
    in-context drop     = ln(vocab) − mean ℓ over the repeated half   (ln(vocab): the best loss on fresh random tokens)
    phase change        = the step where the repeated-half loss falls below halfway, beside the step where the
                          best layer-1 prefix-matching score rises above halfway (between its first and last values)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from .._reproducibility import set_seed
from ..attention_only import AttentionOnlyLM, per_token_loss, prefix_matching_score, previous_token_score
from .tasks.repeated import repeated_batches, repeated_tokens

VOCAB_SIZE = 32
D_MODEL = 32
HEADS = 1
MAX_HALF = 16
STEPS = 300
BATCH = 64
LR = 1e-2
EVAL_HALF = 10  # the held-out sequences: 10 random tokens, then the same 10 again
EVERY = 10


ONE_LAYER = {"n_layers": 1, "num_heads": 2, "d_model": D_MODEL}  # one layer, the same width, two heads


def make_model(seed: int, n_layers: int = 2, num_heads: int = HEADS, d_model: int = D_MODEL) -> AttentionOnlyLM:
    """The notebook's model, built right after seeding with ``seed``."""
    torch.manual_seed(seed)
    return AttentionOnlyLM(VOCAB_SIZE, d_model, num_heads, n_layers, max_len=2 * MAX_HALF)


def held_out(seed: int = 2024, n: int = 200) -> torch.Tensor:
    """The held-out repeated sequences every measurement uses: ``(n, 2 * EVAL_HALF)``."""
    return repeated_tokens(n, EVAL_HALF, VOCAB_SIZE, torch.Generator().manual_seed(seed))


@torch.no_grad()
def measure(model: AttentionOnlyLM, tokens: torch.Tensor, ablate=()) -> dict:
    """Losses by half and the detectors' scores on ``tokens`` (repeated sequences, half = ``tokens.shape[1] // 2``)."""
    half = tokens.shape[1] // 2
    logits, weights = model(tokens, ablate=ablate)
    losses = per_token_loss(logits, tokens)  # (batch, seq - 1): column t predicts token t + 1
    first, repeat = losses[:, : half - 1].mean().item(), losses[:, half:].mean().item()
    return {
        "per_position": losses.mean(dim=0),
        "first": first,  # predicting tokens 1 .. half − 1: fresh random draws
        "repeat": repeat,  # predicting tokens half + 1 .. 2·half − 1: copies of earlier tokens
        "drop": math.log(model.vocab_size) - repeat,  # below the best loss without looking back, ln(vocab)
        "previous": [previous_token_score(w) for w in weights],  # per layer, (num_heads,)
        "prefix": [prefix_matching_score(w, half) for w in weights],
    }


@dataclass
class Run:
    model: AttentionOnlyLM
    steps: list[int] = field(default_factory=list)
    repeat_loss: list[float] = field(default_factory=list)
    induction: list[float] = field(default_factory=list)  # best prefix-matching score in the last layer


def train(
    seed: int,
    n_layers: int = 2,
    num_heads: int = HEADS,
    d_model: int = D_MODEL,
    steps: int = STEPS,
    every: int = EVERY,
    on_eval: Callable[[int, float, float], None] | None = None,
) -> Run:
    """Adam at ``LR`` on batches of ``BATCH`` repeated sequences (half drawn from 4..MAX_HALF per batch); the loss is
    the mean next-token loss over the repeated half. Every ``every`` steps, the held-out repeated-half loss and the
    best last-layer prefix-matching score are recorded (and passed to ``on_eval(step, loss, score)``)."""
    generator = set_seed(seed)
    model = make_model(seed, n_layers, num_heads, d_model)
    optimiser = torch.optim.Adam(model.parameters(), lr=LR)
    batches = repeated_batches(BATCH, VOCAB_SIZE, generator, 4, MAX_HALF)
    evaluation = held_out()
    run = Run(model)
    for step in range(steps + 1):
        if step % every == 0:
            result = measure(model, evaluation)
            score = result["prefix"][-1].max().item()
            run.steps.append(step)
            run.repeat_loss.append(result["repeat"])
            run.induction.append(score)
            if on_eval is not None:
                on_eval(step, result["repeat"], score)
        if step == steps:
            break
        tokens = next(batches)
        logits, _ = model(tokens)
        loss = per_token_loss(logits, tokens)[:, tokens.shape[1] // 2 :].mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    model.eval()
    return run


def halfway_step(steps: list[int], values: list[float], falling: bool) -> int:
    """The first step where ``values`` crosses halfway between their first and their last value."""
    middle = (values[0] + values[-1]) / 2
    for step, value in zip(steps, values):
        if (value < middle) if falling else (value > middle):
            return step
    return steps[-1]


def phase_change(run: Run) -> tuple[int, int]:
    """(step where the repeated-half loss falls past halfway, step where the induction score rises past halfway)."""
    return halfway_step(run.steps, run.repeat_loss, True), halfway_step(run.steps, run.induction, False)
