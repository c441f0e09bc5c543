"""What a reader sees under a figure or a widget (issue 25): no ``Out[n]`` repeating a figure's alt text, alt text
that states the message with a few numbers instead of listing every value, and a widget's text fallback shown only
where the widget cannot be (no printed copy under the live widget)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from course_lib.lab import plots  # noqa: E402


def test_show_figure_returns_nothing_so_no_out_echoes_the_alt_text():
    fig, ax = plt.subplots()
    ax.plot([1, 2, 3], [3, 2, 1], label="loss")
    ax.set_title("The loss falls")
    assert plots.show_figure(fig) is None


def test_many_bars_are_summarised_not_listed():
    fig, ax = plt.subplots()
    ax.bar(range(64), [((-1) ** i) * i / 64 for i in range(64)])
    ax.set_title("The code of position 20")
    alt = plots.describe_figure(fig)
    assert "64 bars, highest 0.97 (62), lowest -0.98 (63)" in alt, alt
    assert alt.count(",") < 6 and len(alt) < 200, alt
    plt.close(fig)


def test_a_big_heatmap_names_its_strongest_cell_not_every_row():
    fig, ax = plt.subplots()
    words = [f"w{i}" for i in range(9)]
    plots.attention_heatmap(plots.torch.eye(9) * 0.5 + 0.05, words, ax=ax, title="Each word attends to itself")
    alt = plots.describe_figure(fig)
    assert "strongest cell w0 → w0 (0.55)" in alt and "w8 → w8" not in alt, alt
    plt.close(fig)


def test_a_message_replaces_the_title_and_many_panels_are_capped():
    fig, axes = plt.subplots(1, 5)
    for i, ax in enumerate(axes):
        ax.plot([0, 1], [i, i + 1], label=f"run {i}")
        ax.set_title(f"panel {i}")
    alt = plots.describe_figure(fig, message="Every run rises by 1.")
    assert alt.startswith("Every run rises by 1. Panel 1: panel 0") and "and 2 more panels" in alt, alt
    assert "panel 4" not in alt
    plt.close(fig)


def test_many_curves_are_capped():
    fig, ax = plt.subplots()
    for i in range(7):
        ax.plot([0, 1], [0, i], label=f"curve {i}")
    alt = plots.describe_figure(fig)
    assert "curve 3" in alt and "curve 4" not in alt and "and 3 more curves" in alt, alt
    plt.close(fig)


def test_the_sampling_lab_shows_its_whole_text_only_as_the_fallback():
    from course_lib.decoder import DecoderLM
    from course_lib.lab.tasks import relative_clauses as rc
    from course_lib.lab.widgets import SamplingWidget, VideoSearchWidget

    model = DecoderLM(len(rc.VOCAB), 16, 2, 1, 32, rc.MAX_LEN).eval()
    lab = SamplingWidget(model, rc.VOCAB, ["the dog , which chased the owls ,"])
    bundle = lab._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/plain"] == repr(lab) and lab.text in bundle["text/plain"], "the whole table, not cut at 110"
    assert len(bundle["text/plain"]) > 110
    search = VideoSearchWidget()
    assert search._repr_mimebundle_()["text/plain"] == repr(search)
