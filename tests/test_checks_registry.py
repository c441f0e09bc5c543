"""Each check is declared once, as its ``CheckSpec``; the ``check_*`` functions and the registry are made from it."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest
import torch

import course_lib.checks as checks
from course_lib.checks import CHECKS, EXERCISES, SPECS
from course_lib.checks.core import check_function, export_checks
from course_lib.checks.spec import CheckSpec, salt_scope

PACKAGE = Path(checks.__file__).parent


def declared_specs() -> dict[str, list[tuple[str, CheckSpec]]]:
    """Every distinct CheckSpec object held by a module of ``course_lib.checks``, by check name."""
    found: dict[str, dict[int, tuple[str, CheckSpec]]] = {}
    for info in pkgutil.iter_modules([str(PACKAGE)]):
        module = importlib.import_module(f"course_lib.checks.{info.name}")
        for value in vars(module).values():
            if isinstance(value, CheckSpec):
                found.setdefault(value.name, {})[id(value)] = (info.name, value)
    return {name: list(by_id.values()) for name, by_id in found.items()}


def test_no_check_is_declared_twice():
    twice = {name: [module for module, _ in specs] for name, specs in declared_specs().items() if len(specs) > 1}
    assert not twice, f"checks declared by more than one CheckSpec: {twice}"


def test_every_spec_is_an_exercise_check_and_every_registry_entry_has_its_spec():
    declared = declared_specs()
    assert set(declared) == set(SPECS), "a CheckSpec outside EXERCISES, or an exercise check with no spec"
    assert set(CHECKS) == set(SPECS)
    for name, function in CHECKS.items():
        assert function.spec is SPECS[name], name
        assert function.__name__ == name
        assert getattr(checks, name) is function, f"course_lib.checks.{name} is not the registry's function"
        (module, _), *_ = declared[name]
        assert getattr(importlib.import_module(f"course_lib.checks.{module}"), name) is function, (module, name)
    for exercise in EXERCISES.values():
        for spec in exercise.specs:
            assert SPECS[spec.name] is spec


def test_no_check_function_is_written_by_hand():
    """The ``check_*`` functions are made from the specs, so a name typed a second time cannot drift."""
    for path in PACKAGE.glob("*.py"):
        written = set(re.findall(r"^def (check_\w+)\(", path.read_text(encoding="utf-8"), flags=re.M)) & set(CHECKS)
        assert not written, f"{path.name} writes {written} by hand; declare a CheckSpec instead"


def test_a_second_spec_with_a_taken_name_is_refused():
    spec = SPECS["check_softmax"]
    assert check_function(spec) is CHECKS["check_softmax"]
    copy = dataclasses.replace(spec)
    with pytest.raises(ValueError, match="declared twice"):
        check_function(copy)
    with pytest.raises(ValueError, match="declared twice"):
        export_checks({"__name__": "somewhere", "SPEC": copy})


def test_a_check_function_reads_like_a_written_one():
    check = CHECKS["check_top_k_filter"]
    assert list(inspect.signature(check).parameters) == ["top_k_filter", "verbose"]
    assert "top_k_filter(logits, k)" in check.__doc__
    result = check(top_k_filter=lambda logits, k: logits, verbose=False)
    assert not result.passed
    with pytest.raises(TypeError):
        check()


def test_the_outcome_of_a_run_is_decided_in_one_place():
    """``exercises progress`` and ``exercises grade`` read a run's results with the same rule (``runner.RunResult``)."""
    from course_lib.tools.grading import grade, runner

    assert grade.Graded.outcome is runner.RunResult.outcome is runner.NotebookRun.outcome
    assert grade.Graded.checks_passed is runner.RunResult.checks_passed
    ok, wrong = {"passed": True}, {"passed": False}
    rows = [
        ("ran", [ok, ok], [], "pass"),
        ("ran", [ok, wrong], [], "fail"),
        ("ran", [ok, wrong], ["code cell 3: NameError: x"], "error"),
        ("ran", [], [], "error"),
        ("timeout", [ok], [], "timeout"),
        ("crashed", [ok], [], "error"),
    ]
    for status, checks_, cell_errors, outcome in rows:
        for kind in (grade.Graded, runner.NotebookRun):
            assert kind("x.ipynb", "ex01_rnn", status, checks_, cell_errors).outcome == outcome, (kind, status)


# ---------------------------------------------------------------------------------------------- sizes the cases vary


def sizes(args: tuple) -> dict[str, object]:
    """Every size a learner's function could hard-code, for one case: each dimension of each tensor argument, each
    whole-number argument, the length of each list, str or dict (token ids, a text, merges), and the sizes of a model
    or a part handed over (layers, heads, width, table length)."""
    found: dict[str, object] = {}
    for index, arg in enumerate(args):
        if isinstance(arg, bool):
            continue
        if isinstance(arg, int):
            found[f"argument {index + 1}"] = arg
        elif isinstance(arg, (list, str, dict)):
            found[f"argument {index + 1}, length"] = len(arg)
        elif isinstance(arg, torch.Tensor):
            for dim, size in enumerate(arg.shape):  # counted from the end: the feature axis is the one hard-coded
                found[f"argument {index + 1}, dimension {dim - arg.dim()}"] = size
        else:
            model = getattr(arg, "model", arg)
            for name in ("d_model", "n_layers", "n_blocks", "num_heads", "max_len", "vocab_size"):
                if isinstance(getattr(model, name, None), int):
                    found[f"argument {index + 1}.{name}"] = getattr(model, name)
    return found


#: What may stay fixed, and why.
FIXED: dict[str, set[str]] = {
    "check_kv_cache_step": {"argument 1.n_blocks"},  # the step is given one block's parts (project, readout)
}
#: Checks whose function must stay finite on large inputs (a softmax or a log-sum-exp inside): one case must have
#: entries of at least this size.
STABLE = {
    "check_softmax": 50.0,
    "check_next_token_loss": 50.0,
    "check_online_softmax_step": 50.0,
    "check_top_p_filter": 50.0,
}


def _cases(spec):
    for case in spec.cases:
        yield case.build()[0]


#: The salts the size test draws the cases at: a grade is drawn at a random salt, and a size that the cases share at
#: one salt in fifty lets a function written for that size pass one learner in fifty (prefix_matching_score's half
#: did, at 16 salts of 3,000). The cases of the experiment check train a model, so it is looked at under one salt.
SIZE_SALTS = range(40)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_size_a_function_receives_takes_two_values_at_least(name):
    """A function written for one size (d_model 8, two layers, a table of 8 positions, max_len as the length) fails:
    every dimension, count and length the checks pass takes at least two values across the cases, at every salt."""
    spec = SPECS[name]
    for salt in SIZE_SALTS if name != "check_experiment" else SIZE_SALTS[:1]:
        seen: dict[str, list] = {}
        with salt_scope(salt):
            for args in _cases(spec):
                for key, value in sizes(args).items():
                    seen.setdefault(key, []).append(value)
        fixed = {  # a size met in two cases or more, always the same
            key: values[0] for key, values in seen.items()
            if len(values) > 1 and len(set(values)) == 1 and key not in FIXED.get(name, set())
        }  # fmt: skip
        assert not fixed, f"{name} keeps these sizes fixed at salt {salt}: {fixed}"


def _model_and_tokens(args: tuple):
    """The model a case hands over (its ``max_len``) and the first token batch beside it, or None."""
    models = [getattr(a, "model", a) for a in args if isinstance(getattr(getattr(a, "model", a), "max_len", None), int)]
    tokens = [a for a in args if isinstance(a, torch.Tensor) and not a.is_floating_point() and a.dim() == 2]
    return (models[0].max_len, tokens[0].shape[1]) if models and tokens else None


WITH_MODELS = sorted(name for name in SPECS if any(_model_and_tokens(args) for args in _cases(SPECS[name])))


def test_some_checks_hand_over_a_model_with_tokens():
    assert "check_ablated_repeat_loss" in WITH_MODELS and "check_kv_cache_step" in WITH_MODELS, WITH_MODELS


@pytest.mark.parametrize("name", WITH_MODELS)
def test_a_model_is_never_given_a_sequence_as_long_as_its_table(name):
    """A function that takes ``model.max_len`` as the length of the tokens fails: the tokens are shorter somewhere."""
    pairs = [pair for args in _cases(SPECS[name]) if (pair := _model_and_tokens(args))]
    assert any(length < max_len for max_len, length in pairs), f"{name}: every case's tokens fill the table: {pairs}"


@pytest.mark.parametrize("name", sorted(STABLE))
def test_a_function_that_must_be_stable_meets_large_inputs(name):
    spec = SPECS[name]
    largest = max(
        float(arg.abs().max())
        for args in _cases(spec)
        for arg in args
        if isinstance(arg, torch.Tensor) and arg.is_floating_point() and arg.numel() and torch.isfinite(arg).all()
    )
    assert largest >= STABLE[name], (
        f"{name}: the largest input is {largest:g}; a version without the max subtracted passes"
    )
