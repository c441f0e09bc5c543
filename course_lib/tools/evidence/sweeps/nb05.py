"""Notebook 05's sweeps: token collapse without skips, deep training, LayerNorm at a high learning rate."""

from __future__ import annotations

import math

import torch

from course_lib import TransformerEncoderBlock
from course_lib.lab.tasks.recall import NUM_VALUES, key_value_recall
from course_lib.lab.training import evaluate_accuracy

from .common import Table, count, lesson_code, progress, span, train_quietly

LESSON = lesson_code(
    "05", "spread", "AblatedBlock", "AttentionLayer", "NUM_ITEMS", "WIRINGS", "make_batch", "make_model",
    "qkv_gradient_norms", "scale_weights", "steps_to_reach",
)  # fmt: skip
spread, AblatedBlock, AttentionLayer = LESSON.spread, LESSON.AblatedBlock, LESSON.AttentionLayer
NUM_ITEMS, make_batch = LESSON.NUM_ITEMS, LESSON.make_batch
scale_weights, steps_to_reach, WIRINGS = LESSON.scale_weights, LESSON.steps_to_reach, LESSON.WIRINGS


def make_model(seed: int, **wiring):
    """Notebook 05's 6-block classifier (its ``make_model``, at ``seed``); every wiring draws the same weights."""
    LESSON.SEED = seed
    return LESSON.make_model(**wiring)


def held_out():
    return key_value_recall(2000, NUM_ITEMS, torch.Generator().manual_seed(2024))


def collapse_profile(seed: int, seq_len: int = 32, d_model: int = 64, num_heads: int = 4, depth: int = 24) -> dict:
    """r after every layer for the notebook's four stacks of freshly initialised layers."""
    torch.manual_seed(seed)
    x = torch.randn(1, seq_len, d_model)
    stacks = {
        "attention only": lambda: AttentionLayer(d_model, num_heads, residual=False),
        "attention + MLP, no skip": lambda: AblatedBlock(
            TransformerEncoderBlock(d_model, num_heads, 4 * d_model), residual=False, layer_norm=False
        ),
        "attention + skip": lambda: AttentionLayer(d_model, num_heads, residual=True),
        "skip + MLP + pre-LN": lambda: TransformerEncoderBlock(d_model, num_heads, 4 * d_model, norm_first=True),
    }
    spreads = {}
    with torch.no_grad():
        for name, make_layer in stacks.items():
            h, values = x, [spread(x)]
            for _ in range(depth):
                h = make_layer()(h)
                values.append(spread(h))
            spreads[name] = values
    return spreads


def token_collapse(seeds, *, depth: int = 24) -> Table:
    """Section 1.2: r after layers 1, 2, 3 and 24 for each stack, at initialisation."""
    table = Table(
        f"r = spread of 32 tokens around their mean after each of {depth} fresh layers (1 = apart, 0 = collapsed)",
        ["seed", "stack", "layer 1", "layer 2", "layer 3", f"layer {depth}"],
    )
    no_skip_3, skip_end = [], []
    for seed in seeds:
        for name, values in collapse_profile(seed, depth=depth).items():
            table.add(seed, name, *[f"{values[k]:.1e}" for k in (1, 2, 3, depth)])
            if name in ("attention only", "attention + MLP, no skip"):
                no_skip_3.append(values[3])
            else:
                skip_end.append(values[depth])
        progress(f"seed {seed} done")
    table.notes.append(
        f"without a skip, r after layer 3: {min(no_skip_3):.1e}–{max(no_skip_3):.1e} (asserted < 1e-3); "
        f"with a skip, r after layer {depth}: {span(skip_end, 2)} (asserted > 0.3)"
    )
    return table


def qkv_gradient_ratio(model) -> float:
    """Block 0's gradient norm of W_Q, W_K, W_V over block 5's, after one batch at initialisation (as in 1.3)."""
    norms = LESSON.qkv_gradient_norms(model, key_value_recall(64, NUM_ITEMS, torch.Generator().manual_seed(1)))
    return norms[0] / norms[-1]


def deep_training(seeds, *, steps: int = 150, lr: float = 3e-3) -> Table:
    """Sections 1.3 and 1.4: gradient reaching block 0 at initialisation, and test accuracy after training."""
    test = held_out()
    names = ["no skip, no LN", "skip, no LN", "skip + pre-LN"]
    table = Table(
        f"6 blocks, recall with N = {NUM_ITEMS}, {steps} steps at lr {lr:g}",
        ["seed", "wiring", "block 0 / block 5 gradient at init", "test accuracy"],
    )
    results: dict[str, list] = {name: [] for name in names}
    ratios: dict[str, list] = {name: [] for name in names}
    for seed in seeds:
        for name in names:
            ratio = qkv_gradient_ratio(make_model(seed, **WIRINGS[name]))
            accuracy = None
            if name != "skip, no LN":
                model = make_model(seed, **WIRINGS[name])
                train_quietly(model, make_batch, steps, lr=lr, seed=seed)
                accuracy = evaluate_accuracy(model, test)
                results[name].append(accuracy)
            ratios[name].append(ratio)
            table.add(seed, name, f"{ratio:.1e}", accuracy)
        progress(
            f"seed {seed}: no skip {results['no skip, no LN'][-1]:.3f}, skip + pre-LN {results['skip + pre-LN'][-1]:.3f}"
        )
    table.notes += [
        f"gradient ratio without skips: {min(ratios['no skip, no LN']):.1e}–{max(ratios['no skip, no LN']):.1e} "
        f"(asserted < 1e-4); with skips: {span(ratios['skip, no LN'], 2)} (asserted > 0.1)",
        f"accuracy without skips {span(results['no skip, no LN'])} (asserted ≤ 0.2); "
        f"skip + pre-LN {span(results['skip + pre-LN'])} (asserted ≥ 0.98)",
    ]
    return table


HIGH_LR_RUNS = (
    ("skip, no LN", 0),
    ("skip, no LN", None),  # with the warm-up
    ("skip + post-LN", 0),
    ("skip + post-LN", None),
    ("skip + pre-LN", 0),
)


def high_learning_rate(seeds, *, steps: int = 200, lr: float = 1e-2, warmup: int = 50, blow_up: float = 10.0) -> Table:
    """Section 4: the three placements of LayerNorm at a high learning rate, with and without a warm-up.

    Every run takes all ``steps`` (the notebook stops a run once a step's loss passes ``blow_up`` × ln 16); the
    last two columns show whether a run that got there ever came back.
    """
    test = held_out()
    limit = blow_up * math.log(NUM_VALUES)
    table = Table(
        f"6 blocks with skips, lr {lr:g}, {steps} steps, no clipping; warm-up = lr rising linearly over {warmup} steps",
        [
            "seed", "wiring", "warm-up", "test accuracy", "final loss", "non-finite loss", "steps to loss < 0.1",
            f"first step with loss > {limit:.1f}", "lowest loss after it",
        ],
    )  # fmt: skip
    results: dict[tuple, list[float]] = {}
    blown: dict[tuple, list[float]] = {}
    for seed in seeds:
        for name, run_warmup in HIGH_LR_RUNS:
            steps_up = warmup if run_warmup is None else run_warmup
            model = make_model(seed, **WIRINGS[name])
            history = train_quietly(model, make_batch, steps, lr=lr, seed=seed, warmup=steps_up)
            accuracy = evaluate_accuracy(model, test) if not history["diverged"] else None
            losses = history["loss"]
            reached = steps_to_reach(losses)
            first = next((step for step, loss in enumerate(losses, 1) if loss > limit), None)
            lowest_after = min(losses[first - 1 :]) if first is not None else None
            table.add(
                seed, name, steps_up or "none", accuracy, f"{losses[-1]:.3g}", history["diverged"], reached or "never",
                first or "never", f"{lowest_after:.3g}" if lowest_after is not None else "–",
            )  # fmt: skip
            results.setdefault((name, steps_up), []).append(accuracy if accuracy is not None else 0.0)
            if lowest_after is not None:
                blown.setdefault((name, steps_up), []).append(lowest_after)
        progress(f"seed {seed} done")
    for (name, steps_up), values in results.items():
        label = f"{name}, warm-up {steps_up}" if steps_up else f"{name}, no warm-up"
        note = f"{label}: accuracy {span(values)}; ≥ 0.98 in {count([v >= 0.98 for v in values])} seeds"
        if (name, steps_up) in blown:
            lows = blown[name, steps_up]
            note += (
                f"; loss passed {limit:.1f} in {len(lows)} of {len(values)} seeds, and afterwards never fell below "
                f"{min(lows):.3g}"
            )
        table.notes.append(note)
    return table


def convergence_speed(seeds, *, steps: int = 300, lrs: tuple = (1e-3, 3e-3, 1e-2)) -> Table:
    """Section 4: steps until the running loss drops below 0.1, per wiring and learning rate."""
    names = ["skip, no LN", "skip + post-LN", "skip + pre-LN"]
    table = Table(
        f"Steps until the 10-step running loss < 0.1 (6 blocks with skips, at most {steps} steps)",
        ["seed", "learning rate"] + names,
    )
    reached: dict[tuple, list] = {}
    for lr in lrs:
        for seed in seeds:
            row = []
            for name in names:
                history = train_quietly(make_model(seed, **WIRINGS[name]), make_batch, steps, lr=lr, seed=seed)
                step = steps_to_reach(history["loss"])
                row.append(step if step is not None else "never")
                reached.setdefault((lr, name), []).append(step)
            table.add(seed, f"{lr:g}", *row)
            progress(f"lr {lr:g}, seed {seed}: {row}")
    for lr in lrs:
        parts = []
        for name in names:
            values = [v for v in reached[lr, name] if v is not None]
            parts.append(
                f"{name} "
                + (f"{min(values)}–{max(values)}" if values else "never")
                + (
                    ""
                    if len(values) == len(reached[lr, name])
                    else f" ({len(values)} of {len(reached[lr, name])} reached)"
                )
            )
        table.notes.append(f"lr {lr:g}: " + "; ".join(parts))
    return table


def init_scale(seeds, *, gains: tuple = (0.3, 1.0, 3.0), steps: int = 150, lr: float = 3e-3) -> Table:
    """The outline's 'less sensitive to initialisation': start every weight matrix `gain` times its usual size."""
    test = held_out()
    names = ["skip, no LN", "skip + pre-LN", "skip + post-LN"]
    table = Table(
        f"6 blocks with skips, every weight matrix × gain at the start, {steps} steps at lr {lr:g}",
        ["seed", "gain"] + [f"{name}" for name in names] + [f"{name}: logit std at init" for name in names[:2]],
    )
    results: dict[tuple, list[float]] = {}
    probe = key_value_recall(500, NUM_ITEMS, torch.Generator().manual_seed(1))[0]
    for gain in gains:
        for seed in seeds:
            row, stds = [], []
            for name in names:
                model = scale_weights(make_model(seed, **WIRINGS[name]), gain)
                if name != "skip + post-LN":
                    with torch.no_grad():
                        stds.append(f"{model(probe).std().item():.2g}")
                history = train_quietly(model, make_batch, steps, lr=lr, seed=seed)
                accuracy = evaluate_accuracy(model, test) if not history["diverged"] else 0.0
                row.append(accuracy)
                results.setdefault((gain, name), []).append(accuracy)
            table.add(seed, gain, *row, *stds)
            progress(f"gain {gain}, seed {seed}: " + ", ".join(f"{a:.3f}" for a in row))
    for gain in gains:
        table.notes.append(f"gain {gain:g}: " + "; ".join(f"{name} {span(results[gain, name])}" for name in names))
    return table
