"""Slides from the same notebooks: the annotate rules, their idempotence and tag overrides, the metadata every
notebook carries, and an exported deck that loads nothing from the network.

The decks themselves are opened in headless Chromium by tests/browser/test_slides_browser.py.
"""

import copy
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from course_lib.tools import cli
from course_lib.tools.publish import slides

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
PNG = "iVBORw0KGgo="  # any base64 text: the rules only look at the output's mime type


def figure_cell(source="plt.plot(x)"):
    return new_code_cell(
        source,
        execution_count=1,
        outputs=[new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"})],
    )


def text_cell(source="print(x)"):
    return new_code_cell(source, execution_count=1, outputs=[new_output("stream", name="stdout", text="x\n")])


def toy_notebook():
    return new_notebook(
        cells=[
            new_markdown_cell("# 09 · A toy lesson\n\nWhat you will learn ..."),  # 0 slide
            new_code_cell(
                "import torch\n\nfrom course_lib import set_seed\n\nset_seed(0)\n%matplotlib inline"
            ),  # 1 skip
            new_markdown_cell("## 1. First section\n\nSome text."),  # 2 slide
            text_cell(),  # 3 -
            new_markdown_cell("A paragraph after a printed result starts the next step."),  # 4 subslide
            text_cell("y = x + 1\nprint(y)"),  # 5 -
            figure_cell(),  # 6 subslide (figure after code)
            new_markdown_cell("**What to notice.** The curve falls."),  # 7 fragment
            new_markdown_cell("### 1.1 A subsection"),  # 8 subslide
            figure_cell(),  # 9 -
            new_markdown_cell("This comments on the figure above."),  # 10 fragment
            new_code_cell("def helper(a):\n    return a + 1\n"),  # 11 skip (helper only)
            new_code_cell("class Model:\n    pass\n"),  # 12 - (a class is taught code)
            new_markdown_cell("**Speaker notes.** Ask the room what happens next."),  # 13 notes
            new_markdown_cell(
                "Closing words of section 1.\n\n## 2. Second section\n\nMore text."
            ),  # 14 split: - and slide
        ]
    )


EXPECTED = [
    "slide",
    "skip",
    "slide",
    "-",
    "subslide",
    "-",
    "subslide",
    "fragment",
    "subslide",
    "-",
    "fragment",
    "skip",
    "-",
    "notes",
    "subslide",
    "slide",
]


def kinds(notebook):
    return [cell.metadata["slideshow"]["slide_type"] for cell in notebook.cells]


def test_the_rules_give_each_cell_its_slide_type():
    notebook = toy_notebook()
    assert slides.annotate_notebook(notebook) is True
    assert len(notebook.cells) == 16, "the markdown cell with a '## ' heading in its middle is split there"
    assert notebook.cells[14].source == "Closing words of section 1."
    assert notebook.cells[15].source.startswith("## 2. Second section")
    assert kinds(notebook) == EXPECTED
    assert notebook.metadata["rise"] == {"scroll": True, "theme": "white"}


def test_annotate_is_idempotent():
    notebook = toy_notebook()
    slides.annotate_notebook(notebook)
    once = copy.deepcopy(notebook)
    assert slides.annotate_notebook(notebook) is False
    assert notebook == once


def test_a_tag_overrides_the_rules():
    notebook = toy_notebook()
    notebook.cells[2].metadata["tags"] = ["skip"]  # a section heading kept out of the deck
    notebook.cells[4].metadata["tags"] = ["continue"]  # stays on the previous slide
    notebook.cells[11].metadata["tags"] = ["slide"]  # a helper shown on its own slide
    notebook.cells[10].metadata["tags"] = ["notes"]
    slides.annotate_notebook(notebook)
    assert kinds(notebook)[2] == "skip" and kinds(notebook)[4] == "-"
    assert kinds(notebook)[11] == "slide" and kinds(notebook)[10] == "notes"
    assert slides.annotate_notebook(notebook) is False, "idempotent with tags too"


def test_headings_inside_code_fences_do_not_split_a_cell():
    notebook = new_notebook(cells=[new_markdown_cell("# T\n\nText\n```\n## not a heading\n```\nmore")])
    slides.annotate_notebook(notebook)
    assert len(notebook.cells) == 1


def test_code_cells_keep_source_outputs_and_counts(tmp_path):
    path = tmp_path / "lesson.ipynb"
    nbformat.write(toy_notebook(), path)
    before = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    assert slides.annotate(path) is True
    after = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    assert len(before) == len(after)
    for old, new in zip(before, after):
        assert (old.source, old.outputs, old.execution_count, old.get("id")) == (
            new.source,
            new.outputs,
            new.execution_count,
            new.get("id"),
        )
        assert {k: v for k, v in new.metadata.items() if k != "slideshow"} == dict(old.metadata)
    text = path.read_text()
    assert slides.annotate(path) is False and path.read_text() == text, "a second run leaves the file as it is"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name)
def test_every_notebook_carries_slideshow_metadata(path):
    notebook = nbformat.read(path, as_version=4)
    stored = [cell.metadata.get("slideshow", {}).get("slide_type") for cell in notebook.cells]
    assert all(kind in slides.SLIDE_TYPES for kind in stored), (
        f"{path.name} lacks slideshow metadata on some cells: run `python -m course_lib slides annotate {path.name[:2]}`"
    )
    first_code = next(cell for cell in notebook.cells if cell.cell_type == "code")
    assert first_code.metadata["slideshow"]["slide_type"] == "skip", "the setup cell is skipped"
    assert stored[0] == "slide", "the title opens the deck"
    assert stored.count("slide") + stored.count("subslide") >= 5, "a deck of several slides"
    fresh = copy.deepcopy(notebook)
    assert slides.annotate_notebook(fresh) is False, (
        f"{path.name}: slideshow metadata out of date; run `python -m course_lib slides annotate {path.name[:2]}`"
    )


def test_an_exported_deck_loads_nothing_from_the_network(tmp_path):
    decks = slides.export_decks(["02"], tmp_path, echo=None)
    html = decks[0].path.read_text(encoding="utf-8")
    assert decks[0].slides >= 5
    references = re.findall(r'(?:src|href)\s*=\s*"([^"]*)"', html) + re.findall(
        r"""import\s*\(?\s*['"]([^'"]+)""", html
    )
    remote = [ref for ref in references if re.match(r"^(https?:)?//", ref)]
    assert remote == [], f"the deck would load {remote}"
    for local in (
        "_static/reveal.js/dist/reveal.js",
        "_static/reveal.js/dist/plugin/notes.js",
    ):
        assert local in html and (tmp_path / local).is_file(), local
    assert 'class="course-math"' in html, "the deck's formulas are typeset as MathML when it is written"
    assert "MathJax.js" not in html and not (tmp_path / "_static" / "mathjax").exists(), "no typesetting script"
    assert (tmp_path / "_static/reveal.js/LICENSE").is_file(), "reveal.js is MIT: its licence travels with it"
    assert (tmp_path / "index.html").is_file()


def test_export_leaves_an_index_html_it_did_not_write_alone(tmp_path):
    (tmp_path / "index.html").write_text("my own page")
    slides.export_decks(["07"], tmp_path, echo=None)
    assert (tmp_path / "index.html").read_text() == "my own page"
    assert (tmp_path / "07_knowledge_check.slides.html").is_file()


def test_the_command_line_gives_friendly_errors(tmp_path, capsys):
    assert cli.main(["slides", "export", "99", "--out", str(tmp_path)]) == 2
    assert "There is no notebook '99'" in capsys.readouterr().err
    a_file = tmp_path / "deck.txt"
    a_file.write_text("x")
    assert cli.main(["slides", "export", "--out", str(a_file)]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err
    assert cli.main(["slides", "annotate", str(a_file)]) == 2
    assert "is not a notebook" in capsys.readouterr().err
    run = subprocess.run(
        [sys.executable, "-m", "course_lib", "slides", "annotate", str(tmp_path / "missing.ipynb")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2 and "Traceback" not in run.stderr and "does not exist" in run.stderr
