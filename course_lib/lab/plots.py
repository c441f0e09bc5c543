"""Figures the notebooks share, readable by everyone: colour-blind-safe colours, and alt text from the data.

- ``PALETTE`` (Okabe & Ito's eight colours, less black) is the colour cycle of every figure once this module is
  imported, paired with ``LINESTYLES`` so that lines differ in dash pattern as well as colour. Heatmaps use
  ``SEQUENTIAL`` (viridis) or, for values around zero, ``DIVERGING`` (RdBu_r); both stay readable with every
  common colour-vision deficiency. ``tests/test_accessibility.py`` checks the palette under simulated protanopia,
  deuteranopia and tritanopia, and that the notebooks use nothing else.
- ``describe_figure(fig, message=None)`` writes alt text for a figure: its message (``message``, else its title),
  then its key numbers read from what is drawn: each curve's trend ("LSTM falls from 0.68 at 4 to 0.17 at 32"),
  a few bars by name or the highest and lowest of many, a heatmap's range and strongest cells. A sentence or two,
  not a list of every value.
- ``show_figure(fig, message=...)`` displays a figure in a notebook with that alt text stored in the output
  (``metadata["image/png"]["alt"]``, and as the ``text/plain`` fallback); the course website uses it as the image's
  ``alt``. It returns nothing, so no ``Out[n]`` repeats the alt text. Call it instead of ``plt.show()``. Where the only difference between two labelled lines is their colour, it gives them distinct
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

from .._validate import CourseInputError

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

LISTED = 4  # alt text names at most this many curves, bars or heatmap rows of a panel; beyond, it summarises
MAX_PANELS = 3  # and describes at most this many panels


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
    """Each labelled curve's trend (the first ``LISTED``, then how many more) and each labelled reference line."""
    parts = []
    curves = 0
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
            curves += 1
            if curves <= LISTED:
                parts.append(describe_curve(label, xs, ys))
    if curves > LISTED:
        parts.append(f"and {curves - LISTED} more curves")
    return parts


def _describe_bars(ax) -> list[str]:
    """Each set of bars: up to ``LISTED`` values by name, else how many, the highest and the lowest."""
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
            values.append((name, value))
        label = _labelled(container)
        if len(values) <= LISTED:
            text = "bars " + ", ".join(f"{name} {number(value)}" for name, value in values)
        else:
            (high_name, high), (low_name, low) = max(values, key=lambda v: v[1]), min(values, key=lambda v: v[1])
            text = f"{len(values)} bars, highest {number(high)} ({high_name}), lowest {number(low)} ({low_name})"
        parts.append(f"{label + ': ' if label else ''}{text}")
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
        if row_names and column_names and rows > LISTED:
            i, j = divmod(max(range(rows * columns), key=lambda n: float(array.ravel()[n])), columns)
            where = f"{row_names.get(float(i), i)} → {column_names.get(float(j), j)}"
            text += f"; strongest cell {where} ({number(array[i, j])})"
        elif row_names and column_names:
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


def describe_figure(fig=None, message: str | None = None) -> str:
    """Alt text for ``fig`` (default: the current figure): its message, then its key numbers, in a sentence or two.

    The message is ``message`` if given, else the figure's title. The key numbers are what each panel draws, read
    from the data: each curve's trend, the bars (by name when there are few, else the highest and lowest), each
    heatmap's range and strongest cells. At most ``MAX_PANELS`` panels are described, and the whole stays short:
    a screen reader reads it aloud, so it states the figure's point and does not list every number.
    """
    fig = fig or plt.gcf()
    sentences = []
    suptitle = _one_line(fig._suptitle.get_text()) if getattr(fig, "_suptitle", None) else ""
    if message or suptitle:
        sentences.append(_one_line(message or suptitle))
    panels = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    described = [text for text in (_describe_axes(ax) for ax in panels) if text]
    if len(described) > 1:
        described = [f"Panel {i}: {text}" for i, text in enumerate(described, start=1)]
    if len(described) > MAX_PANELS:
        described = described[:MAX_PANELS] + [f"and {len(described) - MAX_PANELS} more panels"]
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


def show_figure(fig=None, alt: str | None = None, message: str | None = None) -> None:
    """Display ``fig`` (default: the current figure) with alt text, and close it. Returns nothing, so the last line
    of a cell does not echo the alt text as an ``Out[n]`` under the figure.

    The alt text is ``alt`` if given, else ``describe_figure(fig, message)``: the message (default: the figure's
    title) and the key numbers read from the data. In a notebook the output carries it as
    ``metadata["image/png"]["alt"]`` and as its text fallback; outside IPython this is ``plt.show()``.
    """
    fig = fig or plt.gcf()
    distinguish_lines(fig)
    alt = alt or describe_figure(fig, message)
    try:
        from IPython import get_ipython
        from IPython.core.pylabtools import print_figure
        from IPython.display import display
    except ImportError:  # plain Python: matplotlib's own window
        plt.show()
        return None
    if get_ipython() is None:
        plt.show()
        return None
    png = print_figure(fig, "png", bbox_inches="tight")
    display(
        {"image/png": base64.b64encode(png).decode("ascii"), "text/plain": f"[figure] {alt}"},
        raw=True,
        metadata={"image/png": {"alt": alt}},
    )
    plt.close(fig)
    return None


# --------------------------------------------------------------------------- figures of notebooks 01 and 02


def saturation_panels(d_ks: Sequence[int], results: dict):
    """Notebook 02, section 3: two panels over ``d_k`` (log scale), unscaled against scaled scores.

    ``results[name][measure]`` holds one number per ``d_k`` for ``name`` in ``("unscaled", "scaled")``; the left
    panel draws ``"saturated"`` (share of rows whose largest weight is above 0.99), the right one ``"jacobian"``
    (median ‖∂p/∂s‖_F over the rows, log scale). Returns the figure.
    """
    fig, (ax_sat, ax_jac) = plt.subplots(1, 2, figsize=(11, 4))
    for ax, measure, ylabel, title, logy in (
        (ax_sat, "saturated", "share of rows with max weight > 0.99", "Without scaling, softmax saturates", False),
        (ax_jac, "jacobian", "median ‖∂p/∂s‖ (log scale)", "…and its gradient vanishes", True),
    ):
        curves = {name: results[name][measure] for name in ("unscaled", "scaled")}
        line_plot(d_ks, curves, "d_k (log scale)", ylabel, title, logy=logy, ax=ax)
        ax.set_xscale("log", base=2)
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- figures of notebooks 03 and 04


def split_heads_picture(labels, right, wrong, d_head: int, colours: Sequence[str] | None = None):
    """Notebook 03's picture of the head split: where every entry of the queries ends up.

    ``labels`` ``(seq, d_model)`` holds ``100 * token + feature`` in each entry; ``right`` and ``wrong`` are
    ``(num_heads, seq, d_head)``: the split done with reshape + transpose, and with reshape alone. Each cell is
    coloured by the head its feature belongs to and shows its token (``t0``, ``t1``, ...). Returns the figure.
    """
    colours = list(colours or COLORS)
    num_heads = right.shape[0]

    def draw(ax, matrix, title):
        token, feature = (matrix // 100).long(), (matrix % 100).long()
        image = [[mpl.colors.to_rgba(colours[f // d_head], 0.55) for f in row] for row in feature.tolist()]
        ax.imshow(image)
        for i in range(matrix.shape[0]):
            for j in range(matrix.shape[1]):
                ax.text(j, i, f"t{token[i, j]}", ha="center", va="center", fontsize=7)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(title, fontsize=9)

    fig = plt.figure(figsize=(11, 5.2))
    grid = fig.add_gridspec(2, num_heads + 1, width_ratios=[num_heads * d_head] + [d_head] * num_heads)
    grid.update(wspace=0.25, hspace=0.45)
    draw(
        fig.add_subplot(grid[:, 0]),
        labels,
        "queries of one sequence (seq × d_model)\ncolour = head the feature belongs to",
    )
    for head in range(num_heads):
        draw(fig.add_subplot(grid[0, head + 1]), right[head], f"right: head {head}")
        draw(fig.add_subplot(grid[1, head + 1]), wrong[head], f"wrong: 'head' {head}")
    return fig


def share_bars(
    categories: Sequence[str],
    series: dict,
    title: str,
    ylabel: str = "share of sentences\n(strongest link from [V])",
    threshold: tuple[float, str] | None = None,
    ax=None,
):
    """Grouped bars, one group per category and one bar per series: ``series = {label: [value per category]}``.

    Notebook 03 uses it for "where does the head's strongest link from [V] land". ``threshold=(y, label)`` adds a
    dashed line (an asserted bound). Returns the ``Axes``.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(6.5, 3.8))
    width = 0.8 / len(series)
    centres = torch.arange(len(categories)).float()
    for number, (label, values) in enumerate(series.items()):
        offset = (number - (len(series) - 1) / 2) * width
        ax.bar((centres + offset).tolist(), [float(v) for v in values], width=width, label=label)
    if threshold is not None:
        ax.axhline(threshold[0], color="grey", linestyle="--", linewidth=1, label=threshold[1])
    ax.set_xticks(centres.tolist(), list(categories))
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 1.3)  # room for the legend above the bars
    ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper center", ncol=len(series) + (threshold is not None))
    return ax


def distance_heatmap(outputs, row_words, column_words, title: str, ax=None, xlabel: str = "", ylabel: str = ""):
    """Notebook 04: the distance between every output vector of one sentence (rows) and of another (columns).

    ``outputs`` is ``(2, seq, d_model)``; each cell shows its distance. Returns the ``(seq, seq)`` distances.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 4.5))
    distances = torch.cdist(outputs[0], outputs[1])  # (seq, seq)
    top = distances.max().item()
    ax.imshow(distances, cmap="magma", vmin=0, vmax=top)
    ax.set_xticks(range(len(column_words)), column_words, rotation=45, ha="right")
    ax.set_yticks(range(len(row_words)), row_words)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    for i in range(distances.shape[0]):
        for j in range(distances.shape[1]):
            value = distances[i, j].item()
            colour = "white" if value < 0.6 * top else "black"
            ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=8, color=colour)
    ax.set_title(title, fontsize=10)
    return distances


def answer_bars(probabilities, class_names: Sequence[str], sentences: Sequence[str], answers, title: str):
    """Notebook 04: a model's probability for every class, one panel per sentence, the right answer in green.

    ``probabilities`` is ``(num_sentences, num_classes)``; ``answers`` holds the index of the right class per
    sentence. Returns the figure.
    """
    probabilities = torch.as_tensor(probabilities).detach().float()
    fig, axes = plt.subplots(1, len(sentences), figsize=(5 * len(sentences), 3), sharey=True, squeeze=False)
    for ax, row, sentence, answer in zip(axes[0], probabilities.tolist(), sentences, answers):
        answer = int(answer)
        colours = [PALETTE["green"] if k == answer else "grey" for k in range(len(class_names))]
        ax.bar(list(class_names), row, color=colours)
        ax.set_title(f'"{sentence}" (answer: {class_names[answer]}, green)', fontsize=10)
        ax.set_ylim(0, 1)
    axes[0][0].set_ylabel("probability")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def similarity_figure(similarity, offsets, by_offset: dict, formula):
    """Notebook 04 §3.4: left, ``PE[p] · PE[q]`` for every pair of positions; right, the dot product against the
    offset ``k`` for a few starting positions (``by_offset = {label: values over offsets}``) and from the formula.
    Returns the figure."""
    fig, (ax_matrix, ax_curve) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [1, 1.25]})
    image = ax_matrix.imshow(similarity, cmap=SEQUENTIAL, interpolation="nearest")
    ax_matrix.set_xlabel("position q")
    ax_matrix.set_ylabel("position p")
    ax_matrix.set_title("PE[p] · PE[q]: brightest on the diagonal", fontsize=10)
    fig.colorbar(image, ax=ax_matrix, fraction=0.046, pad=0.04, label="dot product PE[p] · PE[q]")
    for number, (label, values) in enumerate(by_offset.items()):
        ax_curve.plot(offsets, values, label=label, linewidth=4 if number == 0 else 1.5)
    ax_curve.plot(offsets, formula, "k--", linewidth=1, label="Σ cos(k ω_i)")
    ax_curve.set_xlabel("offset k = q − p")
    ax_curve.set_ylabel("PE[p] · PE[p + k]")
    ax_curve.set_title("The closer two positions, the more alike their codes", fontsize=10)
    ax_curve.grid(True, alpha=0.3)
    ax_curve.legend(fontsize=8)
    fig.tight_layout()
    return fig


def code_row_figure(pe, similarity, p: int, fig):
    """Notebook 04 §3.5, drawn on ``fig``: the table of codes ``pe`` ``(seq_len, d_model)`` with an arrow at row
    ``p``; that row ``PE[p]`` as bars in the table's colours; and ``PE[p] · PE[q]`` for every ``q`` (a row of
    ``similarity``). Returns the figure."""
    seq_len, d_model = pe.shape
    ax_table, ax_code, ax_similarity = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1, 1.1, 1.1]})
    ax_table.imshow(pe, aspect="auto", cmap=DIVERGING, vmin=-1, vmax=1, interpolation="nearest")
    ax_table.plot([d_model + 1.5], [p], marker="<", color="black", markersize=9, clip_on=False)  # the arrow
    ax_table.set_xlim(-0.5, d_model - 0.5)
    ax_table.set_xlabel("feature")
    ax_table.set_ylabel("position")
    ax_table.set_title(f"Row {p} of the table (at the arrow)", fontsize=10)
    code = pe[p]  # (d_model,)
    ax_code.bar(range(d_model), code, color=plt.get_cmap(DIVERGING)((code + 1) / 2), edgecolor="grey", linewidth=0.3)
    ax_code.set_ylim(-1.05, 1.05)
    ax_code.set_xlabel("feature")
    ax_code.set_ylabel("value")
    ax_code.set_title(f"PE[{p}]: the code of position {p}", fontsize=10)
    ax_similarity.plot(range(seq_len), similarity[p], color=PALETTE["blue"])
    ax_similarity.axvline(p, color="black", linestyle=":", linewidth=1, label=f"q = p = {p}")
    ax_similarity.set_ylim(similarity.min().item() - 2, similarity.max().item() + 2)
    ax_similarity.set_xlabel("position q")
    ax_similarity.set_ylabel(f"PE[{p}] · PE[q]")
    ax_similarity.set_title(f"How alike each position's code is to PE[{p}]", fontsize=10)
    ax_similarity.grid(True, alpha=0.3)
    ax_similarity.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- figures of notebooks 05, 06 and 07

# The two wirings of a Transformer block, bottom (input) to top (output): (number, label, kind). The numbers
# follow the data: ① is the first thing the block's input meets. Both wirings have the same six steps in a
# different order; pre-LN only moves each LayerNorm from after the addition to before the sublayer.
BLOCK_WIRINGS = {
    "post-LN": (
        ("①", "Multi-head self-attention", "attention"),
        ("②", "add", "add"),
        ("③", "LayerNorm", "norm"),
        ("④", "Feed-forward (each token)", "ffn"),
        ("⑤", "add", "add"),
        ("⑥", "LayerNorm", "norm"),
    ),
    "pre-LN": (
        ("①", "LayerNorm", "norm"),
        ("②", "Multi-head self-attention", "attention"),
        ("③", "add", "add"),
        ("④", "LayerNorm", "norm"),
        ("⑤", "Feed-forward (each token)", "ffn"),
        ("⑥", "add", "add"),
    ),
}
# Each skip connection: (the step it branches off just below, the add it joins), as indices into the steps above.
BLOCK_SKIPS = {"post-LN": ((0, 1), (3, 4)), "pre-LN": ((0, 2), (3, 5))}
_WIRING_TITLES = {
    "post-LN": "Post-LN (the 2017 paper)\nx ← LayerNorm(x + F(x))",
    "pre-LN": "Pre-LN (GPT-2 and most models today)\nx ← x + F(LayerNorm(x))",
}


def _draw_wiring(ax, steps, skips, title: str, stack_label: str | None, output: str) -> None:
    fills = {"attention": PALE["sky"], "ffn": PALE["green"], "norm": PALE["yellow"]}
    skip_color = PALETTE["vermillion"]
    centre, width, gap = 5.0, 4.6, 1.15
    ys = [gap * (i + 1) for i in range(len(steps))]
    top = gap * (len(steps) + 1)
    ax.text(centre, 0, "input x: (batch, seq, d_model)", ha="center", va="center", fontsize=9.5, style="italic")
    ax.text(centre, top, output, ha="center", va="center", fontsize=9.5, style="italic")
    for y, (number, label, kind) in zip(ys, steps):
        if kind == "add":
            ax.add_patch(mpl.patches.Circle((centre, y), 0.28, facecolor="white", edgecolor="black", zorder=3))
            ax.text(centre, y, "+", ha="center", va="center", fontsize=14, zorder=4)
            ax.text(centre - 0.45, y, f"{number} add", ha="right", va="center", fontsize=10, zorder=4)
        else:
            ax.add_patch(
                mpl.patches.FancyBboxPatch(
                    (centre - width / 2, y - 0.3),
                    width,
                    0.6,
                    boxstyle="round,pad=0.05",
                    facecolor=fills[kind],
                    edgecolor="black",
                    zorder=3,
                )
            )
            ax.text(centre, y, f"{number} {label}", ha="center", va="center", fontsize=10, zorder=4)
    levels = [0.0, *ys, top]
    kinds = ["io", *[kind for _, _, kind in steps], "io"]
    for (y, kind), (y_next, kind_next) in zip(zip(levels, kinds), zip(levels[1:], kinds[1:])):
        start = y + {"add": 0.28, "io": 0.2}.get(kind, 0.36)
        end = y_next - {"add": 0.28, "io": 0.2}.get(kind_next, 0.36)
        ax.annotate("", xy=(centre, end), xytext=(centre, start), arrowprops=dict(arrowstyle="->", lw=1.2))
    side = centre + width / 2 + 0.6
    for below, add in skips:
        y_from = (levels[below] + levels[below + 1]) / 2  # on the arrow into step `below`
        y_to = ys[add]
        ax.plot([centre, side, side], [y_from, y_from, y_to], color=skip_color, ls="-", lw=2, zorder=2)
        ax.plot([centre], [y_from], "o", color=skip_color, markersize=5, zorder=2)
        ax.annotate(
            "", xy=(centre + 0.3, y_to), xytext=(side, y_to), arrowprops=dict(arrowstyle="->", color=skip_color, lw=2)
        )
        ax.text(side + 0.12, (y_from + y_to) / 2, "skip", color=skip_color, fontsize=9, va="center")
    if stack_label:
        ax.plot(
            [1.9, 1.6, 1.6, 1.9], [ys[0] - 0.4, ys[0] - 0.4, ys[-1] + 0.4, ys[-1] + 0.4], color="grey", ls="-", lw=1.5
        )
        ax.text(1.4, (ys[0] + ys[-1]) / 2, stack_label, rotation=90, ha="right", va="center", color="dimgrey")
    ax.set_xlim(0, 10)
    ax.set_ylim(-0.5, top + 0.8)
    ax.set_title(title, fontsize=11)
    ax.axis("off")


def block_wiring_diagram(stack_label: str | None = None, suptitle: str | None = None):
    """Draw a post-LN and a pre-LN Transformer block side by side (notebooks 05 and 06) and return the figure.

    Data flows upwards; every step is numbered ①–⑥ in the order the data reaches it (``BLOCK_WIRINGS``); red arrows
    are the skip connections. ``stack_label`` (e.g. ``"× n_blocks"``) brackets the block to show it repeats.
    """
    fig, axes = plt.subplots(1, 2, figsize=(11, 6))
    for ax, (name, steps) in zip(axes, BLOCK_WIRINGS.items()):
        output = "output: same shape → next block" + (
            "\n(after the last block: a final LayerNorm)" if name == "pre-LN" else ""
        )
        _draw_wiring(ax, steps, BLOCK_SKIPS[name], _WIRING_TITLES[name], stack_label, output)
    if suptitle:
        fig.suptitle(suptitle, fontsize=12)
    fig.tight_layout()
    return fig


def running_mean(values, window: int = 10) -> list[float]:
    """Mean of the last ``window`` values at each step (fewer at the start): the trend through batch-to-batch noise."""
    out = []
    for i in range(len(values)):
        recent = values[max(0, i - window + 1) : i + 1]
        out.append(sum(recent) / len(recent))
    return out


def training_comparison(
    losses: dict,
    accuracies: dict,
    *,
    chance_loss: float,
    chance: float,
    loss_title: str,
    accuracy_title: str,
    colors: Sequence[str] | None = None,
):
    """Left: each run's loss per step (running mean of 10, log scale) against the chance loss; right: each run's test
    accuracy as a bar against chance (notebook 05, section 4). ``losses``: name -> per-step losses; ``accuracies``:
    name -> test accuracy, same names. A curve that ends on the chance line is drawn thick, above the line, and
    labelled there, so that it cannot hide under it. Returns the figure."""
    names = list(losses)
    colors = list(colors or COLORS)
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(11, 4))
    ax_loss.axhline(
        chance_loss, color="grey", ls="--", lw=1, zorder=1, label=f"chance: ln {round(math.exp(chance_loss))}"
    )
    for name, color in zip(names, colors):
        curve = running_mean(losses[name])
        on_chance = abs(curve[-1] - chance_loss) < 0.05 * chance_loss
        ax_loss.plot(curve, label=name, color=color, lw=3.5 if on_chance else 1.8, zorder=3 if on_chance else 2)
        if on_chance:
            ax_loss.annotate(
                f"{name}: on the chance line",
                (len(curve) - 1, curve[-1]),
                xytext=(-5, 12),
                textcoords="offset points",
                ha="right",
                color=color,
                fontsize=9,
            )
    ax_loss.set_yscale("log")
    ax_loss.set_xlabel("training step")
    ax_loss.set_ylabel("cross-entropy loss (running mean, log)")
    ax_loss.set_title(loss_title)
    ax_loss.grid(True, alpha=0.3)
    ax_loss.legend(fontsize=9)
    bars = ax_acc.bar(names, [accuracies[name] for name in names], color=colors[: len(names)])
    ax_acc.bar_label(bars, fmt="%.3f")
    ax_acc.axhline(chance, color="grey", ls="--", lw=1, label=f"chance (1/{round(1 / chance)})")
    ax_acc.set_ylim(0, 1.1)
    ax_acc.set_ylabel("test accuracy")
    ax_acc.set_title(accuracy_title)
    ax_acc.legend(loc="upper left")
    fig.tight_layout()
    return fig


def readout_attention_figure(example_weights, token_labels, weight_on_first: dict):
    """Notebook 06, section 2.4. Left: each head's attention weights from the readout (last position) over one
    sequence, ``example_weights`` ``(heads, seq)`` with ``token_labels`` along the top; right: for each length L in
    ``weight_on_first`` (L -> ``(heads,)`` mean weight on position 0), each head's weight against a uniform 1/(L+1).
    Heads are counted from 0. Returns the figure."""
    lengths = sorted(weight_on_first)
    heads = len(example_weights)
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 3.4), gridspec_kw={"width_ratios": [2.2, 1]})
    attention_heatmap(
        example_weights,
        [f"head {h}" for h in range(heads)],
        token_labels,
        ax=left,
        annotate=False,
        title="From the readout (last position), attention goes to the class token C",
    )
    left.set_aspect("auto")
    left.set_ylabel("readout position,\nattending with")
    for head in range(heads):
        right.plot(lengths, [float(weight_on_first[L][head]) for L in lengths], marker="o", label=f"head {head}")
    right.plot(lengths, [1 / (L + 1) for L in lengths], "--", color="grey", label="uniform: 1/(L+1)")
    right.set_xscale("log")
    right.set_xticks(lengths, [str(L) for L in lengths])
    right.minorticks_off()
    right.set_ylim(0, 1.05)
    right.set_xlabel("L")
    right.set_ylabel("mean weight on position 0")
    right.set_title("Weight on the class token, by length")
    right.grid(True, alpha=0.3)
    right.legend(fontsize=8, loc="center left")
    fig.tight_layout()
    return fig


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
    # each arrow meets a box's edge, and no two cross: K, V into the left side, Q into the right side, the output
    # down from the bottom edge to the decoder
    arrow = dict(arrowstyle="->", color="black", lw=1.3)
    ax.annotate("", xy=(3.2, 2.9), xytext=(1.4, 1.4), arrowprops=arrow)
    ax.text(0.45, 2.35, "keys K, values V", fontsize=9)
    ax.annotate("", xy=(6.8, 2.9), xytext=(8.6, 1.4), arrowprops=arrow)
    ax.text(8.1, 2.35, "queries Q", fontsize=9)
    ax.annotate("", xy=(6.9, 1.4), xytext=(6.3, 2.5), arrowprops=dict(arrowstyle="->", color="grey", lw=1, ls="--"))
    ax.text(5.6, 1.7, "output, added\nto the decoder", fontsize=8, color="dimgrey", ha="center")
    ax.set_title("Cross-attention: the decoder asks, the encoder's sequence answers", fontsize=10)
    return ax


def loss_ladder_plot(steps, bits, baselines: dict, ax=None):
    """Held-out bits per byte of the decoder's checkpoints (``steps``, ``bits``), with each baseline as a level line.

    The checkpoints are evenly spaced on the x axis, each labelled with its training step.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 3.8))
    places = list(range(len(steps)))
    ax.plot(places, [float(b) for b in bits], color=PALETTE["blue"], marker="o", label="decoder (BPE 512)")
    for number, (name, level) in enumerate(baselines.items()):
        ax.axhline(level, color=COLORS[number + 1], linestyle=LINESTYLES[number + 1], linewidth=1.5, label=name)
    for place, level in zip(places, bits):
        ax.annotate(f"{level:.2f}", (place, level), textcoords="offset points", xytext=(5, 5), fontsize=8)
    ax.set_xticks(places, [str(step) for step in steps])
    ax.set_xlim(-0.4, len(steps) - 0.4)
    ax.set_ylim(top=max(float(b) for b in bits) + 0.15)  # room for the top label under the title
    ax.set_xlabel("checkpoint: training step")
    ax.set_ylabel("bits per byte, held-out docs")
    ax.set_title("The loss ladder: each checkpoint against the count models")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right")
    return ax
