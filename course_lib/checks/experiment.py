"""The experiment of exercise 05: predict, change one setting, run a short training, compare with the prediction.

Learner side:

    my_prediction() -> "lower" | "about the same" | "higher"     written BEFORE running anything
    experiment(seed) -> losses (steps,)                            short_training(seed, ...) with ONE setting changed

``short_training`` trains a deep stack of pre-LN feed-forward sublayers (each ``x + FFN(LayerNorm(x))``, the
pieces of exercises 05 and 06) on a small, fixed regression task, for a few seconds at most on a CPU, and returns
the loss of every step. ``check_experiment`` calls the learner's ``experiment`` with seeds of its own and compares
what it returns with its own run of ``short_training(seed, residual=False)``: a result typed in by hand, a run of
the baseline, a run with another setting changed or a run that ignores the seed does not pass (the grader reruns
the training on its side, too). ``compare_with_prediction`` then measures the effect on several seeds and says
whether it is what the learner predicted.
"""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F

from ..interactive import record
from .calling import _is_stub
from .core import export_checks, run_check
from .judging import explains
from .spec import ICONS, NOT_IMPLEMENTED, PASSED, Case, CheckResult, CheckSpec, Mistake, TensorOut, generator

#: The baseline: what ``short_training`` does when no setting is changed.
BASELINE = {"residual": True, "layer_norm": True, "n_blocks": 8, "steps": 20}
CHOICES = ("lower", "about the same", "higher")
#: Outcome of one seed: ratio r = final loss of the changed run / final loss of the baseline.
LOWER_BELOW, HIGHER_ABOVE = 0.8, 1.25
COMPARE_SEEDS = (3, 8, 13)  # the measurement behind the claim compare_with_prediction prints


@functools.lru_cache(maxsize=64)
def _train(seed: int, residual: bool, layer_norm: bool, n_blocks: int, steps: int) -> torch.Tensor:
    d, n, lr = 8, 64, 1e-2
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=gen)  # (n, d) inputs
    a = torch.randn(d, d, generator=gen) / math.sqrt(d)
    b = torch.randn(d, d, generator=gen) / math.sqrt(d)
    y = torch.tanh(2 * x @ a) @ b  # (n, d) a smooth non-linear target
    y = (y - y.mean(0)) / y.std(0)
    bound_1, bound_2 = 1 / math.sqrt(d), 1 / math.sqrt(2 * d)  # nn.Linear's default initialisation range

    def uniform(*shape, bound):
        return (torch.rand(*shape, generator=gen) * 2 - 1) * bound

    weights = []
    for _ in range(n_blocks):  # W_1 (d, 2d), b_1, W_2 (2d, d), b_2: the feed-forward network of exercise 06
        weights += [uniform(d, 2 * d, bound=bound_1), uniform(2 * d, bound=bound_1)]
        weights += [uniform(2 * d, d, bound=bound_2), uniform(d, bound=bound_2)]
    weights += [uniform(d, d, bound=bound_1), torch.zeros(d)]  # the read-out layer
    weights = [w.requires_grad_() for w in weights]
    optimizer = torch.optim.Adam(weights, lr=lr, foreach=True)
    losses = []
    with torch.enable_grad():
        for _ in range(steps):
            h = x
            for i in range(n_blocks):
                w_1, b_1, w_2, b_2 = weights[4 * i : 4 * i + 4]
                normed = F.layer_norm(h, (d,)) if layer_norm else h
                out = torch.relu(normed @ w_1 + b_1) @ w_2 + b_2
                h = h + out if residual else out  # pre-LN: x + FFN(LayerNorm(x))
            if layer_norm:
                h = F.layer_norm(h, (d,))  # the final LayerNorm of a pre-LN stack
            loss = F.mse_loss(h @ weights[-2] + weights[-1], y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            losses.append(loss.detach())
    return torch.stack(losses).float()


def short_training(
    seed: int, residual: bool = True, layer_norm: bool = True, n_blocks: int = 8, steps: int = 20
) -> torch.Tensor:
    """Train a stack of ``n_blocks`` pre-LN blocks ``x + FFN(LayerNorm(x))`` for ``steps`` Adam steps; seeded.

    The task: fit a fixed smooth function of 64 random 8-dimensional inputs (mean squared error; predicting the
    mean scores 1.0). Everything (data, weights) is drawn from ``seed``; the global random state is not touched.
    ``residual=False`` drops the ``x +`` of every block, ``layer_norm=False`` every LayerNorm.
    Returns the loss of every step, ``(steps,)`` float32.
    """
    for name, value in (("residual", residual), ("layer_norm", layer_norm)):
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be True or False, got {value!r}")
    for name, value, low, high in (("n_blocks", n_blocks, 1, 32), ("steps", steps, 1, 200), ("seed", seed, 0, 2**31)):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ValueError(f"{name} must be a whole number from {low} to {high}, got {value!r}")
    return _train(seed, residual, layer_norm, n_blocks, steps).clone()


def final_loss(losses: torch.Tensor) -> float:
    """The mean loss of the last 3 steps: what the comparison looks at."""
    return float(losses[-3:].double().mean())


# --------------------------------------------------------------------------- check_experiment


def check_seed(number: int) -> int:
    """The seed of test ``number``, drawn from the check call's salt (the source holds no seed to copy a run of)."""
    return 100 + number + 10 * int(torch.randint(10**6, (), generator=generator(number)))  # distinct, never 0–99


def _case(number: int):
    def build():
        seed = check_seed(number)
        return (seed,), short_training(seed, residual=False)

    return build


def experiment_baseline(seed):
    return short_training(seed)


def experiment_no_layer_norm(seed):
    return short_training(seed, layer_norm=False)


def experiment_two_settings(seed):
    return short_training(seed, residual=False, layer_norm=False)


def experiment_fixed_seed(seed):
    return short_training(0, residual=False)


def _fixed_seed_probe(value, args) -> bool:
    (seed,) = args
    expected = short_training(seed, residual=False)
    return any(
        explains(value, short_training(other, residual=False), expected, 1e-4, 1e-3)
        for other in (0, 1, 2, 42)
        if other != seed
    )


def experiment_other_budget(seed):
    return short_training(seed, residual=False, steps=40)


def _budget_probe(value, args) -> bool:
    return isinstance(value, torch.Tensor) and value.dim() == 1 and value.shape[0] != BASELINE["steps"]


MISTAKES = [
    Mistake(
        "nothing_changed",
        "you ran the baseline: no setting is changed",
        "The experiment changes exactly one setting of short_training: turn the residual connections off.",
        experiment_baseline,
    ),
    Mistake(
        "other_setting",
        "you turned off the LayerNorm, not the residual connections",
        "This experiment is about the residual connection (the `x +` of every block); leave the LayerNorm on.",
        experiment_no_layer_norm,
    ),
    Mistake(
        "two_settings",
        "you changed two settings at once (the residual and the LayerNorm)",
        "Change one setting only: with two changes at once you cannot tell which one caused the difference.",
        experiment_two_settings,
    ),
    Mistake(
        "ignores_seed",
        "the run ignores the seed it is given",
        "Pass the seed argument on to short_training: the check runs your experiment with seeds of its own and "
        "compares with its own runs.",
        experiment_fixed_seed,
        probe=_fixed_seed_probe,
    ),
    Mistake(
        "other_budget",
        "the training runs for another number of steps than the baseline",
        "Keep everything else as in the baseline (the default steps and n_blocks), so that only the residual "
        "differs between the two runs.",
        experiment_other_budget,
        probe=_budget_probe,
    ),
]


SPEC = CheckSpec(
    name="check_experiment",
    function="experiment",
    arg_names=("seed",),
    output=TensorOut("(steps,)"),
    cases=[Case("a seed of the check's own", _case(1)), Case("another seed of the check's own", _case(2))],
    mistakes=MISTAKES,
    success="The run is the baseline with one setting changed: the residual connections are off.",
    atol=1e-4,
    rtol=1e-3,
    time_limit=60.0,
)


# --------------------------------------------------------------------------- compare_with_prediction


def outcome(ratio: float) -> str:
    """``"lower"``, ``"about the same"`` or ``"higher"`` for r = changed / baseline final loss."""
    if not math.isfinite(ratio) or ratio > HIGHER_ABOVE:
        return "higher"
    return "lower" if ratio < LOWER_BELOW else "about the same"


def measure(seeds=COMPARE_SEEDS) -> list[tuple[int, float, float, str]]:
    """``(seed, baseline final loss, final loss without the residual, outcome)`` for every seed."""
    rows = []
    for seed in seeds:
        base, changed = final_loss(short_training(seed)), final_loss(short_training(seed, residual=False))
        rows.append((seed, base, changed, outcome(changed / base)))
    return rows


def _result(passed: bool, status: str, text: str) -> CheckResult:
    icon = ICONS[PASSED] if passed else ICONS[NOT_IMPLEMENTED] if status == NOT_IMPLEMENTED else "❌"
    return CheckResult("compare_with_prediction", passed, status, f"{icon} compare_with_prediction: {text}")


def _prediction(my_prediction):
    """The learner's prediction, or a CheckResult saying why there is none."""
    if not callable(my_prediction):
        return None, _result(False, "failed", "pass your function my_prediction itself, without calling it.")
    try:
        value = my_prediction()
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        if _is_stub(exc):
            return None, _result(
                False, NOT_IMPLEMENTED, "not implemented yet: write your prediction in my_prediction first."
            )
        return None, _result(False, "error", f"my_prediction raised {type(exc).__name__}: {exc}")
    text = " ".join(str(value).lower().split()) if isinstance(value, str) else None
    if text not in CHOICES:
        return None, _result(
            False, "failed", f"my_prediction returned {value!r}; return one of {', '.join(map(repr, CHOICES))}."
        )
    return text, None


def compare_with_prediction(my_prediction, experiment, verbose: bool = True) -> CheckResult:
    """Measure the effect of the change on several seeds and compare it with ``my_prediction()``.

    ``passed`` is True when the experiment checks out and the prediction matches what most seeds show; a wrong
    prediction is reported (it is what the experiment is for), never hidden.
    """
    prediction, problem = _prediction(my_prediction)
    if problem is None:
        ran = run_check(SPEC, experiment, verbose=False)
        if not ran.passed:
            status = NOT_IMPLEMENTED if ran.status == NOT_IMPLEMENTED else "failed"
            problem = _result(False, status, "run the experiment first: check_experiment(experiment) must pass.")
    if problem is not None:
        result = problem
    else:
        rows = measure()
        counts = {choice: sum(row[3] == choice for row in rows) for choice in CHOICES}
        measured = max(CHOICES, key=lambda choice: counts[choice])
        base = [row[1] for row in rows]
        changed = [row[2] for row in rows]
        ratios = [row[2] / row[1] for row in rows]
        seeds = ", ".join(str(row[0]) for row in rows)
        text = (
            f'you predicted "{prediction}". Measured on seeds {seeds} (mean loss of the last 3 of '
            f"{BASELINE['steps']} steps, {BASELINE['n_blocks']} blocks): {min(base):.2f}–{max(base):.2f} with the "
            f"residual, {min(changed):.2f}–{max(changed):.2f} without it, {min(ratios):.1f}–{max(ratios):.1f} times "
            f'the baseline: "{measured}" on {counts[measured]} of {len(rows)} seeds. '
        )
        if prediction == measured:
            result = _result(True, PASSED, text + "Your prediction matches.")
        else:
            result = _result(
                False,
                "failed",
                text + "That is not what you predicted, which is what experiments are for: look at the two loss "
                "curves and work out why before you change your prediction.",
            )
    if verbose:
        record.check_attempt(result)
        print(result.message)
    return result


__all__ = export_checks(globals())  # check_* functions, one per CheckSpec above
