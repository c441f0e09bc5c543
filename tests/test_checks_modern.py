"""Exercise 10's checks: the solutions pass, and over 20 wrong versions fail with a message that names the mistake."""

import math

import pytest
import torch

from course_lib.checks import modern
from course_lib.checks.core import run_check
from course_lib.rotary import apply_rotary


def solution_rope(x):
    return apply_rotary(x, pairing="interleaved")


def online_softmax_step(running_max, running_sum, output, scores, values):
    """The learner's step, written out (course_lib's own ``online_softmax_step`` is what the check refuses)."""
    new_max = torch.maximum(running_max, scores.amax(dim=-1))
    rescale = torch.exp(running_max - new_max)
    weights = torch.exp(scores - new_max[..., None])
    return new_max, rescale * running_sum + weights.sum(-1), rescale[..., None] * output + weights @ values


def solution_attention(queries, keys, values):
    scores = solution_rope(queries) @ solution_rope(keys).transpose(-2, -1) / math.sqrt(queries.shape[-1])
    return torch.softmax(scores, dim=-1) @ values


CATALOGUED = [
    (spec, mistake.key, buggy)
    for spec in (modern.ROPE_SPEC, modern.ATTENTION_SPEC, modern.STEP_SPEC)
    for mistake in spec.mistakes
    for buggy in (mistake.example, *mistake.variants)
]


def test_the_solutions_pass():
    assert run_check(modern.ROPE_SPEC, solution_rope, verbose=False).passed
    assert run_check(modern.ATTENTION_SPEC, solution_attention, verbose=False).passed
    assert run_check(modern.STEP_SPEC, online_softmax_step, verbose=False).passed


@pytest.mark.parametrize("spec, key, buggy", CATALOGUED, ids=[f"{s.name}-{k}" for s, k, _ in CATALOGUED])
def test_each_catalogued_mistake_is_named(spec, key, buggy):
    result = run_check(spec, buggy, verbose=False)
    assert not result.passed and result.mistake == key
    title = next(m.title for m in spec.mistakes if m.key == key)
    assert title in result.message


# wrong versions that are not in the catalogue: they must fail, with no mistake they do not make
def rope_float64(x):
    return solution_rope(x.double())


def rope_last_pair_only(x):
    out = x.clone()
    out[..., -2:] = solution_rope(x)[..., -2:]
    return out


def rope_base_1000(x):
    a, b = x[..., 0::2], x[..., 1::2]
    angles = torch.arange(x.shape[-2])[:, None] * 1000.0 ** (-torch.arange(0, x.shape[-1], 2) / x.shape[-1])
    return torch.stack([a * angles.cos() - b * angles.sin(), a * angles.sin() + b * angles.cos()], -1).flatten(-2)


def rope_halves_output(x):
    turned = solution_rope(x)
    return torch.cat([turned[..., 0::2], turned[..., 1::2]], dim=-1)


def rope_transposed(x):
    return solution_rope(x).transpose(-2, -1)


def attention_causal(queries, keys, values):
    scores = solution_rope(queries) @ solution_rope(keys).transpose(-2, -1) / math.sqrt(queries.shape[-1])
    mask = torch.ones(scores.shape[-2:], dtype=torch.bool).triu(1)
    return torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1) @ values


def attention_softmax_wrong_axis(queries, keys, values):
    scores = solution_rope(queries) @ solution_rope(keys).transpose(-2, -1) / math.sqrt(queries.shape[-1])
    return torch.softmax(scores, dim=-2) @ values


def attention_returns_weights(queries, keys, values):
    scores = solution_rope(queries) @ solution_rope(keys).transpose(-2, -1) / math.sqrt(queries.shape[-1])
    return torch.softmax(scores, dim=-1)


def step_sum_without_new_block(running_max, running_sum, output, scores, values):
    new_max, new_sum, new_output = online_softmax_step(running_max, running_sum, output, scores, values)
    return new_max, torch.exp(running_max - new_max) * running_sum, new_output


def step_rescale_inverted(running_max, running_sum, output, scores, values):
    new_max = torch.maximum(running_max, scores.amax(-1))
    rescale = torch.exp(new_max - running_max).nan_to_num(posinf=0.0)
    weights = torch.exp(scores - new_max[:, None])
    return new_max, rescale * running_sum + weights.sum(-1), rescale[:, None] * output + weights @ values


def step_global_max(running_max, running_sum, output, scores, values):
    new_max = torch.maximum(running_max, scores.max()).expand_as(running_max)
    rescale = torch.exp(running_max - new_max)
    weights = torch.exp(scores - new_max[:, None])
    return new_max, rescale * running_sum + weights.sum(-1), rescale[:, None] * output + weights @ values


def step_exponentials_not_shifted(running_max, running_sum, output, scores, values):
    """exp of the raw scores, divided by exp of the maximum afterwards: right until a score passes ~88 in float32."""
    new_max = torch.maximum(running_max, scores.amax(-1))
    rescale = torch.exp(running_max) / torch.exp(new_max)
    weights = torch.exp(scores) / torch.exp(new_max)[:, None]
    return new_max, rescale * running_sum + weights.sum(-1), rescale[:, None] * output + weights @ values


def step_two_values(running_max, running_sum, output, scores, values):
    return online_softmax_step(running_max, running_sum, output, scores, values)[:2]


UNCATALOGUED = [
    (modern.ROPE_SPEC, rope_float64),
    (modern.ROPE_SPEC, rope_last_pair_only),
    (modern.ROPE_SPEC, rope_base_1000),
    (modern.ROPE_SPEC, rope_halves_output),
    (modern.ROPE_SPEC, rope_transposed),
    (modern.ATTENTION_SPEC, attention_causal),
    (modern.ATTENTION_SPEC, attention_returns_weights),
    (modern.STEP_SPEC, step_sum_without_new_block),
    (modern.STEP_SPEC, step_global_max),
    (modern.STEP_SPEC, step_two_values),
    (modern.STEP_SPEC, step_exponentials_not_shifted),  # passed while every score stayed below ~10
]


@pytest.mark.parametrize("spec, buggy", UNCATALOGUED, ids=[f.__name__ for _, f in UNCATALOGUED])
def test_other_wrong_versions_fail(spec, buggy):
    result = run_check(spec, buggy, verbose=False)
    assert not result.passed, buggy.__name__
    catalogue = {mistake.key for mistake in spec.mistakes}
    assert result.mistake not in catalogue, result.mistake  # none of these makes a catalogued mistake


def test_there_are_at_least_twenty_wrong_versions():
    assert len(CATALOGUED) + len(UNCATALOGUED) >= 20


def test_every_salt_gives_a_state_whose_maximum_the_new_block_beats_in_some_rows_only():
    """Whatever the salt, the online-step cases after an earlier block have a row whose maximum the new block beats
    and one whose maximum it does not: otherwise "the maximum is not carried forward" passes those cases and is first
    caught on the first block as "not finite" (salt 762 did that: 3 salts in 2,000)."""
    from course_lib.checks.spec import salt_scope

    later = [case for case in modern.STEP_SPEC.cases if "first block" not in case.label]
    for salt in range(300):
        with salt_scope(salt):
            for case in later:
                (running_max, _, _, scores, _), _ = case.build()
                beaten = scores.amax(dim=-1) > running_max
                assert beaten.any() and not beaten.all(), (salt, case.label, beaten)


@pytest.mark.parametrize(
    "spec, buggy, key",
    [
        (modern.ATTENTION_SPEC, attention_softmax_wrong_axis, "softmax_over_queries"),
        (modern.STEP_SPEC, step_rescale_inverted, "inverted_factor"),  # its first block patched to look right
    ],
    ids=["softmax_over_queries", "inverted_factor"],
)
def test_once_uncatalogued_versions_are_now_named(spec, buggy, key):
    result = run_check(spec, buggy, verbose=False)
    assert not result.passed and result.mistake == key, (result.mistake, result.message)
