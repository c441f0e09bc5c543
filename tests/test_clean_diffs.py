"""Clean diffs: re-executing an unchanged notebook with ``python -m course_lib notebook run`` changes at most 5 lines.

The small notebook here holds what used to churn on every run: prints in a loop (a kernel splits them into stream
outputs by timing), a figure, a quiz widget (a random model id and its state) and timing metadata. It runs twice;
the second run's JSON differs from the first in at most 5 lines, and neither holds timings or widget state. The
first run also leaves the slide types its new outputs call for (the figure cell opens a sub-slide).
"""

from __future__ import annotations

import difflib
import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from course_lib.tools.publish import slides

ROOT = Path(__file__).resolve().parents[1]
CELLS = [
    'import time\nfor step in range(5):\n    print("step", step, flush=True)\n    time.sleep(0.05)',
    "import matplotlib.pyplot as plt\n\nfrom course_lib.lab.plots import show_figure\n\n"
    'plt.plot([0, 1, 2], [0, 1, 4], label="squares")\nplt.legend()\nshow_figure()',
    'from course_lib.interactive.quiz import show_quiz\n\nshow_quiz("01")',
]


def run(path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(
        [sys.executable, "-m", "course_lib", "notebook", "run", str(path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
def test_rerunning_an_unchanged_notebook_changes_at_most_five_lines(tmp_path):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_markdown_cell("# A small notebook\n\nTwo sentences of prose to read."),
        nbformat.v4.new_markdown_cell("## Prints, a figure and a quiz"),
    ]
    notebook.cells += [nbformat.v4.new_code_cell(source) for source in CELLS]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    slides.annotate_notebook(notebook)  # annotated before it ever ran: the figure cell is not a sub-slide yet
    unexecuted = nbformat.reads(nbformat.writes(notebook), as_version=4)
    path = tmp_path / "small.ipynb"
    nbformat.write(notebook, path)
    first = run(path)
    assert first.returncode == 0, first.stdout + first.stderr
    once = path.read_text(encoding="utf-8")

    # the slide types a run's new outputs call for: a cell that draws a figure only once it runs opens a sub-slide,
    # and `notebook run` sets that after executing, so a lesson needs no second `slides annotate`
    executed = nbformat.reads(once, as_version=4)
    figure = next(cell for cell in executed.cells if "show_figure()" in cell.source)
    figure_before = next(cell for cell in unexecuted.cells if "show_figure()" in cell.source)
    assert any("image/png" in output.get("data", {}) for output in figure.outputs)
    assert figure.metadata["slideshow"]["slide_type"] != figure_before.metadata["slideshow"]["slide_type"], (
        "the figure changes the slide type"
    )
    assert slides.annotate_notebook(executed) is False, "annotating again changes nothing"
    second = run(path)
    assert second.returncode == 0, second.stdout + second.stderr
    twice = path.read_text(encoding="utf-8")

    changed = [
        line
        for line in difflib.unified_diff(once.splitlines(), twice.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    assert len(changed) <= 5, "\n".join(changed[:40])
    stored = json.loads(twice)
    assert "widgets" not in stored["metadata"], "widget state is not stored"
    assert all("execution" not in cell["metadata"] for cell in stored["cells"]), "no timing metadata"
    outputs = [output for cell in stored["cells"] if cell["cell_type"] == "code" for output in cell["outputs"]]
    assert not any("application/vnd.jupyter.widget-view+json" in output.get("data", {}) for output in outputs)
    loop = next(cell for cell in stored["cells"] if "for step in range(5)" in "".join(cell["source"]))
    streams = [output for output in loop["outputs"] if output["output_type"] == "stream"]
    assert len(streams) == 1 and "".join(streams[0]["text"]).count("step") == 5, "the prints are one output"
    first_code = next(cell for cell in stored["cells"] if cell["cell_type"] == "code")
    assert first_code["metadata"].get("tags") == ["colab", "skip"], "prepared: the Colab cell first"
    assert "**Estimated time:**" in "".join(stored["cells"][0]["source"]), "prepared: the reading time"
