"""Slides from the same notebooks: slideshow metadata by clear rules, and offline HTML decks.

A notebook presents as slides (live with the JupyterLab extension ``jupyterlab-rise``, or as an exported reveal.js
deck) when each cell carries ``metadata.slideshow.slide_type``, one of ``slide``, ``subslide``, ``fragment``, ``-``
(continue the current slide), ``skip`` or ``notes``. ``annotate`` sets it from the notebook's own structure, so the
slides are never a second copy of the content:

- a cell tagged ``slide``, ``subslide``, ``fragment``, ``continue`` (= ``-``), ``skip`` or ``notes``: that type;
  the tag wins over every rule below;
- markdown starting with ``**Speaker notes.**``: ``notes``; notes kept in cell metadata (``speaker_notes.py``, out
  of the learner's view) are put back as such cells right after their cell when a deck is exported;
- markdown starting with ``# `` or ``## ``: ``slide``; with ``### ``: ``subslide``;
- markdown starting with ``**What to notice``: ``fragment``;
- markdown right after a figure (a code cell with an image output): ``fragment``, it comments on the figure;
- markdown right after another code cell: ``subslide``, the next step gets a fresh slide;
- the setup cell (the first code cell after the Colab cell, before the first ``## `` section, starting with an
  import) and any code cell of imports only: ``skip``; so is a helper-only code cell (no output, only ``def``s);
- a figure cell right after another code cell: ``subslide``;
- anything else: ``-`` (it continues the current slide).

"Right after" ignores skipped cells and notes. Before the rules run, a markdown cell with a ``## `` or ``### ``
heading in its middle is split at that heading (the rendered notebook looks the same), so that every section starts
its own slide. The notebook's ``rise`` metadata gets ``scroll: true`` and ``theme: white`` (RISE's default theme
fetches web fonts). ``annotate`` is idempotent: a second run changes nothing. Code cells keep their source, outputs
and execution count; only their ``slideshow`` metadata is set.

``export_decks`` writes one reveal.js deck per notebook with nbconvert's slides exporter and a template that loads
nothing from the network; on its own copy of the notebook it first hides check-only code, folds asserts and splits
long slides so that every slide fits (``slides_fit.py``). reveal.js (vendored in ``slides_assets/reveal.js``, MIT) is
copied into ``_static/`` next to the decks; formulas are typeset when the deck is written, as MathML the browser draws
itself (``typeset``, as on the course website): a slide shows its formulas at once, with no script to wait for.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from course_lib.tools.publish import typeset
from course_lib.tools.publish.decks import (  # shared with the lecture decks (lecture.py)
    ASSETS,
    STATIC_DIR,
    SlidesError,
    check_out_dir,
    chosen_notebooks,
    deck_folder,
    read_notebook,
)
from course_lib.tools.publish.decks import course_notebooks as course_notebooks  # kept: slides.course_notebooks()
from course_lib.tools.publish.prepare import prepare_notebook
from course_lib.tools.publish.slide_types import (  # noqa: F401  (the rules, with the slides they make)
    SLIDE_TYPES,
    TAG_TYPES,
    annotate_notebook,
    set_slide_types,
    slide_types,
)

TEMPLATE_NAME = "course_slides"


def annotate(path: Path | str, check: bool = False) -> bool:
    """Annotate the notebook file at ``path`` (rewritten only if something changes). Returns True if it changed.

    With ``check``, nothing is written: the return value says whether the file is out of date.
    """
    import nbformat

    path = Path(path)
    if not path.is_file():
        raise SlidesError(
            f"{path} does not exist (or is not a file). Pass a notebook, e.g. notebooks/01_why_rnns_struggle.ipynb."
        )
    if path.suffix != ".ipynb":
        raise SlidesError(f"{path} is not a notebook (.ipynb).")
    notebook = read_notebook(path)
    changed = annotate_notebook(notebook)
    if changed and not check:
        text = nbformat.writes(notebook)
        path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    return changed


# --------------------------------------------------------------------------- export


def _exporter():
    from nbconvert import SlidesExporter

    return SlidesExporter(
        extra_template_basedirs=[str(ASSETS / "templates")],
        template_name=TEMPLATE_NAME,
        reveal_url_prefix=f"{STATIC_DIR}/reveal.js",
        reveal_theme="white",
        reveal_transition="none",
        reveal_number="c/t",
        reveal_width="1150",
        reveal_height="820",
        exclude_input_prompt=True,
        exclude_output_prompt=True,
    )


@dataclass
class Deck:
    notebook: Path
    path: Path
    slides: int
    seconds: float


def export_decks(
    notebooks: list[str | Path] | None = None, out_dir: Path | str | None = None, echo=print
) -> list[Deck]:
    """Write one reveal.js deck per notebook into ``out_dir`` (default: ``slides/``); nothing is fetched at run time."""
    paths = chosen_notebooks(notebooks)
    out_dir = deck_folder(out_dir)
    exporter = _exporter()
    decks = []
    for path in paths:
        start = time.perf_counter()
        notebook = read_notebook(path)
        prepare_notebook(notebook, "slides")  # notes as notes cells, slide types, long slides split (not the file)
        body, _ = exporter.from_notebook_node(notebook, resources={"metadata": {"name": path.stem}})
        try:
            body = typeset.typeset_page(body)
        except typeset.TypesetError as error:
            raise SlidesError(f"{path}: {error}") from None
        target = out_dir / f"{path.stem}.slides.html"
        target.write_text(body, encoding="utf-8")
        count = sum(
            kind in ("slide", "subslide")
            for kind in (c.metadata.get("slideshow", {}).get("slide_type") for c in notebook.cells)
        )
        decks.append(Deck(path, target, count, time.perf_counter() - start))
        if echo:
            echo(f"  {target}  ({count} slides, {decks[-1].seconds:.1f} s)")
    _write_index(out_dir, decks)
    return decks


INDEX_MARK = "<!-- written by: python -m course_lib slides export -->"


def _write_index(out_dir: Path, decks: list[Deck]) -> None:
    """``index.html`` listing the decks; an index.html that this command did not write is left alone."""
    import html

    index = out_dir / "index.html"
    if index.exists() and INDEX_MARK not in index.read_text(encoding="utf-8", errors="replace"):
        return
    items = "\n".join(
        f'  <li><a href="{html.escape(deck.path.name)}">{html.escape(deck.notebook.stem)}</a> ({deck.slides} slides)</li>'
        for deck in decks
    )
    index.write_text(
        f"<!DOCTYPE html>\n{INDEX_MARK}\n"
        '<html lang="en"><head><meta charset="utf-8"><title>Course slides</title></head>\n'
        '<body style="font-family: sans-serif; max-width: 40em; margin: 2em auto">\n<h1>Course slides</h1>\n'
        "<p>Open a deck; arrow keys move, <kbd>S</kbd> opens the speaker notes, <kbd>Esc</kbd> shows the overview. "
        "Everything is local: keep the <code>_static/</code> folder next to the decks.</p>\n"
        f"<ul>\n{items}\n</ul>\n</body></html>\n",
        encoding="utf-8",
    )


# ---- the `slides` command ---------------------------------------------------------------------------------------------
def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "slides",
        help="export the notebooks as offline slide decks, or set their slideshow metadata",
        description="The notebooks are the slides: each cell's slideshow metadata (slide, subslide, fragment, skip, "
        "notes) comes from the notebook's own headings (see course_lib/tools/publish/slides.py and INSTRUCTORS.md).",
    )
    parser.set_defaults(handler=lambda args: (parser.print_help(), 2)[1])
    actions = parser.add_subparsers(dest="action", metavar="action")

    export = actions.add_parser(
        "export",
        help="write one self-contained reveal.js deck per notebook (opens offline, no CDN)",
        description="Write NOTEBOOK.slides.html for each notebook into --out, with reveal.js copied into "
        "--out/_static/ and formulas typeset (nothing is downloaded). Open the decks in any browser; keep _static/ next to them.",
    )
    export.add_argument(
        "notebooks", nargs="*", help="notebooks to export: paths or numbers like 02 (default: all of notebooks/)"
    )
    export.add_argument(
        "--out", type=Path, default=None, help="folder for the decks (default: slides/ in the course folder)"
    )
    export.set_defaults(handler=_export)

    lecture = actions.add_parser(
        "lecture",
        help="write lecture decks: 15-25 large-type slides a lesson (claims, key figures, run-live cells, notes)",
        description="Write NOTEBOOK.lecture.html for each notebook into --out: a title, and for each section its "
        "heading and claim, its key figures and its run-live cell, with one speaker note per section from the "
        "notebook and INSTRUCTORS.md (course_lib/tools/publish/lecture.py). Offline, like the notebook decks.",
    )
    lecture.add_argument("notebooks", nargs="*", help="notebooks: paths or numbers like 02 (default: all)")
    lecture.add_argument("--out", type=Path, default=None, help="folder for the decks (default: slides/)")
    lecture.add_argument(
        "--font-size",
        type=int,
        default=32,
        help="text size in px on a 1280x720 slide (28-40; code: 3/4 of it, at least 22)",
    )
    lecture.set_defaults(handler=_lecture)

    annotate = actions.add_parser(
        "annotate",
        help="set each cell's slide type from the notebook's structure (idempotent)",
        description="Set metadata.slideshow.slide_type on every cell by the rules in course_lib/tools/publish/slides.py: the title "
        "and '## ' sections start slides, '### ' subsections subslides, the setup cell is skipped, 'What to notice' "
        "paragraphs are fragments, '**Speaker notes.**' cells are notes. A cell tag (slide, subslide, fragment, "
        "continue, skip, notes) overrides the rules. Code, outputs and execution counts are not touched.",
    )
    annotate.add_argument("notebooks", nargs="*", help="notebooks (default: all of notebooks/)")
    annotate.add_argument("--check", action="store_true", help="write nothing; exit 1 if a notebook would change")
    annotate.set_defaults(handler=_annotate)

    edition = actions.add_parser(
        "instructor-edition",
        help="write copies of the notebooks with the speaker notes as visible cells",
        description="The learners' notebooks keep speaker notes in cell metadata (course_lib/tools/publish/speaker_notes.py), "
        "out of view. This writes copies into OUT with every note back as a visible '**Speaker notes.**' cell, "
        "right after the cell it belongs to. The notebooks themselves are not changed.",
    )
    edition.add_argument("out", type=Path, help="folder for the copies, e.g. instructor-edition")
    edition.add_argument(
        "notebooks", nargs="*", help="notebooks: paths or numbers like 02 (default: all of notebooks/)"
    )
    edition.set_defaults(handler=_instructor_edition)


def _export(args) -> int:
    start = time.perf_counter()
    decks = export_decks(args.notebooks or None, args.out)
    folder = decks[0].path.parent
    print(
        f"Wrote {len(decks)} deck(s) to {folder} in {time.perf_counter() - start:.1f} s. "
        f"Open {folder / 'index.html'} in a browser (S: speaker notes, Esc: overview)."
    )
    return 0


def _lecture(args) -> int:
    from course_lib.tools.publish.lecture import write_lecture_decks

    written = write_lecture_decks(args.notebooks or None, args.out, font=args.font_size)
    print(f"Wrote {len(written)} lecture deck(s) to {written[0][0].parent} (S: speaker notes).")
    return 0


def _instructor_edition(args) -> int:
    from course_lib.tools.publish.speaker_notes import instructor_edition

    paths = chosen_notebooks(args.notebooks)
    out = check_out_dir(args.out)
    written = instructor_edition(out, paths)
    print(f"Wrote {len(written)} notebook(s) with visible speaker notes to {out}.")
    return 0


def _annotate(args) -> int:
    paths = chosen_notebooks(args.notebooks)
    stale = []
    for path in paths:
        changed = annotate(path, check=args.check)
        if args.check:
            if changed:
                stale.append(path.name)
        else:
            print(f"  {path}  {'annotated' if changed else 'up to date'}")
    if args.check:
        if stale:
            print("Slideshow metadata out of date (run `python -m course_lib slides annotate`): " + ", ".join(stale))
            return 1
        print(f"All {len(paths)} notebook(s) carry up-to-date slideshow metadata.")
    return 0
