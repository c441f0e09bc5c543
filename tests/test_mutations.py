"""The verification tests must catch a broken building block.

Each case copies ``course_lib`` to a temporary folder, breaks one line the way a learner (or a tired author) might,
and runs the equivalence tests against the broken copy: they have to fail. A mutation they do not catch means the
tests cannot tell a correct block from a wrong one.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

MUTATIONS = {
    "no sqrt(d_k) scaling": ("attention.py", "(queries / math.sqrt(d_k)) @", "queries @"),
    "divide by d_k instead of sqrt(d_k)": ("attention.py", "(queries / math.sqrt(d_k)) @", "(queries / d_k) @"),
    "softmax without normalising": (
        "attention.py",
        "return exps / totals.clamp_min",
        "return exps + 0 * totals.clamp_min",
    ),
    "attention softmax over the query axis": (
        "attention.py",
        "weights = torch.softmax(scores, dim=-1,",
        "weights = torch.softmax(scores, dim=-2,",
    ),
    "mask filled with 0 instead of -inf": (
        "attention.py",
        '~allowed, float("-inf")',
        "~allowed, 0.0",
    ),
    "multi-head mask with the head axis in the wrong place": (
        "multihead.py",
        "mask = mask[:, None, :, :]  # (batch, 1, seq_q or 1, seq_k)",
        "mask = mask[:, :, None, :]  # (batch, 1, seq_q or 1, seq_k)",
    ),
    "LayerNorm centred once in float32 only": (
        "blocks.py",
        "centered = centered - centered.mean(dim=-1, keepdim=True)",
        "centered = centered",
    ),
    "merge heads without transposing back": (
        "multihead.py",
        "return x.transpose(1, 2).reshape(batch, seq, num_heads * d_head)",
        "return x.reshape(batch, seq, num_heads * d_head)",
    ),
    "sin and cos swapped": (
        "positions.py",
        "encoding[:, 0::2] = torch.sin(angles)",
        "encoding[:, 0::2] = torch.cos(angles)",
    ),
    "LayerNorm with the unbiased variance": (
        "blocks.py",
        "var = (centered * centered).mean(dim=-1, keepdim=True)",
        "var = (centered * centered).sum(dim=-1, keepdim=True) / (x.shape[-1] - 1)",
    ),
    "post-LN residual placed outside the norm": (
        "blocks.py",
        "return self.norm(skip + self.dropout(sublayer(x)))",
        "return skip + self.norm(self.dropout(sublayer(x)))",
    ),
    "RNN without tanh": (
        "recurrent.py",
        "return torch.tanh(self.w_xh(x_t) + self.w_hh(h_prev))",
        "return self.w_xh(x_t) + self.w_hh(h_prev)",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MUTATIONS))
def test_equivalence_tests_catch_the_mutation(name, tmp_path):
    filename, original, broken = MUTATIONS[name]
    package = tmp_path / "course_lib"
    shutil.copytree(ROOT / "course_lib", package, ignore=shutil.ignore_patterns("__pycache__"))
    source = (package / filename).read_text(encoding="utf-8")
    assert source.count(original) == 1, f"mutation target not found once in {filename}: {original!r}"
    (package / filename).write_text(source.replace(original, broken), encoding="utf-8")

    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(ROOT / "tests" / "test_equivalence.py"),
            "-x",
            "-q",
            "-p",
            "no:cacheprovider",
            "-o",
            "addopts=",
            "--rootdir",
            str(tmp_path),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    check = subprocess.run(
        [sys.executable, "-c", "import course_lib, sys; print(course_lib.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert str(tmp_path) in check.stdout, "the broken copy must be the one imported"
    assert result.returncode == 1, f"the equivalence tests did not catch '{name}':\n{result.stdout[-2000:]}"
