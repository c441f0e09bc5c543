"""Messages that are true (issue 26, item 2), on wrong solutions written the way a learner errs.

- a catalogued mistake is named only when its buggy version reproduces the learner's output on every failing test;
- ±inf and NaN entries in the wrong places are said to be exactly that (how many, the first index, what was expected
  there), never a "small difference";
- a function with several outputs is told which output is wrong.
"""

from __future__ import annotations

import dataclasses
import re

import pytest
import torch

from course_lib.checks import EXERCISES, SPECS, check_kv_cache_step, check_top_k_filter, check_top_p_filter
from course_lib.checks.calling import _clone
from course_lib.checks.core import run_check
from course_lib.checks.judging import _passes, _recognise, same
from course_lib.checks.language_model import _step
from course_lib.checks.spec import salt_scope

NEG_INF = float("-inf")


# ------------------------------------------------------------------------ wrong solutions, as a learner writes them


def top_p_on_logits(logits, p):
    """Top-p with the cumulative sum taken over the sorted *logits*, not their probabilities."""
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    before = sorted_logits.cumsum(dim=-1) - sorted_logits
    keep = torch.zeros_like(before, dtype=torch.bool).scatter(-1, order, before < p)
    return logits.masked_fill(~keep, NEG_INF)


def top_p_own_probability(logits, p):
    """Keeps the tokens whose own probability is at least p."""
    return logits.masked_fill(torch.softmax(logits, dim=-1) < p, NEG_INF)


def top_p_softened(logits, p):
    """Decides on probabilities at temperature 2, so it keeps more tokens than the nucleus."""
    probs, order = torch.softmax(logits / 2, dim=-1).sort(dim=-1, descending=True)
    keep = torch.zeros_like(probs, dtype=torch.bool).scatter(-1, order, probs.cumsum(-1) - probs < p)
    return logits.masked_fill(~keep, NEG_INF)


def top_k_with_nan(logits, k):
    """Multiplies by a 0/1 mask and adds -inf · (1 - mask): 0 · -inf is NaN at every kept token."""
    kth = logits.topk(k, dim=-1).values[..., -1:]
    keep = (logits >= kth).to(logits.dtype)
    return logits * keep + (1 - keep) * NEG_INF


def kv_step_appended_twice(lm, cache_keys, cache_values, new_tokens):
    """Attends right, then appends the new keys and values a second time on return."""
    logits, keys, values = _step(lm, cache_keys, cache_values, new_tokens)
    n_new = new_tokens.shape[1]
    return logits, torch.cat([keys, keys[:, -n_new:]], 1), torch.cat([values, values[:, -n_new:]], 1)


def kv_step_old_cache(lm, cache_keys, cache_values, new_tokens):
    """Attends right, but returns the cache it was given."""
    logits, _, _ = _step(lm, cache_keys, cache_values, new_tokens)
    return logits, cache_keys, cache_values


# ------------------------------------------------------------------------------------------------------ helpers

FALSE_COMFORT = ("difference this small", "1.8e+308", "float16", " inf (", "by inf")


def assert_named_mistake_reproduces_every_failure(check_name, function, result):
    """If the message names a catalogued mistake, its buggy version gives the learner's output on every failing test."""
    spec = SPECS[check_name]
    mistake = next((m for m in spec.mistakes if m.key == result.mistake), None)
    if mistake is None:
        return
    for case in spec.cases:
        args, expected = case.build()
        value = function(*_clone(args))
        if not same(value, expected, spec.atol, spec.rtol):
            assert _recognise(spec, mistake, value, args, expected), (check_name, mistake.key, case.label)


def first_test(check_name):
    args, expected = SPECS[check_name].cases[0].build()
    return args, expected


def first_failed_test(check_name, function):
    """``(number, args, expected)`` of the first test ``function`` gets wrong (build it in the check's salt scope)."""
    for number, case in enumerate(SPECS[check_name].cases, 1):
        args, expected = case.build()
        if not _passes(SPECS[check_name], function(*_clone(args)), expected):
            return number, args, expected
    raise AssertionError(f"{function.__name__} passes every test of {check_name}")


def step_sum_without_new_block(running_max, running_sum, output, scores, values):
    """The old sum rescaled, the new block's terms forgotten."""
    new_max = torch.maximum(running_max, scores.amax(-1))
    rescale = torch.exp(running_max - new_max)
    weights = torch.exp(scores - new_max[:, None])
    return new_max, rescale * running_sum, rescale[:, None] * output + weights @ values


def step_block_summed_over_everything(running_max, running_sum, output, scores, values):
    """The old sum rescaled, plus the sum of the whole block instead of each row's."""
    new_max = torch.maximum(running_max, scores.amax(-1))
    rescale = torch.exp(running_max - new_max)
    weights = torch.exp(scores - new_max[:, None])
    return new_max, rescale * running_sum + weights.sum(), rescale[:, None] * output + weights @ values


def pe_floor_division(seq_len, d_model):
    """Angles floored: integer positions // the rates (the base is right, the division is not)."""
    rates = 10000 ** (torch.arange(0, d_model, 2) / d_model)
    angles = (torch.arange(seq_len)[:, None] // rates).float()
    return torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(-2)


def residual_flag_read_backwards(x, sublayer, norm, norm_first=False):
    """Uses norm_first, the wrong way round."""
    return x + sublayer(norm(x)) if not norm_first else norm(x + sublayer(x))


# -------------------------------------------------------------------------------------------------------- tests


@pytest.mark.parametrize("function", [step_sum_without_new_block, step_block_summed_over_everything])
def test_a_running_sum_that_is_rescaled_is_not_told_it_is_not_rescaled(function):
    result = run_check(SPECS["check_online_softmax_step"], function, verbose=False)
    assert not result.passed
    assert result.mistake != "sum_not_rescaled", result.message
    assert "`running_sum`" in result.message


def test_a_positional_table_wrong_in_another_way_is_not_told_its_base_is_wrong():
    result = run_check(SPECS["check_positional_encoding"], pe_floor_division, verbose=False)
    assert not result.passed
    assert result.mistake != "wrong_base", result.message
    assert "base" not in result.message


def test_a_flag_read_backwards_is_not_told_it_is_ignored():
    result = run_check(SPECS["check_sublayer_connection"], residual_flag_read_backwards, verbose=False)
    assert result.mistake == "ignores_norm_first"
    assert "ignored" not in result.message and "the other variant" in result.message


@pytest.mark.parametrize("function", [top_p_on_logits, top_p_own_probability, top_p_softened])
def test_top_p_wrong_rules_are_not_told_one_token_too_few(function):
    result = check_top_p_filter(function, verbose=False)
    assert not result.passed
    assert result.mistake != "one_too_few", result.message
    assert "one token too few" not in result.message
    assert_named_mistake_reproduces_every_failure("check_top_p_filter", function, result)
    for words in FALSE_COMFORT:
        assert words not in result.message, result.message


def test_minus_infinity_where_a_number_is_expected_is_counted_with_its_first_index():
    with salt_scope(3):
        result = check_top_p_filter(top_p_own_probability, verbose=False)
        number, (logits, p), expected = first_failed_test("check_top_p_filter", top_p_own_probability)
    assert f"In test {number} of" in result.message, result.message
    got = top_p_own_probability(logits.clone(), p)
    wrongly_dropped = torch.isneginf(got) & torch.isfinite(expected)
    count, first = int(wrongly_dropped.sum()), int(wrongly_dropped.nonzero()[0][0])
    entries = "entry" if count == 1 else "entries"
    assert f"-inf in {count} {entries} where the expected result has a number (first at index [{first}])" in (
        result.message
    ), result.message
    assert "0 of " not in result.message


def test_a_number_where_minus_infinity_is_expected_is_said_so():
    result = check_top_p_filter(top_p_softened, verbose=False)
    assert re.search(r"a finite number in \d+ entr(y|ies) where the expected result has -inf", result.message), (
        result.message
    )
    assert not re.search(r"\b0 of \d+ entries differ", result.message), result.message


def test_a_nan_left_by_a_top_k_filter_is_named_with_its_count_and_cause():
    result = check_top_k_filter(top_k_with_nan, verbose=False)
    (logits, k), expected = first_test("check_top_k_filter")
    nans = int(torch.isnan(top_k_with_nan(logits.clone(), k)).sum())
    assert f"NaN in {nans} entries where the expected result has a number" in result.message, result.message
    assert "0 · inf" in result.message
    for words in FALSE_COMFORT:
        assert words not in result.message, result.message


def test_a_cache_appended_twice_is_not_told_it_kept_an_earlier_call():
    result = check_kv_cache_step(kv_step_appended_twice, verbose=False)
    assert not result.passed
    assert "earlier call" not in result.message, result.message
    assert result.mistake == "appended_twice", result.message
    assert_named_mistake_reproduces_every_failure("check_kv_cache_step", kv_step_appended_twice, result)


def test_a_step_that_returns_the_old_cache_is_told_the_cache_is_wrong():
    result = check_kv_cache_step(kv_step_old_cache, verbose=False)
    assert not result.passed
    assert "`logits`: the shape is right" not in result.message
    assert "logits are right" in result.message and "cache" in result.message, result.message


def test_without_a_catalogued_mistake_a_tuple_output_names_the_wrong_item():
    """The same step judged with no catalogue: the measured message says which outputs are right and which not."""
    spec = dataclasses.replace(SPECS["check_kv_cache_step"], mistakes=[])
    message = run_check(spec, kv_step_old_cache, verbose=False).message
    assert "`logits` is right, but `keys`:" in message, message
    assert "`values` is wrong too" in message, message
    assert "`logits`: the shape is right" not in message


def test_the_grader_replays_the_same_messages():
    """The grader calls the function across the sandbox wall (``tools.grading.remote``, here answered in this
    process through the same frames and server code): it names the same mistake, or none."""
    from course_lib.checks.attention import attention_keys_not_transposed
    from course_lib.tools.grading import remote

    cases = {
        "ex08_language_model": {
            "top_p_filter": top_p_on_logits,
            "top_k_filter": top_k_with_nan,
            "kv_cache_step": kv_step_old_cache,
        },
        "ex02_attention": {"attention": attention_keys_not_transposed},
    }
    for exercise, namespace in cases.items():
        for salt in (1, 2):  # the grader harvests and judges under one salt: both sides build the same inputs
            with salt_scope(salt):
                judged = {row["check"]: row for row in remote.judge(exercise, remote.local_ask(namespace))}
            for spec in EXERCISES[exercise].specs:
                if spec.function not in namespace:
                    continue
                with salt_scope(salt):
                    local = run_check(spec, namespace[spec.function], verbose=False)
                assert f"inputs salt {salt};" in local.message
                assert (judged[spec.name]["message"], judged[spec.name]["mistake"]) == (local.message, local.mistake)
