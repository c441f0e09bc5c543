"""One way to prepare a notebook for each of its audiences: ``prepare_notebook(notebook, audience)``.

    python -m course_lib notebook prepare [NOTEBOOK ...]   # "course", on the files; `notebook run` also executes

Every tool that turns a notebook into something a reader sees calls ``prepare_notebook`` with its audience, and each
audience is a list of named steps (``STEPS``), applied in order, in place, idempotently:

- ``"course"`` (the notebooks as committed: what JupyterLab, Binder and Colab open; ``notebook prepare/run``):
  1. **Colab cell.** The first code cell becomes the Colab setup cell (``course_lib.tools.publish.colab``): inserted
     before the first code cell, or brought up to date if it is there already. It is tagged ``colab`` and ``skip``.
  2. **Alt text.** ``plt.show()`` becomes ``show_figure()`` (``course_lib.lab.plots``), which stores alt text written
     from the figure's data in the output, and ``show_figure`` is imported in the setup cell (added to its
     ``from course_lib.lab.plots import ...`` line, or as a new line after its last ``course_lib`` import).
  3. **Colours.** Matplotlib's default tab10 colours and the few hand-picked colours the notebooks used become the
     colour-blind-safe palette of ``course_lib.lab.plots`` (``OLD_COLORS`` below); box fills become its pale tints.
  4. **Slides.** A notebook with slideshow metadata is annotated again, so a new cell gets its own (``skip``).
  5. **Speaker notes.** A visible ``**Speaker notes.**`` cell moves into its host cell's metadata (speaker_notes.py).
  6. **Reading time.** The first cell states ``**Estimated time:** A–B minutes.`` from the estimate (reading_time.py).
- ``"site"`` (``site.py``): no speaker notes, no Colab cell, each widget output as its static fallback.
- ``"slides"`` (``slides.py``): slideshow metadata if the notebook has none, the speaker notes back as ``notes``
  cells (the speaker view shows them), long slides split and checks folded (``slides_fit.py``).
- ``"bundle"`` (the learners' copy, ``bundle.py``): no speaker notes.
- ``"colab"``: Colab opens the committed notebook from the repository (``colab.colab_url``), so it is ``"course"``.

Default files for ``notebook prepare``: every lesson in ``notebooks/`` and every solution in
``exercises/solutions/`` (then regenerate the learner notebooks with ``python -m course_lib exercises build``).
Code changes mean stored outputs are stale: ``python -m course_lib notebook run NOTEBOOK`` prepares and re-executes
(``course_lib/tools/publish/notebook.py``), then ``tests/test_accessibility.py`` checks every stored figure's alt text.
"""

from __future__ import annotations

import copy
import re
from functools import cache
from pathlib import Path

from course_lib.tools.publish import colab

ROOT = Path(__file__).resolve().parents[3]
DEFAULT_TIME = "**Estimated time:** 0–0 minutes."  # placeholder the estimate replaces at once
WIDGET_MIMES = ("application/vnd.jupyter.widget-view+json", "application/vnd.jupyter.widget-state+json")
SHOW_CALL = re.compile(r"\bplt\.show\(\s*\)")
PLOTS_IMPORT = re.compile(r"^from course_lib\.lab\.plots import (?P<names>[^\n(]+)$", re.M)
OLD_COLORS = {  # old colour literal -> name in course_lib.lab.plots.PALETTE (lines, markers) or PALE (box fills)
    "tab:blue": ("PALETTE", "blue"),
    "tab:orange": ("PALETTE", "orange"),
    "tab:green": ("PALETTE", "green"),
    "tab:red": ("PALETTE", "vermillion"),
    "tab:purple": ("PALETTE", "purple"),
    "tab:grey": None,  # plain "grey"
    "tab:gray": None,
    "#d62828": ("PALETTE", "vermillion"),  # skip connections, "no LayerNorm"
    "#f4a261": ("PALETTE", "orange"),  # post-LN
    "#2a9d8f": ("PALETTE", "green"),  # pre-LN
    "#8ecae6": ("PALE", "sky"),  # attention box
    "#b7e4c7": ("PALE", "green"),  # feed-forward box
    "#f4c542": ("PALE", "yellow"),  # LayerNorm box
}
_COLOR_LITERAL = re.compile(r"""(["'])(""" + "|".join(re.escape(k) for k in OLD_COLORS) + r""")\1""", re.I)


@cache
def color_map() -> dict[str, str]:
    """Old colour literal -> the palette's colour (plots imports matplotlib and torch: only when a cell needs it)."""
    from course_lib.lab import plots

    return {old: getattr(plots, new[0])[new[1]] if new else "grey" for old, new in OLD_COLORS.items()}


def default_notebooks(root: Path = ROOT) -> list[Path]:
    return sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb")) + sorted(
        (root / "exercises" / "solutions").glob("ex*.ipynb")
    )


# --------------------------------------------------------------------------- the course's own notebooks


def ensure_colab_cell(notebook) -> bool:
    """Make the first code cell the Colab setup cell; True if anything changed."""
    import nbformat

    source = colab.colab_cell_source()
    code = [i for i, cell in enumerate(notebook.cells) if cell.cell_type == "code"]
    existing = [i for i in code if colab.is_colab_cell(notebook.cells[i])]
    if existing and existing[0] == code[0]:
        cell = notebook.cells[code[0]]
        before = (cell.source, list(cell.metadata.get("tags", [])), cell.outputs)
        cell.source = source
        cell.metadata["tags"] = list(dict.fromkeys([*cell.metadata.get("tags", []), *colab.COLAB_TAGS]))
        cell.outputs = []
        return before != (cell.source, cell.metadata["tags"], cell.outputs)
    for i in reversed(existing):  # a Colab cell somewhere else: move it to the front
        del notebook.cells[i]
    cell = nbformat.v4.new_code_cell(source, metadata={"tags": list(colab.COLAB_TAGS)})
    if "id" in cell:
        cell["id"] = "colab-setup"  # stable, so a second run changes nothing
    position = next((i for i, c in enumerate(notebook.cells) if c.cell_type == "code"), len(notebook.cells))
    notebook.cells.insert(position, cell)
    return True


def use_show_figure(notebook) -> bool:
    """``plt.show()`` -> ``show_figure()``, and import ``show_figure`` in the setup cell; True if anything changed."""
    changed = False
    for cell in notebook.cells:
        if cell.cell_type == "code" and SHOW_CALL.search(cell.source):
            cell.source = SHOW_CALL.sub("show_figure()", cell.source)
            changed = True
    uses = any(cell.cell_type == "code" and "show_figure(" in cell.source for cell in notebook.cells)
    if uses and not _imports_show_figure(notebook):
        changed |= _add_import(notebook)
    return changed


def _imports_show_figure(notebook) -> bool:
    return any(
        cell.cell_type == "code"
        and re.search(r"^from course_lib\.lab\.plots import [^\n]*\bshow_figure\b", cell.source, re.M)
        for cell in notebook.cells
    )


def _setup_cell(notebook):
    """The first code cell after the Colab cell that imports from course_lib."""
    for cell in notebook.cells:
        if (
            cell.cell_type == "code"
            and not colab.is_colab_cell(cell)
            and re.search(r"^(from|import) course_lib", cell.source, re.M)
        ):
            return cell
    return None


def _add_import(notebook) -> bool:
    cell = _setup_cell(notebook)
    if cell is None:
        return False
    match = PLOTS_IMPORT.search(cell.source)
    if match:
        names = [name.strip() for name in match.group("names").split(",")]
        line = "from course_lib.lab.plots import " + ", ".join(sorted({*names, "show_figure"}))
        cell.source = cell.source[: match.start()] + line + cell.source[match.end() :]
        return True
    lines = cell.source.split("\n")
    last = max(i for i, line in enumerate(lines) if re.match(r"(from|import) course_lib", line))
    lines.insert(last + 1, "from course_lib.lab.plots import show_figure")
    cell.source = "\n".join(lines)
    return True


def use_palette(notebook) -> bool:
    changed = False
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        if not _COLOR_LITERAL.search(cell.source):
            continue
        new = _COLOR_LITERAL.sub(lambda m: f"{m.group(1)}{color_map()[m.group(2).lower()]}{m.group(1)}", cell.source)
        if new != cell.source:
            cell.source, changed = new, True
    return changed


def move_speaker_notes(notebook) -> bool:
    from course_lib.tools.publish import speaker_notes

    return bool(speaker_notes.visible_notes(notebook)) and bool(speaker_notes.move_notes(notebook))


def write_reading_time(notebook) -> bool:
    """State the estimate in the first cell (a markdown title cell), adding the sentence if it is missing."""
    from course_lib.tools.publish import reading_time

    if not notebook.cells or notebook.cells[0].cell_type != "markdown":
        return False
    if any("### BEGIN SOLUTION" in cell.source for cell in notebook.cells):
        return False  # an exercise states a time for writing code, which the reading estimate does not measure
    first = notebook.cells[0]
    added = False
    if not reading_time.STATED.search(first.source):
        first.source = first.source.rstrip() + "\n\n" + DEFAULT_TIME
        added = True
    return reading_time.rewrite(notebook, reading_time.estimate(notebook)) or added


def refresh_slides(notebook) -> bool:
    """Give the new cells their slideshow metadata (a lesson carries it on every cell; see tools/slides.py)."""
    from course_lib.tools.publish import slide_types

    if not any("slideshow" in cell.get("metadata", {}) for cell in notebook.cells):
        return False
    return slide_types.annotate_notebook(notebook)


# --------------------------------------------------------------------------- the published copies


def strip_speaker_notes(notebook) -> bool:
    """Every note out, visible or kept in cell metadata (a learner's copy: the notes spoil the quizzes)."""
    from course_lib.tools.publish import speaker_notes

    return bool(speaker_notes.strip_notes(notebook))


def drop_colab_cell(notebook) -> bool:
    before = len(notebook.cells)
    notebook.cells = [cell for cell in notebook.cells if not colab.is_colab_cell(cell)]
    return len(notebook.cells) != before


def widgets_as_fallback(notebook) -> bool:
    """A page has no kernel: each widget output keeps only its static form (HTML or text), and no widget state."""
    changed = notebook.metadata.pop("widgets", None) is not None
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        kept = []
        for output in cell.get("outputs", []):
            data = output.get("data")
            if data is not None:
                for mime in WIDGET_MIMES:
                    changed |= data.pop(mime, None) is not None
                if not data:
                    continue
            kept.append(output)
        cell.outputs = kept
    return changed


def restore_speaker_notes(notebook) -> bool:
    from course_lib.tools.publish import speaker_notes

    return bool(speaker_notes.restore_notes(notebook))


def slides_if_missing(notebook) -> bool:
    """An unannotated notebook still gives a sensible deck."""
    from course_lib.tools.publish import slide_types

    if any("slideshow" in cell.metadata for cell in notebook.cells):
        return False
    return slide_types.annotate_notebook(notebook)


def fit_slides(notebook) -> bool:
    """Checks hidden or folded, long slides split (slides_fit.py)."""
    from course_lib.tools.publish.slides_fit import fit_notebook

    before = copy.deepcopy(notebook.cells)
    fit_notebook(notebook)
    return notebook.cells != before


_COURSE = (
    ("Colab cell", ensure_colab_cell),
    ("alt text", use_show_figure),
    ("palette", use_palette),
    ("slides", refresh_slides),
    ("speaker notes", move_speaker_notes),
    ("reading time", write_reading_time),
)
STEPS = {
    "course": _COURSE,
    "colab": _COURSE,
    "site": (
        ("speaker notes", strip_speaker_notes),
        ("Colab cell", drop_colab_cell),
        ("widgets", widgets_as_fallback),
    ),
    "slides": (
        ("slides", slides_if_missing),  # before the notes come back: a notes cell carries slideshow metadata
        ("speaker notes", restore_speaker_notes),
        ("fit", fit_slides),
    ),
    "bundle": (("speaker notes", strip_speaker_notes),),
}


def prepare_notebook(notebook, audience: str = "course") -> list[str]:
    """Prepare an nbformat node for ``audience`` (a key of ``STEPS``), in place; the names of the steps that changed it.

    Idempotent: preparing a prepared notebook again returns ``[]``. The published audiences ("site", "slides",
    "bundle") change what a reader sees, so their callers prepare a copy, never the committed file.
    """
    if audience not in STEPS:
        raise ValueError(f"unknown audience {audience!r}: one of {', '.join(STEPS)}")
    return [name for name, step in STEPS[audience] if step(notebook)]
