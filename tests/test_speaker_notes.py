"""Speaker notes out of the learner's way (issue 15), on copies of the real notebooks: after
`python -m course_lib speaker-notes --write` no notes cell is visible, every note is still there once (in the
metadata of the cell before it), the slide decks' speaker view still has every note's text, the learner bundle has
none, and the instructor edition shows them again as they were written. `--check` reports un-moved cells."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from course_lib.tools.publish import bundle, slides, speaker_notes
from course_lib.tools.publish.speaker_notes import (
    NOTES_KEY,
    all_notes,
    is_notes_cell,
    move_notes,
    visible_notes,
    with_notes_visible,
)

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = slides.course_notebooks(ROOT / "notebooks")


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "course_lib", "speaker-notes", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )


# `make test-fast` hands out tests one by one (`--dist loadgroup`): this module's tests stay on one process, so its
# module fixtures (the command line run on every lesson, about 6 s) are built once.
pytestmark = pytest.mark.xdist_group("speaker_notes")


@pytest.fixture(scope="module")
def originals() -> dict[str, nbformat.NotebookNode]:
    """The lessons as an instructor wrote them: every note a visible "**Speaker notes.**" cell (the instructor
    edition of notebooks/, whose notes are already moved), so the test moves them again from scratch."""
    return {path.name: with_notes_visible(nbformat.read(path, as_version=4)) for path in NOTEBOOKS}


@pytest.fixture(scope="module")
def moved(tmp_path_factory, originals) -> Path:
    """Copies of notebooks/ (as they are now) with their notes moved by the command line."""
    folder = tmp_path_factory.mktemp("moved")
    for name, notebook in originals.items():
        nbformat.write(notebook, folder / name)
    copies = [str(folder / path.name) for path in NOTEBOOKS]
    before = sum(len(visible_notes(nb)) for nb in originals.values())
    checked = run("--check", *copies)
    if before:
        assert checked.returncode == 1, checked.stdout + checked.stderr
        for name, notebook in originals.items():
            if visible_notes(notebook):
                assert f"{name}: {len(visible_notes(notebook))} speaker-notes cell(s) visible" in checked.stdout
    written = run("--write", *copies)
    assert written.returncode == 0, written.stdout + written.stderr
    assert f"{before} note(s) moved" in written.stdout
    return folder


def note_words(source: str) -> str:
    """A stretch of a note's plain words (after its "**Speaker notes.**" label, before any markup or math)."""
    body = speaker_notes.NOTES_MARKER.sub("", source.lstrip()).strip()
    plain = re.split(r"[$`*_\[\]<>\\]", body)[0]
    return " ".join(plain.split()[:6])


def test_the_notebooks_carry_speaker_notes(originals):
    assert sum(len(all_notes(nb)) for nb in originals.values()) >= 20, "the lessons carry speaker notes"


@pytest.mark.slow
def test_after_write_no_notes_cell_remains_and_every_note_is_kept_once(moved, originals):
    for name, original in originals.items():
        notebook = nbformat.read(moved / name, as_version=4)
        assert visible_notes(notebook) == [], name
        assert all_notes(notebook) == all_notes(original), f"{name}: the same notes, in order, one source each"
        kept = [cell for cell in original.cells if not is_notes_cell(cell)]
        assert len(kept) == len(notebook.cells)
        for before, after in zip(kept, notebook.cells):
            assert (before.get("id"), before.source, before.get("outputs")) == (
                after.get("id"),
                after.source,
                after.get("outputs"),
            ), f"{name}: only the notes moved"
            assert {k: v for k, v in after.metadata.items() if k != NOTES_KEY} == before.metadata
        for index, cell in enumerate(original.cells):  # each note sits on the cell that came right before it
            if is_notes_cell(cell):
                host = next(c for c in reversed(original.cells[:index]) if not is_notes_cell(c))
                position = kept.index(host)
                assert cell.source in notebook.cells[position].metadata[NOTES_KEY]
    again = run("--check", *[str(moved / name) for name in originals])
    assert again.returncode == 0 and "No speaker-notes cell visible" in again.stdout, again.stdout + again.stderr
    rerun = run("--write", *[str(moved / name) for name in originals])
    assert rerun.returncode == 0 and "0 note(s) moved" in rerun.stdout  # idempotent


def test_check_reports_an_unmoved_cell(tmp_path):
    notebook = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("# Title"),
            nbformat.v4.new_markdown_cell("**Speaker notes.** Ask the room first."),
            nbformat.v4.new_code_cell("x = 1"),
        ]
    )
    path = tmp_path / "nb.ipynb"
    nbformat.write(notebook, path)
    result = run("--check", str(path))
    assert result.returncode == 1 and f"{path}: 1 speaker-notes cell(s) visible" in result.stdout
    assert nbformat.read(path, as_version=4) == notebook, "--check writes nothing"
    first = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("**Speaker notes.** Too early.")])
    with pytest.raises(ValueError, match="no cell before it"):
        move_notes(first)


def asides(deck: Path) -> str:
    """The text of every speaker-view note (<aside class="notes">) in an exported deck."""
    page = deck.read_text(encoding="utf-8")
    blocks = re.findall(r'<aside class="notes">(.*?)</aside>', page, flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", block)) for block in blocks)


@pytest.mark.slow
def test_the_decks_speaker_view_still_has_every_note(moved, originals, tmp_path):
    decks = slides.export_decks([moved / name for name in originals], tmp_path / "decks", echo=None)
    assert len(decks) == len(originals)
    for deck in decks:
        text = " ".join(asides(deck.path).split())
        notes = all_notes(originals[deck.notebook.name])
        assert text.count("Speaker notes") == len(notes), deck.notebook.name
        for note in notes:
            assert note_words(note) in text, f"{deck.notebook.name}: {note_words(note)!r} missing from the speaker view"


def test_the_learner_bundle_drops_notes_kept_in_metadata(moved, originals, tmp_path):
    name = next(iter(originals))
    copy = tmp_path / name
    shutil.copy(moved / name, copy)
    assert bundle.remove_speaker_notes(copy) == len(all_notes(originals[name]))
    learner = nbformat.read(copy, as_version=4)
    assert all_notes(learner) == [] and "Speaker notes" not in copy.read_text(encoding="utf-8")


def test_the_instructor_edition_shows_the_notes_where_they_were(moved, originals, tmp_path):
    from course_lib.tools.cli import main as cli_main

    out = tmp_path / "edition"
    paths = [str(moved / name) for name in originals]
    assert cli_main(["slides", "instructor-edition", str(out), *paths]) == 0
    for name, original in originals.items():
        edition = nbformat.read(out / name, as_version=4)
        nbformat.validate(edition)
        assert [(c.cell_type, c.source) for c in edition.cells] == [(c.cell_type, c.source) for c in original.cells]
        assert not any(NOTES_KEY in cell.metadata for cell in edition.cells)
        assert all(cell.metadata["slideshow"]["slide_type"] == "notes" for cell in edition.cells if is_notes_cell(cell))
        assert nbformat.read(moved / name, as_version=4).cells != edition.cells, "the learners' copies are untouched"


def test_no_speaker_notes_cell_is_visible_in_notebooks():
    """A learner who opens notebooks/ sees no speaker notes (run `python -m course_lib speaker-notes --write`)."""
    visible = {path.name: len(visible_notes(nbformat.read(path, as_version=4))) for path in NOTEBOOKS}
    assert not any(visible.values()), f"speaker-notes cells visible to learners: {visible}"
