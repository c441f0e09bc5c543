"""The block diagram of notebooks 05 and 06 (``course_lib.lab.plots.block_wiring_diagram``) draws what the code computes.

Each wiring in ``BLOCK_WIRINGS`` is read as a program, step by step in its numbered order, and run with the weights
of a real ``TransformerEncoderBlock``: it must give the block's output. A diagram with two steps swapped, a skip
joining the wrong addition, or numbers out of the order the data flows fails here.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest
import torch

from course_lib import TransformerEncoderBlock
from course_lib.lab.plots import BLOCK_SKIPS, BLOCK_WIRINGS, block_wiring_diagram, describe_figure

CIRCLED = "①②③④⑤⑥⑦⑧⑨"


def run_diagram(name: str, block: TransformerEncoderBlock, x: torch.Tensor) -> torch.Tensor:
    """Follow the diagram: the stream h flows up through the steps; a skip copies h where it branches off."""
    steps, skips = BLOCK_WIRINGS[name], dict(BLOCK_SKIPS[name])
    joins = {add: below for below, add in skips.items()}
    norms = iter([block.norm1, block.norm2])
    saved, h = {}, x
    for index, (_, _, kind) in enumerate(steps):
        if index in skips:
            saved[index] = h
        if kind == "attention":
            h = block.self_attention(h)[0]
        elif kind == "ffn":
            h = block.feed_forward(h)
        elif kind == "norm":
            h = next(norms)(h)
        elif kind == "add":
            h = h + saved[joins[index]]
        else:
            raise AssertionError(f"unknown step kind {kind!r}")
    return h


@pytest.mark.parametrize("name", list(BLOCK_WIRINGS))
def test_each_wiring_computes_the_block(name):
    torch.manual_seed(0)
    block = TransformerEncoderBlock(16, 2, 32, norm_first=name == "pre-LN").eval()
    with torch.no_grad():
        for parameter in block.parameters():  # move γ, β and the biases off 1 and 0, so that every step counts
            if parameter.dim() == 1:
                parameter.add_(0.1 * torch.randn_like(parameter))
        x = torch.randn(2, 5, 16)
        assert torch.allclose(run_diagram(name, block, x), block(x), atol=1e-6)
        other = TransformerEncoderBlock(16, 2, 32, norm_first=name != "pre-LN").eval()
        other.load_state_dict(block.state_dict())
        assert not torch.allclose(run_diagram(name, block, x), other(x), atol=1e-3), "the two wirings must differ"


@pytest.mark.parametrize("name", list(BLOCK_WIRINGS))
def test_steps_are_numbered_in_the_order_the_data_flows(name):
    numbers = [number for number, _, _ in BLOCK_WIRINGS[name]]
    assert numbers == list(CIRCLED[: len(numbers)])


def test_both_wirings_have_the_same_steps():
    post, pre = ([kind for _, _, kind in steps] for steps in BLOCK_WIRINGS.values())
    assert sorted(post) == sorted(pre)


def test_the_figure_shows_every_numbered_step():
    fig = block_wiring_diagram(stack_label="× n_blocks")
    alt = describe_figure(fig)
    for steps in BLOCK_WIRINGS.values():
        for number, label, _ in steps:
            assert f"{number} {label}" in alt
    assert "N blocks" not in alt
