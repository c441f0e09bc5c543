"""Running a training notebook twice gives the same numbers.

Each notebook seeds everything once through ``course_lib.set_seed``. This test executes a training notebook end to
end in two fresh kernels and compares every text output of every cell (training progress, accuracies, asserted
numbers), with wall-clock timings masked out, and then compares the cells tagged ``nbval-check-output`` with the
outputs stored in the repository.
"""

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from course_lib.tools.exercises.build import checks_output

ROOT = Path(__file__).resolve().parents[1]
# 09 trains two models (the induction heads, 2 layers, and a 1-layer control) and prints their losses and scores: the
# shortest training notebook (about 8 s a run; 06 took twice as long for the same proof)
TRAINING_NOTEBOOK = ROOT / "notebooks" / "09_induction_heads.ipynb"

TIMING = re.compile(r"\d+(\.\d+)?\s*(s|ms|sec|secs|seconds)\b")
OBJECT_ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def text_outputs(cell) -> list[str]:
    """The cell's printed text (streams joined: the kernel splits them into chunks differently each run) and reprs."""
    streams, reprs = {}, []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            streams[output.get("name", "stdout")] = streams.get(output.get("name", "stdout"), "") + output.get(
                "text", ""
            )
        elif "data" in output and "text/plain" in output["data"]:
            reprs.append(output["data"]["text/plain"])
    texts = [streams[name] for name in sorted(streams)] + reprs
    return [OBJECT_ADDRESS.sub(" at 0x…", TIMING.sub("<time>", t)) for t in texts]


def execute(path: Path, tmp_path: Path):
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    return notebook


@pytest.mark.slow
def test_training_notebook_is_deterministic(tmp_path):
    first = execute(TRAINING_NOTEBOOK, tmp_path)
    second = execute(TRAINING_NOTEBOOK, tmp_path)
    assert len(first.cells) == len(second.cells)
    compared = 0
    for index, (a, b) in enumerate(zip(first.cells, second.cells)):
        if a.cell_type != "code":
            continue
        assert text_outputs(a) == text_outputs(b), f"cell {index} printed different text in two runs"
        compared += bool(text_outputs(a))
    assert compared >= 5, "the notebook should print results to compare"

    stored = nbformat.read(TRAINING_NOTEBOOK, as_version=4)
    checked = 0
    for index, (ours, theirs) in enumerate(zip(first.cells, stored.cells)):
        if checks_output(ours):
            assert text_outputs(ours) == text_outputs(theirs), f"cell {index} differs from the stored output"
            checked += 1
    assert checked >= 1, "the training notebook must mark its key results for nbval (tag nbval-check-output)"
