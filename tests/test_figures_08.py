"""The cross-attention diagram of notebook 08 (``course_lib.lab.plots.cross_attention_diagram``) reads cleanly: every
arrow starts and ends on a box's edge, no two arrows cross, and no label lies on an arrow."""

from __future__ import annotations

import itertools

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.text import Annotation  # noqa: E402

from course_lib.lab import plots  # noqa: E402


@pytest.fixture
def diagram():
    ax = plots.cross_attention_diagram()
    ax.figure.canvas.draw()
    yield ax
    plt.close("all")


def _arrows(ax) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """(start, head) of every arrow, in data coordinates."""
    return [(tuple(a.xyann), tuple(a.xy)) for a in ax.texts if isinstance(a, Annotation)]


def _on_an_edge(point, boxes, tolerance=1e-6) -> bool:
    x, y = point
    for box in boxes:
        x0, y0, x1, y1 = box.get_x(), box.get_y(), box.get_x() + box.get_width(), box.get_y() + box.get_height()
        inside_x, inside_y = x0 - tolerance <= x <= x1 + tolerance, y0 - tolerance <= y <= y1 + tolerance
        if (inside_x and min(abs(y - y0), abs(y - y1)) < tolerance) or (
            inside_y and min(abs(x - x0), abs(x - x1)) < tolerance
        ):
            return True
    return False


def _cross(first, second) -> bool:
    """Do two segments cross (strictly, not only touch)?"""

    def side(a, b, c):
        return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])

    (p, q), (r, s) = first, second
    return side(p, q, r) * side(p, q, s) < 0 and side(r, s, p) * side(r, s, q) < 0


def test_every_arrow_joins_two_boxes(diagram):
    boxes = [patch for patch in diagram.patches if isinstance(patch, plt.Rectangle)]
    arrows = _arrows(diagram)
    assert len(boxes) == 3 and len(arrows) == 3
    for start, head in arrows:
        assert _on_an_edge(start, boxes) and _on_an_edge(head, boxes), (start, head)


def test_no_two_arrows_cross(diagram):
    for first, second in itertools.combinations(_arrows(diagram), 2):
        assert not _cross(first, second), (first, second)


def test_no_label_lies_on_an_arrow(diagram):
    renderer = diagram.figure.canvas.get_renderer()
    to_pixels = diagram.transData.transform
    boxes = [patch for patch in diagram.patches if isinstance(patch, plt.Rectangle)]
    labels = [  # the arrows' labels: the texts outside the boxes
        text
        for text in diagram.texts
        if not isinstance(text, Annotation)
        and not any(box.contains_point(to_pixels(text.get_position())) for box in boxes)
    ]
    assert len(labels) == 3
    for text in labels:
        box = text.get_window_extent(renderer)
        for start, head in _arrows(diagram):
            (x0, y0), (x1, y1) = to_pixels(start), to_pixels(head)
            samples = [(x0 + (x1 - x0) * t / 50, y0 + (y1 - y0) * t / 50) for t in range(51)]
            assert not any(box.contains(x, y) for x, y in samples), f"{text.get_text()!r} lies on an arrow"
