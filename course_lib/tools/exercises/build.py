"""One source of truth: learner notebooks are generated from the solution notebooks.

``exercises/solutions/exNN_name.ipynb`` holds the full solution between markers::

    def softmax(scores):
        \"\"\"docstring with shapes\"\"\"
        ### BEGIN SOLUTION
        ...
        ### END SOLUTION

The learner version ``exercises/exNN_name.ipynb`` replaces each marked block with a ``raise NotImplementedError``
line at the block's indentation, clears every output and execution count, drops nbval's ``nbval-check-output`` tag
of the check cells (and the older ``# NBVAL_CHECK_OUTPUT`` first line; learner versions are stored without outputs,
so nothing could be compared) and drops cells tagged ``solution-only``. Generation is deterministic: a fresh build must equal the committed learner version.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
CHECK_TAG = "nbval-check-output"  # nbval reads it natively: the cell's stored output must repeat exactly
CHECK_MARKER = "# NBVAL_CHECK_OUTPUT"  # the older form, a comment on the cell's first line
SOLUTION_ONLY_TAG = "solution-only"
CELL_METADATA_DROPPED = ("execution", "collapsed", "scrolled", "ExecuteTime")


def checks_output(cell) -> bool:
    """Whether nbval compares this code cell's output with the stored one (tag ``nbval-check-output`` or comment)."""
    tags = cell.get("metadata", {}).get("tags", [])
    return cell.get("cell_type") == "code" and (CHECK_TAG in tags or cell.source.startswith(CHECK_MARKER))


class GenerationError(ValueError):
    """A solution notebook is malformed (unbalanced markers, a marker outside a function, ...)."""


def stub_source(source: str, where: str = "a cell") -> str:
    """Replace every ``### BEGIN SOLUTION`` … ``### END SOLUTION`` block with a ``raise NotImplementedError`` line."""
    lines = source.split("\n")
    out: list[str] = []
    inside = False
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if stripped == BEGIN:
            if inside:
                raise GenerationError(f"{where}, line {number}: {BEGIN} inside another solution block")
            indent = line[: len(line) - len(line.lstrip())]
            if not indent:
                raise GenerationError(f"{where}, line {number}: {BEGIN} must be indented inside a function body")
            name = _enclosing_function(lines[: number - 1], len(indent))
            label = f"{name}: " if name else ""
            out.append(f'{indent}raise NotImplementedError("{label}replace this line with your code")')
            inside = True
        elif stripped == END:
            if not inside:
                raise GenerationError(f"{where}, line {number}: {END} without {BEGIN}")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise GenerationError(f"{where}: {BEGIN} is never closed by {END}")
    return "\n".join(out)


def _enclosing_function(previous: list[str], indent: int) -> str | None:
    for line in reversed(previous):
        match = re.match(r"^(\s*)def\s+([A-Za-z_]\w*)\s*\(", line)
        if match and len(match.group(1)) < indent:
            return match.group(2)
    return None


def learner_version(solution):
    """The learner notebook (a new ``nbformat`` node) generated from a solution notebook node."""
    notebook = copy.deepcopy(solution)
    cells = []
    for index, cell in enumerate(notebook.cells, 1):
        if SOLUTION_ONLY_TAG in cell.get("metadata", {}).get("tags", []):
            continue
        for key in CELL_METADATA_DROPPED:
            cell.metadata.pop(key, None)
        if cell.cell_type == "code":
            source = stub_source(cell.source, where=f"cell {index}")
            first, _, rest = source.partition("\n")
            if first.strip() == CHECK_MARKER:
                source = rest
            tags = cell.metadata.get("tags", [])
            if CHECK_TAG in tags:
                tags.remove(CHECK_TAG)
                if not tags:
                    del cell.metadata["tags"]
            cell.source = source
            cell.outputs = []
            cell.execution_count = None
        elif BEGIN in cell.source or END in cell.source:
            raise GenerationError(f"cell {index}: solution markers are only understood in code cells")
        cells.append(cell)
    notebook.cells = cells
    return notebook


def render(notebook) -> str:
    """Serialise like ``nbformat.write`` does (so the bytes on disk equal this text)."""
    import nbformat

    text = nbformat.writes(notebook)
    return text if text.endswith("\n") else text + "\n"


def solution_path(exercises_dir: Path, name: str) -> Path:
    return Path(exercises_dir) / "solutions" / f"{name}.ipynb"


def learner_path(exercises_dir: Path, name: str) -> Path:
    return Path(exercises_dir) / f"{name}.ipynb"


def read_solution(path: Path):
    """Read and validate one solution notebook; a file that is missing, not JSON or not a notebook is a GenerationError."""
    import warnings

    import nbformat

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # nbformat warns about missing cell ids and the like; we validate below
            notebook = nbformat.read(path, as_version=4)
            nbformat.validate(notebook)
    except FileNotFoundError:
        raise GenerationError(f"{path}: the solution notebook is missing") from None
    except Exception as exc:  # NotJSONError, ValidationError, UnicodeDecodeError, OSError, ...
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise GenerationError(
            f"{path}: not a valid notebook ({type(exc).__name__}{': ' + text[:200] if text else ''})"
        ) from None
    return notebook


def generate_text(exercises_dir: Path, name: str) -> str:
    """The learner notebook for exercise ``name``, as the text a fresh build would write."""

    path = solution_path(exercises_dir, name)
    solution = read_solution(path)
    try:
        notebook = learner_version(solution)
    except GenerationError as exc:
        raise GenerationError(f"{path}: {exc}") from None
    _check_cells_present(notebook, name, path)
    return render(notebook)


def _check_cells_present(notebook, name: str, path: Path) -> None:
    from course_lib.checks import EXERCISES

    sources = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code")
    for check, function in EXERCISES[name].checks:
        if f"{check}({function})" not in sources:
            raise GenerationError(f"{path}: no cell calls {check}({function})")


def stale(exercises_dir: Path) -> list[str]:
    """Exercises whose committed learner notebook differs from a fresh generation (or is missing)."""
    from course_lib.checks import EXERCISES

    names = []
    for name in EXERCISES:
        target = learner_path(exercises_dir, name)
        if not target.exists() or target.read_text(encoding="utf-8") != generate_text(exercises_dir, name):
            names.append(name)
    return names
