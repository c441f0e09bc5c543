"""An adversarial suite of learner solutions for every graded function of the exercises (issue 26, item 6).

Each module here (one per exercise) holds functions written the way learners really write them: wrong ones, each
registered with ``@wrong(check, mistake)``, which the check must reject with a true message, and unusual but correct
ones, registered with ``@right(check)``, which the check must accept. ``tests/test_adversarial.py`` runs them all.

``mistake`` is the key the check must give: a key of the check's catalogue (then the code really makes that mistake),
a generic key (``wrong_values``, ``wrong_shape``, ``not_finite``, ``wrong_dtype``, ``mutates_input``, ``no_gradient``,
``wrong_gradient``: the message says what differs without naming a typical mistake; ``delegates``: the function calls
course_lib's own implementation of the function it should write), or ``None`` (the function raised
an error the catalogue does not explain); a tuple allows several keys that are all true of the code. The solutions
were written from how learners err, not from the catalogues; each key was added afterwards and checked against the
code it describes.

To add one: write the function in the exercise's module with the learner's signature and decorate it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field

MODULES = (
    "ex01_rnn",
    "ex02_attention",
    "ex03_multi_head",
    "ex04_positional_encoding",
    "ex05_layernorm_residual",
    "ex06_encoder_block",
    "ex08_language_model",
    "ex09_induction_heads",
    "ex10_rope_online_softmax",
    "ex11_tokenizer",
)


@dataclass(frozen=True)
class Solution:
    """One learner solution: the check it goes to, the function, whether it is correct, what the check may name."""

    check: str
    function: Callable
    correct: bool
    mistakes: frozenset = field(default_factory=frozenset)
    slow: bool = False
    xfail: str = ""

    @property
    def id(self) -> str:
        return f"{self.check}:{self.function.__name__}"


SOLUTIONS: list[Solution] = []


def wrong(check: str, mistake=None, *, slow: bool = False, xfail: str = ""):
    """Register a wrong solution for ``check``; ``mistake`` is the key (or keys) the check must give, or None."""
    keys = frozenset(mistake if isinstance(mistake, tuple) else (mistake,))

    def register(function: Callable) -> Callable:
        SOLUTIONS.append(Solution(check, function, False, keys, slow=slow, xfail=xfail))
        return function

    return register


def right(check: str, *, slow: bool = False, xfail: str = ""):
    """Register an unusual but correct solution for ``check``: the check must accept it."""

    def register(function: Callable) -> Callable:
        SOLUTIONS.append(Solution(check, function, True, slow=slow, xfail=xfail))
        return function

    return register


def all_solutions() -> list[Solution]:
    """Every registered solution, in module order (importing the modules registers them once)."""
    for name in MODULES:
        importlib.import_module(f"{__name__}.{name}")
    return list(SOLUTIONS)
