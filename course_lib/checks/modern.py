"""Checks for exercise 10: rotary positions and one step of the online softmax.

Learner signatures:

    apply_rope(x) -> (batch, seq, d_head)
        pair i = features (2i, 2i + 1) (interleaved, as in the RoPE paper); position m = 0, 1, ...; angle m·θ_i with
        θ_i = 10000^(−2i / d_head); (a, b) → (a cos − b sin, a sin + b cos)
    rope_attention(queries, keys, values) -> (batch, seq, d_v)
        softmax(apply_rope(Q) apply_rope(K)ᵀ / √d_k) V: the values are not rotated
    online_softmax_step(running_max, running_sum, output, scores, values) -> (new_max, new_sum, new_output)

References: ``course_lib.rotary.apply_rotary`` and ``course_lib.tiled_attention.online_softmax_step``.
"""

from __future__ import annotations

import math

import torch

from ..rotary import apply_rotary
from ..tiled_attention import online_softmax_step as reference_step
from .core import export_checks
from .spec import Case, CheckSpec, Mistake, TensorOut, TupleOut, generator


def _sizes(seed: int, long: bool = False) -> tuple[int, int, int]:
    """batch 2–3 (more than one: a position counted along the batch shows), seq 3–8 (``long``: 12–24, so a table of
    angles for the notebook's lengths only does not reach), an even d_head 4–12. The batch and the range of d_head
    follow the seed's parity (even: batch 2, d_head 4–8; odd: batch 3, d_head 10–12), so cases of both parities
    never share them."""
    g = generator(seed)
    batch = 2 + seed % 2
    seq = int(torch.randint(12, 25, (1,), generator=g)) if long else int(torch.randint(3, 9, (1,), generator=g))
    half_d_head = (
        int(torch.randint(2, 5, (1,), generator=g)) if seed % 2 == 0 else int(torch.randint(5, 7, (1,), generator=g))
    )
    return batch, seq, 2 * half_d_head


def _rope(x, pairing="interleaved", first=0, sign=1.0):
    positions = torch.arange(first, first + x.shape[-2])
    return apply_rotary(x, positions, pairing) if sign > 0 else apply_rotary(x, -positions, pairing)


# --- apply_rope -------------------------------------------------------------------------------------------------
def _rope_case(seed, long=False):
    def build():
        batch, seq, d_head = _sizes(seed, long)
        x = torch.randn(batch, seq, d_head, generator=generator(seed + 1))
        return (x,), _rope(x)

    return build


def rope_halves(x):
    return _rope(x, pairing="halves")


def rope_from_one(x):
    return _rope(x, first=1)


def rope_negative_angle(x):
    return _rope(x, sign=-1.0)


def rope_identity(x):
    return x.clone()


def rope_swapped_sin_cos(x):
    a, b = x[..., 0::2], x[..., 1::2]
    angles = torch.arange(x.shape[-2])[:, None] * 10000.0 ** (-torch.arange(0, x.shape[-1], 2) / x.shape[-1])
    cos, sin = torch.cos(angles), torch.sin(angles)
    return torch.stack([a * sin - b * cos, a * cos + b * sin], dim=-1).flatten(-2)


def rope_exponent_i(x):
    d_head = x.shape[-1]
    a, b = x[..., 0::2], x[..., 1::2]
    angles = torch.arange(x.shape[-2])[:, None] * 10000.0 ** (-torch.arange(d_head // 2) / d_head)
    cos, sin = torch.cos(angles), torch.sin(angles)
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)


ROPE_MISTAKES = [
    Mistake(
        "pairing_halves",
        "the pairs are features (i, i + d_head/2) (the 'halves' convention) instead of neighbours (2i, 2i + 1)",
        "This exercise uses the paper's interleaved pairing: a = x[..., 0::2], b = x[..., 1::2], and the turned pairs "
        "go back to the same places (stack them on a new last axis, then flatten). Both conventions are valid, but "
        "queries, keys and a trained model must all use the same one.",
        rope_halves,
    ),
    Mistake(
        "positions_from_one",
        "the positions start at 1 instead of 0",
        "Position m runs over 0, 1, ..., seq − 1 (torch.arange(seq)): the first row must come back unchanged, since "
        "a turn by angle 0 is the identity.",
        rope_from_one,
    ),
    Mistake(
        "negative_angle",
        "each pair turns the wrong way (by −m·θ_i)",
        "(a, b) → (a cos(mθ) − b sin(mθ), a sin(mθ) + b cos(mθ)): the minus sign is on b·sin in the first component.",
        rope_negative_angle,
    ),
    Mistake(
        "sin_cos_swapped",
        "sine and cosine are swapped in the rotation",
        "A turn by angle φ keeps a at a·cos φ when φ = 0: the cosine multiplies the feature itself.",
        rope_swapped_sin_cos,
    ),
    Mistake(
        "exponent_pair_index",
        "the frequencies use i / d_head instead of 2i / d_head",
        "θ_i = 10000^(−2i / d_head): torch.arange(0, d_head, 2) counts 2i directly.",
        rope_exponent_i,
    ),
    Mistake(
        "not_rotated",
        "the input comes back unchanged",
        "Turn every pair (a, b) of row m by the angle m·θ_i; only row 0 stays as it is.",
        rope_identity,
    ),
]

ROPE_SPEC = CheckSpec(
    name="check_rope",
    function="apply_rope",
    arg_names=("x",),
    output=TensorOut("(batch, seq, d_head)"),
    cases=[Case(f"random sizes, draw {n + 1}", _rope_case(1000 + 17 * n)) for n in range(3)]
    + [Case("a longer sequence (12 to 24 positions)", _rope_case(1051, long=True))],
    mistakes=ROPE_MISTAKES,
    success="Every pair turns by m·θ_i: scores between your queries and keys now depend on the offset only.",
    reference=lambda x: _rope(x),
    atol=1e-5,
)


# --- rope_attention ---------------------------------------------------------------------------------------------
def _attention(queries, keys, values, rotate_values=False):
    scores = _rope(queries) @ _rope(keys).transpose(-2, -1) / math.sqrt(queries.shape[-1])
    return torch.softmax(scores, dim=-1) @ (_rope(values) if rotate_values else values)


def _attention_case(seed, long=False):
    def build():
        batch, seq, d_head = _sizes(seed, long)
        g = generator(seed + 2)
        q, k, v = (torch.randn(batch, seq, d_head, generator=g) for _ in range(3))
        return (q, k, v), _attention(q, k, v)

    return build


def attention_values_rotated(queries, keys, values):
    return _attention(queries, keys, values, rotate_values=True)


def attention_no_rope(queries, keys, values):
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1])
    return torch.softmax(scores, dim=-1) @ values


def attention_only_queries(queries, keys, values):
    scores = _rope(queries) @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1])
    return torch.softmax(scores, dim=-1) @ values


def attention_softmax_over_queries(queries, keys, values):
    scores = _rope(queries) @ _rope(keys).transpose(-2, -1) / math.sqrt(queries.shape[-1])
    return torch.softmax(scores, dim=-2) @ values


def attention_no_scaling(queries, keys, values):
    scores = _rope(queries) @ _rope(keys).transpose(-2, -1)
    return torch.softmax(scores, dim=-1) @ values


ATTENTION_MISTAKES = [
    Mistake(
        "softmax_over_queries",
        "the softmax runs over the queries' axis (dim=-2) instead of the keys'",
        "Each query's weights over the keys must sum to 1: the scores are (batch, seq_q, seq_k), so take the softmax "
        "over the last axis, dim=-1.",
        attention_softmax_over_queries,
    ),
    Mistake(
        "values_rotated",
        "the values are rotated too",
        "RoPE turns the queries and the keys, because only their dot product should see positions. The values carry "
        "content: multiply the weights by the values as they are.",
        attention_values_rotated,
    ),
    Mistake(
        "keys_not_rotated",
        "only the queries are rotated",
        "Turn the keys as well: the offset m − n appears only when both sides of the dot product are turned.",
        attention_only_queries,
    ),
    Mistake(
        "no_rotation",
        "neither queries nor keys are rotated",
        "Call your apply_rope on the queries and on the keys before the scores.",
        attention_no_rope,
    ),
    Mistake(
        "no_scaling",
        "the scores are not divided by √d_k",
        "Divide the scores by the square root of d_k, the size of each query and key vector, as in notebook 02.",
        attention_no_scaling,
    ),
]

ATTENTION_SPEC = CheckSpec(
    name="check_rope_attention",
    function="rope_attention",
    arg_names=("queries", "keys", "values"),
    output=TensorOut("(batch, seq, d_v)"),
    cases=[Case(f"random sizes, draw {n + 1}", _attention_case(2000 + 31 * n)) for n in range(3)]
    + [Case("a longer sequence (12 to 24 positions)", _attention_case(2093, long=True))],
    mistakes=ATTENTION_MISTAKES,
    success="Rotated queries and keys, plain values: attention with rotary positions.",
    reference=lambda q, k, v: _attention(q, k, v),
)


# --- online_softmax_step ----------------------------------------------------------------------------------------
def _step_case(seed, first_block: bool = False, offset: float = 0.0, sizes: tuple[int, int, int] | None = None):
    """A random state and block; ``offset`` lifts every score (of the old block and the new), e.g. past 88, where
    ``exp`` of a score overflows float32 unless the maximum is subtracted first. ``sizes``: (rows, tile, d_v), drawn
    from 2–6 (all three different) when not given."""

    def build():
        g = generator(seed)
        drawn = (2 + int(v) for v in torch.randperm(5, generator=g)[:3])
        rows, tile, d_v = sizes or drawn
        if first_block:
            running_max, running_sum, output = (
                torch.full((rows,), float("-inf")),
                torch.zeros(rows),
                torch.zeros(rows, d_v),
            )
        else:  # a state after an earlier block, whose maximum the new block beats in some rows and not in others
            old = torch.randn(rows, tile + 1, generator=g) * 2 + offset
            running_max, running_sum, output = reference_step(
                torch.full((rows,), float("-inf")),
                torch.zeros(rows),
                torch.zeros(rows, d_v),
                old,
                torch.randn(tile + 1, d_v, generator=g),
            )
        scores = torch.randn(rows, tile, generator=g) * 2 + torch.linspace(-3, 3, rows)[:, None] + offset
        if first_block:  # a row of only negative scores: a first block started from max 0 instead of −inf differs
            scores[0] -= scores[0].amax().clamp_min(0) + 1
        else:  # whatever the salt: the new block beats the old maximum in the last row and not in the first
            scores[-1, 0] = scores[-1, 0].clamp_min(running_max[-1] + 1)
            scores[0] = scores[0].clamp_max(running_max[0] - 1)
        values = torch.randn(tile, d_v, generator=g)
        args = (running_max, running_sum, output, scores, values)
        return args, reference_step(*args)

    return build


def _step(running_max, running_sum, output, scores, values, sum_rescale=True, output_rescale=True, old_max=False):
    new_max = running_max if old_max else torch.maximum(running_max, scores.amax(dim=-1))
    if old_max:
        new_max = torch.where(torch.isinf(running_max), scores.amax(dim=-1), running_max)
    rescale = torch.exp(running_max - new_max)
    weights = torch.exp(scores - new_max[:, None])
    new_sum = (rescale if sum_rescale else 1.0) * running_sum + weights.sum(-1)
    new_output = (rescale[:, None] if output_rescale else 1.0) * output + weights @ values
    return new_max, new_sum, new_output


def step_no_sum_rescale(running_max, running_sum, output, scores, values):
    return _step(running_max, running_sum, output, scores, values, sum_rescale=False)


def step_no_output_rescale(running_max, running_sum, output, scores, values):
    return _step(running_max, running_sum, output, scores, values, output_rescale=False)


def step_no_rescale(running_max, running_sum, output, scores, values):
    return _step(running_max, running_sum, output, scores, values, sum_rescale=False, output_rescale=False)


def step_old_max(running_max, running_sum, output, scores, values):
    return _step(running_max, running_sum, output, scores, values, old_max=True)


def step_inverted_factor(running_max, running_sum, output, scores, values):
    new_max = torch.maximum(running_max, scores.amax(dim=-1))
    rescale = torch.exp(new_max - running_max)  # e^(m' - m): the inverse of the right factor
    weights = torch.exp(scores - new_max[:, None])
    return new_max, rescale * running_sum + weights.sum(-1), rescale[:, None] * output + weights @ values


def step_weights_old_max(running_max, running_sum, output, scores, values):
    new_max = torch.maximum(running_max, scores.amax(dim=-1))
    rescale = torch.exp(running_max - new_max)
    weights = torch.exp(scores - running_max[:, None])  # against the old maximum m, not m'
    return new_max, rescale * running_sum + weights.sum(-1), rescale[:, None] * output + weights @ values


def step_output_kept_normalised(running_max, running_sum, output, scores, values):
    """Treats the output as a running average (already divided by the sum) and keeps it one."""
    new_max, new_sum, _ = _step(running_max, running_sum, output, scores, values)
    rescale = torch.exp(running_max - new_max)
    weights = torch.exp(scores - new_max[:, None])
    return new_max, new_sum, (rescale[:, None] * running_sum[:, None] * output + weights @ values) / new_sum[:, None]


def step_normalised_output(running_max, running_sum, output, scores, values):
    new_max, new_sum, new_output = _step(running_max, running_sum, output, scores, values)
    return new_max, new_sum, new_output / new_sum[:, None]


def _probe_sum_only(value, args) -> bool:
    """Right max and output, and the sum is exactly the old sum, not rescaled, plus the new block's terms (a sum
    that is wrong in another way, say without the new block, is not this mistake)."""
    expected = reference_step(*args)
    unrescaled = step_no_sum_rescale(*args)[1]
    return (
        isinstance(value, tuple)
        and len(value) == 3
        and all(isinstance(v, torch.Tensor) for v in value)
        and value[1].shape == expected[1].shape
        and torch.allclose(value[0], expected[0])
        and torch.allclose(value[2], expected[2], atol=1e-5)
        and not torch.allclose(value[1], expected[1], atol=1e-5)
        and torch.allclose(value[1], unrescaled, atol=1e-5, rtol=1e-4)
    )


STEP_MISTAKES = [
    Mistake(
        "sum_not_rescaled",
        "the running sum is not rescaled when the maximum grows",
        "Every term already in the running sum was e^(s − m) with the old maximum m. Multiply the old sum by "
        "e^(m − m_new) before adding the new block's e^(s − m_new).",
        step_no_sum_rescale,
        probe=_probe_sum_only,
    ),
    Mistake(
        "output_not_rescaled",
        "the running output is not rescaled when the maximum grows",
        "The output holds Σ e^(s − m) v with the old maximum m: multiply it by e^(m − m_new) (one factor per row, "
        "so add an axis: rescale[:, None]) before adding the new block's weights @ values.",
        step_no_output_rescale,
    ),
    Mistake(
        "nothing_rescaled",
        "neither the running sum nor the running output is rescaled when the maximum grows",
        "Both were computed relative to the old maximum m: multiply both by e^(m − m_new) before adding the new block.",
        step_no_rescale,
    ),
    Mistake(
        "max_before_block",
        "the maximum is taken before the new block is seen",
        "The new maximum must include the new scores: m_new = max(m, max of this block's scores per row). Otherwise "
        "e^(s − m) can overflow when a later block holds a larger score.",
        step_old_max,
    ),
    Mistake(
        "output_normalised",
        "the output is divided by the running sum at every step",
        "Keep the output unnormalised (Σ e^(s − m) v); the division by the sum happens once, after the last block.",
        step_normalised_output,
    ),
    Mistake(
        "inverted_factor",
        "the old sum and output are multiplied by e^(m_new − m) instead of e^(m − m_new)",
        "The old terms were e^(s − m); relative to the larger m_new they are e^(s − m_new) = e^(m − m_new)·e^(s − m): "
        "the factor is at most 1 (it shrinks the old terms) and 0 on the first block, where m = −inf.",
        step_inverted_factor,
    ),
    Mistake(
        "weights_old_max",
        "the new block's weights are e^(s − m) with the old maximum instead of e^(s − m_new)",
        "Once the old sum and output are moved to the new maximum, the new block's terms must use it too: "
        "e^(scores − m_new[:, None]). With the old one they do not match, and on the first block (m = −inf) they "
        "overflow.",
        step_weights_old_max,
    ),
    Mistake(
        "output_kept_normalised",
        "the output is kept as a running average (divided by the sum) instead of unnormalised",
        "The output in this state is Σ e^(s − m) v, not yet divided by anything: rescale it by e^(m − m_new) and add "
        "weights @ values, without multiplying by the old sum or dividing by the new one. The division happens "
        "once, after the last block.",
        step_output_kept_normalised,
    ),
]

STEP_SPEC = CheckSpec(
    name="check_online_softmax_step",
    function="online_softmax_step",
    own=("course_lib.tiled_attention", "online_softmax_step"),
    arg_names=("running_max", "running_sum", "output", "scores", "values"),
    output=TupleOut((("running_max", "(rows,)"), ("running_sum", "(rows,)"), ("output", "(rows, d_v)"))),
    cases=[
        Case("a state after one block, random sizes", _step_case(3000)),
        Case("another state, random sizes", _step_case(3017)),
        Case("the first block (max = −inf, sum = 0)", _step_case(3031, first_block=True)),
        # sizes above the others' 2-6: whatever the salt, no size is the same in every case
        Case("scores around 100, where exp(score) overflows float32", _step_case(3049, offset=100.0, sizes=(7, 8, 9))),
    ],
    mistakes=STEP_MISTAKES,
    success="Max, sum and output all follow the new block: run it over every tile and output / sum is the softmax.",
)


__all__ = export_checks(globals())  # check_* functions, one per CheckSpec above
