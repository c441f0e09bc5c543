"""What to do when an optional system package is missing: skip with the install hint, or fail under ``CI``.

A learner's or a new contributor's machine may lack bubblewrap (sandboxed grading), Chromium (the browser tests) or
npm (the hub test); README's "Optional system packages" table says what each adds. There the tests that need one
skip and say how to install it. In CI (the environment variable ``CI`` set) they must run, so a missing package is a
failure.
"""

from __future__ import annotations

import os
import sys

import pytest


def unavailable(reason: str, what: str = "these tests") -> None:
    """Skip (learner's machine) or fail (``CI`` set) because ``reason``."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set, so {what} must run)", pytrace=False)
    pytest.skip(reason)


def require_sandbox(module_level: bool = False) -> None:
    """Skip or fail unless a bubblewrap sandbox works on this machine (Linux only)."""
    from course_lib.tools.grading import sandbox

    if not sys.platform.startswith("linux"):
        pytest.skip("the sandbox is bubblewrap, which exists on Linux only", allow_module_level=module_level)
    status = sandbox.probe()
    if status.available:
        return
    reason = f"sandboxed grading needs bubblewrap: {status.reason}"
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set, so the sandbox tests must run)", pytrace=False)
    pytest.skip(reason, allow_module_level=module_level)
