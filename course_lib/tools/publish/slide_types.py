"""Which slide each cell of a notebook starts: the rules ``slides.py`` presents by and ``prepare.py`` annotates with.

A cell's ``metadata.slideshow.slide_type`` is one of ``slide``, ``subslide``, ``fragment``, ``-`` (continue the
current slide), ``skip`` or ``notes``, set from the notebook's own structure (the rules are listed in ``slides.py``'s
docstring). ``annotate_notebook`` splits a markdown cell at a ``##``/``###`` heading in its middle, then sets every
cell's type (``set_slide_types``); it is idempotent.
"""

from __future__ import annotations

import ast
import copy
import re

from course_lib.tools.publish.speaker_notes import NOTES_MARKER

SLIDE_TYPES = ("slide", "subslide", "fragment", "-", "skip", "notes")
TAG_TYPES = {
    "slide": "slide",
    "subslide": "subslide",
    "fragment": "fragment",
    "continue": "-",
    "skip": "skip",
    "notes": "notes",
}
NOTICE_MARKER = "**What to notice"
SPLIT_HEADING = re.compile(r"^#{2,3} ")


# --------------------------------------------------------------------------- the rules


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []) or [])


def _tag_override(cell) -> str | None:
    for tag in _tags(cell):
        if tag in TAG_TYPES:
            return TAG_TYPES[tag]
    return None


def _is_notes(cell) -> bool:
    return cell.cell_type == "markdown" and bool(NOTES_MARKER.match(cell.source.lstrip()))


def _has_image(cell) -> bool:
    return cell.cell_type == "code" and any(
        key.startswith("image/") for output in cell.get("outputs", []) for key in output.get("data", {})
    )


def _python_statements(source: str) -> list[ast.stmt] | None:
    """Top-level statements of a code cell (IPython magics and shell lines dropped); None if it does not parse."""
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    try:
        return ast.parse("\n".join(lines)).body
    except SyntaxError:
        return None


def _imports_only(source: str) -> bool:
    statements = _python_statements(source)
    return bool(statements) and all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in statements)


def _starts_with_import(source: str) -> bool:
    statements = _python_statements(source)
    return bool(statements) and isinstance(statements[0], (ast.Import, ast.ImportFrom))


def _helper_only(cell) -> bool:
    """No output, and nothing but function definitions (and imports): plumbing, not the idea being taught."""
    if cell.get("outputs"):
        return False
    statements = _python_statements(cell.source)
    return (
        bool(statements)
        and all(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Import, ast.ImportFrom)) for s in statements)
        and any(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) for s in statements)
    )


def _markdown_type(cell, previous) -> str:
    text = cell.source.lstrip()
    if _is_notes(cell):
        return "notes"
    if text.startswith("# ") or text.startswith("## "):
        return "slide"
    if text.startswith("### "):
        return "subslide"
    if text.startswith(NOTICE_MARKER):
        return "fragment"
    if previous is not None and previous.cell_type == "code":
        return "fragment" if _has_image(previous) else "subslide"
    return "-"


def _code_type(cell, previous, before_first_section: bool, first_code: bool) -> str:
    if (first_code and before_first_section and _starts_with_import(cell.source)) or _imports_only(cell.source):
        return "skip"
    if _helper_only(cell):
        return "skip"
    if _has_image(cell) and previous is not None and previous.cell_type == "code":
        return "subslide"
    return "-"


def slide_types(notebook) -> list[str]:
    """The slide type of every cell of ``notebook`` (an nbformat node), by the rules in the module docstring."""
    types: list[str] = []
    previous = None  # the last cell that shows on a slide
    before_first_section = True
    first_code = True
    for cell in notebook.cells:
        override = _tag_override(cell)
        if cell.cell_type == "markdown":
            if cell.source.lstrip().startswith("## "):
                before_first_section = False
            kind = _markdown_type(cell, previous)
        elif cell.cell_type == "code":
            kind = _code_type(cell, previous, before_first_section, first_code)
            first_code = first_code and "colab" in _tags(cell)  # the Colab setup cell comes before the setup cell
        else:  # raw cells never show
            kind = "skip"
        kind = override or kind
        types.append(kind)
        if kind not in ("skip", "notes"):
            previous = cell
    if types and types[0] not in ("skip", "notes"):
        types[0] = "slide"  # a deck starts with a slide (nbconvert and RISE assume it)
    return types


# --------------------------------------------------------------------------- splitting at headings


def _split_points(source: str) -> list[int]:
    """Line numbers (> 0) where a ``## `` or ``### `` heading starts, outside fenced code blocks."""
    points, fenced = [], False
    for number, line in enumerate(source.split("\n")):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and number > 0 and SPLIT_HEADING.match(line):
            points.append(number)
    return points


def _split_cell(cell) -> list:
    if cell.cell_type != "markdown" or _is_notes(cell):
        return [cell]
    lines = cell.source.split("\n")
    points = [p for p in _split_points(cell.source) if "\n".join(lines[:p]).strip()]
    if not points:
        return [cell]
    pieces = []
    bounds = [0, *points, len(lines)]
    for index, (start, end) in enumerate(zip(bounds, bounds[1:])):
        part = copy.deepcopy(cell)
        part.source = "\n".join(lines[start:end]).strip("\n")
        if index and "id" in cell:
            part["id"] = f"{cell['id']}-{index}"[-64:]
        if index:
            part.metadata.pop("tags", None)  # a tag was meant for the cell's own start
        pieces.append(part)
    return [piece for piece in pieces if piece.source.strip()]


# --------------------------------------------------------------------------- annotate


def set_slide_types(notebook) -> bool:
    """Set each cell's slide type from what it holds now (a figure among its outputs opens a sub-slide), without
    splitting any cell: what ``notebook run`` does after executing. Returns True if anything changed."""
    changed = False
    for cell, kind in zip(notebook.cells, slide_types(notebook)):
        if cell.metadata.get("slideshow") != {"slide_type": kind}:
            cell.metadata["slideshow"], changed = {"slide_type": kind}, True
    return changed


def annotate_notebook(notebook) -> bool:
    """Set the slideshow metadata of every cell of an nbformat node, in place. Returns True if anything changed."""
    before = copy.deepcopy(notebook)
    cells = []
    for cell in notebook.cells:
        cells.extend(_split_cell(cell))
    notebook.cells = cells
    set_slide_types(notebook)
    rise = dict(notebook.metadata.get("rise", {}))
    rise.setdefault("scroll", True)  # tall slides scroll in RISE instead of being cut off
    rise.setdefault("theme", "white")  # RISE's default theme fetches web fonts; "white" ships its fonts
    notebook.metadata["rise"] = rise
    return notebook != before
