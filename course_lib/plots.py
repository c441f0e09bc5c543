"""Figures the notebooks share, readable by everyone: colour-blind-safe colours, and alt text from the data.

- ``PALETTE`` (Okabe & Ito's eight colours, less black) is the colour cycle of every figure once this module is
  imported, paired with ``LINESTYLES`` so that lines differ in dash pattern as well as colour. Heatmaps use
  ``SEQUENTIAL`` (viridis) or, for values around zero, ``DIVERGING`` (RdBu_r); both stay readable with every
  common colour-vision deficiency. ``tests/test_accessibility.py`` checks the palette under simulated protanopia,
  deuteranopia and tritanopia, and that the notebooks use nothing else.
- ``describe_figure(fig)`` writes alt text for a figure from what is drawn: its title (the message), then each
  curve's trend with its numbers ("LSTM falls from 0.68 at 4 to 0.17 at 32"), each bar's value, and each
  heatmap's strongest cell per row.
- ``show_figure(fig)`` displays a figure in a notebook with that alt text stored in the output (``metadata["image/png"]
  ["alt"]``, and as the ``text/plain`` fallback); the course website uses it as the image's ``alt``. Call it instead
  of ``plt.show()``. Where the only difference between two labelled lines is their colour, it gives them distinct
  markers (or dash patterns) first, so no reader has to tell them apart by colour alone.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Sequence

import matplotlib as mpl
import matplotlib.pyplot as plt
import torch
from cycler import cycler

from ._validate import CourseInputError

# Okabe & Ito (2008), "Color Universal Design": distinguishable with protanopia, deuteranopia and tritanopia.
PALETTE = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "green": "#009E73",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
    "sky": "#56B4E9",
    "yellow": "#F0E442",
}
COLORS = list(PALETTE.values())
# Light tints of the palette for filled boxes behind black text (diagrams), where colour only decorates.
PALE = {
    name: "#" + "".join(f"{round(int(h[i : i + 2], 16) * 0.4 + 255 * 0.6):02X}" for i in (1, 3, 5))
    for name, h in PALETTE.items()
}
NEUTRAL = ("black", "white", "grey", "gray", "#000000", "#FFFFFF", "#808080", "lightgrey", "dimgrey", "darkgrey")
LINESTYLES = ["-", "--", "-.", ":", (0, (5, 1, 1, 1, 1, 1)), (0, (3, 1, 1, 1)), (0, (8, 2))]
MARKERS = ["o", "s", "^", "D", "v", "P", "X"]
SEQUENTIAL = "viridis"
DIVERGING = "RdBu_r"
# Colour maps that stay ordered and distinguishable with colour-vision deficiencies (perceptually uniform, or
# ColorBrewer's colour-blind-safe diverging maps).
SAFE_COLORMAPS = (
    "viridis",
    "cividis",
    "magma",
    "inferno",
    "plasma",
    "RdBu",
    "RdBu_r",
    "PuOr",
    "PuOr_r",
    "Greys",
    "Blues",
)


def use_course_style() -> None:
    """Make the palette and line styles matplotlib's defaults (done once when this module is imported)."""
    mpl.rcParams["axes.prop_cycle"] = cycler(color=COLORS) + cycler(linestyle=LINESTYLES)
    mpl.rcParams["image.cmap"] = SEQUENTIAL


use_course_style()


def attention_heatmap(
    weights,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str] | None = None,
    title: str = "Attention weights",
    ax=None,
    annotate: bool | None = None,
    cmap: str = SEQUENTIAL,
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
                ax.text(
                    j,
                    i,
                    f"{value:.2f}",
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="white" if value < 0.6 else "black",
                )
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
    """Plot several named curves over the same ``x``; ``reference=(y, label)`` adds a dashed line (e.g. chance).

    Each curve gets the next palette colour and its own dash pattern, and (with ``markers``) its own marker.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.8))
    for number, (label, y) in enumerate(curves.items()):
        ax.plot(
            list(x),
            [float(v) for v in y],
            color=COLORS[number % len(COLORS)],
            linestyle=LINESTYLES[number % len(LINESTYLES)],
            marker=MARKERS[number % len(MARKERS)] if markers else None,
            label=label,
        )
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


# --------------------------------------------------------------------------- alt text from the data


def number(value: float) -> str:
    """A number as a reader says it: 0.68, 1.00, 32, 3.1e-07."""
    value = float(value)
    if not math.isfinite(value):
        return "not a number" if math.isnan(value) else ("infinity" if value > 0 else "minus infinity")
    if value == 0:
        return "0"
    if value == round(value) and abs(value) < 1e6:
        return str(int(round(value)))
    if abs(value) >= 1e4 or abs(value) < 1e-3:
        return f"{value:.1e}"
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def _finite_points(xs, ys) -> list[tuple[float, float]]:
    points = []
    for x, y in zip(xs, ys):
        try:
            x, y = float(x), float(y)
        except (TypeError, ValueError):
            continue
        if math.isfinite(x) and math.isfinite(y):
            points.append((x, y))
    return points


def describe_curve(label: str, xs, ys) -> str:
    """One curve in words: ``"LSTM falls from 0.68 at 4 to 0.17 at 32"``."""
    points = _finite_points(xs, ys)
    if not points:
        return f"{label}: no finite values"
    (x0, y0), (x1, y1) = points[0], points[-1]
    if len(points) == 1:
        return f"{label} is {number(y0)} at {number(x0)}"
    low, high = min(y for _, y in points), max(y for _, y in points)
    scale = max(abs(high), abs(low), 1e-12)
    if high - low <= 0.02 * scale:
        return f"{label} stays at {number(y0)} from {number(x0)} to {number(x1)}"
    ys_only = [y for _, y in points]
    steps = [b - a for a, b in zip(ys_only, ys_only[1:])]
    if all(step <= 0 for step in steps) or all(step >= 0 for step in steps):
        verb = "falls" if y1 < y0 else "rises"
        return f"{label} {verb} from {number(y0)} at {number(x0)} to {number(y1)} at {number(x1)}"
    peak_x, peak = max(points, key=lambda p: p[1])
    trough_x, trough = min(points, key=lambda p: p[1])
    verb = "ends lower" if y1 < y0 else "ends higher"
    return (
        f"{label} goes from {number(y0)} at {number(x0)} to {number(y1)} at {number(x1)} ({verb}; "
        f"highest {number(peak)} at {number(peak_x)}, lowest {number(trough)} at {number(trough_x)})"
    )


def _is_reference_line(line, ax) -> bool:
    """axhline/axvline: drawn across the axes in axes coordinates, not data."""
    return line.get_transform() is not ax.transData and not line.get_transform().contains_branch(ax.transData)


def _labelled(artist) -> str | None:
    label = artist.get_label()
    return None if not label or label.startswith("_") else label


def _tick_labels(axis) -> dict[float, str]:
    return {
        tick.get_position()[0 if axis.axis_name == "x" else 1]: tick.get_text()
        for tick in axis.get_ticklabels()
        if tick.get_text()
    }


def _describe_lines(ax) -> list[str]:
    parts = []
    for line in ax.get_lines():
        label = _labelled(line)
        xs, ys = line.get_xdata(), line.get_ydata()
        if _is_reference_line(line, ax):
            if label:
                horizontal = len(set(map(float, ys))) == 1
                where = number(ys[0]) if horizontal else f"x = {number(xs[0])}"
                parts.append(f"{label} at {where}")
            continue
        if label and len(xs) > 0:
            parts.append(describe_curve(label, xs, ys))
    return parts


def _describe_bars(ax) -> list[str]:
    from matplotlib.container import BarContainer

    parts = []
    for container in ax.containers:
        if not isinstance(container, BarContainer) or not container.patches:
            continue
        horizontal = container.orientation == "horizontal"
        ticks = _tick_labels(ax.yaxis if horizontal else ax.xaxis)
        values = []
        for patch in container.patches:
            if horizontal:
                position, value = patch.get_y() + patch.get_height() / 2, patch.get_width()
            else:
                position, value = patch.get_x() + patch.get_width() / 2, patch.get_height()
            name = next((text for tick, text in ticks.items() if abs(tick - position) < 0.26), number(position))
            values.append(f"{name} {number(value)}")
        label = _labelled(container)
        shown = values if len(values) <= 16 else values[:8] + ["…"] + values[-4:]
        parts.append(f"{label + ': ' if label else ''}bars {', '.join(shown)}")
    return parts


def _describe_images(ax) -> list[str]:
    parts = []
    for image in ax.get_images():
        array = image.get_array()
        if array is None or getattr(array, "ndim", 0) != 2:
            if array is not None and getattr(array, "ndim", 0) == 3:
                parts.append(f"an image of {array.shape[0]} × {array.shape[1]} coloured cells")
            continue
        rows, columns = array.shape
        values = [float(v) for v in array.ravel() if math.isfinite(float(v))]
        text = (
            f"a heatmap of {rows} × {columns} values from {number(min(values))} to {number(max(values))}"
            if values
            else "an empty heatmap"
        )
        row_names, column_names = _tick_labels(ax.yaxis), _tick_labels(ax.xaxis)
        if row_names and column_names and rows <= 12:
            strongest = []
            for i in range(rows):
                j = max(range(columns), key=lambda c: float(array[i, c]))
                strongest.append(
                    f"{row_names.get(float(i), i)} → {column_names.get(float(j), j)} ({number(array[i, j])})"
                )
            text += "; strongest cell per row: " + ", ".join(strongest)
        parts.append(text)
    return parts


def _describe_axes(ax) -> str:
    data = _describe_lines(ax) + _describe_bars(ax) + _describe_images(ax)
    if not data:
        texts = [_one_line(t.get_text()) for t in ax.texts if t.get_text().strip()]
        if texts:
            data = ["a diagram with the labels " + ", ".join(dict.fromkeys(texts))]
    if not data:
        return ""
    title = _one_line(ax.get_title())
    return (f"{title}{_quantities(ax)}: " if title else "") + "; ".join(data)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _quantities(ax) -> str:
    """What the panel plots against what, e.g. " (test accuracy against number of stored items N)"."""
    from matplotlib.container import BarContainer

    if not (ax.get_lines() or ax.containers):
        return ""
    value, along = _one_line(ax.get_ylabel()), _one_line(ax.get_xlabel())
    bars = [c for c in ax.containers if isinstance(c, BarContainer)]
    curves = [line for line in ax.get_lines() if not _is_reference_line(line, ax)]
    if bars and all(c.orientation == "horizontal" for c in bars) and not curves:
        value, along = along, value  # horizontal bars: the value runs along x
    if value and along:
        return f" ({value} against {along})"
    return f" ({value or along})" if value or along else ""


def describe_figure(fig=None) -> str:
    """Alt text for ``fig`` (default: the current figure): its message, then what each panel shows, with numbers."""
    fig = fig or plt.gcf()
    sentences = []
    suptitle = _one_line(fig._suptitle.get_text()) if getattr(fig, "_suptitle", None) else ""
    if suptitle:
        sentences.append(suptitle)
    panels = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    described = [text for text in (_describe_axes(ax) for ax in panels) if text]
    if len(described) > 1:
        described = [f"Panel {i}: {text}" for i, text in enumerate(described, start=1)]
    sentences.extend(described)
    if not sentences:
        return "A figure with no title and no data."
    return ". ".join(s.rstrip(".") for s in sentences) + "."


# --------------------------------------------------------------------------- showing a figure with its alt text


def distinguish_lines(fig) -> int:
    """Give labelled lines that share a marker and a dash pattern in one panel distinct markers (if they have
    markers) or dash patterns (if not), so colour is never the only difference. Returns how many lines changed."""
    changed = 0
    for ax in fig.axes:
        groups: dict[tuple, list] = {}
        for line in ax.get_lines():
            if _labelled(line) and not _is_reference_line(line, ax):
                groups.setdefault((str(line.get_linestyle()), str(line.get_marker())), []).append(line)
        for (_, marker), lines in groups.items():
            if len(lines) < 2:
                continue
            for index, line in enumerate(lines[1:], start=1):
                if marker not in ("None", "", " "):
                    line.set_marker(MARKERS[index % len(MARKERS)])
                else:
                    line.set_linestyle(LINESTYLES[index % len(LINESTYLES)])
                changed += 1
        legend = ax.get_legend()
        if legend is not None and changed:
            ax.legend(
                loc=getattr(legend, "_loc", "best"),
                fontsize=legend.get_texts()[0].get_fontsize() if legend.get_texts() else None,
            )
    return changed


def show_figure(fig=None, alt: str | None = None) -> str:
    """Display ``fig`` (default: the current figure) with alt text, close it, and return the alt text.

    The alt text is ``describe_figure(fig)`` unless ``alt`` is given. In a notebook the output carries it as
    ``metadata["image/png"]["alt"]`` and as its text fallback; outside IPython this is ``plt.show()``.
    """
    fig = fig or plt.gcf()
    distinguish_lines(fig)
    alt = alt or describe_figure(fig)
    try:
        from IPython import get_ipython
        from IPython.core.pylabtools import print_figure
        from IPython.display import display
    except ImportError:  # plain Python: matplotlib's own window
        plt.show()
        return alt
    if get_ipython() is None:
        plt.show()
        return alt
    png = print_figure(fig, "png", bbox_inches="tight")
    display(
        {"image/png": base64.b64encode(png).decode("ascii"), "text/plain": f"[figure] {alt}"},
        raw=True,
        metadata={"image/png": {"alt": alt}},
    )
    plt.close(fig)
    return alt


# --------------------------------------------------------------------------- figures of notebooks 01 and 02


# --------------------------------------------------------------------------- figures of notebooks 03 and 04


# --------------------------------------------------------------------------- figures of notebooks 05, 06 and 07


# --------------------------------------------------------------------------- figures of notebook 08


def next_token_bars(words: Sequence[str], probabilities, filtered, title: str, ax=None, top: int = 12):
    """Bars of the ``top`` most likely next words: the model's probabilities (light) and what sampling draws from
    after temperature and filtering (dark, hatched). ``probabilities`` and ``filtered`` are ``(vocab,)``."""
    probabilities = torch.as_tensor(probabilities).detach().float()
    filtered = torch.as_tensor(filtered).detach().float()
    order = probabilities.argsort(descending=True)[:top].tolist()
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3.4))
    positions = torch.arange(len(order)).float()
    ax.bar(
        positions - 0.2,
        [probabilities[i].item() for i in order],
        0.4,
        color=PALETTE["sky"],
        label="model: softmax(logits)",
    )
    ax.bar(
        positions + 0.2,
        [filtered[i].item() for i in order],
        0.4,
        color=PALETTE["blue"],
        hatch="//",
        label="sampled from (after τ, top-k, top-p)",
    )
    ax.set_xticks(positions.tolist(), [words[i] for i in order], rotation=40, ha="right")
    ax.set_ylim(0, 1)
    ax.set_ylabel("probability of the next word")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="upper right")
    return ax


def cache_timing_plot(lengths, uncached_ms, cached_ms, ax=None):
    """Milliseconds per generated token against the number of positions already generated, with and without a KV
    cache."""
    ax = line_plot(
        lengths,
        {"without a cache: recompute the whole prefix": uncached_ms, "with a KV cache: one new token": cached_ms},
        xlabel="positions already in the sequence",
        ylabel="milliseconds per generated token",
        title="Without a cache each new token costs more; with one it stays cheap",
        ax=ax,
    )
    ax.set_ylim(bottom=0)
    return ax


def cross_attention_diagram(ax=None):
    """Encoder–decoder cross-attention: queries from the decoder's tokens, keys and values from the encoder's."""
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3.2))
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 4)
    ax.axis("off")
    boxes = [
        (0.3, 0.4, 3.6, 1.0, "encoder: reads the source\n(no mask: sees all of it)", PALE["green"]),
        (6.1, 0.4, 3.6, 1.0, "decoder: writes the target\n(causal self-attention)", PALE["sky"]),
        (3.2, 2.5, 3.6, 1.1, "cross-attention\nsoftmax(Q Kᵀ / √d_k) V", PALE["orange"]),
    ]
    for x, y, w, h, label, colour in boxes:
        ax.add_patch(plt.Rectangle((x, y), w, h, facecolor=colour, edgecolor="black"))
        ax.text(x + w / 2, y + h / 2, label, ha="center", va="center", fontsize=9)
    arrow = dict(arrowstyle="->", color="black", lw=1.3)
    ax.annotate("", xy=(4.2, 2.5), xytext=(2.1, 1.4), arrowprops=arrow)
    ax.text(1.7, 2.1, "keys K, values V", fontsize=9)
    ax.annotate("", xy=(5.8, 2.5), xytext=(7.9, 1.4), arrowprops=arrow)
    ax.text(7.4, 2.1, "queries Q", fontsize=9)
    ax.annotate("", xy=(7.0, 1.4), xytext=(6.0, 2.5), arrowprops=dict(arrowstyle="->", color="grey", lw=1, ls="--"))
    ax.text(5.55, 1.75, "output, added\nto the decoder", fontsize=8, color="dimgrey", ha="center")
    ax.set_title("Cross-attention: the decoder asks, the encoder's sequence answers", fontsize=10)
    return ax
