"""Notebook 02's sweeps: why scores are divided by √d_k, at initialisation and in training."""

from __future__ import annotations

import math

import torch

from course_lib import softmax
from course_lib.lab.tasks.recall import key_value_recall
from course_lib.lab.training import evaluate_accuracy

from .common import Table, count, lesson_code, progress, span, train_quietly

OneHeadRecall = lesson_code("02", "OneHeadRecall").OneHeadRecall  # the notebook's model


def sqrt_dk_training(seeds, *, d_models: tuple = (256, 64), steps: int = 200, num_items: int = 16) -> Table:
    """Section 3: one head with and without the √d_k, trained on recall; both start from the same weights."""
    test_batch = key_value_recall(2000, num_items, torch.Generator().manual_seed(1234))
    make_batch = lambda batch_size, generator: key_value_recall(batch_size, num_items, generator)  # noqa: E731
    table = Table(
        f"One head on recall with N = {num_items}, {steps} steps of Adam (lr 1e-3, batch 32)",
        [
            "seed",
            "d_k",
            "scaled: start max weight",
            "unscaled: start max weight",
            "scaled accuracy",
            "unscaled accuracy",
        ],
    )
    results: dict[int, dict[str, list[float]]] = {d: {"scaled": [], "unscaled": []} for d in d_models}
    for d_model in d_models:
        for seed in seeds:
            row = {}
            for name in ("scaled", "unscaled"):
                torch.manual_seed(seed)  # the same starting weights for both; only the scaling differs
                model = OneHeadRecall(d_model=d_model, scaled=(name == "scaled"))
                with torch.no_grad():
                    model(test_batch[0][:500])
                    start = model.weights.amax(dim=-1).mean().item()
                train_quietly(model, make_batch, steps, lr=1e-3, batch_size=32, seed=seed)
                row[name] = (start, evaluate_accuracy(model, test_batch))
                results[d_model][name].append(row[name][1])
            table.add(seed, d_model, row["scaled"][0], row["unscaled"][0], row["scaled"][1], row["unscaled"][1])
            progress(f"d_k {d_model}, seed {seed}: scaled {row['scaled'][1]:.3f}, unscaled {row['unscaled'][1]:.3f}")
    for d_model in d_models:
        scaled, unscaled = results[d_model]["scaled"], results[d_model]["unscaled"]
        table.notes.append(
            f"d_k = {d_model}: scaled {span(scaled)} (≥ 0.95 in {count([a >= 0.95 for a in scaled])} seeds), "
            f"unscaled {span(unscaled)} (≤ 0.5 in {count([a <= 0.5 for a in unscaled])} seeds)"
        )
    return table


def saturation(d_ks=(4, 16, 64, 256, 1024), num_queries: int = 1000, num_keys: int = 32) -> dict:
    """Notebook 02's measurement, for the current random state: per d_k and scaling, the share of saturated rows,
    the median ‖J‖_F of the softmax, and the gradient that reaches each query, ‖∂L/∂q‖ (mean and median over rows).

    The loss is L = Σ_rows p · u with a random u per row: a stand-in for whatever the layers above send back.
    """
    keys = ("saturated", "jacobian", "query_mean", "query_median")
    out = {name: {key: [] for key in keys} for name in ("unscaled", "scaled")}
    for d_k in d_ks:
        q = torch.randn(num_queries, d_k, dtype=torch.float64)
        k = torch.randn(num_keys, d_k, dtype=torch.float64)
        u = torch.randn(num_queries, num_keys, dtype=torch.float64)
        for name, divisor in (("unscaled", 1.0), ("scaled", math.sqrt(d_k))):
            queries = q.clone().requires_grad_(True)
            p = softmax(queries @ k.T / divisor)
            J = torch.diag_embed(p) - p[:, :, None] * p[:, None, :]
            (grad,) = torch.autograd.grad((p * u).sum(), queries)
            per_row = grad.norm(dim=-1)  # (num_queries,): ‖∂L/∂q‖ for each query
            out[name]["saturated"].append((p.amax(dim=-1) > 0.99).double().mean().item())
            out[name]["jacobian"].append(torch.linalg.matrix_norm(J.detach()).median().item())
            out[name]["query_mean"].append(per_row.mean().item())
            out[name]["query_median"].append(per_row.median().item())
    return out


def softmax_saturation(seeds, *, d_ks: tuple = (4, 16, 64, 256, 1024)) -> Table:
    """Section 3: saturation, the softmax's gradient and the query gradient, for fresh random q and k per seed."""
    table = Table(
        "Unscaled scores q·k: saturated rows, median ‖∂p/∂s‖, gradient reaching the queries ‖∂L/∂q‖",
        [
            "seed",
            "d_k",
            "saturated",
            "median ‖J‖",
            "mean ‖∂L/∂q‖",
            "median ‖∂L/∂q‖",
            "scaled: median ‖J‖",
            "scaled: mean ‖∂L/∂q‖",
        ],
    )
    for seed in seeds:
        torch.manual_seed(seed)
        result = saturation(d_ks)
        u, s = result["unscaled"], result["scaled"]
        for i, d_k in enumerate(d_ks):
            table.add(
                seed,
                d_k,
                u["saturated"][i],
                f"{u['jacobian'][i]:.1e}",
                f"{u['query_mean'][i]:.2f}",
                f"{u['query_median'][i]:.1e}",
                f"{s['jacobian'][i]:.2f}",
                f"{s['query_mean'][i]:.2f}",
            )
        progress(f"seed {seed}: saturated at d_k={d_ks[-1]}: {u['saturated'][-1]:.3f}")
    table.notes.append(
        "Unscaled, the share of saturated rows grows and the median ‖J‖ collapses with d_k. The gradient reaching the "
        "queries, averaged over all rows, does not shrink (the few rows that stay unsaturated get larger gradients), "
        "but for the typical (median) row it collapses too. Scaled, nothing depends on d_k."
    )
    return table
