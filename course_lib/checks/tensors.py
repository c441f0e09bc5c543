"""Seeded inputs for the checks' cases, built without touching the learner's global random state.

Every seed a case is written with is mixed with a *salt* before it seeds anything: ``generator(seed)`` draws from
``salted(seed)``. One check call uses one salt (so every rebuild of a case gives the same inputs), and every check
call draws a new one, so a check's inputs cannot be read from the source and typed in. ``COURSE_CHECK_SALT`` fixes
the salt (for tests, or to repeat a run); ``salt_scope(salt)`` fixes it for the cases built inside it (the grader
judges each check under a salt of its own; a test repeats a verdict by fixing it).
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import os
import secrets
from collections.abc import Iterator

import torch

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
