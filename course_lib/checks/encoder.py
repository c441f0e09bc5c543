"""Checks for exercise 06: the feed-forward network and the Transformer encoder block, written by the learner.

Learner signatures:

    feed_forward(x, w_1, b_1, w_2, b_2) -> (batch, seq, d_model)
        FFN(x) = ReLU(x W_1 + b_1) W_2 + b_2, weights (in, out), applied from the right as in exercise 03

    encoder_block(x, self_attention, norm1, norm2, w_1, b_1, w_2, b_2, norm_first=False) -> (batch, seq, d_model)
        post-LN: h = norm1(x + self_attention(x));   out = norm2(h + FFN(h))
        pre-LN:  h = x + self_attention(norm1(x));   out = h + FFN(norm2(h))

Both references are a seeded ``course_lib`` module: ``FeedForward`` (its ``nn.Linear`` weights are handed to the
learner transposed, as ``(in, out)`` matrices) and ``TransformerEncoderBlock`` (with distinct random γ and β in its
two LayerNorms, so that mixing them up shows). Self-attention and the two norms are the block's own submodules,
given as plain functions; the feed-forward network the learner computes from the weights, with their own
``feed_forward``. When no catalogued mistake explains a wrong block, ``trace.part_stages`` says which given part
first receives the wrong input; the hints point at the step, never at the whole formula.
"""

from __future__ import annotations

import torch

from ..blocks import FeedForward, TransformerEncoderBlock
from . import trace
from .core import export_checks
from .spec import Case, CheckSpec, Mistake, TensorOut, generator, manual_seed, quiet_rng, randn

D_MODEL, NUM_HEADS, D_FF = 8, 2, 16


class _Part:
    """A named, plain-function view of one submodule (the learner sees ``self_attention(x) -> tensor``)."""

    def __init__(self, name: str, function, block=None):
        self.name, self.function, self.block = name, function, block

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.function(x)

    def __repr__(self) -> str:
        return self.name


def _ffn_weights(ffn: FeedForward) -> tuple[torch.Tensor, ...]:
    """``(w_1, b_1, w_2, b_2)`` as the learner gets them: ``(in, out)`` matrices (``nn.Linear`` stores ``(out, in)``)."""
    return (
        ffn.linear1.weight.detach().T.clone(),
        ffn.linear1.bias.detach().clone(),
        ffn.linear2.weight.detach().T.clone(),
        ffn.linear2.bias.detach().clone(),
    )


def _ffn_parameters(w_1, b_1, w_2, b_2, prefix: str = "") -> dict:
    return {
        f"{prefix}linear1.weight": w_1.T,
        f"{prefix}linear1.bias": b_1,
        f"{prefix}linear2.weight": w_2.T,
        f"{prefix}linear2.bias": b_2,
    }


# --------------------------------------------------------------------------- feed_forward


def _ffn_case(seed: int, batch: int, seq: int, d_model: int = D_MODEL, d_ff: int = D_FF, scale: float = 1.5):
    """Random weights and tokens; sizes other than the notebook's and a large ``scale`` (hidden units far above 6)
    catch a function written for one size or one range (a hard-coded d_model, a ReLU6)."""

    def build():
        gen = generator(seed)
        with quiet_rng():
            manual_seed(seed)
            ffn = FeedForward(d_model, d_ff)
        with torch.no_grad():  # biases large enough that ReLU cuts a good share of the hidden units
            ffn.linear1.bias.copy_(randn(gen, d_ff, scale=0.5))
            ffn.linear2.bias.copy_(randn(gen, d_model, scale=0.5))
        ffn.eval().requires_grad_(False)
        x = randn(gen, batch, seq, d_model, scale=scale)
        return (x, *_ffn_weights(ffn)), ffn(x)

    return build


def reference_feed_forward(x, w_1, b_1, w_2, b_2):
    """course_lib's FeedForward with these weights, differentiable in x and every weight."""
    with quiet_rng():
        ffn = FeedForward(w_1.shape[0], w_1.shape[1])
    return torch.func.functional_call(ffn, _ffn_parameters(w_1, b_1, w_2, b_2), (x,))


def _ffn(x, w_1, b_1, w_2, b_2, how="right"):
    """The feed-forward network with switches to reproduce each typical mistake."""
    if how == "relu_on_input":
        x = torch.relu(x)
    hidden = x @ w_1 + (0 if how in ("no_bias", "no_first_bias") else b_1)
    activation = {"tanh": torch.tanh, "sigmoid": torch.sigmoid, "gelu": torch.nn.functional.gelu}.get(how, torch.relu)
    if how == "activation_before_bias":
        hidden = torch.relu(x @ w_1) + b_1
    elif how not in ("no_activation", "relu_on_output", "relu_on_input"):
        hidden = activation(hidden)
    out = hidden @ w_2 + (0 if how in ("no_bias", "no_second_bias") else b_2)
    if how == "relu_on_output":
        out = torch.relu(out)
    return out


def _ffn_variant(how: str):
    def buggy(x, w_1, b_1, w_2, b_2):
        return _ffn(x, w_1, b_1, w_2, b_2, how)

    buggy.__name__ = f"ffn_{how}"
    return buggy


ffn_no_activation = _ffn_variant("no_activation")
ffn_relu_on_output = _ffn_variant("relu_on_output")
ffn_relu_on_input = _ffn_variant("relu_on_input")
ffn_activation_before_bias = _ffn_variant("activation_before_bias")
ffn_tanh = _ffn_variant("tanh")
ffn_sigmoid = _ffn_variant("sigmoid")
ffn_gelu = _ffn_variant("gelu")
ffn_no_bias = _ffn_variant("no_bias")
ffn_no_first_bias = _ffn_variant("no_first_bias")
ffn_no_second_bias = _ffn_variant("no_second_bias")


def _relu_twice(x, w_1, b_1, w_2, b_2):
    return torch.relu(_ffn(x, w_1, b_1, w_2, b_2))


FFN_MISTAKES = [
    Mistake(
        "no_activation",
        "there is no activation between the two layers",
        "Without a non-linearity the two layers collapse into one linear map (x W_1 W_2 + ...): apply ReLU to the "
        "first layer's output, the hidden vector, before the second layer.",
        ffn_no_activation,
    ),
    Mistake(
        "activation_on_output",
        "the ReLU is applied to the network's output (after the second layer) instead of the hidden layer",
        "The ReLU belongs between the layers, on the (…, d_ff) hidden vector. The output of the second layer goes "
        "into the residual sum as it is, negative entries included.",
        ffn_relu_on_output,
        variants=(_relu_twice,),
    ),
    Mistake(
        "activation_on_input",
        "the ReLU is applied to the input x instead of the hidden layer",
        "The ReLU acts on what the first layer computes, not on the token vector that goes into it.",
        ffn_relu_on_input,
    ),
    Mistake(
        "activation_before_bias",
        "the bias b_1 is added after the ReLU instead of before it",
        "The first layer is the whole affine map, x W_1 + b_1; the activation comes after the bias.",
        ffn_activation_before_bias,
    ),
    Mistake(
        "other_activation",
        "the activation is not ReLU (tanh, sigmoid or GELU?)",
        "The Transformer's feed-forward network (and course_lib's FeedForward) uses ReLU: max(0, ·).",
        ffn_tanh,
        variants=(ffn_sigmoid, ffn_gelu),
    ),
    Mistake(
        "missing_bias",
        "a bias is missing (b_1, b_2 or both)",
        "Each of the two layers adds its own bias: b_1 (d_ff,) to the hidden vector, b_2 (d_model,) to the output.",
        ffn_no_bias,
        variants=(ffn_no_first_bias, ffn_no_second_bias),
    ),
]


FFN_SPEC = CheckSpec(
    name="check_feed_forward",
    function="feed_forward",
    arg_names=("x", "w_1", "b_1", "w_2", "b_2"),
    output=TensorOut("(batch, seq, d_model)"),
    cases=[
        Case("a batch of tokens", _ffn_case(611, batch=2, seq=5)),
        Case("one sequence of 3 tokens", _ffn_case(612, batch=1, seq=3)),
        Case("d_model 12, d_ff 20, large inputs", _ffn_case(613, batch=2, seq=4, d_model=12, d_ff=20, scale=8.0)),
    ],
    mistakes=FFN_MISTAKES,
    success="Two layers with a ReLU between them, the same network for every token, and it trains (gradients match).",
    reference=reference_feed_forward,
)


# --------------------------------------------------------------------------- encoder_block


def _case(seed: int, norm_first: bool, batch: int, seq: int, d_model: int = D_MODEL, d_ff: int = D_FF):
    def build():
        gen = generator(seed)
        with quiet_rng():
            manual_seed(seed)
            block = TransformerEncoderBlock(d_model, NUM_HEADS, d_ff, norm_first=norm_first)
        with torch.no_grad():
            for norm in (block.norm1, block.norm2):
                norm.gamma.copy_(randn(gen, d_model, scale=0.5, shift=1.0))
                norm.beta.copy_(randn(gen, d_model, scale=0.5))
            block.feed_forward.linear1.bias.copy_(randn(gen, d_ff, scale=0.5))
        block.eval().requires_grad_(False)
        x = randn(gen, batch, seq, d_model, scale=1.5)
        expected = block(x)
        parts = (
            _Part("self_attention", lambda h: block.self_attention(h)[0], block),
            _Part("norm1", block.norm1),
            _Part("norm2", block.norm2),
        )
        return (x, *parts, *_ffn_weights(block.feed_forward), norm_first), expected

    return build


def _block(x, attn, norm1, norm2, w_1, b_1, w_2, b_2, norm_first, how="right"):
    """The encoder block with switches to reproduce each typical mistake."""

    def ffn(h):
        return _ffn(h, w_1, b_1, w_2, b_2, "no_activation" if how == "ffn_no_activation" else "right")

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
    if how == "norm_on_output":
        h = x + norm1(attn(x))
        return h + norm2(ffn(h))
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
    h = x + attn(norm1(x))  # the post-LN mistakes leave the pre-LN branch right
    return h + ffn(norm2(h))


def _variant(how: str):
    def buggy(x, self_attention, norm1, norm2, w_1, b_1, w_2, b_2, norm_first=False):
        return _block(x, self_attention, norm1, norm2, w_1, b_1, w_2, b_2, norm_first, how)

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
block_norm_on_output = _variant("norm_on_output")
block_ffn_no_activation = _variant("ffn_no_activation")


MISTAKES = [
    Mistake(
        "ignores_norm_first",
        "you computed the other variant: post-LN where norm_first asks for pre-LN, or the reverse",
        "Your output equals the other variant. norm_first=False asks for post-LN (normalise after each addition) "
        "and norm_first=True for pre-LN (normalise each sublayer's input): branch on the flag, the right way round.",
        block_ignores_norm_first,
    ),
    Mistake(
        "norms_swapped",
        "norm1 and norm2 are swapped",
        "norm1 belongs to the attention sublayer and norm2 to the feed-forward sublayer; each has its own γ and β.",
        block_norms_swapped,
    ),
    Mistake(
        "ffn_no_activation",
        "the feed-forward sublayer has no activation between its two layers",
        "Use your feed_forward from Task 1 (after its check passes) for the second sublayer: it has the ReLU "
        "between the layers.",
        block_ffn_no_activation,
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
        "norm_on_output",
        "pre-LN: each norm is applied to its sublayer's output instead of its input",
        "Pre-LN normalises what goes INTO each sublayer; the sublayer's output is added to the skip as it is.",
        block_norm_on_output,
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


def _wiring(x, attn, norm1, norm2, w_1, b_1, w_2, b_2, norm_first=False):
    return _block(x, attn, norm1, norm2, w_1, b_1, w_2, b_2, norm_first)


def _stages(function, args, expected) -> str | None:
    norm_first = args[-1]
    parts = {1: "self_attention", 2: "norm1", 3: "norm2"}
    return trace.part_stages(function, args, parts, _wiring, "pre-LN" if norm_first else "post-LN")


def reference_block(x, self_attention, norm1, norm2, w_1, b_1, w_2, b_2, norm_first=False):
    """The seeded block's own forward pass with these feed-forward weights, differentiable in x and the weights."""
    block = self_attention.block
    return torch.func.functional_call(block, _ffn_parameters(w_1, b_1, w_2, b_2, "feed_forward."), (x,))


SPEC = CheckSpec(
    name="check_encoder_block",
    function="encoder_block",
    arg_names=("x", "self_attention", "norm1", "norm2", "w_1", "b_1", "w_2", "b_2", "norm_first"),
    output=TensorOut("(batch, seq, d_model)"),
    cases=[
        Case("post-LN", _case(601, norm_first=False, batch=2, seq=5)),
        Case("pre-LN", _case(602, norm_first=True, batch=2, seq=5)),
        Case("post-LN, d_model 12, d_ff 20, one sequence of 3", _case(603, False, batch=1, seq=3, d_model=12, d_ff=20)),
        Case("pre-LN, d_model 12, d_ff 20, 3 sequences of 4", _case(604, True, batch=3, seq=4, d_model=12, d_ff=20)),
    ],
    mistakes=MISTAKES,
    success="Both variants match course_lib's TransformerEncoderBlock: attention, then your feed-forward network, "
    "each with add & norm.",
    stages=_stages,
    reference=reference_block,
)


__all__ = export_checks(globals())  # check_* functions, one per CheckSpec above
