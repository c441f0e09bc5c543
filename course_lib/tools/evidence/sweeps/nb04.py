"""Notebook 04's sweep: who did the chasing, without positions and with sinusoidal or learned ones."""

from __future__ import annotations

import torch

from course_lib.lab.models import TransformerClassifier
from course_lib.lab.tasks import chasing
from course_lib.lab.training import evaluate_accuracy

from .common import Table, count, lesson_code, progress, span, train_quietly

VARIANTS = ("none", "sinusoidal", "learned")


LESSON = lesson_code("04", "size", "make_model")  # the notebook's classifier


def make_model(positions: str, seed: int) -> TransformerClassifier:
    """Notebook 04's classifier (its ``make_model``, at ``seed``): one pre-LN block, d_model 32, 2 heads, read out at
    [CLS]."""
    LESSON.SEED = seed
    return LESSON.make_model(positions)


def positions(seeds, *, steps: int = 300) -> Table:
    """Sections 2 and 5: test accuracy of the three variants, and how much the learned position vectors grow."""
    test_batch = chasing.chasing_batch(2000, torch.Generator().manual_seed(1234))
    all_tokens, all_targets = chasing.all_sentences()
    table = Table(
        f"'Who did the chasing?', {steps} steps of Adam (lr 3e-3, batch 64)",
        ["seed", "no positions", "on all 224", "sinusoidal", "learned", "learned: position length start → end"],
    )
    scores: dict[str, list[float]] = {name: [] for name in VARIANTS}
    ceiling, growth_factors = [], []
    for seed in seeds:
        row = {}
        for name in VARIANTS:
            model = make_model(name, seed)
            start = model.positions.embedding.weight.norm(dim=-1).mean().item() if name == "learned" else None
            train_quietly(model, chasing.chasing_batches(), steps, lr=3e-3, batch_size=64, seed=seed)
            row[name] = evaluate_accuracy(model, test_batch)
            scores[name].append(row[name])
            if name == "none":
                with torch.no_grad():
                    on_all = (model(all_tokens).argmax(dim=-1) == all_targets).float().mean().item()
                ceiling.append(on_all)
            if name == "learned":
                end = model.positions.embedding.weight.norm(dim=-1).mean().item()
                growth_factors.append(end / start)
                growth = f"{start:.2f} → {end:.2f}"
        table.add(seed, row["none"], on_all, row["sinusoidal"], row["learned"], growth)
        progress(
            f"seed {seed}: none {row['none']:.3f}, sinusoidal {row['sinusoidal']:.3f}, learned {row['learned']:.3f}"
        )
    table.notes += [
        f"no positions: {span(scores['none'])} on the 2,000 test sentences (asserted ≤ 0.56), "
        f"{span(ceiling)} on all 224 (never above 0.5: {count([c <= 0.5 for c in ceiling])})",
        f"sinusoidal: {span(scores['sinusoidal'])}; learned: {span(scores['learned'])} (both asserted ≥ 0.98)",
        f"the learned position vectors grew to {span(growth_factors, 1)} times their starting length "
        f"(asserted > 2: {count([g > 2 for g in growth_factors])})",
    ]
    return table
