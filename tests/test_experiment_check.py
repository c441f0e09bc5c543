"""The experiment of exercise 05 (predict, switch the residual off, train briefly, compare) is checked for real.

``check_experiment`` must not pass a run of the wrong setting or a result typed in by hand, and the effect the
comparison reports must hold with a margin: measured on seeds 0–9 under the native kernel and
``ATEN_CPU_CAPABILITY=default`` and ``avx2``, the final loss without the residual is 2.0–2.8 times the baseline's;
the outcome "higher" needs a ratio above 1.25.
"""

import pytest
import torch

from course_lib.checks import check_experiment, compare_with_prediction, short_training
from course_lib.checks import experiment as exp
from course_lib.checks.spec import salt_scope


def experiment(seed):
    return short_training(seed, residual=False)


def test_the_right_run_passes_and_the_effect_holds_on_the_notebooks_seeds():
    assert check_experiment(experiment, verbose=False).passed
    for seed, base, changed, outcome in exp.measure(exp.COMPARE_SEEDS):
        assert 1.6 < changed / base < 4.0, (seed, base, changed)
        assert outcome == "higher"


@pytest.mark.slow
def test_the_effect_holds_on_ten_seeds():
    ratios = [row[2] / row[1] for row in exp.measure(range(10))]
    assert min(ratios) > 1.6, ratios


def test_the_training_is_seeded_and_leaves_the_global_random_state_alone():
    torch.manual_seed(0)
    expected = torch.rand(2)
    torch.manual_seed(0)
    first = exp._train.__wrapped__(5, False, True, 8, 20)  # not the cached run: train again
    assert torch.equal(first, short_training(5, residual=False))
    assert torch.equal(torch.rand(2), expected)
    assert not torch.equal(short_training(5), short_training(6))


@pytest.mark.parametrize(
    "wrong, mistake",
    [
        (lambda seed: short_training(seed), "nothing_changed"),
        (lambda seed: short_training(seed, layer_norm=False), "other_setting"),
        (lambda seed: short_training(seed, residual=False, layer_norm=False), "two_settings"),
        (lambda seed: short_training(1, residual=False), "ignores_seed"),
        (lambda seed: short_training(seed, residual=False, n_blocks=8, steps=30), "other_budget"),
    ],
    ids=["baseline", "LayerNorm off", "two settings", "fixed seed", "more steps"],
)
def test_a_run_with_the_wrong_setting_does_not_pass(wrong, mistake):
    result = check_experiment(wrong, verbose=False)
    assert not result.passed and result.mistake == mistake, result.message


def test_a_result_typed_in_by_hand_does_not_pass():
    with salt_scope(11):  # one run of the check: its seeds, and the numbers of those runs, copied
        seeds = [exp.check_seed(number) for number in (1, 2)]
    typed = {seed: short_training(seed, residual=False).tolist() for seed in seeds}

    def hard_coded(seed):
        return torch.tensor(typed.get(seed, typed[seeds[0]]))

    with salt_scope(11):
        assert check_experiment(hard_coded, verbose=False).passed  # it does reproduce the run it was copied from
    with salt_scope(12):  # the next run draws other seeds
        assert not set(seeds) & {exp.check_seed(1), exp.check_seed(2)}
        result = check_experiment(hard_coded, verbose=False)
        assert not result.passed and "inputs salt 12" in result.message, result.message
        rounded = [round(value, 2) for value in typed[seeds[0]]]
        assert not check_experiment(lambda seed: torch.tensor(rounded), verbose=False).passed
        assert not check_experiment(lambda seed: torch.full((20,), 0.9), verbose=False).passed


def test_the_check_seeds_are_in_no_file():
    assert not hasattr(exp, "CHECK_SEEDS")
    with salt_scope(11):
        first = exp.check_seed(1), exp.check_seed(2)
    with salt_scope(11):
        assert (exp.check_seed(1), exp.check_seed(2)) == first  # one salt, one pair of seeds: both sides agree
    assert first[0] != first[1] and min(first) >= 100


def test_the_comparison_sets_the_outcome_next_to_the_prediction():
    right = compare_with_prediction(lambda: "higher", experiment, verbose=False)
    assert right.passed and "Your prediction matches" in right.message
    assert '"higher" on 3 of 3 seeds' in right.message
    for other in ("lower", "About the same"):
        wrong = compare_with_prediction(lambda other=other: other, experiment, verbose=False)
        assert not wrong.passed and "not what you predicted" in wrong.message
        assert f'you predicted "{other.lower()}"' in wrong.message


def test_the_comparison_needs_a_prediction_and_a_checked_run():
    def stub_prediction():
        raise NotImplementedError("my_prediction: replace this line with your code")

    def stub_experiment(seed):
        raise NotImplementedError("experiment: replace this line with your code")

    assert compare_with_prediction(stub_prediction, experiment, verbose=False).status == "not_implemented"
    assert compare_with_prediction(lambda: "higher", stub_experiment, verbose=False).status == "not_implemented"
    refused = compare_with_prediction(lambda: "higher", lambda seed: short_training(seed), verbose=False)
    assert not refused.passed and "check_experiment(experiment) must pass" in refused.message
    vague = compare_with_prediction(lambda: "it depends", experiment, verbose=False)
    assert not vague.passed and "'about the same'" in vague.message
    assert "without calling it" in compare_with_prediction("higher", experiment, verbose=False).message


@pytest.mark.parametrize("value", [-1, 1.5, True, "3"])
def test_short_training_refuses_bad_settings(value):
    with pytest.raises((TypeError, ValueError)):
        short_training(value)
