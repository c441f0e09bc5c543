"""What every exercise check shares: run the learner's function safely, compare, explain.

A check runs the learner's function on a few seeded inputs (mixed with a salt drawn for each check call, see
``tensors``) and compares the result with ``course_lib``'s reference, built only once the learner's call has
returned. A learner function that calls course_lib's own implementation of the graded function (``CheckSpec.own``)
fails with a message that says so. When the result is wrong it runs the check's catalogue of typical mistakes (known-buggy versions of
the reference, or targeted probes) on the same inputs: a learner whose output equals a buggy version gets the
hint written for exactly that mistake, but only when that buggy version differs from the reference on this test
and equals the learner's output to the same tolerance a pass needs (a mistake that explains the output), and only
when it does so on every later test the learner fails too (``_explains_every_failure``). Otherwise
the message says what is measurably wrong: which axes and positions differ and by how much, and for attention which
step went wrong first (``trace``). Once the values are right, the gradients are compared too (a layer must train:
a ``.detach()`` or ``torch.no_grad()`` that cuts the graph fails). Everything the learner's function does (raise,
loop forever, hang on to NumPy, return junk, change its inputs in place) becomes a message: a check never raises
(except ``KeyboardInterrupt``, so the stop button still works), stops a call after ``TIME_LIMIT`` seconds, and never
prints the reference solution.

This module is the evaluation loop (``run_check``, ``judge``) and the ``check_*`` functions made from the specs; the
engine's other three files, by job: ``spec`` (what a check is, and its seeded inputs), ``calling`` (the learner's
function called safely) and ``judging`` (comparison, mistakes, gradients, messages). Every name is imported from
the file that defines it.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from ..interactive import record
from .calling import (
    TIME_LIMIT,
    TimeLimitExceeded,
    _call_text,
    _changed_inputs,
    _clone,
    _exception_text,
    _is_stub,
    _safe_bool,
    _signature_mismatch,
    call_with_time_limit,
    own_code,
    watch_for,
)
from .judging import (
    _gradient_verdict,
    _judge,
    _mutation_hint,
    _not_a_function,
    _not_implemented,
    _passes,
    _raised,
    _recognise,
    _timed_out,
    learner_gradients,
)
from .spec import (
    ERROR,
    FAILED,
    ICONS,
    PASSED,
    Case,
    CheckResult,
    CheckSpec,
    Mistake,
    ValueOut,
    _result,
    check_scope,
)


def run_check(spec: CheckSpec, function: Any, verbose: bool = True) -> CheckResult:
    """Run ``spec`` on the learner's ``function``, print the verdict (if ``verbose``) and return it."""
    return judge(spec, LearnerCalls(function), verbose)


def judge(spec: CheckSpec, calls: LearnerCalls, verbose: bool = False) -> CheckResult:
    """Run ``spec`` against ``calls`` (the learner's function here, or its answers from a sandbox: ``RemoteCalls``)."""
    try:
        with check_scope():  # one salt for every case of this check call
            result = _evaluate(spec, calls)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # the safety net: whatever happened, the learner gets a message, not a traceback
        result = _result(
            spec,
            FAILED,
            f"could not examine what your function returned ({_exception_text(exc)}).",
            "Return a torch tensor as described in the docstring; if it already does, tell your instructor.",
        )
    if verbose:  # a learner ran the check in a notebook: add it to their learning record
        record.check_attempt(result)
        try:
            print(result.message)
        except Exception:  # a broken stdout must not turn into a traceback either
            pass
    return result


class LearnerCalls:
    """How a check reaches the learner's function: by calling it, in this process.

    ``course_lib.tools.grading.remote.RemoteCalls`` answers the same calls from a sandbox, where the learner's
    notebook runs: the grader draws the inputs and judges here with the same code.
    """

    def __init__(self, function: Any):
        self.function = function
        self._delegated: set[int] = set()

    def problem(self, spec: CheckSpec) -> str | None:
        return _not_a_function(spec, self.function)

    def signature(self, spec: CheckSpec, args: tuple) -> str | None:
        return _signature_mismatch(spec, self.function, args)

    def call(self, spec: CheckSpec, number: int, args: tuple) -> Any:
        """The learner's result for test ``number``; raises what the learner's function raised."""
        with watch_for(own_code(spec)) as seen:
            try:
                return call_with_time_limit(
                    self.function, args, TIME_LIMIT if spec.time_limit is None else spec.time_limit
                )
            finally:
                if seen:
                    self._delegated.add(number)

    def delegated(self, spec: CheckSpec, number: int) -> bool:
        """Did the call of test ``number`` run course_lib's own implementation of the graded function?"""
        return number in self._delegated

    def changed(self, spec: CheckSpec, number: int, before: tuple, after: tuple) -> list[str]:
        return _changed_inputs(spec, before, after)

    def gradients(self, spec: CheckSpec, number: int, args: tuple) -> dict:
        return learner_gradients(spec, self.function, args, TIME_LIMIT)

    @property
    def traceable(self) -> bool:
        """Can stage diagnosis run the function again (only in the learner's own process)?"""
        return True


def _evaluate(spec: CheckSpec, calls: LearnerCalls) -> CheckResult:
    problem = calls.problem(spec)
    if problem:
        return _result(spec, FAILED, problem)
    total = len(spec.cases)
    for number, case in enumerate(spec.cases, 1):
        result = _test(spec, calls, number, case)
        if result is not None:
            return result
    if spec.reference is not None and spec.trains:
        for number, case in enumerate(spec.cases, 1):
            args = case.build()[0]
            where = f"In test {number} of {total} ({case.label}), called with {_call_text(spec, args)}."
            verdict = _gradient_verdict(spec, args, functools.partial(calls.gradients, spec, number, args))
            if verdict is not None:
                return _result(spec, verdict.status, verdict.text, verdict.hint, verdict.mistake, where=where)
    return CheckResult(
        spec.name, True, PASSED, f"{ICONS[PASSED]} {spec.name}: all {total} tests passed. {spec.success}"
    )


def _test(spec: CheckSpec, calls: LearnerCalls, number: int, case: Case) -> CheckResult | None:
    """Test ``number``: the learner's call on the case's inputs, then the comparison (None: it passed).

    The expected result is built only once the learner's call has returned, so no frame the call can reach holds it.
    """
    args = case.build()[0]
    where = f"In test {number} of {len(spec.cases)} ({case.label}), called with {_call_text(spec, args)}."
    if number == 1:
        mismatch = calls.signature(spec, args)
        if mismatch:
            return _result(
                spec,
                ERROR,
                mismatch,
                f"Keep the signature from the exercise: {spec.function}({', '.join(spec.arg_names)}).",
                "signature",
            )
    learner_args, before = _clone(args), _clone(args)
    try:
        value = calls.call(spec, number, learner_args)
    except KeyboardInterrupt:
        raise
    except TimeLimitExceeded as exc:
        return _timed_out(spec, exc, where)
    except BaseException as exc:
        if _is_stub(exc):
            return _not_implemented(spec, exc)
        return _raised(spec, exc, where, args)
    if value is NotImplemented:
        return _not_implemented(spec, None)
    if calls.delegated(spec, number):
        return _delegates(spec, where)
    changed = calls.changed(spec, number, before, learner_args)
    if changed:
        names = " and ".join(f"`{name}`" for name in changed)
        return _result(
            spec,
            FAILED,
            f"your function changed its input {names} in place.",
            _mutation_hint(spec, changed),
            mistake="mutates_input",
            where=where,
        )
    expected = case.build()[1]
    # a catalogued mistake is named only if it explains every failure (else the message says what differs)
    verdict = _judge(spec, value, expected, args, confirm=lambda key: _explains_every_failure(spec, calls, key, number))
    stageable = verdict is not None and verdict.mistake in (None, "wrong_values", "wrong_shape", "not_finite")
    if stageable and spec.stages is not None and calls.traceable:
        steps = _stage_text(spec, calls.function, args, expected)
        if steps:
            verdict.hint = steps + (" " + verdict.hint if verdict.mistake != "wrong_values" else "")
    if verdict is not None:
        return _result(spec, verdict.status, verdict.text, verdict.hint, verdict.mistake, where=where)
    return None


def _delegates(spec: CheckSpec, where: str) -> CheckResult:
    own = spec.own[1].rsplit(".", 1)[-1] if spec.own else spec.function
    return _result(
        spec,
        FAILED,
        f"your `{spec.function}` calls course_lib's own `{own}`; the exercise asks you to write it yourself — other "
        "course_lib helpers are allowed.",
        "Write the computation with torch operations (the formula is in the exercise)."
        if not isinstance(spec.output, ValueOut)
        else "Write the computation with Python's lists, dicts and bytes (the formula is in the exercise).",
        mistake="delegates",
        where=where,
    )


def _explains_every_failure(spec: CheckSpec, calls: LearnerCalls, key: str | None, number: int) -> bool:
    """A catalogued mistake recognised on test ``number`` is named only if it also reproduces the learner's output
    on every later test the learner fails (the earlier ones passed), up to the first later test that raises: that
    one counts as reproduced when the mistake's buggy version raises the same kind of exception there (the checks,
    and a sandbox's record, stop at a raise), and a test that hangs is never reproduced. Any other verdict (no
    catalogued mistake) stands as it is."""
    mistake = next((m for m in spec.mistakes if m.key == key and m.raises is None), None)
    if mistake is None:
        return True
    for later, case in enumerate(spec.cases[number:], number + 1):
        args = case.build()[0]
        try:
            value = calls.call(spec, later, _clone(args))
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # the checks stop at a test that raises (so does a sandbox's record)
            return _raises_alike(mistake, exc, args)
        if value is NotImplemented or calls.delegated(spec, later):
            return False
        expected = case.build()[1]  # built once the call has returned, as in ``_test``
        if not _passes(spec, value, expected) and not _recognise(spec, mistake, value, args, expected):
            return False
    return True


def _raises_alike(mistake: Mistake, exc: BaseException, args: tuple) -> bool:
    """Does ``mistake`` explain an exception the learner's function raised (its predicate, or its buggy version
    raising an exception of the same class on the same inputs)? A time limit is never explained."""
    if isinstance(exc, TimeLimitExceeded):
        return False
    if mistake.raises is not None and _safe_bool(mistake.raises, exc):
        return True
    if mistake.later_raise is not None and _safe_bool(mistake.later_raise, exc, args):
        return True
    if mistake.raises_on is not None and _safe_bool(mistake.raises_on, exc, _clone(args)):
        return True
    for implementation in (mistake.example, *mistake.variants):
        try:
            implementation(*_clone(args))
        except Exception as buggy:
            if type(buggy).__name__ == type(exc).__name__:
                return True
    return False


def _stage_text(spec: CheckSpec, function: Any, args: tuple, expected: Any) -> str:
    try:
        text = spec.stages(function, _clone(args), expected)
    except KeyboardInterrupt:
        raise
    except BaseException:
        return ""
    return text or ""


# ---------------------------------------------------------------------------------------------------------------
# The check functions a notebook calls, made from the specs (each check is declared once: its CheckSpec)
# ---------------------------------------------------------------------------------------------------------------

_DECLARED: dict[str, CheckSpec] = {}
_FUNCTIONS: dict[str, Callable[..., CheckResult]] = {}


def check_function(spec: CheckSpec) -> Callable[..., CheckResult]:
    """The notebook's ``check_*`` function for ``spec``: ``spec.name(<learner function>, verbose=True)``.

    Raises ``ValueError`` when another spec already uses that name: a check is declared once.
    """
    declared = _DECLARED.setdefault(spec.name, spec)
    if declared is not spec:
        raise ValueError(f"{spec.name} is declared twice: every check is one CheckSpec")
    if spec.name in _FUNCTIONS:
        return _FUNCTIONS[spec.name]
    parameters = [
        inspect.Parameter(spec.function, inspect.Parameter.POSITIONAL_OR_KEYWORD),
        inspect.Parameter("verbose", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=True),
    ]
    signature = inspect.Signature(parameters, return_annotation=CheckResult)

    def check(*args: Any, **kwargs: Any) -> CheckResult:
        bound = signature.bind(*args, **kwargs)  # a wrong call raises TypeError, as a written-out function would
        bound.apply_defaults()
        return run_check(spec, bound.arguments[spec.function], bound.arguments["verbose"])

    check.__name__ = check.__qualname__ = spec.name
    check.__signature__ = signature  # type: ignore[attr-defined]
    check.__doc__ = (
        f"Check your ``{spec.function}({', '.join(spec.arg_names)})``: prints ✅, or ❌ with what is wrong, or ⏳ "
        f"while it is still the stub, and returns a ``CheckResult``. {spec.success}"
    )
    check.spec = spec  # type: ignore[attr-defined]
    _FUNCTIONS[spec.name] = check
    return check


def export_checks(namespace: dict) -> list[str]:
    """Put the check function of every ``CheckSpec`` in ``namespace`` (a module's ``globals()``) under its name."""
    specs = {id(value): value for value in list(namespace.values()) if isinstance(value, CheckSpec)}
    for spec in specs.values():
        function = check_function(spec)
        namespace[spec.name] = function
        function.__module__ = namespace.get("__name__", function.__module__)
    return [spec.name for spec in specs.values()]
