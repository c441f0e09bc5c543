"""A fresh machine is green: without bubblewrap, Chromium or npm the suite collects, and the tests that need one skip.

README's "Optional system packages" table says what each adds. This test hides them (a ``PATH`` whose folders hold
everything but ``bwrap``, ``chromium*``, ``node`` and ``npm``), unsets ``CI`` and runs, in a separate pytest:
the whole suite's collection, then the sandbox, browser and hub modules. Nothing may fail; the tests that need a
hidden package skip and say how to install it. With ``CI`` set the same run must fail (tests/optional_tools.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HIDDEN = ("bwrap", "chromium", "chromium-browser", "google-chrome", "node", "nodejs", "npm")
NEED_A_HIDDEN_PACKAGE = [
    "tests/test_grading_sandbox.py",
    "tests/browser",
    "tests/test_hub.py",
    "tests/test_checks_language_model.py::test_graded_in_the_sandbox_the_right_solution_passes_and_the_mutations_are_named",
]


def hidden_path(shadow: Path) -> str:
    """``$PATH`` with every folder that holds a hidden program replaced by a copy of links to all the others."""
    folders = []
    for index, folder in enumerate(os.environ.get("PATH", "").split(os.pathsep)):
        if not folder or not Path(folder).is_dir():
            continue
        names = os.listdir(folder)
        if not set(names) & set(HIDDEN):
            folders.append(folder)
            continue
        copy = shadow / str(index)
        copy.mkdir(parents=True)
        for name in names:
            if name not in HIDDEN:
                (copy / name).symlink_to(Path(folder) / name)
        folders.append(str(copy))
    return os.pathsep.join(folders)


def run_pytest(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs", *args]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def fresh_env(tmp_path_factory) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in {"CI", "COURSE_CHROMIUM"}}
    env["PATH"] = hidden_path(tmp_path_factory.mktemp("path"))
    check = subprocess.run(["sh", "-c", "command -v bwrap chromium npm node || true"], env=env, capture_output=True)
    assert not check.stdout.strip(), f"still on PATH: {check.stdout!r}"
    return env


@pytest.mark.slow
def test_the_suite_collects_without_the_optional_packages(fresh_env):
    run = run_pytest(["--collect-only"], fresh_env)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]


@pytest.mark.slow
def test_what_needs_an_optional_package_skips_with_its_hint(fresh_env):
    run = run_pytest(NEED_A_HIDDEN_PACKAGE, fresh_env)
    report = run.stdout + run.stderr
    assert run.returncode == 0, report[-4000:]
    assert " failed" not in report and " error" not in report, report[-4000:]
    assert "apt-get install bubblewrap" in report  # the sandbox's hint
    assert "Chromium" in report or "chromium" in report  # the browser tests' reason
    assert "`node` is not installed" in report  # the hub test's reason


@pytest.mark.slow
def test_under_ci_a_missing_sandbox_is_a_failure(fresh_env):
    run = run_pytest(["tests/test_grading_sandbox.py"], {**fresh_env, "CI": "1"})
    assert run.returncode != 0 and "CI is set" in run.stdout, run.stdout[-3000:]
