"""Slides that fit the slide: what the deck export changes in its own copy of a notebook (never the notebook file).

The notebooks check every claim with ``assert``s; on a slide those checks push the figure below the slide's edge.
So, in the copy a deck is made from:

1. **Check cells are hidden.** A code cell is a *check cell* when every top-level statement is a check: an
   ``assert`` statement, a call of a function whose name starts with ``assert`` (``torch.testing.assert_close``), or
   a ``print(...)`` call; and at least one is an ``assert`` / ``assert…(...)``. Its code is not shown (its printed
   output, if any, is); a check cell with no output is skipped.
2. **Checks inside other code cells are folded.** Top-level ``assert`` statements and ``assert…(...)`` calls are
   taken out of the code the slide shows, and one comment line says how many the notebook checks there. Cells whose
   source does not parse as Python (magics) are left alone.
3. **A quiz shows one question per slide.** A code cell that ends in ``show_quiz(...)`` (a bank name, or a name
   bound by ``name = load_bank("...")`` earlier in the notebook; ``topics=`` and ``title=`` as literals) becomes
   one sub-slide per question, each with that question's static view (answer folded away), rendered from the bank.
4. **A code cell taller than a slide is split**: its figure or printout goes to the next sub-slide (code hidden
   there), and code longer than ``MAX_CODE_LINES`` is cut into sub-slides of at most that many lines, at a blank
   line or a top-level statement where one is near, each continued part opening with ``# (continued)``.
5. **Long slides are split.** The height of each shown cell is estimated (``estimate_height``, calibrated on the
   exported decks in Chromium at the deck's 1150 x 820: about 26 px per code line, 0.55 px per character of Markdown,
   images at their size up to ``IMAGE_MAX_HEIGHT``); when a slide's cells add up to more than ``SLIDE_BUDGET`` px, the
   next cell starts a sub-slide (arrow down: "continued").

What still overflows after this is fitted in the browser by the deck's template: its images shrink, then the whole
slide's content is zoomed down (never below 50%), see ``slides_assets/templates/course_slides/index.html.j2``.
tests/browser/test_slides_browser.py measures every slide of every deck in Chromium: none may overflow.
"""

from __future__ import annotations

import ast
import base64
import math
import struct
from dataclasses import dataclass

SLIDE_BUDGET = 760  # px of estimated content per slide (the slide is 820 px tall; headings and margins take some)
MIN_BEFORE_SPLIT = 160  # px: a slide is not split before it has this much content
IMAGE_MAX_HEIGHT = 520  # px: the deck's CSS caps figures at this height (index.html.j2)
CODE_LINE = 26.0
CODE_CHARS_PER_LINE = 72
MARKDOWN_PX_PER_CHAR = 0.55
OUTPUT_LINE = 23.0
SHOWN = ("slide", "subslide", "fragment", "-")
MAX_CODE_LINES = 24


@dataclass
class FitReport:
    hidden_check_cells: int = 0
    folded_asserts: int = 0
    quiz_slides: int = 0
    splits: int = 0


def _call_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        func = node.value.func
        if isinstance(func, ast.Name):
            return func.id
        if isinstance(func, ast.Attribute):
            return func.attr
    return None


def is_assertion(statement: ast.stmt) -> bool:
    """``assert ...`` or a call ``assert_close(...)`` / ``torch.testing.assert_close(...)``."""
    name = _call_name(statement)
    return isinstance(statement, ast.Assert) or bool(name and name.startswith("assert"))


def is_check(statement: ast.stmt) -> bool:
    return is_assertion(statement) or _call_name(statement) == "print"


def _statements(source: str) -> list[ast.stmt] | None:
    try:
        return ast.parse(source).body
    except SyntaxError:
        return None


def is_check_cell(cell) -> bool:
    """A code cell that only checks: every statement an assert or a print, at least one assert (rule 1)."""
    if cell.get("cell_type") != "code":
        return False
    statements = _statements(cell.source)
    return bool(statements) and all(map(is_check, statements)) and any(map(is_assertion, statements))


def fold_asserts(source: str) -> tuple[str, int]:
    """``source`` without its top-level assertions, plus a comment counting them (rule 2); (source, count)."""
    statements = _statements(source)
    if not statements:
        return source, 0
    drop = [s for s in statements if is_assertion(s)]
    if not drop:
        return source, 0
    lines = source.split("\n")
    gone: set[int] = set()
    for statement in drop:
        start = statement.lineno - 1
        # comment lines right above an assertion explain it: they go with it
        while start > 0 and lines[start - 1].strip().startswith("#"):
            start -= 1
        gone.update(range(start, statement.end_lineno))
    kept = [line for number, line in enumerate(lines) if number not in gone]
    while kept and not kept[-1].strip():
        kept.pop()
    folded = []
    for line in kept:  # no double blank lines where checks were
        if not line.strip() and folded and not folded[-1].strip():
            continue
        folded.append(line)
    noun = "check" if len(drop) == 1 else "checks"
    folded.append(f"# ... and {len(drop)} {noun} (assert) that the notebook runs here")
    return "\n".join(folded), len(drop)


def _png_size(data: str) -> tuple[int, int] | None:
    try:
        head = base64.b64decode(data[:64])
    except ValueError:
        return None
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return struct.unpack(">II", head[16:24])


def _wrapped_lines(text: str, width: int) -> int:
    return sum(max(1, math.ceil(len(line) / width)) for line in text.split("\n"))


def estimate_height(cell) -> float:
    """Estimated height (px) of a cell on a slide of the exported deck."""
    if cell.get("cell_type") == "markdown":
        text = cell.source
        headings = sum(1 for line in text.split("\n") if line.lstrip().startswith("#"))
        return 24 + MARKDOWN_PX_PER_CHAR * len(text) + 30 * headings + 14 * text.count("\n\n")
    if cell.get("cell_type") != "code":
        return 0.0
    height = 0.0
    if not cell.get("metadata", {}).get("transient", {}).get("remove_source"):
        height += 44 + CODE_LINE * _wrapped_lines(cell.source, CODE_CHARS_PER_LINE)
    for output in cell.get("outputs", []):
        data = output.get("data", {})
        if "image/png" in data:
            size = _png_size(data["image/png"] if isinstance(data["image/png"], str) else "".join(data["image/png"]))
            width, tall = size or (640, 480)
            scale = min(1.0, 1100 / max(width, 1))
            height += min(IMAGE_MAX_HEIGHT, tall * scale) + 10
        elif "text/html" in data:
            html = data["text/html"] if isinstance(data["text/html"], str) else "".join(data["text/html"])
            height += 30 + 0.25 * len(html) ** 0.8
        else:
            text = output.get("text") or data.get("text/plain") or ""
            text = text if isinstance(text, str) else "".join(text)
            height += 16 + OUTPUT_LINE * _wrapped_lines(text.rstrip("\n"), 90)
    return height


def _bank_names(notebook) -> dict[str, str]:
    """``{"quiz": "final"}`` for every ``quiz = load_bank("final")`` in the notebook's code."""
    names = {}
    for cell in notebook.cells:
        if cell.get("cell_type") != "code":
            continue
        python = "\n".join(line for line in cell.source.split("\n") if not line.lstrip().startswith(("%", "!")))
        for statement in _statements(python) or []:
            if (
                isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
                and isinstance(statement.value, ast.Call)
                and getattr(statement.value.func, "id", None) == "load_bank"
                and statement.value.args
                and isinstance(statement.value.args[0], ast.Constant)
            ):
                names[statement.targets[0].id] = str(statement.value.args[0].value)
    return names


def quiz_call(cell, banks: dict[str, str]) -> tuple[str, list[str] | None, str | None] | None:
    """(bank, topics, title) if the cell ends in a ``show_quiz(...)`` call the deck can render, else None."""
    statements = _statements(cell.source) if cell.get("cell_type") == "code" else None
    if not statements or _call_name(statements[-1]) != "show_quiz":
        return None
    call = statements[-1].value
    try:
        first = call.args[0]
        bank = banks[first.id] if isinstance(first, ast.Name) else str(ast.literal_eval(first))
        options = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    except (IndexError, KeyError, ValueError, TypeError, AttributeError):
        return None
    return bank, options.get("topics"), options.get("title")


def _quiz_slides(cell, bank: str, topics, title) -> list:
    """The cell as one sub-slide per question of its quiz (the first keeps the cell's code and slide type)."""
    import copy as _copy

    from course_lib.interactive.quiz.loader import load_bank
    from course_lib.interactive.quiz.render import quiz_html, quiz_text

    quiz = load_bank(bank)
    questions = [q for q in quiz.questions if topics is None or q.topic in topics]
    pieces = []
    for number, question in enumerate(questions):
        piece = _copy.deepcopy(cell)
        label = f"{title or quiz.title} · question {number + 1} of {len(questions)}"
        piece["outputs"] = [
            {
                "output_type": "display_data",
                "metadata": {},
                "data": {
                    "text/html": quiz_html(quiz, [question], label),
                    "text/plain": quiz_text(quiz, [question], label),
                },
            }
        ]
        if number:
            piece.metadata["transient"] = {"remove_source": True}
            _set_kind(piece, "subslide")
            if "id" in piece:
                piece["id"] = f"{cell['id']}-q{number}"[-64:]
        pieces.append(piece)
    return pieces or [cell]


def _code_chunks(source: str) -> list[str]:
    """``source`` cut into pieces of at most ``MAX_CODE_LINES`` lines, preferring blank lines and statement starts."""
    lines = source.split("\n")
    chunks, start = [], 0
    while len(lines) - start > MAX_CODE_LINES:
        end = start + MAX_CODE_LINES
        good = [
            i
            for i in range(end, start + MAX_CODE_LINES // 2, -1)
            if not lines[i - 1].strip() or not lines[i][:1].isspace()
        ]
        cut = good[0] if good else end
        chunks.append("\n".join(lines[start:cut]).rstrip("\n"))
        start = cut
        while start < len(lines) and not lines[start].strip():
            start += 1
    chunks.append("\n".join(lines[start:]))
    return [chunk for chunk in chunks if chunk.strip()]


def split_tall_code(cell) -> list:
    """A code cell too tall for one slide as several sub-slides (rule 4); else ``[cell]``."""
    import copy as _copy

    if cell.get("cell_type") != "code" or estimate_height(cell) <= SLIDE_BUDGET:
        return [cell]
    shown_code = not cell.get("metadata", {}).get("transient", {}).get("remove_source")
    chunks = _code_chunks(cell.source) if shown_code else []
    pieces = []
    for number, chunk in enumerate(chunks):
        piece = _copy.deepcopy(cell)
        piece.source = chunk if number == 0 else "# (continued)\n" + chunk
        piece["outputs"] = []
        if number:
            _set_kind(piece, "subslide")
        if "id" in piece:
            piece["id"] = f"{cell['id']}-c{number}"[-64:] if number else cell["id"]
        pieces.append(piece)
    if cell.get("outputs"):
        last = _copy.deepcopy(cell)
        if pieces and estimate_height(pieces[-1]) + estimate_height(_outputs_only(last)) <= SLIDE_BUDGET:
            pieces[-1]["outputs"] = last["outputs"]
        else:
            last = _outputs_only(last)
            if pieces:
                _set_kind(last, "subslide")
                if "id" in last:
                    last["id"] = f"{cell['id']}-out"[-64:]
            pieces.append(last)
    return pieces or [cell]


def _outputs_only(cell):
    cell.metadata["transient"] = {"remove_source": True}
    return cell


def _kind(cell) -> str:
    return cell.get("metadata", {}).get("slideshow", {}).get("slide_type", "-")


def _set_kind(cell, kind: str) -> None:
    cell.metadata.setdefault("slideshow", {})["slide_type"] = kind


def fit_notebook(notebook) -> FitReport:
    """Apply rules 1-5 to an (annotated) notebook node in place; the copy a deck is exported from."""
    report = FitReport()
    banks = _bank_names(notebook)
    cells = []
    for cell in notebook.cells:
        call = quiz_call(cell, banks) if _kind(cell) in SHOWN else None
        if call is None:
            cells.append(cell)
            continue
        pieces = _quiz_slides(cell, *call)
        report.quiz_slides += len(pieces)
        cells.extend(pieces)
    notebook.cells = cells
    for index, cell in enumerate(cells):
        if cell.get("cell_type") != "code" or _kind(cell) not in SHOWN:
            continue
        if is_check_cell(cell):
            report.hidden_check_cells += 1
            if cell.get("outputs"):
                cell.metadata["transient"] = {"remove_source": True}
            else:
                opened = _kind(cell)
                _set_kind(cell, "skip")
                if opened in ("slide", "subslide"):  # the next shown cell opens the slide this one opened
                    following = next((c for c in cells[index + 1 :] if _kind(c) in SHOWN), None)
                    if following is not None and _kind(following) in ("-", "fragment"):
                        _set_kind(following, opened)
            continue
        source, folded = fold_asserts(cell.source)
        if folded:
            cell.source = source
            report.folded_asserts += folded
    cells = []
    for cell in notebook.cells:
        pieces = split_tall_code(cell) if _kind(cell) in SHOWN else [cell]
        report.splits += len(pieces) - 1
        cells.extend(pieces)
    notebook.cells = cells
    used = 0.0
    for cell in cells:
        kind = _kind(cell)
        if kind not in SHOWN:
            continue
        height = estimate_height(cell)
        if kind in ("slide", "subslide"):
            used = height
            continue
        if used >= MIN_BEFORE_SPLIT and used + height > SLIDE_BUDGET:
            _set_kind(cell, "subslide")
            report.splits += 1
            used = height
        else:
            used += height
    return report
