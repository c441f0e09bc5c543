"""What a check is made of, and the inputs it is run on.

A check is a ``CheckSpec`` (its cases, the form of its output, its catalogue of typical mistakes), declared once in
the module of its exercise; the package's ``__init__`` derives the ``check_*`` functions, ``CHECKS`` and ``MISTAKES``
from the specs. A verdict is a ``CheckResult`` with one of the status words below.

Inputs: every seed a case is written with is mixed with a *salt* before it seeds anything: ``generator(seed)`` draws
from ``salted(seed)``, without touching the learner's global random state. One check call uses one salt (so every
rebuild of a case gives the same inputs), and every check call draws a new one, so a check's inputs cannot be read
from the source and typed in. ``COURSE_CHECK_SALT`` fixes the salt (for tests, or to repeat a run);
``salt_scope(salt)`` fixes it for the cases built inside it (the grader draws a submission's inputs and judges its
outputs under the same salt, so both sides build the same cases).
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import os
import secrets
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

# --------------------------------------------------------------------------- tensors

#: The environment variable that fixes the salt of every check call (``COURSE_CHECK_SALT=123456``).
SALT_VARIABLE = "COURSE_CHECK_SALT"

_SALT: contextvars.ContextVar[int | None] = contextvars.ContextVar("course_check_salt", default=None)


def quiet_rng():
    """Build reference modules without touching the learner's global random state."""
    return torch.random.fork_rng(devices=[])


@contextlib.contextmanager
def salt_scope(salt: int) -> Iterator[int]:
    """Every case built inside uses ``salt``: ``with salt_scope(s): run_check(...)`` (or ``remote.judge``) builds the
    same inputs each time, so a verdict can be repeated."""
    if isinstance(salt, bool) or not isinstance(salt, int):
        raise TypeError(f"a salt is a whole number, got {salt!r}")
    token = _SALT.set(salt)
    try:
        yield salt
    finally:
        _SALT.reset(token)


def fixed_salt() -> int | None:
    """The salt ``COURSE_CHECK_SALT`` sets, if it is set to a whole number."""
    text = os.environ.get(SALT_VARIABLE, "").strip()
    try:
        return int(text) if text else None
    except ValueError:
        return None


def new_salt() -> int:
    """The salt of a check call made outside any scope: ``COURSE_CHECK_SALT`` if set, else a fresh random one."""
    fixed = fixed_salt()
    return fixed if fixed is not None else secrets.randbelow(1_000_000)


def current_salt() -> int | None:
    """The salt of the enclosing ``salt_scope``, or None outside one."""
    return _SALT.get()


@contextlib.contextmanager
def check_scope() -> Iterator[int]:
    """The salt scope of one check call: the enclosing scope's salt, or a new salt (``new_salt``)."""
    salt = current_salt()
    with salt_scope(new_salt() if salt is None else salt) as used:
        yield used


def salted(seed: int) -> int:
    """``seed`` mixed with the current salt (a scope's, or ``COURSE_CHECK_SALT``'s, or 0 when neither is set)."""
    salt = current_salt()
    if salt is None:
        salt = fixed_salt() or 0
    digest = hashlib.blake2b(f"{salt}:{seed}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1  # a non-negative 63-bit seed


def generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(salted(seed))


def manual_seed(seed: int) -> None:
    """``torch.manual_seed`` with the salted seed (inside ``quiet_rng``, to build a reference module)."""
    torch.manual_seed(salted(seed))


def randn(gen: torch.Generator, *shape: int, scale: float = 1.0, shift: float = 0.0) -> torch.Tensor:
    return torch.randn(*shape, generator=gen) * scale + shift


# --------------------------------------------------------------------------- spec

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
    raises_on: ``raises_on(exception, args) -> bool`` recognises it from the exception and the inputs it was raised
              on (the same exception means one mistake on some inputs and another on others).
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
    raises_on: Callable[[BaseException, tuple], bool] | None = None
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


@dataclass(frozen=True)
class ValueOut:
    """The function returns a plain Python value, not a tensor: a list of token ids, a dict of counts, a string.

    ``what`` names it for messages (``"a list of token ids"``); ``conform(value) -> (plain, problem)`` turns what the
    learner returned into plain data compared by ``==`` (e.g. any mapping into a dict), or gives ``(None, (text,
    hint))`` when it has another form. Values are equal or not: there is no tolerance and no gradient.
    """

    what: str
    conform: Callable[[Any], tuple[Any, tuple[str, str] | None]]


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
    output: TensorOut | TupleOut | ValueOut
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
