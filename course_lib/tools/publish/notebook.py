"""One command for a notebook's whole chore list: prepare it, execute it cleanly, check it.

    python -m course_lib notebook run NOTEBOOK ...       # prepare, execute top to bottom, check (the usual one)
    python -m course_lib notebook prepare [NOTEBOOK ...] # prepare only (no execution): default every notebook
    python -m course_lib notebook check [NOTEBOOK ...]   # write nothing; exit 1 if a notebook needs `run`
    python -m course_lib notebook strip NOTEBOOK ...     # only drop timings and widget state (pre-commit hook)

**Prepare** (idempotent; ``course_lib.tools.publish.prepare.prepare_notebook(notebook, "course")``): the Colab
setup cell first, ``plt.show()`` -> ``show_figure()`` (alt text) and the safe palette, slideshow metadata, every
``**Speaker notes.**`` cell moved into its host cell's metadata, and the first cell's ``**Estimated time:** A–B
minutes.`` sentence written from the estimate (added if missing).

**Execute** (``run``): a fresh kernel in the notebook's folder, top to bottom, without timing metadata or widget
state, so re-running an unchanged notebook changes (almost) nothing: each cell's consecutive stream outputs are
merged into one (how a kernel splits its prints depends on timing) and a widget's output keeps only its text form
(its model id is random on every run and its state is not stored). Then the estimate is written again (figures
count), and the quiz banks the notebook shows are checked (``python -m course_lib quiz check``).

A solution notebook (``exercises/solutions/``) also regenerates its learner notebook (``exercises build``).
"""

from __future__ import annotations

import re
from pathlib import Path

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
BANK_CALL = re.compile(r"(?:show_quiz|load_bank)\(\s*[\"']([\w-]+)[\"']")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "notebook",
        help="prepare, execute and check a notebook (Colab cell, alt text, reading time, speaker notes, quiz)",
        description=__doc__.split("\n\n")[0],
    )
    parser.set_defaults(handler=lambda args: (parser.print_help(), 2)[1])
    actions = parser.add_subparsers(dest="action", metavar="action")
    run = actions.add_parser("run", help="prepare, execute top to bottom (no timings, no widget state), check")
    run.add_argument("notebooks", nargs="+", type=Path)
    run.add_argument("--timeout", type=int, default=600, help="seconds per cell (default: 600)")
    run.set_defaults(handler=_run)
    prepare = actions.add_parser("prepare", help="prepare without executing (default: every notebook and solution)")
    prepare.add_argument("notebooks", nargs="*", type=Path)
    prepare.set_defaults(handler=_prepare)
    strip = actions.add_parser(
        "strip", help="remove volatile metadata (timings, widget state, widget model ids); the pre-commit hook"
    )
    strip.add_argument("notebooks", nargs="+", type=Path)
    strip.set_defaults(handler=_strip)
    check = actions.add_parser("check", help="write nothing; exit 1 if a notebook would change on `prepare`")
    check.add_argument("notebooks", nargs="*", type=Path)
    check.set_defaults(handler=_check)


# --------------------------------------------------------------------------- the steps


def clean_outputs(notebook) -> None:
    """Drop what changes on every run although nothing changed: stream chunking, widget model ids and state."""
    notebook.metadata.pop("widgets", None)
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        cell.metadata.pop("execution", None)
        merged = []
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream" and merged and merged[-1].get("output_type") == "stream":
                if merged[-1].get("name") == output.get("name"):
                    merged[-1]["text"] += output["text"]
                    continue
            data = output.get("data")
            if data and WIDGET_VIEW in data:
                del data[WIDGET_VIEW]
            merged.append(output)
        cell.outputs = merged


def execute(notebook, folder: Path, timeout: int = 600) -> None:
    """Run ``notebook`` in a fresh kernel in ``folder``, without timing metadata or widget state, in place."""
    from nbclient import NotebookClient

    client = NotebookClient(
        notebook,
        timeout=timeout,
        kernel_name="python3",
        record_timing=False,
        store_widget_state=False,
        resources={"metadata": {"path": str(folder)}},
    )
    client.execute()
    clean_outputs(notebook)


def banks_shown(notebook) -> list[str]:
    banks = set()
    for cell in notebook.cells:
        if cell.cell_type == "code":
            banks.update(BANK_CALL.findall(cell.source))
    return sorted(banks)


def write(notebook, path: Path) -> None:
    import nbformat

    text = nbformat.writes(notebook)
    Path(path).write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")


# --------------------------------------------------------------------------- the commands


def _paths(args) -> list[Path]:
    from course_lib._errors import CommandError
    from course_lib.tools.publish import prepare

    paths = args.notebooks or prepare.default_notebooks()
    missing = [str(p) for p in paths if not Path(p).is_file()]
    if missing:
        raise CommandError("No such notebook: " + ", ".join(missing))
    return [Path(p) for p in paths]


def _prepare(args) -> int:
    import nbformat

    from course_lib.tools.publish import prepare

    for path in _paths(args):
        notebook = nbformat.read(path, as_version=4)
        done = prepare.prepare_notebook(notebook)
        if done:
            write(notebook, path)
        print(f"  {path}: {', '.join(done) if done else 'up to date'}")
    if not args.notebooks:  # the whole course: CITATION.cff follows the repository address too
        from course_lib.tools.publish import colab

        if colab.sync_citation(colab.PYPROJECT.parent / "CITATION.cff"):
            print("  CITATION.cff: repository-code follows [project.urls] Repository")
    print("Outputs may be stale where code changed: python -m course_lib notebook run NOTEBOOK")
    return 0


def _strip(args) -> int:
    import nbformat

    for path in _paths(args):
        notebook = nbformat.read(path, as_version=4)
        before = nbformat.writes(notebook)
        clean_outputs(notebook)
        if nbformat.writes(notebook) != before:
            write(notebook, path)
            print(f"  {path}: volatile metadata removed")
    return 0


def _check(args) -> int:
    import nbformat

    from course_lib.tools.publish import prepare

    status = 0
    for path in _paths(args):
        notebook = nbformat.read(path, as_version=4)
        done = prepare.prepare_notebook(notebook)
        print(f"  {path}: {'would change: ' + ', '.join(done) if done else 'up to date'}")
        status |= bool(done)
        status |= _check_quiz(banks_shown(notebook))
    if status:
        print("Run: python -m course_lib notebook run NOTEBOOK")
    return int(bool(status))


def _check_quiz(banks: list[str]) -> int:
    if not banks:
        return 0
    from course_lib.tools import quiz

    return int(quiz.check(banks) != 0)


def _run(args) -> int:
    import nbformat

    from course_lib.tools.publish import prepare, slides

    status = 0
    solutions = []
    for path in _paths(args):
        notebook = nbformat.read(path, as_version=4)
        done = prepare.prepare_notebook(notebook)
        print(f"  {path}: prepared ({', '.join(done) if done else 'up to date'}); executing ...", flush=True)
        execute(notebook, path.resolve().parent, timeout=args.timeout)
        prepare.write_reading_time(notebook)
        if any("slideshow" in cell.get("metadata", {}) for cell in notebook.cells):
            slides.set_slide_types(notebook)  # the outputs decide some types (a figure opens a sub-slide)
        write(notebook, path)
        print(f"  {path}: executed and written")
        status |= _check_quiz(banks_shown(notebook))
        if "solutions" in path.parts:
            solutions.append(path)
    if solutions:
        from course_lib.tools.exercises import files as exercises

        for folder in sorted({path.resolve().parents[1] for path in solutions}):
            exercises.build(folder)  # a malformed solution raises ExerciseToolError: its message, no traceback
    return int(bool(status))
