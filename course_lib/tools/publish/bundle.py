"""A learner-only copy of the course: everything a learner needs, and no exercise solution.

``build_bundle(out)`` writes into a new folder ``out``:

- ``notebooks/`` (the lessons, as stored, minus the instructor's speaker-notes cells), ``course_lib/``, ``docs/``
  (without the instructor guide), ``requirements.txt``, ``requirements-dev.txt``, ``pyproject.toml``, ``Makefile``,
  the licences and ``CITATION.cff``, so ``pip install -r requirements.txt -e .`` and ``make lab`` work in it as in
  the repository; a ``README.md`` written for the bundle (``bundle_readme``: how to start, the lessons and
  exercises, help), not the repository's, which describes tests, benchmarks and solutions the bundle does not have;
- ``exercises/exNN_*.ipynb``: the learner notebooks, generated afresh from the solutions (so a learner notebook that
  an instructor tried out in the repository is never shipped), and the same fresh copies again in
  ``exercises/pristine/``, which ``python -m course_lib exercises reset`` uses when ``solutions/`` is absent.

Left out: ``exercises/solutions/``, the speaker notes (markdown cells starting with ``**Speaker notes.**``, and notes
kept in cell metadata by ``speaker_notes.py``; they name the misconceptions the quizzes test), the instructor guide (``INSTRUCTORS.md`` becomes a two-line note), ``tests/``,
``benchmarks/``, caches and backups. Before the bundle is moved into place, every file in it is scanned for the body
of every solution block (the code between ``### BEGIN SOLUTION`` and ``### END SOLUTION``); a hit stops the build
and nothing is written. Two exceptions are inherent to the course's design and named in ``ALLOWED_REFERENCE_CODE``:
``course_lib`` itself is the tested reference implementation the lessons import (``from course_lib import
merge_heads``), and two solutions are a line or two that equal its code.

``out`` must not exist or be an empty folder, and must lie outside the course folder (except under its ignored
``build/`` or ``dist/`` folders): the command never overwrites or deletes anything.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from course_lib._errors import CommandError

ROOT = Path(__file__).resolve().parents[3]
TOP_FILES = (
    "requirements.txt",
    "requirements-dev.txt",
    "pyproject.toml",
    "Makefile",
    "LICENSE",
    "LICENSE-content",
    "CITATION.cff",
)
TOP_FOLDERS = ("notebooks", "course_lib", "docs")
LEFT_OUT_DOCS = ("instructors.md",)
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints", "*.egg-info", "backups", ".pytest_cache")
SAFE_INSIDE_COURSE = ("build", "dist")  # ignored by git, never hold course files
# (solution file, function) -> files of course_lib whose own reference code equals that solution block
ALLOWED_REFERENCE_CODE = {
    ("ex01_rnn", "rnn_step"): ("course_lib/checks/rnn.py",),
    ("ex03_multi_head", "merge_heads"): ("course_lib/multihead.py",),
}
_BLOCK = re.compile(r"^[ \t]*### BEGIN SOLUTION[ \t]*\n(.*?)\n[ \t]*### END SOLUTION", re.S | re.M)


class BundleError(CommandError):
    """A problem the user can fix; the command line prints it without a traceback."""


@dataclass
class SolutionBlock:
    exercise: str
    function: str
    lines: list[str]  # stripped, non-empty lines

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


@dataclass
class Bundle:
    path: Path
    notebooks: list[str] = field(default_factory=list)
    exercises: list[str] = field(default_factory=list)
    speaker_notes_removed: int = 0
    files: int = 0


# --------------------------------------------------------------------------- solution blocks and the scan


def solution_blocks(exercises_dir: Path) -> list[SolutionBlock]:
    """Every marked solution block of every solution notebook."""
    import nbformat

    from course_lib.tools.exercises.build import _enclosing_function

    blocks = []
    for path in sorted((Path(exercises_dir) / "solutions").glob("ex*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        for cell in notebook.cells:
            if cell.cell_type != "code":
                continue
            for match in _BLOCK.finditer(cell.source):
                before = cell.source[: match.start()].split("\n")
                indent = len(match.group(0)) - len(match.group(0).lstrip())
                function = _enclosing_function(before, indent) or "?"
                lines = [line.strip() for line in match.group(1).splitlines() if line.strip()]
                if lines:
                    blocks.append(SolutionBlock(path.stem, function, lines))
    return blocks


@dataclass
class SharedLine:
    """A line of a solution block that a lesson's code also contains (comments and indentation aside)."""

    exercise: str
    function: str
    line: str
    notebooks: tuple[str, ...]  # notebook numbers, e.g. ("05",)


def code_only(line: str) -> str:
    """A line of Python without its indentation and its trailing ``# comment`` (a ``#`` inside quotes stays)."""
    text = line.strip()
    quote = None
    for index, char in enumerate(text):
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#":
            return text[:index].rstrip()
    return text


def _lesson_code_lines(path: Path) -> set[str]:
    """Every line of code a lesson shows: its code cells and the fenced code blocks of its markdown."""
    lines: set[str] = set()
    for cell in json.loads(path.read_text(encoding="utf-8")).get("cells", []):
        source = "".join(cell.get("source", "")) if isinstance(cell.get("source"), list) else cell.get("source", "")
        if cell.get("cell_type") == "markdown":
            source = "\n".join(re.findall(r"^```[^\n]*\n(.*?)^```", source, flags=re.S | re.M))
        elif cell.get("cell_type") != "code":
            continue
        lines.update(code for code in (code_only(line) for line in source.splitlines()) if code)
    return lines


def solution_lines_in_lessons(course_root: Path = ROOT) -> list[SharedLine]:
    """Every line of every solution block that also appears in a lesson of ``notebooks/`` (see INSTRUCTORS.md)."""
    root = Path(course_root)
    lessons = {
        path.name[:2]: _lesson_code_lines(path) for path in sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    }
    shared = []
    for block in solution_blocks(root / "exercises"):
        for line in dict.fromkeys(code_only(line) for line in block.lines):
            where = tuple(number for number, lines in lessons.items() if line and line in lines)
            if where:
                shared.append(SharedLine(block.exercise, block.function, line, where))
    return shared


def shared_lines_table(course_root: Path = ROOT) -> str:
    """The Markdown table of ``solution_lines_in_lessons`` that INSTRUCTORS.md carries."""
    rows = ["| exercise · function | solution line | also in notebook |", "|---|---|---|"]
    for item in solution_lines_in_lessons(course_root):
        line = item.line.replace("|", "\\|")
        rows.append(f"| {item.exercise} · `{item.function}` | `{line}` | {', '.join(item.notebooks)} |")
    return "\n".join(rows)


def _normalised_text(path: Path) -> str | None:
    """A file's text with every line stripped and blank lines dropped (a notebook: its cells' sources)."""
    try:
        raw = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None  # binary files (images, fonts) cannot hold Python source
    if path.suffix == ".ipynb":
        try:
            cells = json.loads(raw).get("cells", [])
            raw = "\n".join(
                "".join(c.get("source", "")) if isinstance(c.get("source"), list) else c.get("source", "")
                for c in cells
            )
        except (ValueError, AttributeError):
            pass
    return "\n".join(line.strip() for line in raw.splitlines() if line.strip())


def find_solution_text(folder: Path, blocks: list[SolutionBlock]) -> list[tuple[str, SolutionBlock]]:
    """(relative file, block) for every file under ``folder`` containing a whole solution block, except the allowed
    reference code (see ``ALLOWED_REFERENCE_CODE``)."""
    hits = []
    folder = Path(folder)
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        relative = path.relative_to(folder).as_posix()
        text = _normalised_text(path)
        if text is None:
            continue
        for block in blocks:
            if block.text in text and relative not in ALLOWED_REFERENCE_CODE.get((block.exercise, block.function), ()):
                hits.append((relative, block))
    return hits


# --------------------------------------------------------------------------- where the bundle may go


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def check_out_dir(out: Path | str, course_root: Path = ROOT) -> Path:
    """The resolved ``out``; raises ``BundleError`` with a clear reason if writing there could harm anything."""
    if out is None or not str(out).strip():
        raise BundleError("--out is empty. Pass a new folder, e.g. --out ../transformers-course-learners.")
    out = Path(out).expanduser().resolve()
    root = Path(course_root).resolve()
    if out.exists() and not out.is_dir():
        raise BundleError(f"--out {out} is a file. Pass a new (or empty) folder.")
    if out.is_dir() and any(out.iterdir()):
        raise BundleError(
            f"--out {out} already exists and is not empty. The bundle never overwrites files: "
            "pass a new folder (or empty this one yourself)."
        )
    if _inside(root, out):
        raise BundleError(f"--out {out} contains the course folder itself. Pass a new folder outside it.")
    if _inside(out, root):
        relative = out.relative_to(root)
        if not relative.parts or relative.parts[0] not in SAFE_INSIDE_COURSE:
            raise BundleError(
                f"--out {out} is inside the course folder ({root}), among its tracked files. "
                f"Pass a folder outside it, or under {root / 'build'} (ignored by git)."
            )
    return out


# --------------------------------------------------------------------------- build


LEARNER_TARGETS = (
    "$(BIN)/python",
    "$(VENV)/.course-installed",
    "install",
    "doctor",
    "lab",
    "slides",
    "site",
    "clean-venv",
)


def learner_makefile(text: str) -> str:
    """The repository's Makefile without its contributor targets (tests, lint, format, benchmark, the hub proxy):
    its variables up to ``.PHONY`` and the rules of ``LEARNER_TARGETS``, as written there."""
    lines = text.splitlines()
    head = [
        "# The learners' Makefile (written by `python -m course_lib bundle` from the course's own):",
        "#   make lab      create .venv if missing, install the course, open JupyterLab on 127.0.0.1",
        "#   make doctor   check the installation;  make slides / make site: the notebooks as decks / a website",
    ]
    phony = next(i for i, line in enumerate(lines) if line.startswith(".PHONY"))
    for line in lines[:phony]:
        if re.match(r"^(export )?[A-Z_]+\s*[?:]?=", line):
            head.append(line)
    head += ["", ".PHONY: " + " ".join(t for t in LEARNER_TARGETS if not t.startswith("$")), ""]
    index = phony + 1
    while index < len(lines):
        match = re.match(r"^([^\s#][^:=]*):(?!=)", lines[index])
        if match and match.group(1).strip() in LEARNER_TARGETS:
            block = [lines[index]]
            index += 1
            while index < len(lines) and lines[index].startswith("\t"):
                block.append(lines[index])
                index += 1
            head += [*block, ""]
            continue
        index += 1
    return "\n".join(head).rstrip() + "\n"


def course_through(through: str | None):
    """The syllabus rows a bundle ships: all, or those up to notebook ``through`` (``--through 04``)."""
    from course_lib._syllabus import COURSE

    if through is None:
        return list(COURSE)
    number = str(through).strip().zfill(2)
    numbers = [row.number for row in COURSE]
    if number not in numbers:
        raise BundleError(f"--through {through}: not a notebook number; use one of {', '.join(numbers)}.")
    return [row for row in COURSE if row.number <= number]


def build_bundle(out: Path | str, course_root: Path = ROOT, echo=print, through: str | None = None) -> Bundle:
    """Write the learner-only bundle into ``out`` (see the module docstring). Returns what was written.

    ``through``: release the course up to that notebook (its lessons and their exercises) for a term taught week
    by week; a later bundle with a higher number adds the next ones (INSTRUCTORS.md, "Releasing week by week")."""
    from course_lib.checks import EXERCISES
    from course_lib.tools.exercises import build as generate
    from course_lib.tools.exercises.files import PRISTINE_DIR

    root = Path(course_root).resolve()
    exercises_dir = root / "exercises"
    if not (exercises_dir / "solutions").is_dir():
        raise BundleError(
            f"{exercises_dir / 'solutions'} is missing: a bundle is built from the instructor's copy "
            "of the course (the repository), which has the solutions to leave out."
        )
    out = check_out_dir(out, root)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    except OSError as exc:
        raise BundleError(f"Could not create {out} ({exc.strerror or exc}).") from None
    try:
        rows = course_through(through)
        wanted = {row.exercise for row in rows if row.exercise}
        bundle = _fill(
            staging, root, exercises_dir, generate, [e for e in EXERCISES if e in wanted], PRISTINE_DIR, rows
        )
        hits = find_solution_text(staging, solution_blocks(exercises_dir))
        if hits:
            listing = "\n".join(f"  {file}: {block.exercise} / {block.function}" for file, block in hits)
            raise BundleError(f"Solution code found in the bundle, so nothing was written:\n{listing}")
        if out.is_dir():
            out.rmdir()  # empty (checked above); os.replace needs the name free
        os.replace(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    bundle.path = out
    if echo:
        echo(
            f"Wrote a learner bundle to {out}: {len(bundle.notebooks)} notebooks, {len(bundle.exercises)} exercises "
            f"(with fresh copies in exercises/{PRISTINE_DIR}/ for `exercises reset`), course_lib, docs; "
            f"{bundle.files} files, no solutions, no speaker notes ({bundle.speaker_notes_removed} cells left out)."
        )
        echo(f"Learners: cd {out} && pip install -r requirements.txt -e . && jupyter lab")
    return bundle


def _fill(staging: Path, root: Path, exercises_dir: Path, generate, exercises, pristine_dir: str, rows) -> Bundle:
    bundle = Bundle(staging)
    for name in TOP_FILES:
        if name == "Makefile" and (root / name).is_file():
            (staging / name).write_text(learner_makefile((root / name).read_text(encoding="utf-8")), encoding="utf-8")
        elif (root / name).is_file():
            shutil.copy2(root / name, staging / name)
    for folder in TOP_FOLDERS:
        if (root / folder).is_dir():
            extra = LEFT_OUT_DOCS if folder == "docs" else ()
            shutil.copytree(root / folder, staging / folder, ignore=_ignore(extra))
    (staging / "README.md").write_text(bundle_readme(rows), encoding="utf-8")
    released = {row.file for row in rows}
    for path in (staging / "notebooks").glob("*.ipynb"):
        if path.name not in released:
            path.unlink()
    bundle.notebooks = sorted(p.name for p in (staging / "notebooks").glob("*.ipynb"))
    for name in bundle.notebooks:
        bundle.speaker_notes_removed += remove_speaker_notes(staging / "notebooks" / name)
    learner_dir = staging / "exercises"
    (learner_dir / pristine_dir).mkdir(parents=True)
    for name in exercises:
        text = generate.generate_text(exercises_dir, name)
        for target in (learner_dir / f"{name}.ipynb", learner_dir / pristine_dir / f"{name}.ipynb"):
            target.write_text(text, encoding="utf-8")
        bundle.exercises.append(f"{name}.ipynb")
    (learner_dir / pristine_dir / "README.md").write_text(
        "Fresh copies of the exercise notebooks. Do not edit them: "
        "`python -m course_lib exercises reset ex02` copies one over your exercise, after backing yours up.\n",
        encoding="utf-8",
    )
    (staging / "INSTRUCTORS.md").write_text(
        "# Instructor guide\n\nThis is the learners' copy of the course, built with `python -m course_lib bundle`: "
        "it has no exercise solutions and no instructor guide. Your instructor has both.\n"
        "Start with [README.md](README.md) and `notebooks/01_why_rnns_struggle.ipynb`.\n",
        encoding="utf-8",
    )
    bundle.files = sum(1 for p in staging.rglob("*") if p.is_file())
    return bundle


def bundle_readme(rows=None) -> str:
    """The README of the learners' copy: how to start, the lessons and their exercises, where to get help.

    Written for the bundle (the repository's README describes the test suite, the benchmarks and the solutions,
    none of which the bundle has); ``tests/test_bundle_readme.py`` checks that every link leads to a file in it.
    """
    from course_lib._syllabus import COURSE

    lines = []
    for row in COURSE if rows is None else rows:
        exercise = f"[{row.exercise}](exercises/{row.exercise}.ipynb)" if row.exercise else "–"
        lines.append(f"| {row.number} | [{row.title}](notebooks/{row.file}) | {exercise} |")
    table = "\n".join(["| # | Lesson | Exercise |", "|---|--------|----------|", *lines])
    return f"""# Transformers, hands-on: your copy of the course

This folder is the learners' copy of a short course that teaches how Transformers work by building every part
yourself. The lessons are Jupyter notebooks in `notebooks/`, stored with their outputs so you can read them before
running anything; the exercises in `exercises/` let you write each idea yourself, and a check cell under your code
names the mistake if it differs. Everything runs offline on a laptop CPU, each notebook in seconds.

## Start

On Linux or macOS with Python 3.10+ and `make`:

```bash
make lab    # creates .venv, installs the course (the CPU build of torch on Linux), opens JupyterLab
```

Without `make` (Windows, conda, or by hand):

```bash
python -m venv .venv                                   # or: conda create -n transformers-course python=3.11
.venv/bin/python course_lib/tools/setup/install_torch.py     # picks the torch build for this machine (Windows: .venv\\Scripts\\python)
.venv/bin/pip install -r requirements.txt -e .
.venv/bin/python -m course_lib doctor                  # checks that everything is in place
.venv/bin/jupyter lab --ServerApp.ip=127.0.0.1
```

Open the URL JupyterLab prints (it contains a `?token=`), start with
[notebooks/01_why_rnns_struggle.ipynb](notebooks/01_why_rnns_struggle.ipynb) and run the cells top to bottom.

## The lessons and their exercises

{table}

Each lesson ends with a self-check quiz (run its cell to answer it; the answers are folded away until then) and
points to its exercise. How the exercises work is in [docs/exercises.md](docs/exercises.md):

```bash
python -m course_lib exercises list        # the exercises
python -m course_lib exercises progress    # run your exercise notebooks headless: which checks pass
python -m course_lib exercises reset ex02  # start one over (your version is backed up first)
```

## Getting help

`python -m course_lib doctor` prints every package the course needs with **OK** or **FAIL** and says what to do.
A FAIL usually means JupyterLab runs a different Python than the one you installed into: activate `.venv` and check
again. Ask your instructor for anything else.

## Licence

The code is under the MIT licence ([LICENSE](LICENSE)); the text and figures under CC BY 4.0
([LICENSE-content](LICENSE-content)). To cite the course, see [CITATION.cff](CITATION.cff).
"""


def remove_speaker_notes(path: Path) -> int:
    """Drop every speaker note from the notebook at ``path``: the markdown cells that start with
    ``**Speaker notes.**`` and the notes kept in cell metadata (``speaker_notes.py``); return how many.

    Only markdown cells go, so every code cell keeps its stored outputs and execution count.
    """
    import nbformat

    from course_lib.tools.publish.prepare import prepare_notebook
    from course_lib.tools.publish.speaker_notes import all_notes

    notebook = nbformat.read(path, as_version=4)
    removed = len(all_notes(notebook))
    prepare_notebook(notebook, "bundle")
    if removed:
        nbformat.write(notebook, path)
    return removed


def _ignore(extra_names: tuple[str, ...]):
    def ignore(directory, names):
        dropped = set(IGNORED(directory, names))
        dropped.update(name for name in names if name in extra_names)
        return dropped

    return ignore


# ---- the `bundle` command ---------------------------------------------------------------------------------------------
def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "bundle",
        help="instructors: write a learner-only copy of the course, without the exercise solutions",
        description="Write a copy of the course for learners into a new folder: the notebooks, the learner exercise "
        "notebooks (with fresh copies for `exercises reset`), course_lib, docs, README and requirements, and no "
        "solutions (exercises/solutions/ is left out and every file is scanned for solution code). The folder must "
        "be new or empty, and outside the course folder: nothing is ever overwritten.",
    )
    parser.add_argument("--out", required=True, help="a new (or empty) folder outside the course folder")
    parser.add_argument(
        "--through", default=None, metavar="NN",
        help="release the course up to notebook NN (e.g. 04): its lessons and exercises, for a week-by-week term",
    )  # fmt: skip
    parser.set_defaults(handler=_bundle)


def _bundle(args) -> int:
    build_bundle(
        args.out, through=args.through
    )  # a BundleError or ExerciseToolError is printed by the command line, without a traceback
    return 0
