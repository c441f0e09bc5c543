"""The suite on two processes: the longest modules start first, and PyTorch uses one thread (tests/conftest.py)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# tests/conftest.py by its path: under pytest-xdist `import conftest` can find tests/browser/conftest.py first
_spec = importlib.util.spec_from_file_location("suite_conftest", ROOT / "tests" / "conftest.py")
conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(conftest)


def test_every_module_named_longest_first_exists():
    missing = [path for path in conftest.LONGEST_FIRST if not (ROOT / path).is_file()]
    assert missing == [], f"tests/conftest.py's LONGEST_FIRST names modules that do not exist: {missing}"


def test_make_test_keeps_the_order_instead_of_xdists_most_tests_first():
    parallel = re.search(r"^PARALLEL \?= (.*)$", (ROOT / "Makefile").read_text(encoding="utf-8"), flags=re.M)
    assert parallel and "--no-loadscope-reorder" in parallel.group(1).split(), "without it xdist reorders the modules"


class _Item:
    def __init__(self, nodeid: str):
        self.nodeid = nodeid


class _Config:  # a run without --notebook
    def getoption(self, name, default=None):
        return default


def test_the_longest_modules_come_first_and_the_rest_keep_their_order():
    names = ["lessons/01_x.ipynb::Cell 0", "tests/test_a.py::test_one", "tests/test_contributing.py::test_walk",
             "tests/test_a.py::test_two", "tests/test_portable.py::test_kernels[default]", "tests/test_b.py::test"]  # fmt: skip
    items = [_Item(name) for name in names]
    conftest.pytest_collection_modifyitems(None, _Config(), items)
    assert [item.nodeid for item in items] == [
        "tests/test_portable.py::test_kernels[default]",
        "tests/test_contributing.py::test_walk",
        "lessons/01_x.ipynb::Cell 0",
        "tests/test_a.py::test_one",
        "tests/test_a.py::test_two",
        "tests/test_b.py::test",
    ]


def test_pytorch_runs_on_the_threads_conftest_sets_before_torch_is_imported():
    import os

    import torch

    assert torch.get_num_threads() == int(os.environ["OMP_NUM_THREADS"]), "torch was imported before tests/conftest.py"
