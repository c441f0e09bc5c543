"""Running the course elsewhere: the Colab setup cell, and the links that open a notebook on Colab or Binder.

The repository address is ONE setting: ``Repository`` in ``[project.urls]`` of pyproject.toml
(``https://github.com/OWNER/NAME``). The Colab cell's install command, Colab's and Binder's links, the website's
"run this notebook" links and CITATION.cff are generated from it. While it is unset (today: the course has no
published address yet), nothing names any address: ``repository()`` is None, the links are None (the site shows
how to run locally instead), and the Colab cell only says so. An address the project does not own would be a
supply-chain hole: whoever registered it would run code on every learner who clicked "Open in Colab".

The Colab cell is the first code cell of every notebook (``python -m course_lib notebook prepare`` puts it
there). Each Colab runtime starts empty, so on Colab (once the address is set) it installs ``course_lib`` from the
repository with pip and turns on Colab's support for the quiz widgets. Anywhere else (JupyterLab, Binder, nbval,
``make test``) it does nothing and prints nothing, so stored outputs and test runs are unaffected.

Binder: ``binder/`` installs ``requirements.txt`` with the CPU build of torch and the course in editable mode, and
``binder_url(path)`` opens ``path`` in JupyterLab (``?urlpath=lab/tree/<path>``).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from urllib.parse import quote

PYPROJECT = Path(__file__).resolve().parents[3] / "pyproject.toml"
BRANCH = "main"
COLAB_TAG = "colab"  # the setup cell's tag; "skip" keeps it out of the slides
COLAB_TAGS = [COLAB_TAG, "skip"]
COLAB_MARKER = "# Google Colab only:"  # the cell's first line starts with this
GITHUB = re.compile(r"^https://github\.com/(?P<repo>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+?)(?:\.git)?/?$")


@cache
def repository(pyproject: Path = PYPROJECT) -> str | None:
    """``OWNER/NAME`` from ``Repository`` in pyproject.toml's ``[project.urls]``; None while it is unset."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        return None
    try:
        urls = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {}).get("urls", {})
    except OSError:  # an installed copy without pyproject.toml
        return None
    match = GITHUB.match(urls.get("Repository", "") or "")
    return match.group("repo") if match else None


def repository_url() -> str | None:
    return f"https://github.com/{repository()}" if repository() else None


def install_requirement() -> str | None:
    """What pip installs on Colab: the course's package straight from the repository (PEP 508 direct reference)."""
    return f"course_lib @ git+{repository_url()}@{BRANCH}" if repository() else None


def install_command() -> list[str] | None:
    """The command the Colab cell runs, with ``sys.executable`` written as ``python``."""
    return ["python", "-m", "pip", "install", "--quiet", install_requirement()] if repository() else None


def colab_cell_source() -> str:
    """The source of the Colab setup cell (the same in every notebook)."""
    if not repository():
        return "\n".join(
            [
                f"{COLAB_MARKER} the course has no published address yet, so it cannot be installed on Colab.",
                "# Run it on your own machine instead: `make lab` (README.md). Anywhere else this cell does nothing.",
                "import os",
                "import sys",
                "",
                'if "google.colab" in sys.modules or "COLAB_RELEASE_TAG" in os.environ:',
                '    print("This course has no published address yet: run it locally with `make lab` (see README.md).")',
            ]
        )
    return "\n".join(
        [
            f"{COLAB_MARKER} each Colab runtime starts empty, so this installs the course library (course_lib) from",
            f"# {repository_url()} (Colab already has torch). Anywhere else this cell does nothing.",
            "import os",
            "import subprocess",
            "import sys",
            "",
            'if "google.colab" in sys.modules or "COLAB_RELEASE_TAG" in os.environ:',
            '    print("On Colab: installing the course library (course_lib) with pip ...")',
            f'    requirement = "{install_requirement()}"',
            '    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", requirement], check=True)',
            "    from google.colab import output",
            "",
            "    output.enable_custom_widget_manager()  # the quizzes are ipywidgets",
        ]
    )


def is_colab_cell(cell) -> bool:
    return cell.get("cell_type") == "code" and (
        COLAB_TAG in (cell.get("metadata", {}).get("tags") or []) or _source(cell).startswith(COLAB_MARKER)
    )


def _source(cell) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def colab_url(path: str) -> str | None:
    """Open ``path`` (relative to the repository, e.g. ``notebooks/01_why_rnns_struggle.ipynb``) on Colab."""
    if not repository():
        return None
    return f"https://colab.research.google.com/github/{repository()}/blob/{BRANCH}/{quote(path)}"


def binder_url(path: str) -> str | None:
    """Open ``path`` in JupyterLab on Binder, in an environment built from ``binder/``."""
    if not repository():
        return None
    return f"https://mybinder.org/v2/gh/{repository()}/{BRANCH}?urlpath={quote('lab/tree/' + path, safe='/')}"


def sync_citation(citation: Path) -> bool:
    """Make CITATION.cff's ``repository-code`` follow the setting (removed while it is unset); True if it changed."""
    text = citation.read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if not line.startswith("repository-code:")]
    if repository_url():
        at = next((i for i, line in enumerate(lines) if line.startswith("keywords:")), len(lines))
        lines.insert(at, f'repository-code: "{repository_url()}"')
    new = "\n".join(lines) + "\n"
    if new != text:
        citation.write_text(new, encoding="utf-8")
    return new != text
