"""A short, seeded training loop for the notebooks' small experiments, with visible progress.

A task is a function ``make_batch(batch_size, generator)`` returning ``(tokens, targets)`` or
``(tokens, targets, mask)``; each call draws a fresh batch from the seeded ``generator``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import torch
from torch import nn

from ._validate import CourseInputError

Batch = tuple
MakeBatch = Callable[[int, torch.Generator], Batch]


def _batch_mask(batch: Batch) -> torch.Tensor | None:
    """The optional third item of a batch: a boolean attention mask, or None."""
    if len(batch) < 3 or batch[2] is None:
        return None
    mask = batch[2]
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        what = (
            f"a {mask.dtype} tensor of shape {tuple(mask.shape)}"
            if isinstance(mask, torch.Tensor)
            else type(mask).__name__
        )
        raise CourseInputError(
            f"a batch must be (tokens, targets) or (tokens, targets, mask, ...) with a boolean mask, but its third "
            f"item is {what}. If it came from a task called with return_positions=True, "
            f"pass only the first two items: batch[:2]."
        )
    return mask


def _forward(model: nn.Module, batch: Batch, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    tokens, targets = batch[0].to(device), batch[1].to(device)
    mask = _batch_mask(batch)
    mask = mask.to(device) if mask is not None else None
    logits = model(tokens, mask) if mask is not None else model(tokens)
    return logits, targets


def train_classifier(
    model: nn.Module,
    make_batch: MakeBatch,
    steps: int,
    lr: float = 3e-3,
    batch_size: int = 64,
    clip: float | None = None,
    seed: int = 0,
    log_every: int | None = None,
    name: str = "model",
    device: torch.device | str | None = None,
    warmup: int = 0,
    callback: Callable[[int, nn.Module], None] | None = None,
) -> dict:
    """Train ``model`` with Adam and cross-entropy on fresh batches; print progress; return the history.

    Returns ``{"loss": [...], "seconds": float, "diverged": bool}``: ``loss`` holds the loss of every step. The
    progress lines print the *mean* loss of the last ``log_every`` steps. Training stops early (and sets
    ``diverged``) if the loss becomes NaN or infinite, which is itself a result worth showing.

    ``warmup``: raise the learning rate linearly from ``lr / warmup`` to ``lr`` over the first ``warmup`` steps
    (0: the full rate from the first step). ``callback(step, model)`` runs after every step, e.g. to evaluate the
    model part of the way through; the model is put back in training mode after it.
    """
    device = torch.device(device) if device is not None else next(model.parameters()).device
    model.to(device).train()
    generator = torch.Generator().manual_seed(seed)
    # foreach: update all parameters in a few batched calls instead of one Python loop per tensor (same numbers)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, foreach=True)
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise CourseInputError(f"warmup must be a whole number of steps ≥ 0, got {warmup!r}")
    log_every = log_every or max(1, steps // 4)
    losses: list[float] = []
    diverged = False
    start = time.perf_counter()
    for step in range(1, steps + 1):
        if warmup:
            for group in optimizer.param_groups:
                group["lr"] = lr * min(1.0, step / warmup)
        logits, targets = _forward(model, make_batch(batch_size, generator), device)
        loss = nn.functional.cross_entropy(logits, targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if clip is not None:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        losses.append(loss.item())
        if not math.isfinite(losses[-1]):
            diverged = True
            print(f"{name}: step {step}/{steps}  loss {losses[-1]} — training diverged, stopping")
            break
        if step % log_every == 0 or step == steps:
            window = losses[-log_every:]
            first = step - len(window) + 1
            print(f"{name}: step {step:>5}/{steps}  mean loss of steps {first}–{step}: {sum(window) / len(window):.3f}")
        if callback is not None:
            callback(step, model)
            model.train()
    model.eval()
    return {"loss": losses, "seconds": time.perf_counter() - start, "diverged": diverged}


@torch.no_grad()
def evaluate_accuracy(model: nn.Module, batch: Batch, chunk: int = 500) -> float:
    """Share of sequences in ``batch`` whose predicted class equals the target (model in eval mode)."""
    model.eval()
    device = next(model.parameters()).device
    tokens, targets = batch[0], batch[1]
    mask = _batch_mask(batch)
    correct = 0
    for i in range(0, len(targets), chunk):
        part = (tokens[i : i + chunk], targets[i : i + chunk]) + (
            () if mask is None else (mask[i : i + chunk] if mask.dim() > 2 else mask,)
        )
        logits, part_targets = _forward(model, part, device)
        correct += (logits.argmax(dim=-1) == part_targets).sum().item()
    return correct / len(targets)
