"""``python -m course_lib doctor``: is this machine ready for the course?

Prints each required package with its version and OK or FAIL, the device torch will use, and whether
notebook widgets will display. Exits with status 1 if anything FAILs, so scripts can rely on it.
"""

from __future__ import annotations

import importlib
import importlib.metadata as metadata
import platform
import re
import sys

# (import name, distribution name, oldest version that works, why the course needs it)
REQUIRED = [
    ("torch", "torch", "2.2", "tensors, autograd and the reference modules"),
    ("numpy", "numpy", "1.26", "arrays"),
    ("matplotlib", "matplotlib", "3.8", "figures"),
    ("ipywidgets", "ipywidgets", "8.1", "interactive widgets and quizzes"),
    ("jupyterlab", "jupyterlab", "4.2", "the notebook interface"),
    ("yaml", "pyyaml", "6.0", "quiz question banks"),
    ("mistune", "mistune", "3.0", "Markdown in quiz text (comes with Jupyter's nbconvert)"),
    ("jupyterlab_rise", "jupyterlab-rise", "0.43", "presenting a notebook as slides (instructors)"),
    ("jupyter_server_mathjax", "jupyter-server-mathjax", "0.2.6", "formulas in live slideshows, offline"),
    ("latex2mathml", "latex2mathml", "3.77", "formulas on the course website and slide decks"),
]


def _version_tuple(text: str) -> tuple[int, ...]:
    """``"2.13.0+cpu"`` → ``(2, 13, 0)``; ``"8.1.9rc1"`` → ``(8, 1, 9)``: the leading digits of each part."""
    parts = []
    for piece in text.split("+")[0].split("."):
        match = re.match(r"\d+", piece)
        if not match:
            break
        parts.append(int(match.group()))
    return tuple(parts)


def check_package(module: str, distribution: str, minimum: str) -> tuple[bool, str]:
    """Return (ok, message) for one required package."""
    try:
        importlib.import_module(module)
    except Exception as exc:  # an import that crashes is as bad as a missing one
        return False, f"cannot import ({type(exc).__name__}: {exc})"
    try:
        version = metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return False, "imported, but its version is unknown"
    if _version_tuple(version) < _version_tuple(minimum):
        return False, f"{version} is too old (need {minimum} or newer)"
    return True, version


def widgets_status() -> tuple[bool, str]:
    """Can JupyterLab display widgets? Needs ipywidgets in the kernel and jupyterlab_widgets in the server."""
    try:
        version = metadata.version("jupyterlab_widgets")
    except metadata.PackageNotFoundError:
        return False, "jupyterlab_widgets is missing: widgets will show as 'Error displaying widget'"
    return True, f"jupyterlab_widgets {version}"


def run() -> int:
    """Print the report; return 0 when everything is OK, 1 otherwise."""
    failures = 0
    print(f"Python {platform.python_version()} ({sys.executable})")
    if sys.version_info < (3, 10):  # noqa: UP036 (the doctor also runs on the wrong Python)
        print("  FAIL  Python 3.10 or newer is needed")
        failures += 1
    for module, distribution, minimum, why in REQUIRED:
        ok, message = check_package(module, distribution, minimum)
        failures += not ok
        print(f"  {'OK  ' if ok else 'FAIL'}  {distribution:<22} {message:<18} {why}")
    ok, message = widgets_status()
    failures += not ok
    print(f"  {'OK  ' if ok else 'FAIL'}  {'widgets':<22} {message}")
    try:
        import torch

        from course_lib._reproducibility import get_device

        device = get_device()
        print(f"  device: {device} (torch {torch.__version__}, {torch.get_num_threads()} CPU threads)")
    except Exception as exc:
        print(f"  FAIL  device: torch could not report a device ({exc})")
        failures += 1
    if failures:
        print(f"\n{failures} problem(s). Fix: run `make install` (or `pip install -r requirements.txt -e .`) in the")
        print(
            "environment your notebooks use, then run this check again. The README's 'Getting help' section lists more."
        )
        return 1
    print("\nAll good: open the course with `make lab`.")
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser("doctor", help="check packages, widgets and the torch device; exit 1 on a FAIL")
    parser.set_defaults(handler=lambda args: run())
