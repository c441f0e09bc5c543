"""The course benchmark runs its kernels without ipykernel's "Kernel is running over TCP without encryption" warning.

It runs one short notebook (the exercise-01 solution) the way ``make benchmark`` does, in a subprocess whose
output is captured (the kernel writes its warnings to the inherited stderr), and checks that it ran and warned of
nothing. On POSIX the kernel talks over IPC sockets; the test also checks that none are left behind.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = """
import pathlib, sys, tempfile
sys.path.insert(0, {benchmarks!r})
import run_course
workdir = pathlib.Path(tempfile.mkdtemp(dir={tmp!r}))
seconds, peak, status = run_course.run_notebook(run_course.ROOT / "exercises/solutions/ex01_rnn.ipynb", workdir)
print("STATUS", status)
"""


@pytest.mark.skipif(os.name != "posix", reason="IPC transport is POSIX-only; Windows keeps TCP on 127.0.0.1")
@pytest.mark.slow
def test_benchmark_kernels_start_without_the_tcp_warning(tmp_path):
    code = SCRIPT.format(benchmarks=str(ROOT / "benchmarks"), tmp=str(tmp_path))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180, cwd=tmp_path)
    output = result.stdout + result.stderr
    assert "STATUS ok" in result.stdout, output[-3000:]
    assert "without encryption" not in output, output[-3000:]
    assert not list(tmp_path.rglob("kernel-*")), "the kernel's IPC socket files are removed when it shuts down"
