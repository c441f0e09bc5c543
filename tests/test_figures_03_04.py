"""The figure functions of notebooks 03 and 04 (course_lib.lab.plots) draw what they claim to draw."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course_lib import sinusoidal_encoding, split_heads  # noqa: E402
from course_lib.lab import plots


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_split_heads_picture_colours_each_right_head_with_one_colour_and_labels_the_tokens():
    seq, d_model, num_heads = 5, 12, 3
    labels = (100 * torch.arange(seq)[:, None] + torch.arange(d_model)[None, :]).float()
    right = split_heads(labels[None], num_heads)[0]
    wrong = labels.reshape(num_heads, seq, d_model // num_heads)
    fig = plots.split_heads_picture(labels, right, wrong, d_model // num_heads)
    assert len(fig.axes) == 1 + 2 * num_heads
    for head in range(num_heads):
        right_panel = next(ax for ax in fig.axes if ax.get_title() == f"right: head {head}")
        image = right_panel.get_images()[0].get_array()  # (seq, d_head, 4) RGBA
        assert len({tuple(pixel) for row in image.tolist() for pixel in row}) == 1, "one colour per right head"
        assert [text.get_text() for text in right_panel.texts[:: d_model // num_heads]] == [f"t{t}" for t in range(5)]
    wrong_panel = next(ax for ax in fig.axes if ax.get_title() == "wrong: 'head' 0")
    image = wrong_panel.get_images()[0].get_array()
    assert len({tuple(pixel) for row in image.tolist() for pixel in row}) > 1, "reshape alone mixes the heads"


def test_share_bars_draws_every_value_and_the_threshold():
    ax = plots.share_bars(["a", "b", "c"], {"x": [0.1, 0.5, 1.0], "y": [0.0, 0.25, 0.75]}, "t", threshold=(0.7, "0.7"))
    heights = sorted(round(bar.get_height(), 6) for bar in ax.patches)
    assert heights == sorted([0.1, 0.5, 1.0, 0.0, 0.25, 0.75])
    assert any(line.get_ydata()[0] == 0.7 for line in ax.get_lines())
    assert "bars" in plots.describe_figure(ax.figure)


def test_distance_heatmap_returns_the_distances_it_draws():
    outputs = torch.randn(2, 4, 8)
    _, ax = plt.subplots()
    distances = plots.distance_heatmap(outputs, list("abcd"), list("wxyz"), "t", ax)
    assert torch.allclose(distances, torch.cdist(outputs[0], outputs[1]))
    assert ax.texts[0].get_text() == f"{distances[0, 0].item():.2f}"


def test_similarity_figure_labels_its_colourbar():
    pe = sinusoidal_encoding(50, 16)
    similarity = pe @ pe.T
    offsets = torch.arange(-5, 6)
    fig = plots.similarity_figure(similarity, offsets, {"from 20": similarity[20, 20 + offsets]}, offsets * 0.0)
    colourbar = fig.axes[-1]
    assert colourbar.get_ylabel(), "the colourbar says what its colours mean"


def test_code_row_figure_shows_row_p():
    pe = sinusoidal_encoding(30, 8)
    fig = plots.code_row_figure(pe, pe @ pe.T, 7, plt.figure())
    ax_table, ax_code, ax_similarity = fig.axes
    assert [round(bar.get_height(), 5) for bar in ax_code.patches] == [round(v, 5) for v in pe[7].tolist()]
    assert ax_similarity.get_lines()[0].get_ydata().tolist() == pytest.approx((pe @ pe.T)[7].tolist())
    assert ax_table.get_lines()[0].get_ydata().tolist() == [7], "the arrow points at row p"


def test_answer_bars_colours_the_right_answer():
    probabilities = torch.tensor([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]])
    fig = plots.answer_bars(probabilities, ["a", "b", "c"], ["s one", "s two"], [0, 2], "t")
    for ax, answer, row in zip(fig.axes, [0, 2], probabilities.tolist()):
        assert [round(bar.get_height(), 6) for bar in ax.patches] == [round(v, 6) for v in row]
        green = [k for k, bar in enumerate(ax.patches) if bar.get_facecolor()[:3] != (0.5019607843137255,) * 3]
        assert green == [answer], "only the right answer is in colour"
