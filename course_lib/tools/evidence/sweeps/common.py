"""What every sweep shares: the table it prints and a line of progress per run.

A sweep is a plain function ``run(seeds, *, setting=default, ...) -> Table``. Its keyword settings default to the
notebook's own settings, so that with the notebook's seed one row of the table is the notebook's run; a reader can
change any of them from the command line (``--set steps=3000``).
"""

from __future__ import annotations

import ast
import sys
import time
import types
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Table:
    """A sweep's result: a title, one row per run, and the summary lines a notebook quotes."""

    title: str
    columns: list[str]
    rows: list[list] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, *values) -> None:
        if len(values) != len(self.columns):
            raise ValueError(f"a row of {self.title!r} needs {len(self.columns)} values, got {len(values)}")
        self.rows.append(list(values))

    def column(self, name: str) -> list:
        index = self.columns.index(name)
        return [row[index] for row in self.rows]

    def render(self) -> str:
        """The table as Markdown (it reads as plain text too), then the notes."""
        cells = [self.columns] + [[_cell(value) for value in row] for row in self.rows]
        widths = [max(len(row[i]) for row in cells) for i in range(len(self.columns))]
        lines = [f"## {self.title}", ""]
        for n, row in enumerate(cells):
            lines.append("| " + " | ".join(text.rjust(width) for text, width in zip(row, widths)) + " |")
            if n == 0:
                lines.append("|" + "|".join("-" * (width + 1) + ":" for width in widths) + "|")
        if self.notes:
            lines.append("")
            lines.extend(self.notes)
        return "\n".join(lines)


def _cell(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}"
    if value is None:
        return "–"
    return str(value)


def progress(message: str) -> None:
    """One line per finished run, on stderr, so that the table on stdout stays clean to copy."""
    print(message, file=sys.stderr, flush=True)


def timed(label: str, run: Callable[[], object]):
    """Run ``run()``, report how long it took under ``label``, and return its result."""
    start = time.perf_counter()
    result = run()
    progress(f"  {label}  ({time.perf_counter() - start:.1f} s)")
    return result


def span(values: Iterable[float], digits: int = 3) -> str:
    """``[0.41, 0.35, 0.44]`` → ``"0.350–0.440"`` (a single value when they are all equal)."""
    values = [v for v in values if v is not None]
    if not values:
        return "–"
    low, high = min(values), max(values)
    return f"{low:.{digits}f}" if f"{low:.{digits}f}" == f"{high:.{digits}f}" else f"{low:.{digits}f}–{high:.{digits}f}"


def count(flags: Sequence[bool]) -> str:
    """``[True, True, False]`` → ``"2 of 3"``."""
    return f"{sum(bool(flag) for flag in flags)} of {len(flags)}"


def train_quietly(model, make_batch, steps: int, **options) -> dict:
    """``course_lib.lab.training.train_classifier`` without its progress lines (a sweep prints one line per run)."""
    import contextlib
    import io

    from course_lib.lab.training import train_classifier

    with contextlib.redirect_stdout(io.StringIO()):
        return train_classifier(model, make_batch, steps, log_every=steps, **options)


def lesson_code(notebook: str, *names: str) -> types.ModuleType:
    """The definitions ``names`` (functions, classes, constants) exactly as notebook ``notebook`` (e.g. "05") writes
    them, run after the notebook's own imports, as one module: a sweep repeats the lesson's experiment with the
    lesson's code, never a copy of it.

    A definition that reads one of the notebook's globals (its ``SEED``, a ``size`` dict) reads the module's: a sweep
    sets it (``lesson.SEED = seed``) before calling. A name the notebook does not define at the top of a code cell is
    an error that names it, so renaming a function in the notebook breaks its sweep loudly, in the tests.
    """
    from course_lib._syllabus import COURSE

    row = next(row for row in COURSE if row.number == notebook)
    path = Path(__file__).resolve().parents[4] / "notebooks" / row.file
    imports, definitions = [], {}
    nodes = [node for cell in _code_cells(path) for node in cell.body]  # in notebook order
    for position, node in enumerate(nodes):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.append(node)
        for name in _defined_names(node):
            definitions[name] = (position, node)  # the last definition wins, as in a run
    missing = [name for name in names if name not in definitions]
    if missing:
        raise LookupError(f"{path.name} defines no {', '.join(missing)} at the top of a code cell")
    wanted = [node for _, node in sorted({definitions[name] for name in names}, key=lambda pair: pair[0])]
    module = types.ModuleType(f"lesson_{notebook}", f"Definitions of {path.name} used by the evidence sweeps.")
    module.__file__ = str(path)
    code = ast.Module(body=[*imports, *wanted], type_ignores=[])
    exec(compile(code, str(path), "exec"), module.__dict__)  # noqa: S102 - the course's own notebook
    return module


def _code_cells(path: Path) -> list[ast.Module]:
    """Each code cell of the notebook at ``path`` parsed, without its IPython lines (``%magic``, ``!shell``)."""
    import json

    cells = []
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
        try:
            cells.append(ast.parse("\n".join(lines)))
        except SyntaxError:  # a cell that shows a mistake on purpose
            continue
    return cells


def _defined_names(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [target.id for target in node.targets if isinstance(target, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []
