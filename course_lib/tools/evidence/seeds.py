"""``seeds``: run the lesson notebooks with other seeds and report which asserts break.

    python -m course_lib seeds --seeds 0 1 2 3 4                   # every lesson notebook, five seeds
    python -m course_lib seeds --seeds 0 1 2 3 4 --notebooks 01 02 # some notebooks
    python -m course_lib seeds --seeds 0 1 2 3 4 --portable        # with PyTorch's portable CPU kernels

A notebook trains and measures with one seed. Its asserts state what must hold whatever the seed; this command
checks that they do. For each notebook and seed it makes a copy in which every seed the notebook sets is replaced
(``set_seed(0)``, ``SEED = 0`` and ``torch.manual_seed(0)`` with an integer: held-out test sets seeded through a
``torch.Generator`` stay as they are, so every seed is tested on the same problems), runs the copy top to bottom in
a fresh kernel, and reports every cell whose ``assert`` fails (and any other error). The notebooks on disk are not
changed. ``--portable`` sets ``ATEN_CPU_CAPABILITY=default``, PyTorch's portable kernels, whose rounding differs
from the vectorised ones: a claim that holds on both does not hang on one CPU's arithmetic.

Exit status: 0 if every assert held in every run, 1 otherwise.
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from course_lib._errors import CommandError

# what sets a notebook's seed: set_seed(0) (also as `_ = set_seed(0)`), SEED = 0, torch.manual_seed(0)
SEED_SETTERS = (
    re.compile(r"(\bset_seed\(\s*)\d+(\s*\))"),
    re.compile(r"^(\s*SEED\s*=\s*)\d+\b", re.MULTILINE),
    re.compile(r"(\btorch\.manual_seed\(\s*)\d+(\s*\))"),
)


def reseed(source: str, seed: int) -> tuple[str, int]:
    """``source`` with every seed it sets replaced by ``seed``, and how many were replaced."""
    total = 0
    for pattern in SEED_SETTERS:
        groups = pattern.groups
        source, count = pattern.subn(
            (lambda m: f"{m.group(1)}{seed}{m.group(2)}") if groups == 2 else (lambda m: f"{m.group(1)}{seed}"),
            source,
        )
        total += count
    return source, total


def reseeded(notebook, seed: int):
    """A copy of an nbformat notebook with every seed replaced; raises if it sets none (nothing would change)."""
    notebook = copy.deepcopy(notebook)
    total = 0
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.source, count = reseed(cell.source, seed)
            total += count
    if not total:
        raise CommandError("the notebook sets no seed (set_seed(N), SEED = N or torch.manual_seed(N)) to replace")
    return notebook


@dataclass
class SeedRun:
    """One notebook run with one seed: the cells whose asserts failed, and other errors, with their messages."""

    notebook: str
    seed: int
    portable: bool
    seconds: float = 0.0
    broken: list[tuple[int, str]] = field(default_factory=list)  # (cell index, assert message)
    errors: list[tuple[int, str]] = field(default_factory=list)  # (cell index, "NameError: ...")

    @property
    def held(self) -> bool:
        return not self.broken and not self.errors


def run(path: Path, seed: int, *, portable: bool = False, timeout: int = 600) -> SeedRun:
    """Run notebook ``path`` with ``seed`` in a fresh kernel (in the notebook's folder) and read what failed."""
    import nbformat
    from nbclient import NotebookClient

    path = Path(path)
    notebook = reseeded(nbformat.read(path, as_version=4), seed)
    result = SeedRun(path.name, seed, portable)
    saved = {name: os.environ.get(name) for name in ("ATEN_CPU_CAPABILITY", "COURSE_RECORD")}
    os.environ["COURSE_RECORD"] = "off"  # a check run is nobody's learning record
    if portable:
        os.environ["ATEN_CPU_CAPABILITY"] = "default"
    start = time.perf_counter()
    try:
        client = NotebookClient(
            notebook,
            timeout=timeout,
            kernel_name="python3",
            allow_errors=True,
            resources={"metadata": {"path": str(path.parent)}},
        )
        client.execute()
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    result.seconds = time.perf_counter() - start
    for index, cell in enumerate(notebook.cells):
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if output.get("output_type") != "error":
                continue
            message = f"{output.get('ename')}: {output.get('evalue')}".strip()
            if output.get("ename") == "AssertionError":
                result.broken.append((index, output.get("evalue") or "(an assert without a message)"))
            else:
                result.errors.append((index, message))
    return result


def lesson_paths(numbers: list[str] | None, root: Path) -> list[Path]:
    """The lesson notebooks of the syllabus (every notebook but the knowledge checks), or those numbered."""
    from course_lib._syllabus import NOTEBOOKS, lessons

    if not numbers:
        return [root / "notebooks" / row.file for row in lessons()]
    paths = []
    for number in numbers:
        key = f"{int(number):02d}" if str(number).isdigit() else str(number)
        if key not in NOTEBOOKS:
            raise CommandError(f"no notebook {number!r} in the course; known: {', '.join(NOTEBOOKS)}")
        paths.append(root / "notebooks" / NOTEBOOKS[key][0])
    return paths


def report(runs: list[SeedRun]) -> str:
    """A table of every run, then every assert that broke, with its cell and message."""
    lines = ["| notebook | seed | kernels | result | seconds |", "|---|---:|---|---|---:|"]
    for item in runs:
        kernels = "portable" if item.portable else "this CPU's"
        verdict = "asserts hold" if item.held else f"{len(item.broken)} assert(s) broke, {len(item.errors)} error(s)"
        lines.append(f"| {item.notebook} | {item.seed} | {kernels} | {verdict} | {item.seconds:.0f} |")
    failures = [item for item in runs if not item.held]
    for item in failures:
        lines.append("")
        lines.append(f"{item.notebook}, seed {item.seed}{' (portable kernels)' if item.portable else ''}:")
        lines += [f"  cell {cell}: assert failed: {message}" for cell, message in item.broken]
        lines += [f"  cell {cell}: {message}" for cell, message in item.errors]
    held = sum(item.held for item in runs)
    lines += ["", f"{held} of {len(runs)} runs: every assert held."]
    return "\n".join(lines)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "seeds",
        help="run the lesson notebooks with other seeds and report which asserts break",
        description="Run each lesson notebook with every seed it sets replaced, top to bottom in a fresh kernel, "
        "and report the asserts that break. The notebooks on disk are not changed.",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4], help="the seeds (default: 0 1 2 3 4)")
    parser.add_argument("--notebooks", nargs="+", default=None, help="notebook numbers (default: every lesson)")
    parser.add_argument(
        "--portable", action="store_true", help="use PyTorch's portable CPU kernels (ATEN_CPU_CAPABILITY=default)"
    )
    parser.add_argument("--timeout", type=int, default=600, help="seconds a cell may run (default: 600)")
    parser.add_argument("--root", type=Path, default=None, help="the course folder (default: this course's)")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    import sys

    root = args.root or Path(__file__).resolve().parents[3]
    runs = []
    for path in lesson_paths(args.notebooks, root):
        if not path.exists():
            raise CommandError(f"{path} does not exist")
        for seed in args.seeds:
            item = run(path, seed, portable=args.portable, timeout=args.timeout)
            print(
                f"{item.notebook} seed {seed}: {'held' if item.held else 'BROKE'} ({item.seconds:.0f} s)",
                file=sys.stderr,
            )
            runs.append(item)
    print(report(runs))
    return 0 if all(item.held for item in runs) else 1
