"""Each check is declared once, as its ``CheckSpec``; the ``check_*`` functions and the registry are made from it."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

import course_lib.checks as checks
from course_lib.checks import CHECKS, EXERCISES, SPECS
from course_lib.checks.core import check_function, export_checks
from course_lib.checks.spec import CheckSpec

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
