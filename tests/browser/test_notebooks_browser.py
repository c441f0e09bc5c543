"""Every notebook of the course in real JupyterLab in headless Chromium, as a learner opens and runs it.

One JupyterLab server (token auth, 127.0.0.1, a temporary copy of the course), one notebook at a time.

- **Every notebook opens**: its stored outputs display without a kernel. The notebooks are opened one after another
  in one JupyterLab page (the app loads once), each with no kernel started or connected (the server has no session
  for it). Every stored output gets its view, and none is a widget (one would stay "Loading widget..." for ever), a
  widget error, or a traceback; the figures are shown as images.
- **Run All Cells** in the browser for the fewest notebooks that between them create every kind of widget the
  course uses (``LIVE_RUN``; a test keeps that true when a notebook adds a widget): every code cell finished, once
  and in order, no error, no widget that failed to display, no button that cuts off its label. Every notebook is
  executed by nbval and again under the portable CPU kernels (tests/test_portable.py); this run is what proves the
  browser path, so it does not repeat the whole course a third time.

A screenshot of each notebook after its run is saved in ``test-output/notebooks/`` (gitignored).
"""

import json
import re
from pathlib import Path

import pytest

from course_lib.syllabus import KNOWLEDGE_CHECKS

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "notebooks").glob("*.ipynb"))
# 02: the video search; 04: the position explorer and its slider; 08: the attention explorer, the sampling widget;
# and each of them a prediction checkpoint and a quiz.
LIVE_RUN = ["notebooks/02_attention_qkv.ipynb", "notebooks/04_positional_encoding.ipynb",
            "notebooks/08_language_model.ipynb"]  # fmt: skip
# What creates a widget in a code cell: a course widget class, an ipywidgets control, a checkpoint, a quiz, a review.
WIDGET_CALL = re.compile(r"\b(\w*(?:Widget|Explorer|Slider|Dropdown|Button)|predict|show_quiz|review)\(")
pytestmark = pytest.mark.browser


def test_every_notebook_is_collected():
    assert len(NOTEBOOKS) >= 7, NOTEBOOKS


def widget_kinds(path: str) -> set[str]:
    cells = json.loads((ROOT / path).read_text(encoding="utf-8"))["cells"]
    return {
        kind for cell in cells if cell["cell_type"] == "code" for kind in WIDGET_CALL.findall("".join(cell["source"]))
    }


def test_the_live_run_creates_every_kind_of_widget_the_course_uses():
    everywhere = set().union(*(widget_kinds(path) for path in NOTEBOOKS))
    live = set().union(*(widget_kinds(path) for path in LIVE_RUN))
    assert {"predict", "show_quiz"} <= everywhere, "the pattern must find the checkpoints and quizzes"
    assert everywhere - live == set(), f"add a notebook that creates {sorted(everywhere - live)} to LIVE_RUN"


def clipped_buttons(notebook) -> list[str]:
    """The labels of visible widget buttons whose text is wider than the button (shown cut off with "...")."""
    return notebook.evaluate(
        """root => [...root.querySelectorAll('button.jupyter-button, button.widget-button')]
            .filter(button => button.offsetParent !== null && button.scrollWidth > button.clientWidth + 1)
            .map(button => button.textContent.trim())"""
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


@pytest.mark.parametrize("path", LIVE_RUN, ids=lambda path: Path(path).stem)
def test_notebook_runs_in_jupyterlab(open_notebook, path):
    nb = open_notebook(path)
    assert nb.widget_errors() == [], "stored outputs must display without a kernel"
    nb.run_all(timeout=240)

    states = nb.cell_states()
    unfinished = [prompt for prompt, has_source in states if has_source and not prompt[1:2].isdigit()]
    assert not unfinished, f"code cells that did not run: {unfinished}; error outputs: {nb.error_outputs()}"
    numbers = [int(prompt.strip("[]:")) for prompt, has_source in states if has_source]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers), "cells ran once each, in order"
    assert nb.error_outputs() == [], nb.error_outputs()
    assert nb.widget_errors() == []
    assert clipped_buttons(nb.notebook) == [], "a widget button cuts off its label"
    images = nb.notebook.locator(".jp-OutputArea-output img").count()
    if draws_figures(path):
        assert images > 0, "the notebook's figures are displayed"

    nb.notebook.locator(".jp-Cell").first.scroll_into_view_if_needed()
    nb.screenshot(f"notebooks/{Path(path).stem}", full_page=False)
