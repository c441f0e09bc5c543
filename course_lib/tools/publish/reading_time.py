"""Honest reading times: estimate how long a notebook takes from what it holds, and state it as a range.

The estimate adds four parts, each with a slow and a fast rate (a range, since learners differ far more than any
single number suggests):

- **Prose**: words of the markdown cells (speaker notes left out) at 150-250 words per minute. Silent reading of
  non-fiction averages about 240 wpm (Brysbaert 2019, *J. Memory and Language* 109); technical prose with formulas
  that a learner stops to understand goes slower, so 250 is the fast end and 150 the careful one.
- **Code**: non-blank lines of the code cells (the Colab setup cell left out) at 0.1-0.25 minutes per line (4 to 10
  lines a minute): the learner reads each line, runs the cell and looks at what it printed. Careful code review runs
  at 150-500 lines an hour (2.5-8 a minute); learners skim the plotting and setup lines faster than that.
- **Figures**: 0.5-1 minute per figure to read it (the "What to notice" text is counted as prose).
- **Quiz**: 0.75-1.5 minutes per question of the notebook's quiz (reading, answering, reading the feedback).

The estimate is the **main path**: what a learner reads to follow the argument. Evidence folded away is left out:
the Markdown inside ``<details>`` blocks (the "How sure are we?" folds: seeds, sweeps, kernels, ranges) and code
cells tagged ``fold`` (checks a learner may open, shown collapsed). ``estimate(..., main_path=False)`` counts them.

The stated line is the first cell's ``**Estimated time:** A–B minutes.``, A and B the estimate's ends rounded
down and up to 5 minutes.

    python -m course_lib reading-time     # print each notebook's counts and estimate
    python -m course_lib reading-time--check      # exit 1 if a stated time does not contain the estimate
    python -m course_lib reading-time--write      # rewrite the "Estimated time" sentence as the range
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

WORDS_PER_MINUTE = (150, 250)  # (careful, fast)
MINUTES_PER_CODE_LINE = (0.25, 0.10)
MINUTES_PER_FIGURE = (1.0, 0.5)
MINUTES_PER_QUESTION = (1.5, 0.75)
STATED = re.compile(r"\*\*Estimated time:\*\*\s*([^.\n]*?)(?:\.|\n|$)")
RANGE = re.compile(r"^(\d+)\s*(?:–|-|to)\s*(\d+)\s*min(?:utes)?$")
SINGLE = re.compile(r"^(?:about\s+)?(\d+)\s*min(?:utes)?$")


@dataclass(frozen=True)
class Estimate:
    words: int
    code_lines: int
    figures: int
    questions: int

    @property
    def low(self) -> float:
        """Minutes for a fast reader."""
        return self._minutes(1)

    @property
    def high(self) -> float:
        """Minutes for a careful reader."""
        return self._minutes(0)

    def _minutes(self, end: int) -> float:
        return (
            self.words / WORDS_PER_MINUTE[end]
            + self.code_lines * MINUTES_PER_CODE_LINE[end]
            + self.figures * MINUTES_PER_FIGURE[end]
            + self.questions * MINUTES_PER_QUESTION[end]
        )

    @property
    def middle(self) -> float:
        return (self.low + self.high) / 2

    def stated_range(self) -> tuple[int, int]:
        return 5 * math.floor(self.low / 5), 5 * math.ceil(self.high / 5)


FOLD = re.compile(r"<details\b.*?</details>", re.DOTALL | re.IGNORECASE)
FOLD_TAG = "fold"


def main_path_markdown(source: str) -> str:
    """A Markdown cell's text without its folds (``<details>`` blocks)."""
    return FOLD.sub(" ", source)


def is_folded_code(cell) -> bool:
    """A code cell folded away as evidence (tag ``fold``): it runs, its source is shown collapsed."""
    return cell.cell_type == "code" and FOLD_TAG in cell.get("metadata", {}).get("tags", [])


def _is_notes(cell) -> bool:
    return cell.cell_type == "markdown" and cell.source.lstrip().startswith("**Speaker notes")


def count_words(text: str) -> int:
    return len(re.findall(r"[A-Za-z0-9][\w'’-]*", text))


def estimate(notebook, questions: int | None = None, main_path: bool = True) -> Estimate:
    """The estimate for an nbformat notebook; ``questions``: its quiz's size (default: from its quiz bank).

    ``main_path`` (the default) leaves out what is folded away: ``<details>`` blocks and code cells tagged ``fold``.
    """
    words = code = figures = 0
    for cell in notebook.cells:
        if cell.cell_type == "markdown" and not _is_notes(cell):
            words += count_words(main_path_markdown(cell.source) if main_path else cell.source)
        elif cell.cell_type == "code" and "colab" not in cell.metadata.get("tags", []):
            if not (main_path and is_folded_code(cell)):
                code += sum(1 for line in cell.source.splitlines() if line.strip())
            figures += sum(1 for output in cell.get("outputs", []) if "image/png" in output.get("data", {}))
    if questions is None:
        questions = _quiz_size(notebook)
    return Estimate(words, code, figures, questions)


def _quiz_size(notebook) -> int:
    """Questions of the quiz banks the notebook shows (``show_quiz("NN")`` / ``load_bank("NN")`` in its code)."""
    from course_lib.interactive.quiz.loader import load_bank

    banks = set()
    for cell in notebook.cells:
        if cell.cell_type == "code":
            banks.update(re.findall(r"(?:show_quiz|load_bank)\(\s*[\"']([\w-]+)[\"']", cell.source))
    return sum(len(load_bank(bank)) for bank in sorted(banks))


def stated(notebook) -> tuple[int, int] | None:
    """The (low, high) minutes the first cell states, a single number as (n, n); None if it states none."""
    if not notebook.cells:
        return None
    match = STATED.search(notebook.cells[0].source)
    if not match:
        return None
    text = match.group(1).strip()
    if found := RANGE.match(text):
        return int(found.group(1)), int(found.group(2))
    if found := SINGLE.match(text):
        return int(found.group(1)), int(found.group(1))
    return None


def contains(stated_range: tuple[int, int] | None, guess: Estimate) -> bool:
    """Does the stated range contain the estimate (its middle, between the fast and the careful reader)?"""
    return stated_range is not None and stated_range[0] <= guess.middle <= stated_range[1]


def rewrite(notebook, guess: Estimate) -> bool:
    """Set the first cell's "Estimated time" sentence to the estimate's range. Returns True if it changed."""
    cell = notebook.cells[0]
    low, high = guess.stated_range()
    new = f"**Estimated time:** {low}–{high} minutes."
    source, count = STATED.subn(new, cell.source, count=1)
    if not count:
        raise ValueError('the first cell has no "**Estimated time:**" sentence to rewrite')
    changed = source != cell.source
    cell.source = source
    return changed


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "reading-time",
        help="estimate each notebook's time and compare it with the 'Estimated time' it states",
        description="Estimate each notebook's time from its words, code lines, figures and quiz (rates in "
        "course_lib/tools/publish/reading_time.py) and compare it with the 'Estimated time' its first cell states.",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 if a stated time does not contain the estimate")
    mode.add_argument("--write", action="store_true", help="rewrite the 'Estimated time' sentence as the range")
    parser.add_argument("notebooks", nargs="*", type=Path, help="notebooks (default: every course notebook)")
    parser.set_defaults(handler=_command)


def _command(args) -> int:
    import nbformat

    from course_lib._syllabus import COURSE

    folder = Path(__file__).resolve().parents[3] / "notebooks"
    lessons = [folder / row.file for row in COURSE if (folder / row.file).exists()]
    status = 0
    for path in args.notebooks or lessons:
        notebook = nbformat.read(path, as_version=4)
        guess = estimate(notebook)
        said = stated(notebook)
        low, high = guess.stated_range()
        line = (
            f"{Path(path).name}: {guess.words} words, {guess.code_lines} code lines, {guess.figures} figures, "
            f"{guess.questions} quiz questions -> {guess.low:.0f}-{guess.high:.0f} min (states {said})"
        )
        if args.write:
            try:
                changed = rewrite(notebook, guess)
            except ValueError as exc:
                print(f"{path}: {exc}", file=sys.stderr)
                status = 1
                continue
            if changed:
                text = nbformat.writes(notebook)
                Path(path).write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
            print(f"{line}; {'now states' if changed else 'already states'} {low}–{high} minutes")
        elif args.check and not contains(said, guess):
            print(f"{line}: the stated time does not contain the estimate (--write states {low}–{high})")
            status = 1
        else:
            print(line)
    return status
