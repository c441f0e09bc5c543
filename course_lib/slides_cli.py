"""``slides``: slideshow metadata for the notebooks, and offline HTML decks.

    python -m course_lib slides export [--out DIR] [NOTEBOOK ...]   # one reveal.js deck per notebook (default: slides/)
    python -m course_lib slides annotate [NOTEBOOK ...]             # set the slide types from the notebook's structure
    python -m course_lib slides annotate --check                    # write nothing; exit 1 if a notebook is not annotated
"""

from __future__ import annotations

import time
from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "slides",
        help="export the notebooks as offline slide decks, or set their slideshow metadata",
        description="The notebooks are the slides: each cell's slideshow metadata (slide, subslide, fragment, skip, "
        "notes) comes from the notebook's own headings (see course_lib/slides.py and INSTRUCTORS.md).",
    )
    parser.set_defaults(handler=lambda args: (parser.print_help(), 2)[1])
    actions = parser.add_subparsers(dest="action", metavar="action")

    export = actions.add_parser(
        "export",
        help="write one self-contained reveal.js deck per notebook (opens offline, no CDN)",
        description="Write NOTEBOOK.slides.html for each notebook into --out, with reveal.js and MathJax copied into "
        "--out/_static/ (nothing is downloaded). Open the decks in any browser; keep _static/ next to them.",
    )
    export.add_argument("notebooks", nargs="*", help="notebooks to export: paths or numbers like 02 (default: all of notebooks/)")
    export.add_argument("--out", type=Path, default=None, help="folder for the decks (default: slides/ in the course folder)")
    export.set_defaults(handler=_export)

    annotate = actions.add_parser(
        "annotate",
        help="set each cell's slide type from the notebook's structure (idempotent)",
        description="Set metadata.slideshow.slide_type on every cell by the rules in course_lib/slides.py: the title "
        "and '## ' sections start slides, '### ' subsections subslides, the setup cell is skipped, 'What to notice' "
        "paragraphs are fragments, '**Speaker notes.**' cells are notes. A cell tag (slide, subslide, fragment, "
        "continue, skip, notes) overrides the rules. Code, outputs and execution counts are not touched.",
    )
    annotate.add_argument("notebooks", nargs="*", help="notebooks (default: all of notebooks/)")
    annotate.add_argument("--check", action="store_true", help="write nothing; exit 1 if a notebook would change")
    annotate.set_defaults(handler=_annotate)


def _export(args) -> int:
    from . import slides

    start = time.perf_counter()
    decks = slides.export_decks(args.notebooks or None, args.out)
    folder = decks[0].path.parent
    print(f"Wrote {len(decks)} deck(s) to {folder} in {time.perf_counter() - start:.1f} s. "
          f"Open {folder / 'index.html'} in a browser (S: speaker notes, Esc: overview).")
    return 0


def _annotate(args) -> int:
    from . import slides

    paths = [slides._resolve_notebook(name) for name in args.notebooks] if args.notebooks else slides.course_notebooks()
    if not paths:
        raise slides.SlidesError(f"No notebooks found in {slides.default_notebooks_dir()}.")
    stale = []
    for path in paths:
        changed = slides.annotate(path, check=args.check)
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
