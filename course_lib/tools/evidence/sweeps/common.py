"""What every sweep shares: the table it prints and a line of progress per run.

A sweep is a plain function ``run(seeds, *, setting=default, ...) -> Table``. Its keyword settings default to the
notebook's own settings, so that with the notebook's seed one row of the table is the notebook's run; a reader can
change any of them from the command line (``--set steps=3000``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field


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
