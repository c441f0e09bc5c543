"""Notebook 06's sweeps: the first-token task at fixed budgets, an LSTM with a curriculum, and wiring mistakes."""

from __future__ import annotations

import torch
from torch import nn

from course_lib.lab.tasks.first_token import first_token, first_token_batches
from course_lib.lab.training import evaluate_accuracy

from .common import Table, count, lesson_code, progress, span, train_quietly

LESSON = lesson_code("06", "LENGTHS", "make_transformer", "make_lstm", "lstm_gradient_ratio")  # the notebook's
make_transformer, make_lstm, lstm_gradient_ratio = LESSON.make_transformer, LESSON.make_lstm, LESSON.lstm_gradient_ratio
LENGTHS = tuple(LESSON.LENGTHS)


def held_out(L: int):
    return first_token(2000, L, torch.Generator().manual_seed(10_000 + L))


def first_token_lengths(
    seeds, *, lengths: tuple = LENGTHS, transformer_steps: int = 50, lstm_steps: int = 300
) -> Table:
    """Section 2.3: a fresh Transformer and LSTM per length; run seed 1000·seed + L (the notebook is seed 0)."""
    table = Table(
        f"'What was the first token?': Transformer {transformer_steps} steps, LSTM {lstm_steps} steps (lr 3e-3, batch 64)",
        ["seed", "L", "Transformer", "LSTM", "LSTM gradient x_0 / x_L at init", "after training"],
    )
    results: dict[tuple, list[float]] = {}
    for seed in seeds:
        for L in lengths:
            run_seed = 1000 * seed + L
            test = first_token(2000, L, torch.Generator().manual_seed(10_000 + L))
            torch.manual_seed(run_seed)
            transformer, lstm = make_transformer(), make_lstm()
            before = lstm_gradient_ratio(lstm, L)
            train_quietly(transformer, first_token_batches([L]), transformer_steps, lr=3e-3, seed=run_seed)
            train_quietly(lstm, first_token_batches([L]), lstm_steps, lr=3e-3, seed=run_seed)
            after = lstm_gradient_ratio(lstm, L)
            t, r = evaluate_accuracy(transformer, test), evaluate_accuracy(lstm, test)
            results.setdefault(("Transformer", L), []).append(t)
            results.setdefault(("LSTM", L), []).append(r)
            table.add(seed, L, t, r, f"{before:.1e}", f"{after:.1e}")
            progress(
                f"seed {seed}, L={L}: Transformer {t:.3f}, LSTM {r:.3f}, gradient ratio {before:.1e} → {after:.1e}"
            )
    for L in lengths:
        lstm_values = results["LSTM", L]
        table.notes.append(
            f"L = {L}: Transformer {span(results['Transformer', L])}; LSTM {span(lstm_values)} "
            f"(≥ 0.9 in {count([v >= 0.9 for v in lstm_values])}, ≤ 0.2 in {count([v <= 0.2 for v in lstm_values])})"
        )
    return table


def lstm_curriculum(
    seeds, *, steps: int = 1000, train_lengths: tuple = (10, 20, 50, 100), test_lengths: tuple = (5, 10, 20, 50, 100)
) -> Table:
    """Section 2.3's caveat: one LSTM trained on a mix of lengths, tested at each length."""
    table = Table(
        f"One LSTM trained {steps} steps on lengths {list(train_lengths)} (a curriculum), accuracy per length",
        ["seed"] + [f"L={L}" for L in test_lengths],
    )
    lowest = []
    for seed in seeds:
        torch.manual_seed(seed)
        lstm = make_lstm()
        train_quietly(lstm, first_token_batches(list(train_lengths)), steps, lr=3e-3, seed=seed)
        accuracy = [
            evaluate_accuracy(lstm, first_token(2000, L, torch.Generator().manual_seed(10_000 + L)))
            for L in test_lengths
        ]
        table.add(seed, *accuracy)
        lowest.append(min(accuracy))
        progress(f"seed {seed}: " + " ".join(f"{a:.3f}" for a in accuracy))
    table.notes.append(f"the lowest accuracy over the lengths, per seed: {span(lowest)} (chance 0.125)")
    return table


def _block(layer: nn.TransformerEncoderLayer, x: torch.Tensor, norm_first: bool, mistake: str | None) -> torch.Tensor:
    """The encoder block computed from ``layer``'s weights, with one deliberate wiring mistake (or none)."""
    attend = lambda h: layer.self_attn(h, h, h, need_weights=False)[0]  # noqa: E731
    relu = (lambda h: h) if mistake == "no ReLU in the FFN" else torch.relu
    ffn = lambda h: layer.linear2(relu(layer.linear1(h)))  # noqa: E731
    norm_2 = layer.norm1 if mistake == "one LayerNorm used twice" else layer.norm2
    skip_1 = 0.0 if mistake == "no skip around attention" else 1.0
    skip_2 = 0.0 if mistake == "no skip around the FFN" else 1.0
    first, second = (ffn, attend) if mistake == "FFN before attention" else (attend, ffn)
    if norm_first:
        if mistake == "LayerNorm after the addition":
            x = layer.norm1(skip_1 * x + first(x))
            return norm_2(skip_2 * x + second(x))
        x = skip_1 * x + first(layer.norm1(x))
        return skip_2 * x + second(norm_2(x))
    if mistake == "LayerNorm before the addition":
        x = skip_1 * x + layer.norm1(first(x))
        return skip_2 * x + norm_2(second(x))
    x = layer.norm1(skip_1 * x + first(x))
    return norm_2(skip_2 * x + second(x))


MISTAKES = (
    None,
    "FFN before attention",
    "no skip around attention",
    "no skip around the FFN",
    "LayerNorm before the addition",
    "LayerNorm after the addition",
    "one LayerNorm used twice",
    "no ReLU in the FFN",
)


@torch.no_grad()
def block_mutations(seeds, *, d_model: int = 512, num_heads: int = 8, d_ff: int = 2048) -> Table:
    """Section 1.1: how far a block with one wiring mistake lands from nn.TransformerEncoderLayer (same weights)."""
    table = Table(
        f"Max |block(x) − nn.TransformerEncoderLayer(x)| with the same weights (d_model {d_model}, biases, γ, β nudged)",
        ["seed", "mistake", "post-LN", "pre-LN"],
    )
    wrong, right = [], []
    for seed in seeds:
        torch.manual_seed(seed)
        x = torch.randn(2, 10, d_model)
        layers = {}
        for norm_first in (False, True):
            layer = nn.TransformerEncoderLayer(
                d_model, num_heads, d_ff, dropout=0.0, batch_first=True, norm_first=norm_first
            ).eval()
            for parameter in layer.parameters():
                if parameter.dim() == 1:
                    parameter.add_(0.1 * torch.randn_like(parameter))
            layers[norm_first] = layer
        for mistake in MISTAKES:
            diffs = []
            for norm_first, layer in layers.items():
                if (mistake == "LayerNorm after the addition" and not norm_first) or (
                    mistake == "LayerNorm before the addition" and norm_first
                ):
                    diffs.append(None)
                    continue
                diffs.append((_block(layer, x, norm_first, mistake) - layer(x)).abs().max().item())
            table.add(
                seed, mistake or "none (the right wiring)", *[f"{d:.1e}" if d is not None else None for d in diffs]
            )
            (wrong if mistake else right).extend(d for d in diffs if d is not None)
        progress(f"seed {seed} done")
    table.notes.append(
        f"with a mistake the outputs differ by {min(wrong):.2g}–{max(wrong):.2g}; without, by float32 rounding"
    )
    return table
