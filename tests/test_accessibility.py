"""Figures everyone can read: colour-blind-safe colours, line styles besides colour, and alt text on every figure.

Which notebooks the stored-figure tests cover: every lesson in notebooks/ (01-08 as present) and every exercise
notebook (exercises/*.ipynb and exercises/solutions/*.ipynb): ``COVERED`` below. A notebook passes once
``python -m course_lib notebook prepare`` has been applied to it and it has been re-executed.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course_lib.lab import plots  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
COVERED = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")) + sorted(
    (ROOT / "exercises").glob("**/ex[0-9][0-9]_*.ipynb")
)
COVERED = [p for p in COVERED if "backups" not in p.parts and ".ipynb_checkpoints" not in p.parts]
MIN_DELTA_E = 15.0  # CIELAB distance; below about 10 two colours are easily confused


# --------------------------------------------------------------------------- colour-vision simulation

# Machado, Oliveira & Fernandes (2009), severity 1.0, applied to linear RGB.
CVD = {
    "protanopia": [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]],
    "deuteranopia": [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]],
    "tritanopia": [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.303900]],
    "normal vision": [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
}


def _linear(c: float) -> float:
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def _lab(rgb) -> tuple[float, float, float]:
    r, g, b = rgb
    x, y, z = (
        (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047,
        0.2126 * r + 0.7152 * g + 0.0722 * b,
        (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883,
    )
    f = lambda t: t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116  # noqa: E731
    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def seen_as(colour: str, vision: str) -> tuple[float, float, float]:
    rgb = [_linear(c) for c in matplotlib.colors.to_rgb(colour)]
    simulated = [min(1.0, max(0.0, sum(m * c for m, c in zip(row, rgb)))) for row in CVD[vision]]
    return _lab(simulated)


def closest_pair(colours: list[str], vision: str) -> tuple[float, str, str]:
    return min((math.dist(seen_as(a, vision), seen_as(b, vision)), a, b) for a, b in itertools.combinations(colours, 2))


@pytest.mark.parametrize("vision", CVD)
def test_the_palette_stays_distinguishable(vision):
    distance, a, b = closest_pair(plots.COLORS, vision)
    assert distance >= MIN_DELTA_E, f"with {vision}, {a} and {b} are only ΔE {distance:.1f} apart"


def test_the_test_would_catch_matplotlibs_default_colours():
    tab10 = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2"]
    assert min(closest_pair(tab10, v)[0] for v in CVD) < MIN_DELTA_E, "tab10's orange and green merge with protanopia"


def test_lines_differ_by_more_than_colour_by_default():
    cycle = matplotlib.rcParams["axes.prop_cycle"].by_key()
    assert [matplotlib.colors.to_hex(c).upper() for c in cycle["color"]] == [c.upper() for c in plots.COLORS]
    assert len(set(map(str, cycle["linestyle"]))) == len(cycle["linestyle"]) == len(plots.COLORS)
    assert matplotlib.rcParams["image.cmap"] in plots.SAFE_COLORMAPS
    assert {plots.SEQUENTIAL, plots.DIVERGING} <= set(plots.SAFE_COLORMAPS)
    for name in plots.SAFE_COLORMAPS:
        matplotlib.colormaps[name]  # every listed map exists


def test_line_plot_gives_each_curve_a_colour_a_dash_and_a_marker():
    ax = plots.line_plot([1, 2, 3], {"a": [1, 2, 3], "b": [3, 2, 1], "c": [2, 2, 2]}, "x", "y", "t")
    styles = {(line.get_color(), str(line.get_linestyle()), line.get_marker()) for line in ax.get_lines()}
    assert len(styles) == 3 and len({s[1] for s in styles}) == 3 and len({s[2] for s in styles}) == 3
    plt.close("all")


def test_show_figure_separates_lines_that_differ_only_by_colour():
    fig, ax = plt.subplots()
    for name in ("no skip", "skip + post-LN", "skip + pre-LN"):
        ax.plot([0, 1, 2], [1, 2, 3], color="black", linestyle="-", label=name)  # identical but for the label
    ax.axhline(0.5, color="grey", linestyle="--", label="chance")
    ax.legend()
    assert plots.distinguish_lines(fig) == 2
    data = [line for line in ax.get_lines() if line.get_label() != "chance"]
    assert len({str(line.get_linestyle()) for line in data}) == 3
    assert plots.distinguish_lines(fig) == 0, "a second call changes nothing"
    plt.close(fig)


# --------------------------------------------------------------------------- colours the course uses

ALLOWED_COLOURS = {c.upper() for c in [*plots.COLORS, *plots.PALE.values()]} | {c.upper() for c in plots.NEUTRAL}
COLOUR_LITERAL = re.compile(
    r"""\b(?:color|colour|colors|colours|facecolor|edgecolor|c)\s*=\s*\[?\s*(["'][^"']+["'](?:\s*,\s*["'][^"']+["'])*)"""
)
ANY_LITERAL = re.compile(r"""["'](#[0-9a-fA-F]{6}|tab:\w+)["']""")
CMAP = re.compile(r"""(?:cmap\s*=\s*|get_cmap\(\s*|colormaps\[\s*)["']([\w.]+)["']""")


def code_cells(path: Path) -> list[str]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [
        "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        for c in cells
        if c["cell_type"] == "code"
    ]


def sources() -> dict[str, str]:
    texts = {str(p.relative_to(ROOT)): "\n".join(code_cells(p)) for p in COVERED}
    for path in sorted((ROOT / "course_lib").rglob("*.py")):
        texts[str(path.relative_to(ROOT))] = path.read_text(encoding="utf-8")
    return texts


def colours_in(text: str) -> set[str]:
    found = set(ANY_LITERAL.findall(text))
    for group in COLOUR_LITERAL.findall(text):
        found.update(re.findall(r"""["']([^"']+)["']""", group))
    return found


def test_every_colour_in_the_notebooks_and_course_lib_is_from_the_palette():
    offenders = {}
    for name, text in sources().items():
        if name.endswith(("plots.py", "prepare.py", "widget.py")):  # the palette itself, the old->new map, quiz CSS
            continue
        bad = {c for c in colours_in(text) if c.upper() not in ALLOWED_COLOURS and not c.startswith("{")}
        if bad:
            offenders[name] = sorted(bad)
    assert not offenders, f"colours outside course_lib.lab.plots.PALETTE / PALE (run prepare_notebooks): {offenders}"


def test_every_colour_map_is_colour_blind_safe():
    used = {(name, cmap) for name, text in sources().items() for cmap in CMAP.findall(text)}
    assert used, "the notebooks draw heatmaps; the scan should find their colour maps"
    bad = sorted((name, cmap) for name, cmap in used if cmap not in plots.SAFE_COLORMAPS)
    assert not bad, f"colour maps outside course_lib.lab.plots.SAFE_COLORMAPS: {bad}"


# --------------------------------------------------------------------------- alt text from the data


def test_alt_text_states_the_message_with_its_numbers():
    ax = plots.line_plot(
        [4, 8, 16, 32],
        {"Transformer": [1.0, 1.0, 1.0, 1.0], "LSTM": [0.68, 0.45, 0.31, 0.17]},
        "number of stored items N",
        "test accuracy",
        "The LSTM's one vector fills up",
        reference=(1 / 16, "chance (1/16)"),
    )
    alt = plots.describe_figure(ax.figure)
    assert alt.startswith("The LSTM's one vector fills up")
    assert "LSTM falls from 0.68 at 4 to 0.17 at 32" in alt
    assert "Transformer stays at 1 from 4 to 32" in alt and "chance (1/16) at 0.06" in alt
    assert "test accuracy against number of stored items N" in alt
    plt.close("all")


def test_alt_text_for_heatmaps_bars_and_diagrams():
    fig, (left, right) = plt.subplots(1, 2)
    weights = torch.tensor([[0.9, 0.1], [0.2, 0.8]])
    plots.attention_heatmap(weights, ["cat", "sat"], ax=left, title="Each word attends to itself")
    right.bar(["first", "last"], [0.16, 0.29], label="vanilla RNN")
    right.set_title("Recent items are recalled better")
    fig.suptitle("Two views")
    alt = plots.describe_figure(fig)
    assert alt.startswith("Two views. Panel 1: Each word attends to itself")
    assert "2 × 2 values from 0.10 to 0.90" in alt and "cat → cat (0.90), sat → sat (0.80)" in alt
    assert "Panel 2: Recent items are recalled better" in alt and "first 0.16, last 0.29" in alt
    plt.close(fig)
    fig, ax = plt.subplots()
    ax.text(0.5, 0.2, "LayerNorm")
    ax.text(0.5, 0.6, "multi-head attention")
    ax.set_title("Pre-LN block")
    assert plots.describe_figure(fig) == "Pre-LN block: a diagram with the labels LayerNorm, multi-head attention."
    plt.close(fig)


def test_curve_words():
    assert plots.describe_curve("loss", [1, 2, 3], [2.0, 1.0, 0.5]) == "loss falls from 2 at 1 to 0.50 at 3"
    assert plots.describe_curve("gradient", [0, 50], [1.0, float("nan")]) == "gradient is 1 at 0"
    wiggly = plots.describe_curve("w", [0, 1, 2], [0.1, 0.9, 0.5])
    assert "highest 0.90 at 1" in wiggly and "ends higher" in wiggly
    assert plots.number(1.2e-7) == "1.2e-07" and plots.number(37776) == "37776" and plots.number(0.0625) == "0.06"


@pytest.mark.slow  # starts a kernel or a subprocess (make test-fast leaves it to make test)
def test_show_figure_stores_the_alt_text_in_the_output(tmp_path):
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(
            "import matplotlib.pyplot as plt\nfrom course_lib.lab.plots import line_plot, show_figure\n%matplotlib inline\n"
            "line_plot([1, 2], {'loss': [2.0, 0.5]}, 'step', 'loss', 'The loss falls')\nshow_figure()"
        )
    ]
    NotebookClient(notebook, timeout=120, kernel_name="python3").execute()
    outputs = notebook.cells[0].outputs
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 1, "one figure, shown once (the inline backend must not show it again)"
    alt = images[0].metadata["image/png"]["alt"]
    assert alt == "The loss falls (loss against step): loss falls from 2 at 1 to 0.50 at 2."
    assert images[0].data["text/plain"] == f"[figure] {alt}"


# --------------------------------------------------------------------------- every stored figure


def figures_without_alt(path: Path) -> list[str]:
    """Where a stored figure of ``path`` lacks alt text that states something (numbers, or a diagram's labels)."""
    missing = []
    for index, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
        for output in cell.get("outputs", []):
            if "image/png" not in output.get("data", {}):
                continue
            alt = str(output.get("metadata", {}).get("image/png", {}).get("alt", "")).strip()
            if len(alt) < 20 or not (re.search(r"\d", alt) or "diagram" in alt):
                missing.append(f"cell {index}: {alt or 'no alt text'}")
    return missing


@pytest.mark.parametrize("path", COVERED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_stored_figure_has_alt_text(path):
    missing = figures_without_alt(path)
    assert not missing, (
        f"{path.name}: figures without alt text ({len(missing)}): {missing[:3]}. "
        "Show figures with course_lib.lab.plots.show_figure() (python -m course_lib notebook prepare), then re-execute."
    )
