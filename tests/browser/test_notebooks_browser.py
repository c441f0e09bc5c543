"""Every notebook of the course, run in real JupyterLab in headless Chromium, as a learner would run it.

One JupyterLab server (token auth, 127.0.0.1, a temporary copy of the course) and one notebook at a time: open it,
Run All Cells, and check that every code cell finished, that no cell shows an error and that no widget failed to
display. A screenshot of each notebook after its run is saved in ``test-output/notebooks/`` (gitignored).
"""

from pathlib import Path

import pytest

from course_lib.syllabus import KNOWLEDGE_CHECKS

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "notebooks").glob("*.ipynb"))
pytestmark = pytest.mark.browser


def test_every_notebook_is_collected():
    assert len(NOTEBOOKS) >= 7, NOTEBOOKS


def clipped_buttons(notebook) -> list[str]:
    """The labels of visible widget buttons whose text is wider than the button (shown cut off with "...")."""
    return notebook.evaluate(
        """root => [...root.querySelectorAll('button.jupyter-button, button.widget-button')]
            .filter(button => button.offsetParent !== null && button.scrollWidth > button.clientWidth + 1)
            .map(button => button.textContent.trim())"""
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: Path(path).stem)
def test_notebook_runs_in_jupyterlab(open_notebook, path):
    nb = open_notebook(path)
    assert nb.widget_errors() == [], "stored outputs must display without a kernel"
    nb.run_all(timeout=240)

    states = nb.cell_states()
    unfinished = [prompt for prompt, has_source in states if has_source and not prompt[1:2].isdigit()]
    assert not unfinished, f"code cells that did not run: {unfinished}"
    numbers = [int(prompt.strip("[]:")) for prompt, has_source in states if has_source]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers), "cells ran once each, in order"
    assert nb.error_outputs() == [], nb.error_outputs()
    assert nb.widget_errors() == []
    assert clipped_buttons(nb.notebook) == [], "a widget button cuts off its label"
    images = nb.notebook.locator(".jp-OutputArea-output img").count()
    if Path(path).name[:2] not in KNOWLEDGE_CHECKS:  # a knowledge check is a quiz: it draws no figure
        assert images > 0, "the notebook's figures are displayed"

    nb.notebook.locator(".jp-Cell").first.scroll_into_view_if_needed()
    nb.screenshot(f"notebooks/{Path(path).stem}", full_page=False)
