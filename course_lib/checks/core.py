"""What every exercise check shares: run the learner's function safely, compare, explain.

A check runs the learner's function on a few seeded inputs and compares the result with ``course_lib``'s
reference. When the result is wrong it runs the check's catalogue of typical mistakes (known-buggy versions of
the reference, or targeted probes) on the same inputs: a learner whose output equals a buggy version gets the
hint written for exactly that mistake, but only when that buggy version differs from the reference on this test
and equals the learner's output to the same tolerance a pass needs (a mistake that explains the output). Otherwise
the message says what is measurably wrong: which axes and positions differ and by how much, and for attention which
step went wrong first (``trace``). Once the values are right, the gradients are compared too (a layer must train:
a ``.detach()`` or ``torch.no_grad()`` that cuts the graph fails). Everything the learner's function does (raise,
loop forever, hang on to NumPy, return junk, change its inputs in place) becomes a message: a check never raises
(except ``KeyboardInterrupt``, so the stop button still works), stops a call after ``TIME_LIMIT`` seconds, and never
prints the reference solution.
"""

from __future__ import annotations

import inspect
import math
import signal
import sys
import sysconfig
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from .. import record

PASSED, FAILED, ERROR, NOT_IMPLEMENTED, MISSING = "passed", "failed", "error", "not_implemented", "missing"
TIMEOUT = "timeout"
ICONS = {PASSED: "✅", FAILED: "❌", ERROR: "❌", NOT_IMPLEMENTED: "⏳", MISSING: "❌", TIMEOUT: "⌛"}

#: Seconds one call of the learner's function may take before the check stops it (the solutions take milliseconds).
TIME_LIMIT = 5.0


@dataclass
class CheckResult:
    """What a check found. ``passed`` is True only when every test passed; ``message`` is what was printed.

    status: ``"passed"``, ``"failed"`` (wrong result), ``"error"`` (your function raised), ``"timeout"`` (it did not
    finish within ``TIME_LIMIT`` seconds), ``"not_implemented"`` (still the stub) or ``"missing"`` (no such function,
    used by the grading tools).
    mistake: the catalogue key of the typical mistake that was recognised, if any.
    """

    check: str
    passed: bool
    status: str
    message: str
    mistake: str | None = None

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        return (
            f"CheckResult(check={self.check!r}, status={self.status!r}, passed={self.passed}, mistake={self.mistake!r})"
        )

    def _ipython_display_(self) -> None:
        """The message was already printed; showing the object again in a notebook would only repeat it."""

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Mistake:
    """A typical mistake, how to recognise it and what to tell the learner.

    key:      short id, e.g. ``"no_scaling"``.
    title:    completes the sentence "It looks like ...", e.g. ``"the scores are not divided by √d_k"``.
    hint:     how to fix it, without giving away the whole solution.
    example:  a buggy implementation with the learner's signature (the tests hand it to the check).
    variants: more buggy implementations recognised as the same mistake.
    probe:    ``probe(output, args) -> bool`` recognises the mistake from the output instead of the variants.
    raises:   ``raises(exception) -> bool`` recognises the mistake from the exception the learner's code raised.
    """

    key: str
    title: str
    hint: str
    example: Callable
    variants: tuple[Callable, ...] = ()
    probe: Callable[[Any, tuple], bool] | None = None
    raises: Callable[[BaseException], bool] | None = None


@dataclass(frozen=True)
class Case:
    """One test: ``build()`` returns ``(args, expected)``, fresh on every call; ``label`` says what is special about it."""

    label: str
    build: Callable[[], tuple[tuple, Any]]


@dataclass(frozen=True)
class TensorOut:
    """The function returns one tensor; ``axes`` names its shape for messages, e.g. ``"(batch, seq_q, d_v)"``."""

    axes: str


@dataclass(frozen=True)
class TupleOut:
    """The function returns a tuple of tensors, e.g. ``(("hidden_states", "(batch, seq, hidden_size)"), ...)``."""

    items: tuple[tuple[str, str], ...]

    @property
    def names(self) -> str:
        return "(" + ", ".join(name for name, _ in self.items) + ")"


@dataclass
class CheckSpec:
    """Everything one check needs.

    diagnose(output, expected, args):  may add a hint for an error no catalogued mistake explains.
    stages(function, args, expected):  may say which step of the computation went wrong first (see ``trace``).
    reference(*args):                  course_lib's computation with the learner's signature, differentiable in the
                                       tensor arguments; when given, a result with the right values must also have
                                       the right gradients.
    gradient_hint / gradient_diagnose(learner_grads, reference_grads, args): what to say when they differ.
    time_limit:                        seconds one call may take, for a learner function that trains a model
                                       (default: ``TIME_LIMIT``); the grader adds it to a notebook's time budget.
    """

    name: str
    function: str
    arg_names: tuple[str, ...]
    output: TensorOut | TupleOut
    cases: list[Case]
    mistakes: list[Mistake]
    success: str
    diagnose: Callable[[Any, Any, tuple], str | None] | None = None
    stages: Callable[[Callable, tuple, Any], str | None] | None = None
    reference: Callable[..., Any] | None = None
    gradient_hint: str = ""
    gradient_diagnose: Callable[[dict, dict, tuple], str | None] | None = None
    dtype_hint: str = ""
    time_limit: float | None = None
    atol: float = 1e-5
    rtol: float = 1e-4
    extra: dict = field(default_factory=dict)


class _Verdict:
    def __init__(self, text: str, hint: str = "", mistake: str | None = None, status: str = FAILED):
        self.text, self.hint, self.mistake, self.status = text, hint, mistake, status


# ---------------------------------------------------------------------------------------------------------------
# Running a check
# ---------------------------------------------------------------------------------------------------------------


def run_check(spec: CheckSpec, function: Any, verbose: bool = True) -> CheckResult:
    """Run ``spec`` on the learner's ``function``, print the verdict (if ``verbose``) and return it."""
    return judge(spec, LearnerCalls(function), verbose)


def judge(spec: CheckSpec, calls: LearnerCalls, verbose: bool = False) -> CheckResult:
    """Run ``spec`` against ``calls`` (the learner's function here, or answers recorded in a sandbox: ``remote``)."""
    try:
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

    ``course_lib.checks.remote`` records what these calls returned inside a sandbox and replays the record on the
    trusted side, so the same judging code grades a submission without running any of its code there.
    """

    def __init__(self, function: Any):
        self.function = function

    def problem(self, spec: CheckSpec) -> str | None:
        return _not_a_function(spec, self.function)

    def signature(self, spec: CheckSpec, args: tuple) -> str | None:
        return _signature_mismatch(spec, self.function, args)

    def call(self, spec: CheckSpec, number: int, args: tuple) -> Any:
        """The learner's result for test ``number``; raises what the learner's function raised."""
        return call_with_time_limit(self.function, args, spec.time_limit)

    def changed(self, spec: CheckSpec, number: int, before: tuple, after: tuple) -> list[str]:
        return _changed_inputs(spec, before, after)

    def gradients(self, spec: CheckSpec, number: int, args: tuple) -> dict:
        return learner_gradients(spec, self.function, args)

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
        args, expected = case.build()
        where = f"In test {number} of {total} ({case.label}), called with {_call_text(spec, args)}."
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
            return _raised(spec, exc, where)
        if value is NotImplemented:
            return _not_implemented(spec, None)
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
        verdict = _judge(spec, value, expected, args)
        stageable = verdict is not None and verdict.mistake in (None, "wrong_values", "wrong_shape", "not_finite")
        if stageable and spec.stages is not None and calls.traceable:
            steps = _stage_text(spec, calls.function, args, expected)
            if steps:
                verdict.hint = steps + (" " + verdict.hint if verdict.mistake != "wrong_values" else "")
        if verdict is not None:
            return _result(spec, verdict.status, verdict.text, verdict.hint, verdict.mistake, where=where)
    if spec.reference is not None:
        for number, case in enumerate(spec.cases, 1):
            args, _ = case.build()
            where = f"In test {number} of {total} ({case.label}), called with {_call_text(spec, args)}."
            verdict = _gradient_verdict(spec, calls, number, args)
            if verdict is not None:
                return _result(spec, verdict.status, verdict.text, verdict.hint, verdict.mistake, where=where)
    return CheckResult(
        spec.name, True, PASSED, f"{ICONS[PASSED]} {spec.name}: all {total} tests passed. {spec.success}"
    )


def _signature_mismatch(spec: CheckSpec, function: Any, args: tuple) -> str | None:
    """Does ``function`` accept the check's arguments at all? (A TypeError raised inside it is another matter.)"""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # builtins and some callables have no signature: just call them
        return None
    try:
        signature.bind(*args)
    except TypeError as exc:
        return (
            f"your function cannot be called as {spec.function}({', '.join(spec.arg_names)}): {_safe_str(exc)} "
            f"(it is defined as {spec.function}{_shorten(str(signature), 120)})."
        )
    return None


def _stage_text(spec: CheckSpec, function: Any, args: tuple, expected: Any) -> str:
    try:
        text = spec.stages(function, _clone(args), expected)
    except KeyboardInterrupt:
        raise
    except BaseException:
        return ""
    return text or ""


# ---------------------------------------------------------------------------------------------------------------
# A time limit for one call of the learner's function
# ---------------------------------------------------------------------------------------------------------------


class TimeLimitExceeded(BaseException):
    """Raised inside the learner's function when it runs longer than the time limit.

    A ``BaseException`` (like ``KeyboardInterrupt``), so that an ``except Exception:`` in the learner's loop does
    not swallow it.
    """


def call_with_time_limit(function: Callable, args: Sequence, seconds: float | None = None):
    """``function(*args)``, stopped with ``TimeLimitExceeded`` after ``seconds`` (default ``TIME_LIMIT``).

    In the main thread on POSIX a timer signal interrupts the function (any earlier timer, e.g. a test runner's,
    is re-armed afterwards); elsewhere a trace function checks the clock at every line of Python.
    """
    seconds = TIME_LIMIT if seconds is None else seconds
    if not seconds or seconds <= 0 or not math.isfinite(seconds):
        return function(*args)
    if hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread():
        return _call_with_alarm(function, args, seconds)
    return _call_with_trace(function, args, seconds)


def _call_with_alarm(function: Callable, args: Sequence, seconds: float):
    state = {"active": True}

    def on_alarm(signum, frame):
        if state["active"]:
            raise TimeLimitExceeded(seconds)

    started = time.monotonic()
    previous_handler = signal.signal(signal.SIGALRM, on_alarm)
    previous_timer = signal.setitimer(signal.ITIMER_REAL, seconds, 0.25)  # repeats, in case a bare except swallows it
    try:
        try:
            return function(*args)
        finally:
            state["active"] = False
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous_handler)
        remaining, interval = previous_timer
        if remaining > 0:  # give an outer timer (pytest-timeout, a notebook's own alarm) back what is left of it
            signal.setitimer(signal.ITIMER_REAL, max(remaining - (time.monotonic() - started), 0.001), interval)


def _call_with_trace(function: Callable, args: Sequence, seconds: float):
    deadline = time.monotonic() + seconds
    previous = sys.gettrace()

    def tracer(frame, event, arg):
        if time.monotonic() > deadline:
            raise TimeLimitExceeded(seconds)
        return tracer

    sys.settrace(tracer)
    try:
        return function(*args)
    finally:
        sys.settrace(previous)


def extra_seconds(specs) -> float:
    """The time the checks of ``specs`` may take beyond the ordinary per-call limits (learner runs of a training)."""
    return sum(len(spec.cases) * spec.time_limit for spec in specs if spec.time_limit)


def _timed_out(spec: CheckSpec, exc: BaseException, where: str) -> CheckResult:
    limit = exc.args[0] if exc.args else TIME_LIMIT
    frame = _learner_frame(exc)
    location = ""
    if frame is not None:
        line = (frame.line or "").strip()
        location = f"It was running {_frame_location(frame)}" + (f":  {_shorten(line, 120)}" if line else ".")
    text = f"your function did not finish within {limit:g} s, so the check stopped it: it probably loops forever."
    hint = (
        "Look at the loops in your function: a `while` loop ends only when something inside it changes its "
        "condition; a `for t in range(...)` loop always ends. (The ■ button stops a cell that hangs.)"
    )
    return _result(spec, TIMEOUT, text, hint, "time_limit", where=where, location=location)


# ---------------------------------------------------------------------------------------------------------------
# Gradients: right values are not enough, the result must also train
# ---------------------------------------------------------------------------------------------------------------


def _differentiable(args: tuple) -> list[int]:
    return [i for i, arg in enumerate(args) if isinstance(arg, torch.Tensor) and arg.is_floating_point()]


def _leaves(args: tuple, wanted: list[int]) -> tuple:
    return tuple(arg.detach().clone().requires_grad_(True) if i in wanted else arg for i, arg in enumerate(args))


def _cotangents(shapes) -> list[torch.Tensor]:
    """Fixed random weights for the outputs: the loss is Σ output · weight (a plain sum gives softmax a zero gradient)."""
    gen = generator(1234)
    return [torch.randn(tuple(shape), generator=gen, dtype=torch.float64) for shape in shapes]


def learner_gradients(spec: CheckSpec, function: Any, args: tuple) -> dict:
    """The learner side of the gradient comparison, as plain data (``remote`` sends it out of a sandbox).

    ``{"kind": "grads", "grads": [...]}`` (one per differentiable argument, None where unused), ``{"kind": "cut",
    "items": [...]}`` (outputs with no gradient), ``{"kind": "error", "text": ...}`` or ``{"kind": "skip"}``.
    """
    wanted = _differentiable(args)
    if not wanted:
        return {"kind": "skip"}
    with torch.enable_grad(), quiet_rng():
        learner_args = _leaves(args, wanted)
        try:
            value = call_with_time_limit(function, learner_args)
        except (KeyboardInterrupt, TimeLimitExceeded):
            raise
        except BaseException:
            return {"kind": "skip"}  # it ran fine on the same inputs without gradients; nothing more to learn here
        got = _tensors(value)
        if got is None:
            return {"kind": "skip"}
        names = [name.strip(": ") for name in _item_names(spec.output)]
        cut = [name for out, name in zip(got, names) if not out.requires_grad]
        if cut:
            return {"kind": "cut", "items": cut}
        try:
            loss = sum((out.double() * c).sum() for out, c in zip(got, _cotangents(out.shape for out in got)))
            grads = torch.autograd.grad(loss, [learner_args[i] for i in wanted], allow_unused=True)
        except RuntimeError as exc:
            return {"kind": "error", "text": _exception_text(exc)}
    return {"kind": "grads", "grads": [None if g is None else g.detach().double() for g in grads]}


def _gradient_verdict(spec: CheckSpec, calls: LearnerCalls, number: int, args: tuple) -> _Verdict | None:
    """Compare the gradients of a fixed random projection of the outputs with the reference's (``spec.reference``)."""
    names = list(spec.arg_names) + [f"argument {i + 1}" for i in range(len(spec.arg_names), len(args))]
    wanted = _differentiable(args)
    if not wanted:
        return None
    with torch.enable_grad(), quiet_rng():
        reference_args = _leaves(args, wanted)
        reference_out = _tensors(spec.reference(*reference_args))
        reference_loss = sum(
            (out.double() * c).sum() for out, c in zip(reference_out, _cotangents(out.shape for out in reference_out))
        )
        reference_grads = torch.autograd.grad(reference_loss, [reference_args[i] for i in wanted], allow_unused=True)
    learner = calls.gradients(spec, number, args)
    kind = learner.get("kind") if isinstance(learner, dict) else None
    if kind == "cut":
        cut = [str(item) for item in learner.get("items", [])]
        subject = (
            f"no gradient flows back from {' and '.join(cut)}" if cut and cut != [""] else "no gradient flows back"
        )
        return _Verdict(
            f"the values are right, but {subject} to the inputs: something in your function cuts the computation "
            "graph, so a model built on it could not learn.",
            spec.gradient_hint
            or "Look for .detach(), .item(), .tolist(), .numpy(), torch.no_grad(), or a new tensor built from "
            "values (torch.tensor(...)); compute everything from the input tensors with torch operations.",
            "no_gradient",
        )
    if kind == "error":
        return _Verdict(
            f"the values are right, but the gradient cannot be computed through your function ({_shorten(str(learner.get('text', '')), 300)}).",
            "This usually comes from an in-place operation (x -= ..., x[...] = ..., .add_(), masked_fill_) on a tensor "
            "that autograd still needs. Use the out-of-place versions.",
            "no_gradient",
        )
    if kind != "grads":
        return None
    learner_grads = list(learner.get("grads", []))
    if len(learner_grads) != len(wanted):
        return None
    mine = {names[i]: g for i, g in zip(wanted, learner_grads)}
    theirs = {names[i]: g for i, g in zip(wanted, reference_grads)}
    wrong = []
    for name in mine:
        reference = theirs[name]
        b = torch.zeros(args[names.index(name)].shape, dtype=torch.float64) if reference is None else reference.double()
        a = torch.zeros_like(b) if mine[name] is None else mine[name]
        if not isinstance(a, torch.Tensor) or a.shape != b.shape:
            wrong.append(name)
            continue
        scale = max(1.0, float(b.abs().max())) if b.numel() else 1.0
        if not torch.allclose(a.double(), b, atol=1e-4 * scale, rtol=1e-3, equal_nan=False):
            wrong.append(name)
    if not wrong:
        return None
    detail = ""
    if spec.gradient_diagnose is not None:
        try:
            detail = spec.gradient_diagnose(mine, theirs, args) or ""
        except Exception:
            detail = ""
    listed = ", ".join(f"`{name}`" for name in wrong)
    return _Verdict(
        f"the values are right, but the gradients with respect to {listed} are not: part of the computation does "
        "not pass the gradient back." + (f" {detail}" if detail else ""),
        spec.gradient_hint
        or "Look for .detach(), .item(), .tolist(), torch.no_grad() or a tensor rebuilt from values in the middle of "
        "your function: the forward values stay the same, but the gradient stops there.",
        "wrong_gradient",
    )


def _result(
    spec: CheckSpec,
    status: str,
    text: str,
    hint: str = "",
    mistake: str | None = None,
    where: str = "",
    location: str = "",
) -> CheckResult:
    """One line per part: what is wrong, which test, where in the learner's code, the hint."""
    lines = [f"{ICONS[status]} {spec.name}: {text}"]
    lines += [f"   {part}" for part in (where, location) if part]
    if hint:
        lines.append(f"   Hint: {hint}")
    return CheckResult(spec.name, False, status, "\n".join(lines), mistake)


def _not_a_function(spec: CheckSpec, function: Any) -> str | None:
    usage = f"{spec.name}({spec.function})"
    if function is None:
        return f"got None instead of your function. Call it as {usage}."
    if isinstance(function, torch.Tensor) or type(function).__module__.startswith("numpy"):
        return (
            f"got {_describe(function)} instead of your function: pass the function itself, without calling it: "
            f"{usage} (no parentheses after {spec.function})."
        )
    if not callable(function):
        return f"expects your function, e.g. {usage}, but got {_describe(function)}."
    return None


def _not_implemented(spec: CheckSpec, exc: BaseException | None) -> CheckResult:
    frame = _learner_frame(exc) if exc is not None else None
    other = frame is not None and frame.name not in (spec.function, "<module>", "<lambda>")
    if other:
        text = (
            f"not implemented yet: {spec.function} calls {frame.name}, which still raises NotImplementedError. "
            f"Finish {frame.name} first, then run this check again."
        )
    else:
        text = (
            f"not implemented yet. Replace the line `raise NotImplementedError(...)` in {spec.function} with your "
            "code, run that cell, then run this check again."
        )
    return CheckResult(spec.name, False, NOT_IMPLEMENTED, f"{ICONS[NOT_IMPLEMENTED]} {spec.name}: {text}")


def _raised(spec: CheckSpec, exc: BaseException, where: str) -> CheckResult:
    text = f"your function raised {_exception_text(exc)}"
    location = ""
    frame = _learner_frame(exc)
    if frame is not None:
        line = (frame.line or "").strip()
        location = f"At {_frame_location(frame)}" + (f":  {_shorten(line, 120)}" if line else ".")
    mistake_key, hint = None, ""
    for mistake in spec.mistakes:
        if mistake.raises is not None and _safe_bool(mistake.raises, exc):
            mistake_key, hint = mistake.key, f"It looks like {mistake.title}. {mistake.hint}"
            break
    if not hint:
        hint = _generic_exception_hint(spec, exc)
    return _result(spec, ERROR, text, hint, mistake_key, where=where, location=location)


def _generic_exception_hint(spec: CheckSpec, exc: BaseException) -> str:
    message = _safe_str(exc)
    kind = type(exc).__name__
    if isinstance(exc, TypeError) and ("positional argument" in message or "keyword argument" in message):
        return (
            "A function called inside yours got the wrong number of arguments: compare the call on the line above "
            "with that function's definition."
        )
    if isinstance(exc, NameError):
        return (
            "A name your function uses is not defined: run the first cell of the notebook (the imports), check the "
            "spelling, and run the cells that define any helper you call."
        )
    if isinstance(exc, RecursionError):
        return (
            f"Your function calls itself over and over. Did you call {spec.function}(...) inside {spec.function}, "
            "meaning torch's version (torch.softmax, torch.tanh, ...)?"
        )
    if kind == "CourseInputError":
        return "A course_lib function refused its input: the message above says which argument and what it expected."
    shape_words = (
        "shape",
        "size of tensor",
        "must match the size",
        "cannot be multiplied",
        "Dimension out of range",
        "dimension",
    )
    if any(word in message for word in shape_words):
        return (
            "A shape did not fit. Print the .shape of each intermediate tensor and compare with the shapes in the "
            "docstring; the names (batch, seq, d_k, ...) say which axis is which."
        )
    return "Read the line above; print the shapes and values of the tensors involved to see what went wrong."


# ---------------------------------------------------------------------------------------------------------------
# Judging the output
# ---------------------------------------------------------------------------------------------------------------


def _judge(spec: CheckSpec, value: Any, expected: Any, args: tuple) -> _Verdict | None:
    got, problem = _conform(spec.output, value)
    expected_items = list(expected) if isinstance(spec.output, TupleOut) else [expected]
    if got is not None and _all_close(got, expected_items, spec.atol, spec.rtol):
        for tensor, reference, name in zip(got, expected_items, _item_names(spec.output)):
            if tensor.dtype != reference.dtype:
                return _Verdict(
                    f"{name}the values are right but the dtype is {_dtype(tensor.dtype)}, expected {_dtype(reference.dtype)}.",
                    spec.dtype_hint or f"Convert the result with .to({_dtype(reference.dtype, short=False)}).",
                    "wrong_dtype",
                )
        return None
    for mistake in spec.mistakes:
        if mistake.raises is None and _recognise(spec, mistake, value, args, expected):
            return _Verdict(f"It looks like {mistake.title}.", mistake.hint, mistake.key)
    if problem:
        return _Verdict(problem[0], problem[1], None)
    plain = got[0] if isinstance(spec.output, TensorOut) else tuple(got)  # detached, plain tensors for diagnose()
    for tensor, reference, name in zip(got, expected_items, _item_names(spec.output)):
        verdict = _compare_tensor(spec, tensor, reference, name, plain, expected, args)
        if verdict is not None:
            return verdict
    return None  # pragma: no cover - _all_close said something differs, so one item must differ


def _compare_tensor(spec, tensor, reference, name, value, expected, args) -> _Verdict | None:
    axes = _item_axes(spec.output, name)
    if tuple(tensor.shape) != tuple(reference.shape):
        return _Verdict(
            f"{name}expected shape {_shape(reference.shape)} = {axes}, got {_shape(tensor.shape)}.",
            _shape_hint(tensor.shape, reference.shape, axes),
            "wrong_shape",
        )
    whole = tensor.is_floating_point() and not reference.is_floating_point()
    if whole and torch.equal(tensor, reference.to(tensor.dtype)):  # right numbers, stored as floats
        return _Verdict(
            f"{name}expected whole numbers ({_dtype(reference.dtype)}), got dtype {_dtype(tensor.dtype)}.",
            spec.dtype_hint or f"Keep the result in whole numbers ({_dtype(reference.dtype)}).",
            "wrong_dtype",
        )
    if not tensor.is_floating_point() and reference.is_floating_point():
        return _Verdict(
            f"{name}expected floating-point numbers ({_dtype(reference.dtype)}), got dtype {_dtype(tensor.dtype)}.",
            spec.dtype_hint
            or "Integer or boolean results usually come from integer inputs such as torch.arange(n); "
            "ask for floats with dtype=torch.float32.",
            "wrong_dtype",
        )
    finite = torch.isfinite(tensor)
    if not bool(finite.all()) and bool(torch.isfinite(reference).all()):
        nans, infs = int(torch.isnan(tensor).sum()), int(torch.isinf(tensor).sum())
        parts = [f"NaN in {nans}" if nans else "", f"±inf in {infs}" if infs else ""]
        found = " and ".join(part for part in parts if part)
        where = _where(~finite, axes)
        return _Verdict(
            f"{name}your output contains {found} of its {tensor.numel()} entries{where}.",
            "NaN comes from inf - inf, inf / inf or 0 / 0; inf from exp of a large number or a division by zero. "
            "Print the intermediate tensors to see where it first appears." + _extra(spec, value, expected, args),
            "not_finite",
        )
    difference = (tensor.double() - reference.double()).abs().nan_to_num(nan=math.inf)
    difference = difference.masked_fill(tensor.double() == reference.double(), 0.0)  # -inf where -inf is expected
    tolerance = spec.atol + spec.rtol * reference.double().abs()
    wrong = difference > tolerance
    worst = int(difference.argmax())
    index = tuple(int(i) for i in _unravel(worst, tensor.shape))
    largest = float(difference.max())
    size = float(reference.double().abs().max()) if reference.numel() else 0.0
    relative = f" ({largest / size:.2g} of the largest expected value)" if size > 0 and math.isfinite(largest) else ""
    text = (
        f"{name}the shape is right but the values are not: {int(wrong.sum())} of {tensor.numel()} entries differ from "
        f"the expected result{_where(wrong, axes)}, the largest by {largest:.3g}{relative} (at index {list(index)})."
    )
    hint = _extra(spec, value, expected, args).strip()
    if not hint and size > 0 and largest < 0.01 * size:
        hint = (
            "A difference this small usually means a small change to the formula: an extra constant (a + 1e-3 "
            "somewhere, another eps), a lower precision (float16) in one step, or a rounding shortcut."
        )
    hint = (
        hint
        or "Work through a tiny example by hand (batch of 1, a few positions) and compare each step with the formula."
    )
    return _Verdict(text, hint, "wrong_values")


def _axis_names(axes: str, ndim: int) -> list[str] | None:
    """``"(batch, seq_q, d_v)"`` → ``["batch", "seq_q", "d_v"]`` when it names exactly ``ndim`` axes."""
    inner = axes.strip()
    if not (inner.startswith("(") and inner.endswith(")")):
        return None
    names = [part.strip() for part in inner[1:-1].split(",")]
    if len(names) != ndim or not all(names) or any(" " in n and "*" not in n for n in names):
        return None
    return names


def _where(wrong: torch.Tensor, axes: str) -> str:
    """Where the wrong entries are, when they sit at some indices of an axis only: ' (only at seq_q = 1, 3)'."""
    if wrong.dim() == 0 or not bool(wrong.any()) or bool(wrong.all()):
        return ""
    names = _axis_names(axes, wrong.dim()) or [f"axis {d}" for d in range(wrong.dim())]
    parts = []
    for dim in range(wrong.dim()):
        others = [d for d in range(wrong.dim()) if d != dim]
        hit = wrong.any(dim=others) if others else wrong
        indices = [int(i) for i in hit.nonzero().flatten()]
        if 0 < len(indices) < wrong.shape[dim]:
            shown = ", ".join(str(i) for i in indices[:8]) + (", ..." if len(indices) > 8 else "")
            parts.append(f"{names[dim]} = {shown} out of 0–{wrong.shape[dim] - 1}")
    return f" (only at {'; '.join(parts)})" if parts else " (spread over every axis)"


def _extra(spec: CheckSpec, value, expected, args) -> str:
    if spec.diagnose is None:
        return ""
    try:
        text = spec.diagnose(value, expected, args)
    except Exception:
        return ""
    return f" {text}" if text else ""


def _recognise(spec: CheckSpec, mistake: Mistake, value: Any, args: tuple, expected: Any) -> bool:
    """Does ``mistake`` explain the learner's output on this test?

    Only if its buggy version differs from the reference here (a mistake that gives the right answer on this test
    cannot explain a wrong one) and equals the learner's output to the tolerance a pass needs.
    """
    if mistake.probe is not None:
        return _safe_bool(mistake.probe, value, _clone(args))
    for implementation in (mistake.example, *mistake.variants):
        try:
            buggy = implementation(*_clone(args))
        except Exception:
            continue
        if explains(value, buggy, expected, spec.atol, spec.rtol):
            return True
    return False


def explains(value: Any, buggy: Any, expected: Any, atol: float = 1e-5, rtol: float = 1e-4) -> bool:
    """True when ``buggy`` differs from ``expected`` and ``value`` equals ``buggy`` (both to ``atol``/``rtol``)."""
    return same(value, buggy, atol, rtol) and not same(buggy, expected, atol, rtol)


def same(value: Any, other: Any, atol: float = 1e-5, rtol: float = 1e-4) -> bool:
    """True when ``value`` and ``other`` are tensors (or tuples/lists of tensors) of equal shapes and close values.

    The default tolerance is the one a pass needs. NaN counts as equal to NaN, so a learner's NaN output can be
    matched with a buggy version's NaN.
    """
    if isinstance(value, torch.Tensor) != isinstance(other, torch.Tensor):
        return False  # a tensor never equals a tuple or list of tensors
    left, right = _tensors(value), _tensors(other)
    if left is None or right is None or len(left) != len(right):
        return False
    for a, b in zip(left, right):
        if tuple(a.shape) != tuple(b.shape) or a.is_complex() or b.is_complex():
            return False
        try:
            if not torch.allclose(a.detach().double(), b.detach().double(), rtol=rtol, atol=atol, equal_nan=True):
                return False
        except Exception:
            return False
    return True


def _tensors(value: Any) -> list[torch.Tensor] | None:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)) and value and all(isinstance(item, torch.Tensor) for item in value):
        return list(value)
    return None


def _all_close(got: list[torch.Tensor], expected: list[torch.Tensor], atol: float, rtol: float) -> bool:
    for tensor, reference in zip(got, expected):
        if tuple(tensor.shape) != tuple(reference.shape):
            return False
        if not reference.is_floating_point():  # whole numbers (token ids): equal, not close
            if tensor.is_floating_point() or tensor.is_complex() or not torch.equal(tensor.long(), reference.long()):
                return False
            continue
        if not tensor.is_floating_point():
            return False
        if not torch.allclose(tensor.double(), reference.double(), rtol=rtol, atol=atol):
            return False
    return True


def _conform(output: TensorOut | TupleOut, value: Any) -> tuple[list[torch.Tensor] | None, tuple[str, str] | None]:
    """Check the type and structure of what the learner returned; return plain CPU tensors or a (text, hint) problem."""
    if isinstance(output, TensorOut):
        if isinstance(value, (tuple, list)):
            text = f"your function returned {_describe(value)}, but it should return a single tensor {output.axes}."
            if isinstance(value, list) and value and all(isinstance(item, torch.Tensor) for item in value):
                return None, (text, "To turn a list of tensors into one tensor, use torch.stack(...) along a new axis.")
            return None, (text, "Return only the tensor the docstring asks for (not a tuple of several results).")
        tensor, problem = _plain_tensor(value, "your function returned", output.axes)
        return ([tensor], None) if problem is None else (None, problem)
    names = output.names
    if isinstance(value, torch.Tensor):
        return None, (
            f"your function returned a single tensor of shape {_shape(value.shape)}, but it should return a pair {names}.",
            f"Return both, as a tuple: `return {names[1:-1]}`.",
        )
    if not isinstance(value, (tuple, list)):
        return None, (
            f"your function returned {_describe(value)}, but it should return a pair {names}.",
            _returned_hint(value),
        )
    if len(value) != len(output.items):
        return None, (
            f"your function returned {_describe(value)}, but it should return {len(output.items)} items {names}.",
            f"Return exactly `{names[1:-1]}`.",
        )
    tensors = []
    for item, (name, axes) in zip(value, output.items):
        if isinstance(item, list) and item and all(isinstance(x, torch.Tensor) for x in item):
            return None, (
                f"`{name}` is a Python list of {len(item)} tensors, not one tensor {axes}.",
                "Combine the list into one tensor with torch.stack(..., dim=...) so that the axes come out as in the docstring.",
            )
        tensor, problem = _plain_tensor(item, f"`{name}` is", axes)
        if problem is not None:
            return None, problem
        tensors.append(tensor)
    return tensors, None


def _plain_tensor(value: Any, subject: str, axes: str) -> tuple[torch.Tensor | None, tuple[str, str] | None]:
    if not isinstance(value, torch.Tensor):
        return None, (f"{subject} {_describe(value)}, expected a torch.Tensor {axes}.", _returned_hint(value))
    tensor = value if type(value) in (torch.Tensor, torch.nn.Parameter) else value.as_subclass(torch.Tensor)
    tensor = tensor.detach()
    if tensor.layout != torch.strided:
        return None, (
            f"{subject} a {tensor.layout} tensor, expected an ordinary (dense) tensor {axes}.",
            "Convert it with .to_dense().",
        )
    if tensor.device.type != "cpu":
        return None, (
            f"{subject} a tensor on the {tensor.device.type} device, expected it on the CPU like the inputs.",
            "Keep everything on the inputs' device: create new tensors with device=x.device, or move the result with .cpu().",
        )
    if tensor.is_complex():
        return None, (
            f"{subject} a complex tensor ({_dtype(tensor.dtype)}), expected real numbers {axes}.",
            "Keep the computation in real numbers.",
        )
    return tensor, None


def _returned_hint(value: Any) -> str:
    if value is None:
        return "Did you forget the `return` statement at the end of your function?"
    if type(value).__module__.startswith("numpy"):
        return (
            "The course works with torch tensors: use torch functions (torch.exp, torch.tanh, tensor.sum(...)) on the "
            "tensors you were given instead of NumPy ones, or convert at the end with torch.from_numpy(...)."
        )
    if isinstance(value, (int, float, bool)):
        return "A single number usually means a reduction went too far, e.g. .sum() or .mean() without dim=."
    return "Return the tensor the docstring describes."


def _shape_hint(shape, expected, axes: str = "") -> str:
    shape, expected = tuple(shape), tuple(expected)
    reading = _read_shape(shape, expected, axes)
    if reading:
        return reading
    if sorted(shape) == sorted(expected):
        return "It has the right sizes in a different order: check the axis you stack along, transpose or permute."
    if len(shape) == len(expected) - 1:
        return "One axis is missing: a reduction (.sum, .mean, .max) without keepdim=True, a squeeze, or indexing drops an axis."
    if len(shape) == len(expected) + 1:
        return "There is one axis too many: check unsqueeze/stack calls, or an extra batch axis."
    return "Print the shapes of your intermediate tensors and compare them with the docstring, step by step."


def _read_shape(shape: tuple, expected: tuple, axes: str) -> str:
    """Explain a shape that holds the right number of entries as the expected axes reordered, merged or split."""
    names = _axis_names(axes, len(expected))
    if names is None or math.prod(shape) != math.prod(expected) or shape == expected or len(expected) > 5:
        return ""
    import itertools

    def groupings(order):
        """Every way to merge neighbouring axes of ``order`` into len(shape) groups."""
        n, k = len(order), len(shape)
        for cuts in itertools.combinations(range(1, n), k - 1):
            bounds = (0, *cuts, n)
            yield [order[bounds[i] : bounds[i + 1]] for i in range(k)]

    if len(shape) > len(expected):
        return ""  # an axis split in two: the generic hint says so
    for order in itertools.permutations(range(len(expected))):
        for groups in groupings(order):
            if all(math.prod(expected[a] for a in group) == size for group, size in zip(groups, shape)):
                read = ", ".join(" * ".join(names[a] for a in group) for group in groups)
                merged = [group for group in groups if len(group) > 1]
                what = []
                if merged:
                    what.append(
                        "; ".join(
                            " and ".join(names[a] for a in group) + " are merged into one axis" for group in merged
                        )
                    )
                if list(order) != sorted(order):
                    what.append("the axes are in another order")
                return f"Your shape reads as ({read}): {', and '.join(what)}. The docstring asks for {axes}."
    return ""


def _mutation_hint(spec: CheckSpec, changed: list[str]) -> str:
    modules = set(spec.extra.get("module_args", ()))
    if any(name in modules for name in changed):
        return (
            "The caller's model must stay as it was: leave its weights alone (no `.weight[...] = 0`, `.zero_()` or "
            "`.data` assignments) and change only what your own forward pass computes."
        )
    return (
        "The caller still needs the original values. Use operations that make a new tensor "
        "(`x = x - m` instead of `x -= m`, `masked_fill` instead of `masked_fill_`, no `out=`/`.add_()`)."
    )


def _same_module(old: torch.nn.Module, new: Any) -> bool:
    """Do two modules hold the same parameters and buffers (names, shapes, dtypes, values)?"""
    if not isinstance(new, torch.nn.Module):
        return False
    left, right = old.state_dict(), new.state_dict()
    return left.keys() == right.keys() and all(
        left[k].shape == right[k].shape and left[k].dtype == right[k].dtype and torch.equal(left[k], right[k])
        for k in left
    )


def _changed_inputs(spec: CheckSpec, before: tuple, after: tuple) -> list[str]:
    changed = []
    for index, (old, new) in enumerate(zip(before, after)):
        if isinstance(old, torch.nn.Module):  # a model handed to the learner (a copy of it): are its weights intact?
            try:
                intact = _same_module(old, new)
            except Exception:
                intact = False
            if not intact:
                changed.append(spec.arg_names[index] if index < len(spec.arg_names) else f"argument {index + 1}")
        elif isinstance(old, torch.Tensor):
            try:
                same_values = (
                    isinstance(new, torch.Tensor)
                    and old.shape == new.shape
                    and old.dtype == new.dtype
                    and torch.equal(old, new)
                )
            except Exception:
                same_values = False
            if not same_values:
                changed.append(spec.arg_names[index] if index < len(spec.arg_names) else f"argument {index + 1}")
    return changed


# ---------------------------------------------------------------------------------------------------------------
# Tracebacks
# ---------------------------------------------------------------------------------------------------------------


def _library_roots() -> tuple[str, ...]:
    roots = {str(Path(__file__).resolve().parents[1])}  # course_lib itself
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            roots.add(str(Path(sysconfig.get_paths()[key]).resolve()))
        except Exception:
            pass
    for module in ("torch", "numpy"):
        loaded = sys.modules.get(module)
        if loaded is not None and getattr(loaded, "__file__", None):
            roots.add(str(Path(loaded.__file__).resolve().parent))
    return tuple(roots)


_ROOTS: tuple[str, ...] | None = None


def _is_library(filename: str) -> bool:
    global _ROOTS
    if filename.startswith("<frozen") or filename.startswith("<built-in"):
        return True
    if _ROOTS is None:
        _ROOTS = _library_roots()
    try:
        resolved = str(Path(filename).resolve())
    except Exception:
        resolved = filename
    return any(
        resolved == root or resolved.startswith(root + "/") or resolved.startswith(root + "\\") for root in _ROOTS
    )


@dataclass(frozen=True)
class RecordedFrame:
    """A learner frame described in a sandbox: the function's name, the source line, and where it is."""

    name: str
    line: str
    location: str


def _learner_frame(exc: BaseException | None):
    """The deepest frame of the traceback that belongs to the learner's code (a notebook cell or their file)."""
    if exc is None:
        return None
    recorded = getattr(exc, "_course_frame", None)
    if isinstance(recorded, RecordedFrame):
        return recorded
    try:
        frames = traceback.extract_tb(exc.__traceback__)
    except Exception:
        return None
    for frame in reversed(frames):
        if not _is_library(frame.filename):
            return frame
    return None


def _frame_location(frame) -> str:
    if isinstance(frame, RecordedFrame):
        return frame.location
    try:
        from IPython import get_ipython  # only inside Jupyter/IPython

        shell = get_ipython()
        if shell is not None:
            named = shell.compile.format_code_name(frame.filename)
            if named:
                return f"{named[0].lower()} {named[1]}, line {frame.lineno}"
    except Exception:
        pass
    return f"{Path(frame.filename).name}, line {frame.lineno}"


def _is_stub(exc: BaseException) -> bool:
    """True for the exercise's ``raise NotImplementedError(...)`` line (not for a NotImplementedError raised by torch)."""
    if not isinstance(exc, NotImplementedError):
        return False
    if hasattr(exc, "_course_stub"):
        return bool(exc._course_stub)
    frame = _learner_frame(exc)
    if frame is None:
        return False
    line = frame.line or ""
    return "NotImplementedError" in line or not line  # no source (e.g. exec'd code): trust the exception type


# ---------------------------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------------------------


def _clone(args: Sequence) -> tuple:
    """Fresh copies of the tensor arguments, and of every model marked ``_course_copy_per_call`` (so that a learner
    who changes its weights in place changes a copy, and the check can tell)."""
    return tuple(_copy(arg) for arg in args)


def _copy(arg: Any) -> Any:
    if isinstance(arg, torch.Tensor):
        return arg.clone()
    if isinstance(arg, torch.nn.Module) and getattr(arg, "_course_copy_per_call", False):
        import copy

        return copy.deepcopy(arg)
    return arg


def _call_text(spec: CheckSpec, args: tuple) -> str:
    parts = []
    for name, arg in zip(spec.arg_names, args):
        if isinstance(arg, torch.Tensor):
            parts.append(f"{name} {_shape(arg.shape)}")
        elif isinstance(arg, (int, float, bool)):
            parts.append(f"{name}={arg!r}")
    return ", ".join(parts)


def _item_names(output) -> list[str]:
    if isinstance(output, TupleOut):
        return [f"`{name}`: " for name, _ in output.items]
    return [""]


def _item_axes(output, label: str) -> str:
    if isinstance(output, TupleOut):
        for name, axes in output.items:
            if label == f"`{name}`: ":
                return axes
    return output.axes


def _shape(shape) -> str:
    shape = tuple(int(s) for s in shape)
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def _dtype(dtype, short: bool = True) -> str:
    text = str(dtype)
    return text.replace("torch.", "") if short else text


def _unravel(index: int, shape) -> list[int]:
    out = []
    for size in reversed(tuple(shape)):
        out.append(index % size if size else 0)
        index = index // size if size else 0
    return list(reversed(out))


def _describe(value: Any) -> str:
    """A short, learner-readable description of any value: 'None', 'a NumPy array of shape (2, 3)', ..."""
    if value is None:
        return "None"
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {_shape(value.shape)}"
    module = type(value).__module__ or ""
    if module.startswith("numpy"):
        shape = getattr(value, "shape", None)
        if shape:
            return f"a NumPy array of shape {_shape(shape)}"
        return f"a NumPy {type(value).__name__}"
    if isinstance(value, bool):
        return f"a bool ({value})"
    if isinstance(value, (int, float)):
        return f"{_article(type(value).__name__)} ({_shorten(repr(value), 30)})"
    if isinstance(value, str):
        return f"a string ({_shorten(repr(value), 30)})"
    if isinstance(value, (tuple, list)):
        kinds = {type(item).__name__ for item in value}
        kind = f" {kinds.pop()}s" if len(kinds) == 1 and value else " items"
        if kind == " Tensors":
            kind = " tensors"
        return f"a {type(value).__name__} of {len(value)}{kind}"
    return _article(type(value).__name__)


def _article(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _exception_text(exc: BaseException) -> str:
    message = _safe_str(exc).strip()
    if len(message.splitlines()) > 3:
        message = " ".join(message.splitlines()[:3]) + " ..."
    return f"{type(exc).__name__}: {_shorten(message, 300)}" if message else type(exc).__name__


def _safe_str(value: Any) -> str:
    try:
        return str(value)
    except Exception:
        try:
            return repr(value)
        except Exception:
            return "<unprintable>"


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _safe_bool(predicate: Callable, *args) -> bool:
    try:
        return bool(predicate(*args))
    except Exception:
        return False


def finite_close(a: torch.Tensor, b: torch.Tensor, atol: float = 1e-5, rtol: float = 1e-4) -> bool:
    """Same shape and close values (used by probes)."""
    return same(a, b, atol, rtol)


def quiet_rng():
    """Build reference modules without touching the learner's global random state."""
    return torch.random.fork_rng(devices=[])


def generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def randn(gen: torch.Generator, *shape: int, scale: float = 1.0, shift: float = 0.0) -> torch.Tensor:
    return torch.randn(*shape, generator=gen) * scale + shift
