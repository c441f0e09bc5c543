"""Packaging in one place: one version, the learner's dependencies apart from the test tools."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import course_lib

tomllib = pytest.importorskip("tomllib", reason="Python 3.11+ reads pyproject.toml with tomllib")

ROOT = Path(__file__).resolve().parents[1]
TEST_TOOLS = {"pytest", "nbval", "hypothesis", "playwright", "ruff", "import-linter", "pytest-xdist", "pre-commit"}


def requirement_names(lines) -> set[str]:
    names = set()
    for line in lines:
        line = line.split("#")[0].strip()
        if line and not line.startswith("-"):
            names.add(re.split(r"[<>=!~\[; ]", line)[0].lower())
    return names


def test_the_version_is_written_once():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"], "pyproject.toml reads the version from course_lib.__version__"
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "course_lib.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", course_lib.__version__)
    citation = ROOT / "CITATION.cff"
    if citation.exists():  # generated from the same version, never written by hand a second time
        versions = re.findall(r'^version:\s*"?([^"\n]+)"?', citation.read_text(encoding="utf-8"), re.M)
        assert versions in ([], [course_lib.__version__]), f"CITATION.cff says {versions}"


def test_the_learner_requirements_hold_no_test_tools():
    learner = requirement_names((ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines())
    assert not learner & TEST_TOOLS, f"move {sorted(learner & TEST_TOOLS)} to requirements-dev.txt"
    dev = requirement_names((ROOT / "requirements-dev.txt").read_text(encoding="utf-8").splitlines())
    assert {"pytest", "nbval"} <= dev


def test_the_package_dependencies_are_the_learners_runtime():
    """What ``pip install course_lib`` (the Colab cell) pulls: what the notebooks import, nothing to test with."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    runtime = requirement_names(project["dependencies"])
    assert {"torch", "numpy", "matplotlib", "ipywidgets", "pyyaml"} <= runtime
    assert not runtime & TEST_TOOLS
    for extra in project.get("optional-dependencies", {}).values():
        assert not requirement_names(extra) & TEST_TOOLS
