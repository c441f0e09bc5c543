"""Every notebook of the course in real JupyterLab in headless Chromium, as a learner opens and runs it.

One JupyterLab server (token auth, 127.0.0.1, a temporary copy of the course), one notebook at a time.

- **Every notebook opens**: its stored outputs display without a kernel. The notebooks are opened one after another
  in one JupyterLab page (the app loads once), each with no kernel started or connected (the server has no session
  for it). Every stored output gets its view, and none is a widget (one would stay "Loading widget..." for ever), a
  widget error, or a traceback; the figures are shown as images.
- **The browser path**: Run All Cells in JupyterLab for one whole lesson (``LESSON_RUN``, notebook 02) and for the
  widget notebook (``WIDGET_CELLS``: one small notebook, built here and written only into the server's temporary
  copy, that creates every kind of widget the course uses from small inputs: an untrained tiny model, a few words,
  no training). For both: every code cell finished, once and in order, no error, no widget that failed to display,
  no button that cuts off its label; in the widget notebook every widget cell also shows its rendered widget view
  (not "Loading widget..." and not the text fallback). The run of 02 proves the browser path (a whole lesson as a
  learner runs it); the widget notebook proves that every kind of widget renders there. Every lesson is executed by
  nbval and again under the portable CPU kernels (tests/test_portable.py), so the course is not run a third time.
- **The widget coverage**: every kind of widget call found in a code cell of any course notebook (``WIDGET_CALL``)
  must appear in the lesson run or in ``WIDGET_CELLS``, so a lesson that adds a new kind of widget fails this test
  until the widget notebook creates it too.

A screenshot of each notebook after its run is saved in ``test-output/notebooks/`` (gitignored).
"""

import json
import re
from pathlib import Path

import pytest

from course_lib._syllabus import KNOWLEDGE_CHECKS

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "notebooks").glob("*.ipynb"))
LESSON_RUN = "notebooks/02_attention_qkv.ipynb"  # a whole lesson, Run All in JupyterLab: the video search and more
# What creates a widget in a code cell: a course widget class, an ipywidgets control, a checkpoint, a quiz, a quiz's
# score table, a review.
WIDGET_CALL = re.compile(r"\b(\w*(?:Widget|Explorer|Slider|Dropdown|Button)|predict|show_quiz|show_summary|review)\(")
# The widget notebook: not a course notebook (it lives outside notebooks/, only in the server's temporary copy, so
# nothing that globs notebooks/ or reads the syllabus sees it). The setup cell creates no widget; every other cell
# creates one and shows it as the cell's only output, with the same calls as the lessons.
WIDGET_NOTEBOOK = "browser-checks/every_widget.ipynb"
WIDGET_SETUP = """\
import io

import ipywidgets as widgets
import torch
from matplotlib.figure import Figure

from course_lib import DecoderLM
from course_lib.lab.tasks import relative_clauses as rc

torch.manual_seed(0)
vocab = rc.VOCAB
model = DecoderLM(len(vocab), 16, 2, 1, 32, max_len=rc.MAX_LEN).eval()  # tiny, untrained: the widgets only show it
sentence = [vocab.bos_id] + vocab.encode("the dog , which chased the owls ,")"""
WIDGET_CELLS = [
    # 02
    """\
from course_lib.lab.widgets import VideoSearchWidget

VideoSearchWidget(query="cats jumping", temperature=1.0)""",
    # 04: a notebook-made explorer, an ipywidgets slider above a picture
    """\
class PositionExplorer(widgets.VBox):
    def __repr__(self):
        return "[position explorer: run this notebook in Jupyter and move the slider]"


def position_png(p):
    buffer = io.BytesIO()
    axes = Figure(figsize=(3, 1)).subplots()
    axes.plot(torch.randn(8).tolist())
    axes.axvline(p)
    axes.figure.savefig(buffer, format="png", dpi=40)
    return buffer.getvalue()


slider = widgets.IntSlider(value=2, min=0, max=7, description="position p", continuous_update=False)
picture = widgets.Image(value=position_png(slider.value), format="png")
slider.observe(lambda change: setattr(picture, "value", position_png(change["new"])), names="value")
PositionExplorer([slider, picture])""",
    # 03, 08, 09
    """\
from course_lib.lab.explorer import AttentionExplorer, next_token_readout

AttentionExplorer(
    model,
    torch.tensor(sentence),
    [vocab.words[i] for i in sentence],
    readout=next_token_readout(vocab.words),
    more_inputs=[(torch.tensor(sentence[:4]), [vocab.words[i] for i in sentence[:4]])],
    start_query=-2,
    title="An untrained model",
)""",
    # 08
    """\
from course_lib.lab.widgets import SamplingWidget

SamplingWidget(model, vocab, ["the dog , which", "the geese"], max_steps=4)""",
    # every lesson: a checkpoint with options, one with a number
    """\
from course_lib.interactive.predict import predict

predict("02-unscaled")""",
    'predict("03-one-head")',
    # every lesson
    """\
from course_lib.interactive.quiz import load_bank, show_quiz, show_summary

show_quiz("02")""",
    # the knowledge checks: a part of a bank with a title, and the score table
    """\
final = load_bank("final")
show_quiz(final, topics=["rnn_limits"], title="Section 1")""",
    "show_summary(final)",
    # spaced review (tests/conftest.py turns the learning record off, so nothing is due)
    """\
from course_lib.interactive.review import review

review()""",
]
pytestmark = pytest.mark.browser


def test_every_notebook_is_collected():
    assert len(NOTEBOOKS) >= 7, NOTEBOOKS


def widget_kinds(sources: list[str]) -> set[str]:
    return {kind for source in sources for kind in WIDGET_CALL.findall(source)}


def code_sources(path: str) -> list[str]:
    cells = json.loads((ROOT / path).read_text(encoding="utf-8"))["cells"]
    return ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]


def test_the_live_run_creates_every_kind_of_widget_the_course_uses():
    everywhere = set().union(*(widget_kinds(code_sources(path)) for path in NOTEBOOKS))
    live = widget_kinds(code_sources(LESSON_RUN)) | widget_kinds(WIDGET_CELLS)
    assert {"predict", "show_quiz"} <= everywhere, "the pattern must find the checkpoints and quizzes"
    assert WIDGET_CALL.search(WIDGET_SETUP) is None, "the widget notebook's setup cell creates no widget"
    assert all(WIDGET_CALL.search(source) for source in WIDGET_CELLS), "every widget cell creates a widget"
    missing = sorted(everywhere - live)
    assert missing == [], f"course notebooks create {missing}: add a cell that creates it to WIDGET_CELLS"


def widget_notebook() -> str:
    import nbformat

    kernelspec = json.loads((ROOT / LESSON_RUN).read_text(encoding="utf-8"))["metadata"]["kernelspec"]
    notebook = nbformat.v4.new_notebook(metadata={"kernelspec": kernelspec})
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in [WIDGET_SETUP, *WIDGET_CELLS]]
    nbformat.validate(notebook)
    return nbformat.writes(notebook)


def clipped_buttons(notebook) -> list[str]:
    """The labels of visible widget buttons whose text is wider than the button (shown cut off with "...")."""
    return notebook.evaluate(
        """root => [...root.querySelectorAll('button.jupyter-button, button.widget-button')]
            .filter(button => button.offsetParent !== null && button.scrollWidth > button.clientWidth + 1)
            .map(button => button.textContent.trim())"""
    )


def cell_outputs(notebook) -> list[list[str]]:
    """For every code cell, what each of its outputs (not those of an Output widget inside it) shows: ``"widget"``
    for a rendered widget view (the ipywidgets renderer sets no mime type on its node and holds the view's DOM), else
    the output's text (a widget still "Loading widget..." or "Error displaying widget") or its mime type (a text
    fallback, a stream, ...)."""
    return notebook.evaluate(
        """root => [...root.querySelectorAll('.jp-CodeCell')].map(cell =>
            [...cell.querySelectorAll('.jp-OutputArea-output')]
            .filter(output => !output.parentElement.closest('.jupyter-widgets'))  // not those of an Output widget
            .map(output => {
                const text = output.textContent.trim();
                if (output.dataset.mimeType) return output.dataset.mimeType;
                const rendered = output.querySelector('.jupyter-widgets') !== null;
                return rendered && !/^(Loading widget|Error displaying widget)/.test(text) ? 'widget' : text;
            }))"""
    )


def draws_figures(path: str) -> bool:
    return Path(path).name[:2] not in KNOWLEDGE_CHECKS  # a knowledge check is a quiz: it draws no figure


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: Path(path).stem)
def test_notebook_opens_with_its_stored_outputs(kernel_free_lab, request, path):
    from playwright.sync_api import expect

    nb = kernel_free_lab(path)  # every stored output has its view; no kernel was started or connected
    try:
        assert nb.widget_views() == [], "a stored widget never displays without a kernel (it stays 'Loading widget')"
        assert nb.widget_errors() == [], "stored outputs must display without a kernel"
        assert nb.error_outputs() == [], nb.error_outputs()
        if draws_figures(path):  # the stored figures are displayed (an image view draws its <img> at once)
            expect(nb.notebook.locator(".jp-OutputArea-output img")).not_to_have_count(0, timeout=10_000)
        assert nb.kernel() == {}, "the server started a kernel for the notebook"
    except AssertionError:
        print(f"screenshot of the failure: {nb.screenshot(f'FAILED-{request.node.name}')}")
        raise


def run_all_in_jupyterlab(open_notebook, path: str):
    """Open ``path`` in JupyterLab, Run All Cells, and check the run as a learner would see it."""
    nb = open_notebook(path)
    assert nb.widget_errors() == [], "stored outputs must display without a kernel"
    nb.run_all(timeout=240)

    states = nb.cell_states()
    unfinished = [prompt for prompt, has_source in states if has_source and not prompt[1:2].isdigit()]
    assert not unfinished, f"code cells that did not run: {unfinished}; error outputs: {nb.error_outputs()}"
    numbers = [int(prompt.strip("[]:")) for prompt, has_source in states if has_source]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers), "cells ran once each, in order"
    assert nb.error_outputs() == [], nb.error_outputs()
    assert nb.widget_errors() == [], nb.widget_errors()
    assert clipped_buttons(nb.notebook) == [], "a widget button cuts off its label"
    return nb


def test_a_lesson_runs_in_jupyterlab(open_notebook):
    nb = run_all_in_jupyterlab(open_notebook, LESSON_RUN)
    assert nb.notebook.locator(".jp-OutputArea-output img").count() > 0, "the notebook's figures are displayed"
    nb.notebook.locator(".jp-Cell").first.scroll_into_view_if_needed()
    nb.screenshot(f"notebooks/{Path(LESSON_RUN).stem}", full_page=False)


def test_every_kind_of_widget_renders_in_jupyterlab(open_notebook, lab_server):
    target = lab_server.root_dir / WIDGET_NOTEBOOK
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(widget_notebook(), encoding="utf-8")
    nb = run_all_in_jupyterlab(open_notebook, WIDGET_NOTEBOOK)

    setup, *widgets = cell_outputs(nb.notebook)
    assert setup == [], f"the setup cell shows nothing: {setup}"
    not_shown = [
        (f"cell {number}: {WIDGET_CALL.findall(source)[-1]}", outputs)
        for number, (source, outputs) in enumerate(zip(WIDGET_CELLS, widgets, strict=True), start=2)
        if outputs != ["widget"]
    ]
    assert not_shown == [], f"every widget cell shows its rendered widget view, and only that: {not_shown}"
    nb.notebook.locator(".jp-Cell").first.scroll_into_view_if_needed()
    nb.screenshot(f"notebooks/{Path(WIDGET_NOTEBOOK).stem}", full_page=False)
