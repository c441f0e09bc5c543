"""What the notebook decks (``slides.py``) and the lecture decks (``lecture.py``) share: which notebooks a command
means (all of the course's, or those named by path or number), the decks' folder with the vendored reveal.js copied
into it, and reading a notebook with a message instead of a traceback."""

from __future__ import annotations

import shutil
from pathlib import Path

from course_lib._errors import CommandError
from course_lib._syllabus import COURSE

ASSETS = Path(__file__).resolve().parent / "slides_assets"
STATIC_DIR = "_static"


class SlidesError(CommandError):
    """A problem the user can fix; the command line prints the message without a traceback."""


def default_notebooks_dir() -> Path:
    return Path(__file__).resolve().parents[3] / "notebooks"


def default_out_dir() -> Path:
    return Path(__file__).resolve().parents[3] / "slides"


def course_notebooks(folder: Path | None = None) -> list[Path]:
    """The course's notebooks in teaching order (``course_lib._syllabus``) that exist in ``folder``."""
    folder = Path(folder or default_notebooks_dir())
    return [folder / row.file for row in COURSE if (folder / row.file).exists()]


def resolve_notebook(name: str | Path) -> Path:
    """A notebook given as a path, a file name, a stem or a number like ``02``."""
    path = Path(name)
    if path.is_file():
        if path.suffix != ".ipynb":
            raise SlidesError(f"{path} is not a notebook (.ipynb).")
        return path
    if path.suffix == ".ipynb" or len(path.parts) > 1:
        raise SlidesError(
            f"{path} does not exist (or is not a file). "
            "Pass a notebook, e.g. notebooks/02_attention_qkv.ipynb, or its number, 02."
        )
    text = str(name)
    matches = [p for p in course_notebooks() if text in (p.stem, p.name) or p.name.startswith(f"{text.zfill(2)}_")]
    if len(matches) == 1:
        return matches[0]
    names = "\n".join(f"  {p.name}" for p in course_notebooks())
    raise SlidesError(f"There is no notebook {text!r}. Pass a path, or one of (also as 01, 02, ...):\n{names}")


def chosen_notebooks(names: list[str | Path] | None) -> list[Path]:
    """The notebooks ``names`` means (paths or numbers), or every notebook of the course when it is empty."""
    paths = [resolve_notebook(name) for name in names] if names else course_notebooks()
    if not paths:
        raise SlidesError(f"No notebooks found in {default_notebooks_dir()}.")
    return paths


def check_out_dir(out_dir: Path | str) -> Path:
    """``out_dir``, created if missing; a file in its place is an error the user can fix."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise SlidesError(f"--out {out_dir} is a file, not a folder. Pass a folder for the decks, e.g. --out slides.")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SlidesError(f"Could not create the folder {out_dir} ({exc.strerror or exc}).") from None
    return out_dir


def deck_folder(out_dir: Path | str | None) -> Path:
    """The folder for decks (default: ``slides/``), with reveal.js copied into its ``_static/``: the decks open
    offline (their formulas need nothing: they are MathML)."""
    out_dir = check_out_dir(out_dir or default_out_dir())
    shutil.copytree(ASSETS / "reveal.js", out_dir / STATIC_DIR / "reveal.js", dirs_exist_ok=True)
    return out_dir


def read_notebook(path: Path):
    """The notebook at ``path`` (nbformat 4), or a ``SlidesError`` saying why it could not be read."""
    import nbformat

    try:
        return nbformat.read(path, as_version=4)
    except Exception as exc:  # nbformat raises several kinds for a broken file
        raise SlidesError(f"Could not read {path} as a notebook: {exc}") from None
