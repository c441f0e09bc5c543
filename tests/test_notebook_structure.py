"""Every lesson notebook follows the course standard, as a learner opens it from the repository.

Objectives, prerequisites and minutes at the top; a summary; a "Check your understanding" heading followed by the
notebook's quiz; a pointer to an exercise that exists; stored executed top to bottom, with no error output.
"""

import re
from pathlib import Path

import nbformat
import pytest

from course_lib import _syllabus as syllabus

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
LESSONS = [NOTEBOOKS / row.file for row in syllabus.lessons()]


def test_the_lessons_and_the_knowledge_check_exist_in_order():
    assert [path.name[:2] for path in LESSONS][:6] == ["01", "02", "03", "04", "05", "06"]
    assert all(path.exists() for path in LESSONS)
    assert (NOTEBOOKS / syllabus.NOTEBOOKS[syllabus.FINAL_CHECK][0]).exists(), "the knowledge check"


@pytest.mark.parametrize("path", LESSONS, ids=lambda path: path.name)
def test_lesson_follows_the_course_standard(path):
    notebook = nbformat.read(path, as_version=4)
    number = path.name[:2]
    assert notebook.metadata.get("kernelspec", {}).get("name") == "python3", "JupyterLab would ask for a kernel"
    cells = notebook.cells
    intro = cells[0].source
    assert cells[0].cell_type == "markdown" and intro.startswith(f"# {number} · ")
    for part in ("What you will learn", "Prerequisites", "Estimated time"):
        assert part in intro, f"the first cell should give '{part}'"

    markdown = [cell.source for cell in cells if cell.cell_type == "markdown"]
    assert any(re.search(r"^## Summary", text, flags=re.M) for text in markdown), "a summary section"

    quiz_heading = next(
        i
        for i, cell in enumerate(cells)
        if cell.cell_type == "markdown" and cell.source.startswith("## Check your understanding")
    )
    quiz_cell = cells[quiz_heading + 1]
    assert quiz_cell.cell_type == "code" and quiz_cell.source.strip().endswith(f'show_quiz("{number}")')
    assert quiz_cell.outputs, "the quiz cell is stored executed, so its text version shows without a kernel"

    exercise = syllabus.notebook(number).exercise
    exercise_links = re.findall(r"\(\.\./exercises/(ex\d\d_\w+\.ipynb)\)", "\n".join(markdown))
    if exercise:
        assert f"{exercise}.ipynb" in exercise_links, f"the notebook points to its exercise, {exercise}"
    for name in exercise_links:
        assert (ROOT / "exercises" / name).exists(), name

    code = [cell for cell in cells if cell.cell_type == "code"]
    counts = [cell.execution_count for cell in code]
    assert counts == list(range(1, len(code) + 1)), "stored executed top to bottom in one fresh kernel"
    for index, cell in enumerate(code):
        errors = [output for output in cell.outputs if output.output_type == "error"]
        assert not errors, f"code cell {index} stores an error"
        for output in cell.outputs:
            assert "Traceback (most recent call last)" not in str(output.get("text", "")), f"code cell {index}"


# An object's default repr names its address (``<torch._C.Generator at 0x7fbaeadee850>``): a stray output that tells
# a learner nothing and changes on every run (a rerun of an unchanged notebook would change that line).
ADDRESS = re.compile(r"\bat 0x[0-9a-fA-F]{6,}")
STORED = sorted(NOTEBOOKS.glob("*.ipynb")) + sorted((ROOT / "exercises").glob("**/*.ipynb"))


@pytest.mark.parametrize("path", STORED, ids=lambda path: str(path.relative_to(ROOT)))
def test_no_stored_output_shows_an_objects_address(path):
    notebook = nbformat.read(path, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    for index, cell in enumerate(code, start=1):
        for output in cell.outputs:
            for text in (output.get("text", ""), output.get("data", {}).get("text/plain", "")):
                text = "".join(text) if isinstance(text, list) else str(text)
                assert not ADDRESS.search(text), (
                    f"code cell {index} shows an object's address ({text.strip()[:80]!r}): assign the value "
                    "(`_ = ...`) or print what matters"
                )
