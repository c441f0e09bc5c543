"""Bring notebooks up to the course's reach standard: a Colab setup cell, figures shown with alt text, safe colours.

    python -m course_lib notebook prepare [NOTEBOOK ...]   # or `notebook run`, which also executes it

Default: every lesson in ``notebooks/`` and every solution in ``exercises/solutions/`` (then regenerate the learner
notebooks with ``python -m course_lib exercises build``). Per notebook, idempotently:

1. **Colab cell.** The first code cell becomes the Colab setup cell (``course_lib.tools.publish.colab``): inserted before
   the first code cell, or brought up to date if it is there already. It is tagged ``colab`` and ``skip``.
2. **Alt text.** ``plt.show()`` becomes ``show_figure()`` (``course_lib.lab.plots``), which stores alt text written from
   the figure's data in the output, and ``show_figure`` is imported in the setup cell (added to its
   ``from course_lib.lab.plots import ...`` line, or as a new line after its last ``course_lib`` import).
3. **Colours.** Matplotlib's default tab10 colours and the few hand-picked colours the notebooks used become the
   colour-blind-safe palette of ``course_lib.lab.plots`` (``COLOR_MAP`` below); box fills become its pale tints.
4. **Slides.** A notebook with slideshow metadata is annotated again, so the new cell gets its own (``skip``).

Code changes mean stored outputs are stale: ``python -m course_lib notebook run NOTEBOOK`` prepares and re-executes
(``course_lib/tools/publish/notebook.py``), then ``tests/test_accessibility.py`` checks every stored figure's alt text.
"""

from __future__ import annotations

import re
from pathlib import Path

from course_lib.lab import plots
from course_lib.tools.publish import colab

ROOT = Path(__file__).resolve().parents[3]
SHOW_CALL = re.compile(r"\bplt\.show\(\s*\)")
PLOTS_IMPORT = re.compile(r"^from course_lib\.plots import (?P<names>[^\n(]+)$", re.M)
# old colour literal -> palette colour (lines and markers) or pale tint (filled boxes behind text)
COLOR_MAP = {
    "tab:blue": plots.PALETTE["blue"],
    "tab:orange": plots.PALETTE["orange"],
    "tab:green": plots.PALETTE["green"],
    "tab:red": plots.PALETTE["vermillion"],
    "tab:purple": plots.PALETTE["purple"],
    "tab:grey": "grey",
    "tab:gray": "grey",
    "#d62828": plots.PALETTE["vermillion"],  # skip connections, "no LayerNorm"
    "#f4a261": plots.PALETTE["orange"],  # post-LN
    "#2a9d8f": plots.PALETTE["green"],  # pre-LN
    "#8ecae6": plots.PALE["sky"],  # attention box
    "#b7e4c7": plots.PALE["green"],  # feed-forward box
    "#f4c542": plots.PALE["yellow"],  # LayerNorm box
}
_COLOR_LITERAL = re.compile(r"""(["'])(""" + "|".join(re.escape(k) for k in COLOR_MAP) + r""")\1""", re.I)


def default_notebooks(root: Path = ROOT) -> list[Path]:
    return sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb")) + sorted(
        (root / "exercises" / "solutions").glob("ex*.ipynb")
    )


# --------------------------------------------------------------------------- the three changes


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
        and re.search(r"^from course_lib\.plots import [^\n]*\bshow_figure\b", cell.source, re.M)
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
        new = _COLOR_LITERAL.sub(lambda m: f"{m.group(1)}{COLOR_MAP[m.group(2).lower()]}{m.group(1)}", cell.source)
        if new != cell.source:
            cell.source, changed = new, True
    return changed


def refresh_slides(notebook) -> bool:
    """Give the new cells their slideshow metadata (a lesson carries it on every cell; see tools/slides.py)."""
    from course_lib.tools.publish import slides

    if not any("slideshow" in cell.get("metadata", {}) for cell in notebook.cells):
        return False
    return slides.annotate_notebook(notebook)


def prepare_notebook(notebook) -> list[str]:
    """Apply the changes to an nbformat node in place; the names of those that changed something."""
    done = []
    steps = (
        ("Colab cell", ensure_colab_cell),
        ("alt text", use_show_figure),
        ("palette", use_palette),
        ("slides", refresh_slides),
    )
    for name, change in steps:
        if change(notebook):
            done.append(name)
    return done


def prepare(path: Path, check: bool = False) -> list[str]:
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    done = prepare_notebook(notebook)
    if done and not check:
        text = nbformat.writes(notebook)
        Path(path).write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    return done
