"""A short, seeded training loop for the notebooks' small experiments, with visible progress.

A task is a function ``make_batch(batch_size, generator)`` returning ``(tokens, targets)`` or
``(tokens, targets, mask)``; each call draws a fresh batch from the seeded ``generator``.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from collections.abc import Callable, Hashable
from contextlib import contextmanager

import torch
from torch import nn

from .._validate import CourseInputError
from ..blocks import LayerNorm
from ..multihead import MultiHeadAttention

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


SOLVED_WINDOW = 20  # steps whose mean loss decides that a run with stop_below has solved its task


@contextmanager
def fast_path(model: nn.Module):
    """Inside the block, ``model``'s attention and LayerNorms run their fast path (their ``fast`` attribute is True):
    ``attention_fast`` and PyTorch's fused LayerNorm, the same numbers up to rounding, about 1.4× faster to train.
    Each module's setting is restored afterwards. Only this model's modules change: nothing global, so a cell that
    runs another model meanwhile (in another thread) keeps the taught path."""
    modules = [module for module in model.modules() if isinstance(module, (MultiHeadAttention, LayerNorm))]
    before = [module.fast for module in modules]
    for module in modules:
        module.fast = True
    try:
        yield model
    finally:
        for module, fast in zip(modules, before):
            module.fast = fast


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
    stop_above: float | None = None,
    stop_below: float | None = None,
) -> dict:
    """Train ``model`` with Adam and cross-entropy on fresh batches; print progress; return the history.

    Returns ``{"loss": [...], "seconds": float, "diverged": bool}``: ``loss`` holds the loss of every step. The
    progress lines print the *mean* loss of the last ``log_every`` steps. Training stops early (and sets
    ``diverged``) if the loss becomes NaN or infinite, which is itself a result worth showing.

    ``warmup``: raise the learning rate linearly from ``lr / warmup`` to ``lr`` over the first ``warmup`` steps
    (0: the full rate from the first step). ``callback(step, model)`` runs after every step, e.g. to evaluate the
    model part of the way through; the model is put back in training mode after it. ``stop_above``: also stop (and
    set ``diverged``) at the first step whose loss is above this value, for a run that has blown up (notebook 05
    uses ten times the loss of a blind guess; no run of its sweep that got there came back within 200 steps).
    ``stop_below``: stop as soon as the mean loss of the last ``SOLVED_WINDOW`` steps is below this value: the task
    is solved, and more steps would change nothing worth waiting for (notebook 03 counts the steps each model needed).
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
    with _subnormals_flushed(), fast_path(model):  # same numbers, faster (subnormals: see below)
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
            if stop_above is not None and losses[-1] > stop_above:
                diverged = True
                print(
                    f"{name}: step {step}/{steps}  loss {losses[-1]:.3g} > {stop_above:.3g} — training blew up, stopping"
                )
                break
            recent = sum(losses[-SOLVED_WINDOW:]) / SOLVED_WINDOW if len(losses) >= SOLVED_WINDOW else math.inf
            solved = stop_below is not None and recent < stop_below
            if solved:
                print(f"{name}: solved at step {step:>5}/{steps}  mean loss of steps {step - SOLVED_WINDOW + 1}–{step}: "
                      f"{recent:.3g} < {stop_below:g}")  # fmt: skip
            elif step % log_every == 0 or step == steps:
                window = losses[-log_every:]
                first = step - len(window) + 1
                print(
                    f"{name}: step {step:>5}/{steps}  mean loss of steps {first}–{step}: {sum(window) / len(window):.3f}"
                )
            if callback is not None:
                callback(step, model)
                model.train()
            if solved:
                break
    model.eval()
    return {"loss": losses, "seconds": time.perf_counter() - start, "diverged": diverged}


@contextmanager
def _subnormals_flushed():
    """Treat subnormal floats (smaller than float32's 1.2e-38) as 0 in this thread while training runs.

    When a gradient vanishes, Adam's running mean of its square holds such numbers, and x86 CPUs compute with them
    many times slower: notebook 05's 6-block model without skips trained 30% slower. Flushing them changes nothing
    that matters, since Adam adds eps = 1e-8 to their square root. The setting belongs to the calling thread and
    Python starts every thread without it, so it is switched off again afterwards.
    """
    supported = torch.set_flush_denormal(True)
    try:
        yield
    finally:
        if supported:
            torch.set_flush_denormal(False)


@torch.no_grad()
def evaluate_accuracy(model: nn.Module, batch: Batch, chunk: int = 500) -> float:
    """Share of sequences in ``batch`` whose predicted class equals the target (model in eval mode)."""
    model.eval()
    device = next(model.parameters()).device
    tokens, targets = batch[0], batch[1]
    mask = _batch_mask(batch)
    correct = 0
    with fast_path(model):
        for i in range(0, len(targets), chunk):
            part = (tokens[i : i + chunk], targets[i : i + chunk]) + (
                () if mask is None else (mask[i : i + chunk] if mask.dim() > 2 else mask,)
            )
            logits, part_targets = _forward(model, part, device)
            correct += (logits.argmax(dim=-1) == part_targets).sum().item()
    return correct / len(targets)


def available_cores() -> int:
    """How many CPU cores this process may use: the cores it may run on, capped by a container's CPU quota
    (a Binder or JupyterHub server limited to 1 CPU on a 16-core host gets 1)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    for path in ("/sys/fs/cgroup/cpu.max", "/sys/fs/cgroup/cpu/cpu.cfs_quota_us"):  # cgroup v2, then v1
        try:
            with open(path) as file:
                fields = file.read().split()
            if path.endswith("cpu.max"):
                quota, period = fields[0], fields[1] if len(fields) > 1 else "100000"
            else:
                with open("/sys/fs/cgroup/cpu/cpu.cfs_period_us") as file:
                    quota, period = fields[0], file.read().strip()
            if quota not in ("max", "-1"):
                cores = min(cores, max(1, int(int(quota) / int(period))))
            break
        except (OSError, ValueError, IndexError):
            continue
    return max(1, cores)


class _PerThreadOutput:
    """Stands in for ``sys.stdout`` while runs train side by side: each worker thread writes into its own buffer,
    every other thread (the notebook's own) writes through to the real stream."""

    def __init__(self, stream):
        self.stream = stream
        self.buffers: dict[int, list[str]] = {}

    def write(self, text: str) -> int:
        buffer = self.buffers.get(threading.get_ident())
        if buffer is None:
            return self.stream.write(text)
        buffer.append(text)
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def __getattr__(self, name):  # encoding, isatty, ... of the real stream
        return getattr(self.stream, name)


def train_side_by_side(runs: dict[Hashable, dict], workers: int | None = None) -> dict[Hashable, dict]:
    """Train several independent models at the same time, in one Python thread each.

    ``runs``: ``{key: keyword arguments of train_classifier}``, each with its own ``model`` and ``make_batch``.
    Returns ``{key: history}`` in the order of ``runs``. A run without a ``name`` is named by its key.

    Each run does exactly what ``train_classifier(**runs[key])`` does, with its own model, optimiser and seeded
    batch stream, so the histories and trained weights are the same, bit for bit, as training the models one after
    another (``tests/test_training.py`` checks this). It is faster because PyTorch computes outside Python's global
    lock: two runs keep two cores busy. Each run's progress lines are held back and printed together, run by run,
    once all have finished. On a machine with one core (or with ``workers=1``) the runs simply go one after another,
    printing as they go; ``workers=N`` runs at most N at a time.

    Build the models *before* calling this (as ``make_model`` does, with ``torch.manual_seed`` first): the global
    random generator is shared by all threads. A ``make_batch`` that keeps state between calls (``recall_batches``)
    must not be shared by two runs, here or one after another.
    """
    if not isinstance(runs, dict) or not runs:
        raise CourseInputError("runs must be a non-empty dict {key: keyword arguments of train_classifier}")
    for key, arguments in runs.items():
        if not isinstance(arguments, dict) or "model" not in arguments or "make_batch" not in arguments:
            raise CourseInputError(
                f"runs[{key!r}] must be a dict of train_classifier's arguments with at least 'model' and 'make_batch'"
            )
    runs = {key: {"name": str(key), **arguments} for key, arguments in runs.items()}  # progress names the run
    models = [id(arguments["model"]) for arguments in runs.values()]
    if len(set(models)) != len(models):
        raise CourseInputError("two runs share one model: give every run its own (make_model builds a fresh one)")
    if (
        workers is None
    ):  # one thread per run: the system shares the cores out evenly (3 runs on 2 cores: 1.4-1.7x sooner)
        workers = 1 if available_cores() == 1 else min(len(runs), 8)
    elif isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise CourseInputError(f"workers must be a whole number ≥ 1 (or None), got {workers!r}")
    workers = min(workers, len(runs))
    if workers <= 1:
        return {key: train_classifier(**arguments) for key, arguments in runs.items()}

    histories: dict[Hashable, dict] = {}
    errors: dict[Hashable, BaseException] = {}
    output = _PerThreadOutput(sys.stdout)
    lines: dict[Hashable, list[str]] = {key: [] for key in runs}
    queue = list(runs)
    lock, stop = threading.Lock(), threading.Event()

    def stoppable(make_batch: MakeBatch) -> MakeBatch:
        def next_batch(batch_size: int, generator: torch.Generator) -> Batch:
            if stop.is_set():  # the learner interrupted the cell: end this run at its next step
                raise _Interrupted
            return make_batch(batch_size, generator)

        return next_batch

    def worker() -> None:
        while True:
            with lock:
                if not queue or stop.is_set():
                    return
                key = queue.pop(0)
            output.buffers[threading.get_ident()] = lines[key]
            try:
                histories[key] = train_classifier(**{**runs[key], "make_batch": stoppable(runs[key]["make_batch"])})
            except _Interrupted:
                return
            except BaseException as error:  # re-raised in the notebook's own thread below
                errors[key] = error

    previous, sys.stdout = sys.stdout, output
    threads = [threading.Thread(target=worker, daemon=True) for _ in range(workers)]
    # the cores shared out between the runs: a small model's operations gain little from a second core of their own,
    # and runs that each claim every core slow one another down (4 runs of notebook 03 on 2 cores: 1.2x sooner)
    intra_op = torch.get_num_threads()
    torch.set_num_threads(max(1, available_cores() // workers))
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():  # a short wait at a time: the stop button's interrupt is seen whichever thread
                thread.join(0.1)  # the system handed it to (one of the training threads, say), not at the end
    except KeyboardInterrupt:  # Jupyter's stop button: stop every run, keep their progress, then stop the cell
        stop.set()
        for thread in threads:
            thread.join()
        raise
    finally:
        torch.set_num_threads(intra_op)
        sys.stdout = previous
        for key in runs:
            print("".join(lines[key]), end="")
    for key in runs:
        if key in errors:
            raise errors[key]
    return {key: histories[key] for key in runs}


class _Interrupted(Exception):
    """Raised inside a side-by-side run when the learner stops the cell."""
