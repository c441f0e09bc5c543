"""How long does the whole course take to run? (a benchmark, not a test)

Executes every notebook in ``notebooks/`` and every exercise solution in ``exercises/solutions/`` headless, each in a
fresh kernel as ``make test`` does, and prints a table: notebook, seconds (kernel start included), peak memory of the
kernel, and the total; then the attention speed ratio against PyTorch's fused kernel.

Targets on a 2-core machine: whole course ≤ 90 s, no notebook > 20 s, peak memory per kernel ≤ 1.5 GB.

    python benchmarks/run_course.py [--markdown] [PATTERN ...]

The notebooks are executed from temporary copies; nothing in the repository is modified.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

TARGET_TOTAL_S = 90.0
TARGET_NOTEBOOK_S = 20.0
TARGET_MEMORY_MB = 1536.0

PEAK_MEMORY_CELL = "import resource as _r; print('PEAK_RSS_KB', _r.getrusage(_r.RUSAGE_SELF).ru_maxrss)"


def course_notebooks(patterns: list[str]) -> list[Path]:
    paths = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "exercises" / "solutions").glob("*.ipynb"))
    if patterns:
        paths = [p for p in paths if any(pattern in p.name for pattern in patterns)]
    return paths


def kernel_config(workdir: Path):
    """Kernel settings: IPC sockets (files in ``workdir``) instead of TCP ports, on POSIX systems.

    ipykernel 7 warns at every start over TCP that the traffic is not encrypted ("Kernel is running over TCP without
    encryption"); IPC sockets never leave the machine and are files only this user can open, so there is nothing
    to warn about. Windows has no IPC transport: there the kernel uses TCP on 127.0.0.1 as before.
    """
    from traitlets.config import Config

    config = Config()
    if os.name == "posix":
        config.KernelManager.transport = "ipc"
        config.KernelManager.ip = str(workdir / "kernel")  # sockets kernel-1, kernel-2, ... (AF_UNIX allows ~100 bytes)
    return config


def run_notebook(path: Path, workdir: Path) -> tuple[float, float, str]:
    """Execute a copy of ``path`` in a fresh kernel; return (seconds, peak kernel memory in MB, status)."""
    copy = workdir / path.relative_to(ROOT)
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(path, copy)
    notebook = nbformat.read(copy, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(PEAK_MEMORY_CELL))
    client = NotebookClient(
        notebook,
        config=kernel_config(workdir),
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(copy.parent)}},
    )
    start = time.perf_counter()
    status = "ok"
    try:
        client.execute()
    except Exception as exc:  # a failing notebook is reported in the table, not fatal to the benchmark
        status = f"error: {type(exc).__name__}"
    seconds = time.perf_counter() - start
    peak_mb = float("nan")
    for output in notebook.cells[-1].get("outputs", []):
        text = output.get("text", "")
        if "PEAK_RSS_KB" in text:
            peak_mb = int(text.split()[-1]) / 1024
    return seconds, peak_mb, status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("patterns", nargs="*", help="only notebooks whose file name contains one of these")
    parser.add_argument(
        "--markdown", action="store_true", help="print the table as Markdown (for benchmarks/README.md)"
    )
    args = parser.parse_args(argv)

    paths = course_notebooks(args.patterns)
    if not paths:
        print("no notebooks matched", file=sys.stderr)
        return 2
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        # course_lib must import from the copies' location too: copy nothing else, the package is installed (-e .)
        for path in paths:
            seconds, peak_mb, status = run_notebook(path, Path(tmp))
            rows.append((str(path.relative_to(ROOT)), seconds, peak_mb, status))
            print(f"  ran {rows[-1][0]:<58} {seconds:6.1f} s", file=sys.stderr, flush=True)

    total = sum(r[1] for r in rows)
    import torch

    header = f"{time.strftime('%Y-%m-%d')} · {platform.processor() or platform.machine()} · {torch.get_num_threads()} threads · torch {torch.__version__} · Python {platform.python_version()}"
    if args.markdown:
        print(f"Measured {header}\n")
        print("| notebook | seconds | peak memory (MB) | status |")
        print("|---|---:|---:|---|")
        for name, seconds, peak_mb, status in rows:
            flag = " ⚠" if seconds > TARGET_NOTEBOOK_S else ""
            print(f"| `{name}` | {seconds:.1f}{flag} | {peak_mb:.0f} | {status} |")
        print(f"| **total** | **{total:.1f}** | | |")
    else:
        print(header)
        print(f"{'notebook':<60}{'seconds':>9}{'peak MB':>10}  status")
        for name, seconds, peak_mb, status in rows:
            flag = " !" if seconds > TARGET_NOTEBOOK_S else "  "
            print(f"{name:<60}{seconds:>8.1f}{flag}{peak_mb:>8.0f}  {status}")
        print(f"{'total':<60}{total:>8.1f}")
    slow = [r[0] for r in rows if r[1] > TARGET_NOTEBOOK_S]
    heavy = [r[0] for r in rows if r[2] > TARGET_MEMORY_MB]
    failed = [r[0] for r in rows if r[3] != "ok"]
    print(
        f"\ntargets: total ≤ {TARGET_TOTAL_S:.0f} s: {'met' if total <= TARGET_TOTAL_S else 'NOT met'} ({total:.1f} s); "
        f"no notebook > {TARGET_NOTEBOOK_S:.0f} s: {'met' if not slow else 'NOT met ' + str(slow)}; "
        f"peak ≤ {TARGET_MEMORY_MB:.0f} MB: {'met' if not heavy else 'NOT met ' + str(heavy)}"
    )
    if failed:
        print(f"failed to execute: {failed}")

    import attention_speed

    print()
    attention_speed.main([])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
