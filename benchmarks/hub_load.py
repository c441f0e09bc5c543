"""Load on the course's JupyterHub: N learners running course notebooks at the same time (a benchmark, not a test).

For each N (default 1, 4, 8) the script starts the hub from deploy/jupyterhub_config.py on 127.0.0.1 (as the hub
test does: tests/hub_support.py), creates N learners, spawns their servers, hands out the course with nbgitpuller,
then every learner runs the same notebooks one after the other, all learners at once, leaving each notebook open
(its kernel idle), as a learner who keeps the tabs open does. Meanwhile it samples the memory of every process of
every learner once a second. It reports:

- memory per learner: the learner's server alone, the peak of all their processes, and with all notebooks open;
- memory per open notebook: the kernel of each notebook, idle after its run, and its peak while running;
- time per notebook as N grows (every cell executed over the kernel's websocket, as JupyterLab does).

Memory is PSS (proportional set size: shared pages such as torch's libraries divided among the processes that map
them, so the figures add up to what the machine really holds); RSS (which counts torch's libraries once per
kernel) is shown for the kernels too. Needs root and `make hub-proxy`, like the hub test.

    sudo .venv/bin/python benchmarks/hub_load.py                   # N = 1, 4, 8 with notebooks 02 and 03
    .venv/bin/python benchmarks/hub_load.py --learners 2 --notebooks 07 --markdown
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from hub_support import account_pids, accounts_of, missing_requirements, running_hub  # noqa: E402

TARGET = "transformers-course"
MB = 1024 * 1024


def memory_of(pid: int) -> tuple[int, int] | None:
    """(PSS, RSS) in bytes of one process, from /proc/<pid>/smaps_rollup; None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return None
    values = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] in ("Pss:", "Rss:"):
            values[parts[0]] = int(parts[1]) * 1024
    return values.get("Pss:", 0), values.get("Rss:", 0)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def kernel_pids(uid: int) -> dict[str, int]:
    """Kernel id -> pid for the kernels an account runs (the kernel's connection file names its id)."""
    found = {}
    for pid in account_pids({uid}):
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        for arg in args:
            name = os.path.basename(arg.decode(errors="replace"))
            if name.startswith("kernel-") and name.endswith(".json"):
                found[name[len("kernel-") : -len(".json")]] = pid
    return found


class Sampler:
    """Once a second: the PSS of every process of every learner (peaks per learner and per pid)."""

    def __init__(self, uids: dict[str, int], every: float = 1.0):
        self.uids, self.every = uids, every
        self.peak_learner = dict.fromkeys(uids, 0)
        self.peak_pid: dict[int, tuple[int, int]] = {}
        self.total_peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.is_set():
            total = 0
            for name, uid in self.uids.items():
                learner = 0
                for pid in account_pids({uid}):
                    memory = memory_of(pid)
                    if memory is None:
                        continue
                    learner += memory[0]
                    old = self.peak_pid.get(pid, (0, 0))
                    self.peak_pid[pid] = (max(old[0], memory[0]), max(old[1], memory[1]))
                self.peak_learner[name] = max(self.peak_learner[name], learner)
                total += learner
            self.total_peak = max(self.total_peak, total)
            self._stop.wait(self.every)


def learner_pss(uid: int) -> int:
    return sum((memory_of(pid) or (0, 0))[0] for pid in account_pids({uid}))


def measure(learners: int, notebooks: list[str]) -> dict:
    """One hub, ``learners`` learners, each running ``notebooks`` in order, all learners at the same time."""
    with running_hub(kernel_idle=3600, server_idle=3600) as hub:
        names = [f"{hub.prefix}-{number}" for number in range(1, learners + 1)]
        hub.hub.create_learners(names)
        started = time.monotonic()
        with ThreadPoolExecutor(learners) as pool:
            list(pool.map(lambda name: hub.hub.spawn(name, timeout=300), names))
        spawn_seconds = time.monotonic() - started
        clients = [hub.learner(name) for name in names]
        for client in clients:
            client.pull_course(hub.course_url, "main", TARGET)
        uids = accounts_of(hub.prefix)
        time.sleep(2)
        server_only = [learner_pss(uids[name]) for name in names]

        def work(client):
            runs, kernels, cpu = [], [], []
            for notebook in notebooks:
                before = set(kernel_pids(uids[client.name]))
                run = client.run_notebook(f"{TARGET}/{notebook}", timeout=900)
                if run.errors:
                    raise RuntimeError(f"{client.name} {notebook}: {run.errors}")
                new = set(kernel_pids(uids[client.name])) - before
                pid = kernel_pids(uids[client.name])[new.pop()] if new else None
                kernels.append(pid)
                cpu.append(cpu_seconds(pid) if pid else float("nan"))  # the kernel's own CPU: start-up + the run
                runs.append(run.seconds)
            return runs, kernels, cpu

        load_before = os.getloadavg()[0]  # the machine's load before this run adds its own
        phase_started = time.monotonic()
        with Sampler(uids) as sampler, ThreadPoolExecutor(learners) as pool:
            results = list(pool.map(work, clients))
        phase_seconds = time.monotonic() - phase_started
        time.sleep(3)  # the kernels settle (idle, notebooks still open)
        open_all = [learner_pss(uids[name]) for name in names]
        idle_kernels = [memory_of(pid) for _, kernels, _ in results for pid in kernels if pid]
        peak_kernels = [
            tuple(max(a, b) for a, b in zip(sampler.peak_pid.get(pid, (0, 0)), memory_of(pid) or (0, 0), strict=True))
            for _, kernels, _ in results
            for pid in kernels
            if pid
        ]
        return {
            "learners": learners,
            "notebooks": notebooks,
            "spawn_seconds": spawn_seconds,
            "seconds": {nb: [runs[i] for runs, _, _ in results] for i, nb in enumerate(notebooks)},
            "cpu_seconds": {nb: [cpu[i] for _, _, cpu in results] for i, nb in enumerate(notebooks)},
            "cores_used": sum(sum(cpu) for _, _, cpu in results) / phase_seconds,
            "load_before": load_before,
            "server_only_mb": [x / MB for x in server_only],
            "peak_learner_mb": [sampler.peak_learner[name] / MB for name in names],
            "open_all_mb": [x / MB for x in open_all],
            "idle_kernel_pss_mb": [m[0] / MB for m in idle_kernels if m],
            "idle_kernel_rss_mb": [m[1] / MB for m in idle_kernels if m],
            "peak_kernel_pss_mb": [m[0] / MB for m in peak_kernels],
            "peak_kernel_rss_mb": [m[1] / MB for m in peak_kernels],
            "class_peak_mb": sampler.total_peak / MB,
        }


def spread(values: list[float], digits: int = 0) -> str:
    if not values:
        return "–"
    low, mid, high = min(values), statistics.median(values), max(values)
    fmt = f"{{:.{digits}f}}"
    return fmt.format(mid) if low == high else f"{fmt.format(mid)} ({fmt.format(low)}–{fmt.format(high)})"


def table(results: list[dict]) -> str:
    notebooks = results[0]["notebooks"]
    lines = [
        "| learners | load before | spawn all (s) | "
        + " | ".join(f"`{Path(nb).stem[:2]}` s per run" for nb in notebooks)
        + " | "
        + " | ".join(f"`{Path(nb).stem[:2]}` kernel CPU s" for nb in notebooks)
        + " | cores the kernels got"
        + " | server alone (MB) | learner peak (MB) | learner, all open (MB) | kernel idle PSS / RSS (MB) "
        "| kernel peak PSS / RSS (MB) | class peak (GB) |",
        "|---:|---:|---:|" + "---:|" * (2 * len(notebooks) + 1) + "---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        cells = [str(r["learners"]), f"{r['load_before']:.1f}", f"{r['spawn_seconds']:.1f}"]
        cells += [spread(r["seconds"][nb], 1) for nb in notebooks]
        cells += [spread(r["cpu_seconds"][nb], 1) for nb in notebooks]
        cells += [f"{r['cores_used']:.2f}"]
        cells += [spread(r["server_only_mb"]), spread(r["peak_learner_mb"]), spread(r["open_all_mb"])]
        cells += [f"{spread(r['idle_kernel_pss_mb'])} / {spread(r['idle_kernel_rss_mb'])}"]
        cells += [f"{spread(r['peak_kernel_pss_mb'])} / {spread(r['peak_kernel_rss_mb'])}"]
        cells += [f"{r['class_peak_mb'] / 1024:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--learners", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--notebooks", nargs="+", default=["02", "03"], help="notebook numbers or exercise names")
    parser.add_argument("--markdown", action="store_true", help="print only the Markdown table")
    parser.add_argument("--json", type=Path, help="also write the raw measurements here")
    args = parser.parse_args(argv)
    problems = missing_requirements()
    if problems:
        print("cannot start the hub: " + "; ".join(problems), file=sys.stderr)
        return 2
    if any(n < 1 or n > 16 for n in args.learners):
        print("--learners: between 1 and 16 per run (the machine has 2 cores)", file=sys.stderr)
        return 2
    paths = []
    for wanted in args.notebooks:
        matches = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "notebooks").glob(f"{wanted}*.ipynb"))
        matches += sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "exercises").glob(f"{wanted}*.ipynb"))
        if not matches:
            print(f"no notebook matches {wanted!r}", file=sys.stderr)
            return 2
        paths.append(matches[0])
    results = []
    for learners in args.learners:
        if not args.markdown:
            print(f"{learners} learner(s), notebooks {', '.join(paths)} ...", flush=True)
        results.append(measure(learners, paths))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    if not args.markdown:
        load = os.getloadavg()
        print(
            f"\n{platform.machine()}, {os.cpu_count()} cores, "
            f"load average at the end {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}\n"
        )
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
