"""The language-model benchmark runs end to end at tiny sizes (the real measurement is in benchmarks/README.md).

It trains for two steps, generates two tokens after prompts of 8 and 16 positions with and without the KV cache
(the script asserts both give the same tokens), and prints the machine, the training time and one row per prompt
length with a positive speed-up.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # starts a kernel or a subprocess (make test-fast leaves it to make test)
def test_the_generation_benchmark_runs_at_tiny_sizes(tmp_path):
    command = [sys.executable, str(ROOT / "benchmarks" / "lm_generation.py"), "--steps", "2", "--n-sentences", "60",
               "--positions", "8", "16", "--new-tokens", "2", "--repeats", "1", "--d-model", "16", "--num-heads", "2",
               "--n-blocks", "1", "--d-ff", "32", "--markdown"]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "machine:" in out and "load: before load average" in out and "training: 2 steps" in out, out
    rows = re.findall(r"^\| (\d+) \| (\d+) \| (\d+) \| ([0-9.]+)× \|$", out, flags=re.MULTILINE)
    assert [int(row[0]) for row in rows] == [8, 16], out
    assert all(float(row[3]) > 0 and int(row[1]) > 0 and int(row[2]) > 0 for row in rows), out
