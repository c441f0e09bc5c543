"""No address the project does not own, and no command outside ``python -m course_lib``.

The repository address is one setting, ``Repository`` in pyproject.toml's ``[project.urls]``
(``course_lib/tools/publish/colab.py`` reads it). No tracked file may name a repository of its own: a Colab or Binder
link, a ``git+https://github.com/...`` install, or the old placeholder address. Third-party projects the course cites
(a paper's code) are listed in ``CITED``.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CITED = {"karpathy/nanoGPT"}  # code the notebooks credit, not where the course lives
PLACEHOLDER = "OWNER/NAME"  # how the documentation writes the setting's form
VENDORED = (  # third-party files copied as they are
    "course_lib/tools/publish/slides_assets/",  # reveal.js
    "deploy/z2jh/chart-4.4.0/",  # the Zero to JupyterHub chart's values schema and defaults, unchanged, with their source
)
ADDRESS = re.compile(
    r"colab\.research\.google\.com/github/[\w.-]+/[\w.-]+"
    r"|mybinder\.org/v2/gh/[\w.-]+/[\w.-]+"
    r"|git\+https://github\.com/[\w.-]+/[\w.-]+"
    r"|github\.com/(?P<repo>[\w.-]+/[\w.-]+)"
    r"|transformers-course/transformers-hands-on"
)
DOCUMENTS = ["README.md", "CONTRIBUTING.md", "INSTRUCTORS.md", "docs", "deploy", "benchmarks"]


def tracked_files() -> list[Path]:
    try:
        listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    skip = (".lock", "package-lock.json", ".png", ".svg", ".woff", ".woff2", ".ttf", ".ico", ".gif", ".jpg")
    names = [name for name in listed.splitlines() if not name.endswith(skip) and not name.startswith(VENDORED)]
    return [ROOT / name for name in names if (ROOT / name).is_file()]


def test_no_tracked_file_names_a_repository_address():
    found = []
    for path in tracked_files():
        if path.name == Path(__file__).name:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for match in ADDRESS.finditer(text):
            if match.group("repo") and match.group("repo").removesuffix(".git") in {*CITED, PLACEHOLDER}:
                continue
            found.append(f"{path.relative_to(ROOT)}: {match.group(0)}")
    assert not found, "hard-coded repository addresses (set [project.urls] Repository instead):\n" + "\n".join(found)


def test_the_pattern_finds_an_address():
    for text in (
        "https://colab.research.google.com/github/someone/course/blob/main/x.ipynb",
        "pip install git+https://github.com/someone/course",
        "https://github.com/someone/course",
    ):
        assert ADDRESS.search(text)


def test_no_document_runs_a_module_of_course_lib_tools():
    found = []
    for name in DOCUMENTS:
        base = ROOT / name
        for path in [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file()):
            if path.suffix not in {".md", ".py", ".txt", ".yaml", ".yml", ".cfg", ".toml", ""}:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            found += [
                f"{path.relative_to(ROOT)}: {m.group(0)}"
                for m in re.finditer(r"python -m course_lib\.tools\.\S+", text)
            ]
    assert not found, "every command is a subcommand of `python -m course_lib`:\n" + "\n".join(found)
