"""The notebooks and exercise solutions pass on other CPUs: run them again under PyTorch's other kernels.

PyTorch picks its vector kernels for the CPU it runs on (AVX-512, AVX2, or the portable "default" ones), and its
matrix library does the same; floating-point sums then round in a different order, and a trained model ends up a
little different. A notebook must pass anyway: its checks on trained results are thresholds with measured margins,
and the cells whose stored output must repeat exactly (``nbval-check-output`` tag) print nothing that training
rounds. This test reruns what the kernels can change (every lesson; the exercise solutions whose checks train, see
``notebooks``; not the knowledge checks, which are quizzes) with nbval in a fresh process under each capability in
``COURSE_CAPABILITIES`` (default: ``default``, the portable kernels any machine has), skipping the one the machine
uses natively. Where pytest-xdist is installed (the dev requirements) the notebooks run on two processes, each
notebook whole in one of them (``--dist loadfile``): every notebook runs on one thread, so two cores halve the time.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from course_lib import _syllabus as syllabus
from course_lib.checks import EXERCISES, calling

ROOT = Path(__file__).resolve().parents[1]
CAPABILITIES = os.environ.get("COURSE_CAPABILITIES", "default").split()
# Emulating a CPU means both of PyTorch's own kernels and the matrix library's (MKL) code path.
ENVIRONMENTS = {
    "default": {"ATEN_CPU_CAPABILITY": "default", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2"},
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"},
}


def native_capability() -> str:
    return torch.backends.cpu.get_cpu_capability().lower()


def trains(exercise: str) -> bool:
    """Does a check of ``exercise`` train the learner's code? (a spec with a time limit for it, as the grader allows)"""
    return calling.extra_seconds(EXERCISES[exercise].specs) > 0


def notebooks() -> list[str]:
    """What another CPU's kernels can change: every lesson trains and asserts on what it trained; a solution only where
    a check trains (elsewhere a check compares the learner's function with the reference on the same inputs, both
    computed by the same kernels, so its verdict cannot depend on which kernels those are)."""
    paths = [ROOT / "notebooks" / row.file for row in syllabus.lessons()]
    paths += [ROOT / "exercises" / "solutions" / f"{name}.ipynb" for name in sorted(EXERCISES) if trains(name)]
    return [str(path.relative_to(ROOT)) for path in paths if path.exists()]


def parallel() -> list[str]:
    """pytest-xdist's options for two processes, a notebook whole in one of them (none without xdist or 2 cores)."""
    try:
        import xdist  # noqa: F401
    except ImportError:
        return []
    return ["-n", "2", "--dist", "loadfile"] if (os.cpu_count() or 1) >= 2 else []


def capability_runs(capability: str) -> bool:
    """Can this machine run PyTorch with ``capability``? (ask a fresh interpreter)"""
    probe = "import torch; print(torch.backends.cpu.get_cpu_capability())"
    env = {**os.environ, **ENVIRONMENTS[capability]}
    result = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=False)
    return result.returncode == 0 and result.stdout.strip().lower() == capability


@pytest.mark.slow
@pytest.mark.parametrize("capability", CAPABILITIES)
def test_notebooks_and_solutions_pass_under_other_cpu_kernels(capability):
    if capability not in ENVIRONMENTS:
        pytest.fail(f"COURSE_CAPABILITIES names {capability!r}; known: {', '.join(ENVIRONMENTS)}")
    current = os.environ.get("ATEN_CPU_CAPABILITY", native_capability()).lower()
    if capability == current:
        pytest.skip(f"{capability} is what the rest of the suite already runs")
    if not capability_runs(capability):
        pytest.skip(f"this CPU cannot run PyTorch's {capability} kernels")
    env = {**os.environ, **ENVIRONMENTS[capability]}
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--nbval-lax",
        "--nbval-current-env",
        "-o",
        "addopts=",
        *parallel(),
        *notebooks(),
    ]
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600, check=False)
    tail = "\n".join((result.stdout + result.stderr).splitlines()[-60:])
    assert result.returncode == 0, f"under ATEN_CPU_CAPABILITY={capability} the notebooks fail:\n{tail}"


def test_the_notebook_list_covers_the_course_and_the_solutions():
    listed = notebooks()
    assert len([p for p in listed if p.startswith("notebooks/")]) == len(syllabus.lessons())
    assert not [p for p in listed if Path(p).name[:2] in syllabus.KNOWLEDGE_CHECKS and p.startswith("notebooks/")]
    solutions = [p for p in listed if p.startswith("exercises/solutions/")]
    assert "exercises/solutions/ex05_layernorm_residual.ipynb" in solutions, "ex05's experiment check trains"
    assert all(Path(p).stem in EXERCISES and trains(Path(p).stem) for p in solutions)
