"""Running the course elsewhere: the Colab setup cell, and the links that open a notebook on Colab or Binder.

``REPOSITORY`` is where the course is published; Colab's and Binder's links, the Colab cell's install command, the
website's "run this notebook" links and CITATION.cff all point there. Change it (and ``BRANCH``) in this one place.

The Colab cell is the first code cell of every notebook (``python -m course_lib notebook prepare`` puts it
there). Each Colab runtime starts empty, so on Colab it installs ``course_lib`` from the repository with pip (Colab
already has torch, NumPy, matplotlib and ipywidgets, so only the course itself is fetched) and turns on Colab's
support for the quiz widgets. Anywhere else (JupyterLab, Binder, nbval, ``make test``) it does nothing and prints
nothing, so stored outputs and test runs are unaffected.

Binder: ``binder/`` installs ``requirements.txt`` with the CPU build of torch and the course in editable mode, and
``binder_url(path)`` opens ``path`` in JupyterLab (``?urlpath=lab/tree/<path>``).
"""

from __future__ import annotations

from urllib.parse import quote

REPOSITORY = "transformers-course/transformers-hands-on"  # owner/name on GitHub
BRANCH = "main"
COLAB_TAG = "colab"  # the setup cell's tag; "skip" keeps it out of the slides
COLAB_TAGS = [COLAB_TAG, "skip"]
COLAB_MARKER = "# Google Colab only:"  # the cell's first line starts with this


def repository_url() -> str:
    return f"https://github.com/{REPOSITORY}"


def install_requirement() -> str:
    """What pip installs on Colab: the course's package straight from the repository (PEP 508 direct reference)."""
    return f"course_lib @ git+{repository_url()}@{BRANCH}"


def install_command() -> list[str]:
    """The command the Colab cell runs, with ``sys.executable`` written as ``python``."""
    return ["python", "-m", "pip", "install", "--quiet", install_requirement()]


def colab_cell_source() -> str:
    """The source of the Colab setup cell (the same in every notebook)."""
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


def colab_url(path: str) -> str:
    """Open ``path`` (relative to the repository, e.g. ``notebooks/01_why_rnns_struggle.ipynb``) on Colab."""
    return f"https://colab.research.google.com/github/{REPOSITORY}/blob/{BRANCH}/{quote(path)}"


def binder_url(path: str) -> str:
    """Open ``path`` in JupyterLab on Binder, in an environment built from ``binder/``."""
    return f"https://mybinder.org/v2/gh/{REPOSITORY}/{BRANCH}?urlpath={quote('lab/tree/' + path, safe='/')}"
