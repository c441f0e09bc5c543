"""Fuzzing: whatever a learner's function does, no exception escapes from course_lib.checks.

Hypothesis builds malformed learner functions: they return random junk (None, numbers, strings, NumPy arrays,
tensors of random shapes and dtypes, NaN and inf, nested tuples and lists, objects that raise when touched),
raise random exceptions (some with messages that cannot even be printed), or change their inputs in place first.
Every check must answer with a CheckResult that did not pass, and print one message.
"""

import contextlib
import io

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from course_lib.checks import CHECKS, SPECS, CheckResult
from course_lib.checks.spec import ValueOut, salt_scope

STATUSES = {"passed", "failed", "error", "not_implemented"}


class Hostile:
    """An object that raises whenever it is looked at."""

    def __getattr__(self, name):
        raise RuntimeError("hostile attribute")

    def __repr__(self):
        raise RuntimeError("hostile repr")

    def __str__(self):
        raise RuntimeError("hostile str")

    def __bool__(self):
        raise RuntimeError("hostile bool")

    def __len__(self):
        raise RuntimeError("hostile len")

    def __eq__(self, other):
        raise RuntimeError("hostile eq")

    __hash__ = object.__hash__


class WeirdTensor(torch.Tensor):
    """A tensor subclass whose every torch operation fails."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.Tensor.__repr__,):
            return "WeirdTensor"
        raise RuntimeError("weird tensor refuses")


class UnprintableError(Exception):
    def __str__(self):
        raise ValueError("cannot print me")


DTYPES = [
    torch.float32,
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.int64,
    torch.int32,
    torch.uint8,
    torch.bool,
    torch.complex64,
]
EXCEPTIONS = [
    ValueError,
    TypeError,
    RuntimeError,
    ZeroDivisionError,
    IndexError,
    KeyError,
    AttributeError,
    AssertionError,
    NotImplementedError,
    RecursionError,
    StopIteration,
    OverflowError,
    MemoryError,
    SystemExit,
    UnprintableError,
]

shapes = st.lists(st.integers(min_value=0, max_value=6), min_size=0, max_size=4).map(tuple)


@st.composite
def tensors(draw):
    shape = draw(shapes)
    dtype = draw(st.sampled_from(DTYPES))
    fill = draw(st.sampled_from(["randn", "nan", "inf", "zeros", "huge"]))
    base = torch.randn(shape) if fill == "randn" else torch.zeros(shape)
    if fill == "nan":
        base = base + float("nan")
    elif fill == "inf":
        base = base - float("inf")
    elif fill == "huge":
        base = base + 1e30
    tensor = base.to(dtype)
    if draw(st.booleans()) and tensor.dim() >= 2:
        tensor = tensor.transpose(0, 1)  # not contiguous
    if draw(st.booleans()) and tensor.is_floating_point():
        tensor = tensor.requires_grad_(True)
    return tensor


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.binary(max_size=10),
    st.just(NotImplemented),
    st.just(Ellipsis),
)
arrays = st.tuples(shapes, st.sampled_from([np.float32, np.float64, np.int64, np.bool_])).map(
    lambda a: np.zeros(a[0], dtype=a[1])
)
specials = st.sampled_from(["hostile", "weird", "object", "generator", "dict", "set", "module", "type"]).map(
    lambda kind: {
        "hostile": lambda: Hostile(),
        "weird": lambda: torch.zeros(2, 3).as_subclass(WeirdTensor),
        "object": lambda: object(),
        "generator": lambda: (i for i in range(3)),
        "dict": lambda: {"output": torch.zeros(2)},
        "set": lambda: {1, 2},
        "module": lambda: torch.nn.Linear(2, 2),
        "type": lambda: torch.Tensor,
    }[kind]()
)
leaves = st.one_of(scalars, arrays, tensors(), specials)
junk = st.recursive(
    leaves, lambda children: st.one_of(st.tuples(children, children), st.lists(children, max_size=3)), max_leaves=5
)


@st.composite
def learner_functions(draw):
    """A malformed learner function: (mutate?) then return junk or raise."""
    mutation = draw(st.sampled_from([None, "add", "zero", "nan", "resize", "grad"]))
    outcome = draw(st.sampled_from(["return", "raise", "echo", "nearly"]))
    value = draw(junk)
    exception = draw(st.sampled_from(EXCEPTIONS))
    message = draw(st.one_of(st.text(max_size=50), st.just("x" * 5000), st.just("line\n" * 20)))
    noise = draw(st.floats(min_value=-1, max_value=1, allow_nan=False))

    def learner(*args):
        tensors_in = [a for a in args if isinstance(a, torch.Tensor)]
        if mutation and tensors_in:
            target = tensors_in[0]
            if mutation == "add":
                target.add_(1.0)
            elif mutation == "zero":
                target.zero_()
            elif mutation == "nan":
                target.fill_(float("nan"))
            elif mutation == "resize":
                target.resize_(0)
            elif mutation == "grad":
                target.requires_grad_(True)
        if outcome == "raise":
            raise exception(message) if exception is not UnprintableError else UnprintableError()
        if outcome == "echo":
            return args[0] if args else value
        if outcome == "nearly" and tensors_in:
            return tensors_in[0] * (1 + noise)
        return value

    return learner


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(check_name=st.sampled_from(sorted(CHECKS)), learner=learner_functions(), verbose=st.booleans())
def test_no_exception_escapes_from_a_check(check_name, learner, verbose):
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        result = CHECKS[check_name](learner, verbose=verbose)
    assert isinstance(result, CheckResult)
    assert result.status in STATUSES
    assert isinstance(result.message, str) and result.message
    assert not result.passed, result.message
    assert printed.getvalue() == (result.message + "\n" if verbose else "")


@settings(max_examples=60, deadline=None)
@given(check_name=st.sampled_from(sorted(CHECKS)), value=junk)
def test_passing_junk_instead_of_a_function_never_raises(check_name, value):
    result = CHECKS[check_name](value, verbose=False)
    assert isinstance(result, CheckResult) and not result.passed


@pytest.mark.parametrize("check_name", sorted(CHECKS))
def test_a_learner_returning_a_perturbed_reference_fails_cleanly(check_name):
    """Right structure, nearly right values: the check explains the difference (a message, never a crash)."""
    spec = SPECS[check_name]
    with salt_scope(5):  # the cases built before the check, under the salt it runs with (building one inside a
        built = [case.build() for case in spec.cases]  # learner's call runs course_lib's own function: refused)

    def nearly(*args):
        built_args, expected = next((b, exp) for b, exp in built if _same_inputs(b, args))
        if isinstance(spec.output, ValueOut):  # a plain value: one id, one count or one character off
            return _nudged(expected)
        if isinstance(expected, tuple):
            return tuple(e + 0.05 for e in expected)
        return expected + 0.05

    with salt_scope(5):
        result = CHECKS[check_name](nearly, verbose=False)
    message = result.message.replace("\n   ", " ")
    if isinstance(spec.output, ValueOut):
        assert result.status == "failed" and result.mistake == "wrong_values", message
        assert "differs" in message or "wrong count" in message, message
    else:
        assert result.status == "failed" and "largest by" in message


def _nudged(expected):
    """``expected`` with one entry changed: the last id (of the last chunk that holds one), the first pair's count,
    a pair's second id, the last character."""
    if isinstance(expected, list) and any(isinstance(chunk, list) for chunk in expected):
        last = max(k for k, chunk in enumerate(expected) if chunk)
        return expected[:last] + [_nudged(expected[last])] + expected[last + 1 :]
    if isinstance(expected, list):
        return expected[:-1] + [expected[-1] + 1]
    if isinstance(expected, tuple):  # a pair: its second id one more
        return (expected[0], expected[1] + 1)
    if isinstance(expected, dict):
        first = next(iter(expected))
        return {**expected, first: expected[first] + 1}
    return expected[:-1] + chr(ord(expected[-1]) + 1)


def _same_inputs(built, args) -> bool:
    for a, b in zip(built, args):
        if isinstance(a, torch.Tensor):
            if not (isinstance(b, torch.Tensor) and a.shape == b.shape and torch.equal(a, b)):
                return False
        elif isinstance(a, (int, float, bool, list, str, dict)) and a != b:
            return False
    return True
