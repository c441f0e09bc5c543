"""Figures the notebooks share: attention heatmaps and curves with labelled axes and a message in the title."""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import torch

from ._validate import CourseInputError


def attention_heatmap(
    weights,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str] | None = None,
    title: str = "Attention weights",
    ax=None,
    annotate: bool | None = None,
    cmap: str = "viridis",
):
    """Draw ``weights`` ``(seq_q, seq_k)`` with the query tokens down the side and the key tokens along the top.

    Each row is one query's distribution over the keys (it sums to 1). Values are written into the
    cells when the matrix is small enough to read. Returns the matplotlib ``Axes``.
    """
    key_tokens = list(query_tokens if key_tokens is None else key_tokens)
    weights = torch.as_tensor(weights).detach().cpu().float()
    if weights.dim() != 2 or weights.shape != (len(query_tokens), len(key_tokens)):
        raise CourseInputError(
            f"weights must be (seq_q, seq_k) = ({len(query_tokens)}, {len(key_tokens)}), got {tuple(weights.shape)}"
        )
    if ax is None:
        size = max(3.0, 0.45 * len(key_tokens) + 1.5)
        _, ax = plt.subplots(figsize=(size, max(2.5, 0.45 * len(query_tokens) + 1.0)))
    image = ax.imshow(weights.numpy(), cmap=cmap, vmin=0.0, vmax=1.0)
    ax.set_xticks(range(len(key_tokens)), key_tokens, rotation=45, ha="right")
    ax.set_yticks(range(len(query_tokens)), query_tokens)
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query (attending)")
    ax.set_title(title)
    if annotate is None:
        annotate = weights.numel() <= 100
    if annotate:
        for i in range(weights.shape[0]):
            for j in range(weights.shape[1]):
                value = weights[i, j].item()
                ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=8, color="white" if value < 0.6 else "black")
    plt.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="weight")
    return ax


def line_plot(
    x,
    curves: dict,
    xlabel: str,
    ylabel: str,
    title: str,
    logy: bool = False,
    ax=None,
    markers: bool = True,
    reference: tuple[float, str] | None = None,
):
    """Plot several named curves over the same ``x``; ``reference=(y, label)`` adds a dashed line (e.g. chance)."""
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.8))
    for label, y in curves.items():
        ax.plot(list(x), [float(v) for v in y], marker="o" if markers else None, label=label)
    if reference is not None:
        ax.axhline(reference[0], color="grey", linestyle="--", linewidth=1, label=reference[1])
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend()
    return ax
