"""What a check is made of: its spec (cases, output form, mistake catalogue), its result, and the status words.

A check is a ``CheckSpec``; each one is declared once, in the module of its exercise, and ``registry`` derives the
``check_*`` functions, ``CHECKS`` and ``MISTAKES`` from the specs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from .tensors import SALT_VARIABLE, current_salt

PASSED, FAILED, ERROR, NOT_IMPLEMENTED, MISSING = "passed", "failed", "error", "not_implemented", "missing"


TIMEOUT = "timeout"


ICONS = {PASSED: "✅", FAILED: "❌", ERROR: "❌", NOT_IMPLEMENTED: "⏳", MISSING: "❌", TIMEOUT: "⌛"}


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
    later_raise: ``later_raise(exception, args) -> bool`` recognises an exception at a later test as a consequence
              of this mistake once it was seen on an earlier one (state kept from an earlier call that no longer
              fits the new inputs), which its stateless buggy version cannot reproduce.
    """

    key: str
    title: str
    hint: str
    example: Callable
    variants: tuple[Callable, ...] = ()
    probe: Callable[[Any, tuple], bool] | None = None
    raises: Callable[[BaseException], bool] | None = None
    later_raise: Callable[[BaseException, tuple], bool] | None = None


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
                                       tensor arguments; when given and ``trains``, a result with the right values
                                       must also have the right gradients.
    trains:                            the function must carry gradients (a layer, a loss, a score that can sit in
                                       a loss); False only for the sampling filters, which run while a model
                                       generates, where nothing backpropagates. The one rule, in docs/exercises.md.
    gradient_hint / gradient_diagnose(learner_grads, reference_grads, args): what to say when they differ.
    own:                               ``(module, name)`` of course_lib's own implementation of the function the
                                       exercise asks for, e.g. ``("course_lib.attention", "softmax")``: a learner
                                       function that calls it fails (other course_lib helpers stay allowed).
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
    trains: bool = True
    gradient_hint: str = ""
    gradient_diagnose: Callable[[dict, dict, tuple], str | None] | None = None
    dtype_hint: str = ""
    own: tuple[str, str] | None = None
    time_limit: float | None = None
    atol: float = 1e-5
    rtol: float = 1e-4
    extra: dict = field(default_factory=dict)


class _Verdict:
    def __init__(self, text: str, hint: str = "", mistake: str | None = None, status: str = FAILED):
        self.text, self.hint, self.mistake, self.status = text, hint, mistake, status


def _result(
    spec: CheckSpec,
    status: str,
    text: str,
    hint: str = "",
    mistake: str | None = None,
    where: str = "",
    location: str = "",
) -> CheckResult:
    """One line per part: what is wrong, which test (with the salt of its inputs), where in the learner's code, the
    hint."""
    salt = current_salt()
    if where and salt is not None:
        where = f"{where.removesuffix('.')} (inputs salt {salt}; set {SALT_VARIABLE}={salt} to repeat)."
    lines = [f"{ICONS[status]} {spec.name}: {text}"]
    lines += [f"   {part}" for part in (where, location) if part]
    if hint:
        lines.append(f"   Hint: {hint}")
    return CheckResult(spec.name, False, status, "\n".join(lines), mistake)
