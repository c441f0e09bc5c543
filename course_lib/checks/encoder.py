"""Checks for exercise 06: the Transformer encoder block, assembled from given parts.

Learner signature:

    encoder_block(x, self_attention, feed_forward, norm1, norm2, norm_first=False) -> (batch, seq, d_model)
        post-LN: h = norm1(x + self_attention(x));   out = norm2(h + feed_forward(h))
        pre-LN:  h = x + self_attention(norm1(x));   out = h + feed_forward(norm2(h))

The parts are the submodules of a seeded ``course_lib.TransformerEncoderBlock`` (with distinct random γ and β in
its two LayerNorms, so that mixing them up shows); the reference is that block's own forward pass. When no
catalogued mistake explains a wrong output, ``trace.part_stages`` says which part first receives the wrong input;
the hints point at the step, never at the whole formula.
"""

from __future__ import annotations

import torch

from ..blocks import TransformerEncoderBlock
from . import trace
from .core import Case, CheckResult, CheckSpec, Mistake, TensorOut, generator, quiet_rng, randn, run_check


class _Part:
    """A named, plain-function view of one submodule (the learner sees ``self_attention(x) -> tensor``)."""

    def __init__(self, name: str, function, block=None):
        self.name, self.function, self.block = name, function, block

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.function(x)

    def __repr__(self) -> str:
        return self.name


def _case(seed: int, norm_first: bool, batch: int, seq: int):
    def build():
        d_model, num_heads, d_ff = 8, 2, 16
        gen = generator(seed)
        with quiet_rng():
            torch.manual_seed(seed)
            block = TransformerEncoderBlock(d_model, num_heads, d_ff, norm_first=norm_first)
        with torch.no_grad():
            for residual in (block.attention_residual, block.feed_forward_residual):
                residual.norm.gamma.copy_(randn(gen, d_model, scale=0.5, shift=1.0))
                residual.norm.beta.copy_(randn(gen, d_model, scale=0.5))
        block.eval().requires_grad_(False)
        x = randn(gen, batch, seq, d_model, scale=1.5)
        expected = block(x)
        parts = (
            _Part("self_attention", lambda h: block.self_attention(h)[0], block),
            _Part("feed_forward", block.feed_forward),
            _Part("norm1", block.attention_residual.norm),
            _Part("norm2", block.feed_forward_residual.norm),
        )
        return (x, *parts, norm_first), expected

    return build


def _block(x, attn, ffn, norm1, norm2, norm_first, how="right"):
    """The encoder block with switches to reproduce each typical mistake."""
    if how == "flipped":
        norm_first = not norm_first
    if how == "norms_swapped":
        norm1, norm2 = norm2, norm1
    if not norm_first:
        if how == "outside":
            h = x + norm1(attn(x))
            return h + norm2(ffn(h))
        if how == "no_first_residual":
            h = norm1(attn(x))
            return norm2(h + ffn(h))
        if how == "no_second_residual":
            h = norm1(x + attn(x))
            return norm2(ffn(h))
        if how == "ffn_reads_input":
            h = norm1(x + attn(x))
            return norm2(h + ffn(x))
        if how == "second_skip_from_input":
            h = norm1(x + attn(x))
            return norm2(x + ffn(h))
        h = norm1(x + attn(x))  # the pre-LN mistakes leave the post-LN branch right
        return norm2(h + ffn(h))
    if how == "normed_skip":
        h = norm1(x) + attn(norm1(x))
        return norm2(h) + ffn(norm2(h))
    if how == "no_first_residual":
        h = attn(norm1(x))
        return h + ffn(norm2(h))
    if how == "no_second_residual":
        h = x + attn(norm1(x))
        return ffn(norm2(h))
    if how == "ffn_reads_input":
        h = x + attn(norm1(x))
        return h + ffn(norm2(x))
    if how == "second_skip_from_input":
        h = x + attn(norm1(x))
        return x + ffn(norm2(h))
    if how == "final_norm":
        h = x + attn(norm1(x))
        return norm2(h + ffn(norm2(h)))
    h = x + attn(norm1(x))  # the post-LN mistake leaves the pre-LN branch right
    return h + ffn(norm2(h))


def _variant(how: str):
    def buggy(x, self_attention, feed_forward, norm1, norm2, norm_first=False):
        return _block(x, self_attention, feed_forward, norm1, norm2, norm_first, how)

    buggy.__name__ = f"block_{how}"
    return buggy


block_norms_swapped = _variant("norms_swapped")
block_ignores_norm_first = _variant("flipped")
block_residual_outside_norm = _variant("outside")
block_normed_skip = _variant("normed_skip")
block_no_first_residual = _variant("no_first_residual")
block_no_second_residual = _variant("no_second_residual")
block_ffn_reads_input = _variant("ffn_reads_input")
block_second_skip_from_input = _variant("second_skip_from_input")
block_final_norm = _variant("final_norm")


MISTAKES = [
    Mistake(
        "ignores_norm_first",
        "the flag norm_first is ignored: you computed the other variant (pre-LN instead of post-LN or the reverse)",
        "Your output equals the other variant. norm_first=False asks for post-LN (normalise after each addition) "
        "and norm_first=True for pre-LN (normalise each sublayer's input): branch on the flag.",
        block_ignores_norm_first,
    ),
    Mistake(
        "norms_swapped",
        "norm1 and norm2 are swapped",
        "norm1 belongs to the attention sublayer and norm2 to the feed-forward sublayer; each has its own γ and β.",
        block_norms_swapped,
    ),
    Mistake(
        "ffn_reads_input",
        "the feed-forward network reads the block's input x instead of the attention sublayer's result",
        "The two sublayers run one after the other: the feed-forward part works on h, the output of the attention "
        "sublayer (with its residual and norm), not on x.",
        block_ffn_reads_input,
    ),
    Mistake(
        "second_skip_from_input",
        "the second residual adds the block's input x instead of h",
        "Each residual skips over its own sublayer: the feed-forward sublayer adds back its own input h, the "
        "attention sublayer's result, not the block's input x.",
        block_second_skip_from_input,
    ),
    Mistake(
        "residual_outside_norm",
        "post-LN: the skips are added after the norms, x + norm(sublayer(x))",
        "Post-LN normalises each sum of skip and sublayer output: add first, then apply the norm.",
        block_residual_outside_norm,
    ),
    Mistake(
        "normed_skip",
        "pre-LN: the normalised input is added back instead of the original",
        "In pre-LN the residual path stays untouched: only what goes into each sublayer is normalised, and the "
        "skip adds the tensor as it was before the norm.",
        block_normed_skip,
    ),
    Mistake(
        "missing_residual",
        "one of the two residual connections is missing",
        "Both sublayers get a skip connection: one around self-attention and one around the feed-forward network.",
        block_no_first_residual,
        variants=(block_no_second_residual,),
    ),
    Mistake(
        "final_norm",
        "pre-LN: the block output is normalised once more at the end",
        "In pre-LN the block ends with the second residual sum, not normalised; the final LayerNorm of a pre-LN "
        "model sits after the whole stack, not inside each block.",
        block_final_norm,
    ),
]


def _stages(function, args, expected) -> str | None:
    norm_first = args[-1]
    parts = {1: "self_attention", 2: "feed_forward", 3: "norm1", 4: "norm2"}
    return trace.part_stages(function, args, parts, _variant("right"), "pre-LN" if norm_first else "post-LN")


def reference_block(x, self_attention, feed_forward, norm1, norm2, norm_first=False):
    """The seeded block's own forward pass (the parts carry it), differentiable in x."""
    return self_attention.block(x)


SPEC = CheckSpec(
    name="check_encoder_block",
    function="encoder_block",
    arg_names=("x", "self_attention", "feed_forward", "norm1", "norm2", "norm_first"),
    output=TensorOut("(batch, seq, d_model)"),
    cases=[
        Case("post-LN", _case(601, norm_first=False, batch=2, seq=5)),
        Case("pre-LN", _case(602, norm_first=True, batch=2, seq=5)),
    ],
    mistakes=MISTAKES,
    success="Both variants match course_lib's TransformerEncoderBlock: attention, then feed-forward, each with add & norm.",
    stages=_stages,
    reference=reference_block,
)


def check_encoder_block(encoder_block, verbose: bool = True) -> CheckResult:
    """Check ``encoder_block(x, self_attention, feed_forward, norm1, norm2, norm_first)`` against ``TransformerEncoderBlock``."""
    return run_check(SPEC, encoder_block, verbose)
