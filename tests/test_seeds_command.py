"""``python -m course_lib seeds``: a notebook's asserts rerun with other seeds (issue 25).

On a tiny synthetic notebook whose assert holds for some seeds only, the command must name exactly the seeds (and
the cell) where it breaks, never touch the file, and replace every way a notebook sets its seed.
"""

from __future__ import annotations

import nbformat
import pytest

from course_lib._validate import CommandError
from course_lib.tools import cli
from course_lib.tools.evidence import seeds


def test_reseed_replaces_every_seed_setter_and_leaves_generators_alone():
    source = (
        "_ = set_seed(0)\nSEED = 0  # the notebook's seed\ntorch.manual_seed(0)\n"
        "test = torch.Generator().manual_seed(1234)\ntorch.manual_seed(SEED)\nNOT_SEED = 0\n"
    )
    new, count = seeds.reseed(source, 7)
    assert count == 3
    assert "_ = set_seed(7)" in new and "SEED = 7  # the notebook's seed" in new and "torch.manual_seed(7)" in new
    assert "Generator().manual_seed(1234)" in new and "torch.manual_seed(SEED)" in new and "NOT_SEED = 0" in new


def test_a_notebook_without_a_seed_is_refused():
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    with pytest.raises(CommandError, match="sets no seed"):
        seeds.reseeded(notebook, 1)


def test_the_command_names_the_seeds_whose_asserts_break(tmp_path, capsys):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    path = folder / "01_tiny.ipynb"
    notebook = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("# A claim that holds for most seeds"),
            nbformat.v4.new_code_cell("SEED = 0\nimport random\nrandom.seed(SEED)\nvalue = random.random()"),
            nbformat.v4.new_code_cell('assert SEED % 3 != 2, f"seed {SEED} is unlucky"'),
            nbformat.v4.new_code_cell("print(value)"),
        ]
    )
    nbformat.write(notebook, path)
    before = path.read_bytes()
    runs = [seeds.run(path, seed, timeout=60) for seed in (0, 1, 2)]
    assert [item.held for item in runs] == [True, True, False]
    assert runs[2].broken == [(2, "seed 2 is unlucky")] and runs[2].errors == []
    assert path.read_bytes() == before, "the notebook on disk is never changed"
    text = seeds.report(runs)
    assert "cell 2: assert failed: seed 2 is unlucky" in text and "2 of 3 runs: every assert held." in text


def test_the_cli_refuses_an_unknown_notebook(capsys):
    assert cli.main(["seeds", "--notebooks", "99", "--seeds", "0"]) == 2
    assert "no notebook '99'" in capsys.readouterr().err
