"""The rules that make the exported slides fit (course_lib/tools/publish/slides_fit.py), on small notebooks and on copies of
the real ones; tests/browser/test_slides_browser.py measures the result in Chromium."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from course_lib.tools.publish import slides
from course_lib.tools.publish.slides_fit import (
    MAX_CODE_LINES,
    SLIDE_BUDGET,
    estimate_height,
    fit_notebook,
    fold_asserts,
    is_check_cell,
)

ROOT = Path(__file__).resolve().parents[1]


def kind(cell) -> str:
    return cell.metadata.get("slideshow", {}).get("slide_type", "-")


def test_the_check_cell_rule():
    assert is_check_cell(new_code_cell("assert x == 1\nassert y.shape == (2, 3), 'shape'"))
    assert is_check_cell(new_code_cell("torch.testing.assert_close(a, b)\nprint('ok')"))
    assert is_check_cell(new_code_cell("# a comment\nassert ok\nprint(f'checked {n} cases')"))
    assert not is_check_cell(new_code_cell("print('no assert here')"))
    assert not is_check_cell(new_code_cell("assert ok\ny = f(x)"))  # computes something: the lesson
    assert not is_check_cell(new_code_cell("%timeit f()\nassert ok"))  # not plain Python: left alone
    assert not is_check_cell(new_markdown_cell("assert x"))


def test_asserts_are_folded_out_of_the_code_shown():
    source = "y = f(x)\n# the shape is kept\nassert y.shape == x.shape\nassert torch.allclose(\n    y, x\n)\nprint(y)"
    folded, count = fold_asserts(source)
    assert count == 2
    assert folded == "y = f(x)\nprint(y)\n# ... and 2 checks (assert) that the notebook runs here"
    assert fold_asserts("for i in range(3):\n    assert i < 3") == ("for i in range(3):\n    assert i < 3", 0)


def test_check_cells_hide_and_long_slides_split():
    png = "iVBORw0KGgoAAAANSUhEUgAAAlgAAAGQ"  # a PNG header: 600 x 400

    def figure(number: int):
        return new_code_cell(f"fig = plot({number})", outputs=[new_output("display_data", data={"image/png": png})])

    notebook = new_notebook(
        cells=[
            new_markdown_cell("## A section", metadata={"slideshow": {"slide_type": "slide"}}),
            new_code_cell("assert ok"),  # a check without output: skipped
            new_code_cell("assert ok\nprint('ok')", outputs=[new_output("stream", name="stdout", text="ok\n")]),
            *[figure(i) for i in range(3)],
        ]
    )
    report = fit_notebook(notebook)
    assert report.hidden_check_cells == 2
    assert kind(notebook.cells[1]) == "skip"
    assert notebook.cells[2].metadata["transient"] == {"remove_source": True}  # its printout still shows
    assert report.splits >= 1 and "subslide" in [kind(cell) for cell in notebook.cells[3:]]


def test_a_code_cell_taller_than_a_slide_is_cut_into_sub_slides():
    source = "\n".join(f"value_{i} = {i}" for i in range(60))
    cell = new_code_cell(source, outputs=[new_output("stream", name="stdout", text="done\n")])
    notebook = new_notebook(cells=[new_markdown_cell("## Long", metadata={"slideshow": {"slide_type": "slide"}}), cell])
    fit_notebook(notebook)
    parts = notebook.cells[1:]
    assert len(parts) >= 3 and all(estimate_height(part) <= SLIDE_BUDGET for part in parts)
    shown = [part.source.removeprefix("# (continued)\n") for part in parts if part.source]
    assert "\n".join(shown) == source, "every line of the code is shown once, in order"
    assert all(len(part.source.split("\n")) <= MAX_CODE_LINES + 1 for part in parts)
    assert [kind(part) for part in parts[1:]] == ["subslide"] * (len(parts) - 1)
    assert sum(len(part.outputs) for part in parts) == 1


def test_a_quiz_shows_one_question_per_slide():
    from course_lib.interactive.quiz import load_bank
    from course_lib.interactive.quiz.render import markup

    notebook = nbformat.read(ROOT / "notebooks" / "01_why_rnns_struggle.ipynb", as_version=4)
    report = fit_notebook(notebook)
    quiz = load_bank("01")
    pieces = [
        cell
        for cell in notebook.cells
        if cell.get("outputs") and "course-quiz-static" in cell.outputs[0].get("data", {}).get("text/html", "")
    ]
    assert report.quiz_slides == len(quiz) == len(pieces)
    for number, (piece, question) in enumerate(zip(pieces, quiz.questions)):
        page = piece.outputs[0]["data"]["text/html"]
        assert markup(question.prompt) in page and page.count("Show the answer") == 1
        assert f"question {number + 1} of {len(quiz)}" in page
        assert number == 0 or (kind(piece) == "subslide" and piece.metadata["transient"]["remove_source"])


def test_the_notebook_files_are_not_changed_by_an_export(tmp_path):
    path = ROOT / "notebooks" / "02_attention_qkv.ipynb"
    before = path.read_bytes()
    slides.export_decks([path], tmp_path, echo=None)
    assert path.read_bytes() == before
