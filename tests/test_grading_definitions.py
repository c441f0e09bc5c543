"""What the grader runs of a notebook before it calls the notebook's functions: its definitions, nothing else.

The grader calls a submission's functions in a fresh process where only the notebook's imports, functions, classes
and constants ran (``course_lib.tools.grading.definitions``), so that no other statement can forge or precompute a
result. These tests pin which statements are kept and which are skipped, and that the solutions' definitions are
enough for every graded function.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from course_lib.checks import EXERCISES
from course_lib.tools.exercises import build as generate
from course_lib.tools.grading.definitions import definitions
from course_lib.tools.grading.worker import read_cells

EXERCISES_DIR = Path(__file__).resolve().parents[1] / "exercises"


def kept(*cells: str) -> list[str]:
    return [ast.unparse(module).splitlines()[0] for _, module in definitions(list(cells)).kept]


@pytest.mark.parametrize(
    "statement",
    [
        "import torch",
        "import torch.nn.functional as F",
        "from course_lib.attention import scaled_dot_product_attention",
        "D_K = 8",
        "EPS: float = 1e-5",
        "NEG = float('-inf')",
        "W = torch.randn(4, 4)",
        "mask = torch.tril(torch.ones(4, 4)) == 0",
        "SCALE = math.sqrt(2)",
        "def softmax(scores, dim=-1):\n    return scores",
        "@torch.no_grad()\ndef top_k_filter(logits, k):\n    return logits",
        "class Block(nn.Module):\n    '''A block.'''\n    size = 3\n    def forward(self, x):\n        return x",
        "square = lambda x: x * x",
    ],
)
def test_a_definition_is_kept(statement):
    prelude = "import math\nimport torch\nimport torch.nn as nn\n"
    assert len(kept(prelude + statement)) == 4, kept(prelude + statement)


@pytest.mark.parametrize(
    "statement",
    [
        "print('hello')",
        "check_softmax(softmax)",
        "lm = seeded_lm()",
        "course_lib.checks.remote.harvest = None",
        "setattr(torch, 'save', None)",
        "torch.save = None",
        "x = torch.load('answers.pt')",
        "x = exec('1')",
        "x = [i for i in range(3)]",
        "for i in range(3):\n    pass",
        "with open('x') as f:\n    pass",
        "def f(x=exec('1')):\n    pass",
        "@register\ndef f():\n    pass",
        "class E:\n    def __class_getitem__(cls, key):\n        pass",
        "class E:\n    def __init_subclass__(cls):\n        pass",
        "class E(metaclass=Meta):\n    pass",
        "class E:\n    print('runs while the class is built')",
        "x = Block.size",  # reading an attribute of the notebook's own class can run its code
        "x = torch.tensor(Block)",  # so can handing it to a constructor (``__array__``)
        "x = torch.tensor([lambda: 0])",
        "x = ().__class__.__base__",
        "%time softmax(x)",
    ],
)
def test_code_that_runs_something_is_skipped(statement):
    prelude = "import torch\nclass Block:\n    size = 3\n"
    result = definitions([prelude, statement])
    assert len(result.kept) == 2, [ast.unparse(m) for _, m in result.kept]
    assert result.skipped and result.skipped[0].startswith("code cell 2: ")


def test_a_cell_that_is_not_python_is_reported_and_the_others_kept():
    result = definitions(["def f(:\n", "def g():\n    return 1"])
    assert result.unparsable == [1] and len(result.kept) == 1


@pytest.mark.parametrize("exercise", sorted(EXERCISES))
def test_the_solutions_define_every_graded_function_from_definitions_alone(exercise):
    sources = read_cells(str(generate.solution_path(EXERCISES_DIR, exercise)))
    namespace: dict = {}
    for cell, module in definitions(sources).kept:
        exec(compile(module, f"code cell {cell}", "exec"), namespace)
    for spec in EXERCISES[exercise].specs:
        assert callable(namespace.get(spec.function)), f"{exercise}: {spec.function} is not defined"


def test_the_worker_reads_a_notebook_with_a_byte_order_mark(tmp_path):
    path = tmp_path / "bom.ipynb"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"cells": [{"cell_type": "code", "source": ["x = 1"]}]}).encode())
    assert read_cells(str(path)) == ["x = 1"]
