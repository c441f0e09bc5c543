"""Speaker notes out of the learner's way: kept in the metadata of the cell they talk about, one source per note.

A speaker note was a markdown cell starting with ``**Speaker notes.**``. In the learner's notebook it spoils the
quiz, so ``--write`` moves each such cell into ``metadata["speaker_notes"]`` (a list of Markdown sources, in order)
of the cell right before it; JupyterLab does not show cell metadata, and the text is unchanged. From there:

- the slide decks (``python -m course_lib slides export``) put every note back as a ``notes`` cell right after its
  cell, so it shows in reveal.js's speaker view (S) exactly where the cell used to be;
- the learner bundle drops them (``bundle.remove_speaker_notes``), as it drops any visible notes cell;
- the instructor edition (``python -m course_lib slides instructor-edition OUT``) writes copies of the notebooks
  with the notes as visible cells again, as they were written.

    python -m course_lib speaker-notes --check [NOTEBOOK ...]   # exit 1 if a notes cell is still visible
    python -m course_lib speaker-notes --write [NOTEBOOK ...]   # move them (default: every course notebook)

Only the notes cells and their host cells' metadata change: every other cell keeps its source, outputs, execution
count and id, so the notebooks stay executed.
"""

from __future__ import annotations

import copy
import re
import sys
from pathlib import Path

NOTES_KEY = "speaker_notes"
NOTES_MARKER = re.compile(r"^\*\*Speaker notes[.:]?\*\*")


def is_notes_cell(cell) -> bool:
    """A visible speaker-notes cell: markdown whose text starts with ``**Speaker notes.**``."""
    return cell.get("cell_type") == "markdown" and bool(NOTES_MARKER.match(cell.get("source", "").lstrip()))


def _notes(cell) -> list[str]:
    notes = cell.get("metadata", {}).get(NOTES_KEY, [])
    return [notes] if isinstance(notes, str) else list(notes)


def visible_notes(notebook) -> list[int]:
    """Indices of the notes cells still visible in ``notebook``."""
    return [index for index, cell in enumerate(notebook.cells) if is_notes_cell(cell)]


def all_notes(notebook) -> list[str]:
    """Every note of ``notebook``, in notebook order, wherever it is kept (visible cell or metadata)."""
    found = []
    for cell in notebook.cells:
        if is_notes_cell(cell):
            found.append(cell.source)
        found.extend(_notes(cell))
    return found


def move_notes(notebook) -> int:
    """Move every visible notes cell into the metadata of the cell before it, in place. Returns how many moved."""
    cells, moved = [], 0
    for index, cell in enumerate(notebook.cells):
        if not is_notes_cell(cell):
            cells.append(cell)
            continue
        if not cells:
            raise ValueError(f"cell {index} is a speaker note with no cell before it to hold it; move it down first.")
        host = cells[-1]
        host.metadata[NOTES_KEY] = [*_notes(host), cell.source]
        moved += 1
    notebook.cells = cells
    return moved


def restore_notes(notebook) -> int:
    """Put every note kept in metadata back as a visible notes cell right after its cell, in place (the reverse of
    ``move_notes``). The cells carry ``slide_type: notes``, so a deck shows them in the speaker view."""
    import nbformat

    cells, restored = [], 0
    ids = {cell.get("id") for cell in notebook.cells}
    for cell in notebook.cells:
        notes = _notes(cell)
        cell.metadata.pop(NOTES_KEY, None)
        cells.append(cell)
        for number, source in enumerate(notes):
            note = nbformat.v4.new_markdown_cell(source, metadata={"slideshow": {"slide_type": "notes"}})
            if "id" in cell:
                base = f"{cell['id']}-notes-{number}"[-64:]
                candidate, suffix = base, 0
                while candidate in ids:
                    suffix += 1
                    candidate = f"{base}-{suffix}"[-64:]
                note["id"] = candidate
                ids.add(candidate)
            else:
                note.pop("id", None)
            cells.append(note)
            restored += 1
    notebook.cells = cells
    return restored


def strip_notes(notebook) -> int:
    """Remove every note, visible or in metadata, in place (the learner's copy). Returns how many went."""
    removed = 0
    kept = []
    for cell in notebook.cells:
        if is_notes_cell(cell):
            removed += 1
            continue
        if NOTES_KEY in cell.get("metadata", {}):
            removed += len(_notes(cell))
            del cell.metadata[NOTES_KEY]
        kept.append(cell)
    notebook.cells = kept
    return removed


def with_notes_visible(notebook):
    """A copy of ``notebook`` with its notes as visible cells (for decks and the instructor edition)."""
    notebook = copy.deepcopy(notebook)
    restore_notes(notebook)
    return notebook


def course_notebooks() -> list[Path]:
    """The course's notebooks in teaching order (``course_lib._syllabus``), as ``slides.course_notebooks`` lists them."""
    from course_lib._syllabus import COURSE

    folder = Path(__file__).resolve().parents[3] / "notebooks"
    return [folder / row.file for row in COURSE if (folder / row.file).exists()]


def _write_notebook(notebook, path: Path) -> None:
    import nbformat

    text = nbformat.writes(notebook)
    path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")


def process(path: Path, write: bool) -> int:
    """Move the visible notes of the notebook at ``path`` (only with ``write``). Returns how many are (were) visible."""
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    count = len(visible_notes(notebook))
    if count and write:
        move_notes(notebook)
        _write_notebook(notebook, path)
    return count


def instructor_edition(out_dir: Path | str, notebooks: list[Path] | None = None, echo=print) -> list[Path]:
    """Write copies of the notebooks into ``out_dir`` with every speaker note as a visible cell again."""
    import nbformat

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for path in notebooks or course_notebooks():
        notebook = nbformat.read(path, as_version=4)
        restore_notes(notebook)
        target = out_dir / Path(path).name
        _write_notebook(notebook, target)
        written.append(target)
        if echo:
            echo(f"  {target}  ({len(visible_notes(notebook))} speaker notes visible)")
    return written


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "speaker-notes",
        help="move '**Speaker notes.**' cells out of the learner's view (into cell metadata), or check none is left",
        description="Move '**Speaker notes.**' cells into the metadata of the cell before them (out of the "
        "learner's view; the slide decks and the instructor edition still show them).",
    )
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="move the notes cells (rewrites the notebooks)")
    mode.add_argument("--check", action="store_true", help="write nothing; exit 1 if a notes cell is visible")
    parser.add_argument("notebooks", nargs="*", type=Path, help="notebooks (default: every course notebook)")
    parser.set_defaults(handler=_command)


def _command(args) -> int:
    paths = args.notebooks or course_notebooks()
    missing = [str(path) for path in paths if not Path(path).is_file()]
    if missing:
        print(f"No such notebook: {', '.join(missing)}", file=sys.stderr)
        return 2
    visible = {}
    for path in paths:
        try:
            count = process(Path(path), write=args.write)
        except ValueError as exc:
            print(f"{path}: {exc}", file=sys.stderr)
            return 1
        if count:
            visible[path] = count
    if args.check:
        for path, count in visible.items():
            print(f"{path}: {count} speaker-notes cell(s) visible to learners")
        if visible:
            print("Run: python -m course_lib speaker-notes --write", file=sys.stderr)
            return 1
        print(f"No speaker-notes cell visible in {len(paths)} notebook(s).")
        return 0
    for path, count in visible.items():
        print(f"{path}: moved {count} speaker note(s) into cell metadata")
    print(f"{sum(visible.values())} note(s) moved in {len(visible)} of {len(paths)} notebook(s).")
    return 0
