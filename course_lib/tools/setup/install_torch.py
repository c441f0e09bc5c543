"""Install the right PyTorch build for this machine, before the rest of the course (no torch needed to run it).

    python course_lib/tools/setup/install_torch.py [--torch cpu|default|auto] [--dry-run]

``make install`` and ``make lab`` run it first; without make, run it yourself, then
``pip install -r requirements.txt -e .`` (which finds torch already there). The choice:

- ``auto`` (the default; ``TORCH=auto``): Linux without an NVIDIA GPU gets the **CPU build** from PyTorch's CPU wheel
  index (about 200 MB). On Linux a plain ``pip install torch`` brings the CUDA build plus about 20 ``nvidia-*`` wheels
  (2.7 GB), which this course never uses. Linux with an NVIDIA GPU (``nvidia-smi`` lists one), macOS and Windows
  get the **default build** (on macOS and Windows the default wheels are already CPU-only).
- ``cpu``: the CPU wheel index whatever the machine. ``default``: plain pip, whatever the machine.

When the CPU index is chosen but cannot be reached within ``PROBE_TIMEOUT`` seconds (no network to it, a proxy, a
mirror-only network), the script says so and falls back to plain pip with the same version pin, so an install never
waits on pip's long retries. ``TORCH_CPU_INDEX`` points it at another CPU index (a mirror, or a local folder as
``file:///...``). The torch pin is read from ``requirements.txt`` next to the course (``torch==2.13.0``).

This file imports nothing from course_lib or torch: it runs with a bare Python before either is installed.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
PROBE_TIMEOUT = 4.0  # seconds to wait for the CPU index before falling back to plain pip
NVIDIA_SMI_TIMEOUT = 10.0
CHOICES = ("auto", "cpu", "default")
REQUIREMENTS = Path(__file__).resolve().parents[3] / "requirements.txt"


class InstallError(Exception):
    """A problem the user can fix; printed without a traceback."""


@dataclass
class Plan:
    build: str  # "cpu" or "default"
    reason: str  # one sentence: why this build
    command: list[str]  # the pip command that installs it
    requirement: str = "torch"  # the pin, e.g. torch==2.13.0
    index: str | None = None  # the CPU index used, if any
    fallback: str | None = None  # why the CPU index was not used although chosen


# --------------------------------------------------------------------------- what the machine has


def has_nvidia_gpu(env: dict | None = None, proc_root: str = "/proc/driver/nvidia/gpus") -> bool:
    """True if an NVIDIA GPU with a working driver is visible: ``nvidia-smi -L`` lists one, or the driver's
    ``/proc`` folder has an entry. A missing or failing ``nvidia-smi`` (no driver) means no GPU."""
    env = dict(os.environ if env is None else env)
    smi = shutil.which("nvidia-smi", path=env.get("PATH", ""))
    if smi:
        try:
            result = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=NVIDIA_SMI_TIMEOUT, env=env)
        except (OSError, subprocess.SubprocessError):
            result = None
        if result is not None and result.returncode == 0 and "GPU" in result.stdout:
            return True
    folder = Path(proc_root)
    try:
        return folder.is_dir() and any(folder.iterdir())
    except OSError:
        return False


def index_reachable(index: str, timeout: float = PROBE_TIMEOUT) -> tuple[bool, str]:
    """(reachable, why not) for a PEP 503 index: its ``torch/`` page must answer within ``timeout`` seconds."""
    url = index.rstrip("/") + "/torch/"
    if url.startswith("file:"):
        path = Path(urllib.request.url2pathname(urllib.parse.urlparse(url).path))
        return (path.is_dir(), "" if path.is_dir() else f"{path} is not a folder")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as reply:
            reply.read(1)
        return True, ""
    except urllib.error.HTTPError as exc:
        return False, f"it answered HTTP {exc.code}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return False, str(reason) or type(exc).__name__


# --------------------------------------------------------------------------- the decision


def torch_requirement(requirements: Path = REQUIREMENTS) -> str:
    """The ``torch`` line of requirements.txt (e.g. ``torch==2.13.0``); plain ``torch`` if there is none."""
    try:
        lines = Path(requirements).read_text(encoding="utf-8").splitlines()
    except OSError:
        return "torch"
    for line in lines:
        spec = line.split("#", 1)[0].strip()
        name = spec.split(";", 1)[0]
        for mark in ("==", ">=", "<=", "~=", "!=", ">", "<", "[", " "):
            name = name.split(mark, 1)[0]
        if name.strip().lower() == "torch":
            return spec
    return "torch"


def choose_build(requested: str, system: str, gpu: bool) -> tuple[str, str]:
    """("cpu" | "default", reason) for a request (auto/cpu/default), an OS name (platform.system()) and a GPU flag."""
    if requested not in CHOICES:
        raise InstallError(f"TORCH={requested!r} is not one of {', '.join(CHOICES)} (auto picks for this machine).")
    if requested == "cpu":
        return "cpu", "TORCH=cpu asks for the CPU build"
    if requested == "default":
        return "default", "TORCH=default asks for pip's default build"
    if system != "Linux":
        return "default", f"on {system or 'this system'} pip's default torch wheels are already CPU-only"
    if gpu:
        return "default", "an NVIDIA GPU is present, so the default (CUDA) build can use it"
    return "cpu", "Linux without an NVIDIA GPU: the CPU build is about 200 MB instead of 2.7 GB of CUDA wheels"


def plan_install(
    requested: str = "auto",
    python: str = sys.executable,
    requirement: str | None = None,
    system: str | None = None,
    gpu: bool | None = None,
    cpu_index: str | None = None,
    env: dict | None = None,
    probe=index_reachable,
) -> Plan:
    """Decide what to install and how (nothing is installed). Every input can be given, for tests."""
    env = dict(os.environ if env is None else env)
    requirement = requirement or torch_requirement()
    system = platform.system() if system is None else system
    if gpu is None:
        gpu = requested == "auto" and system == "Linux" and has_nvidia_gpu(env)
    build, reason = choose_build(requested, system, gpu)
    pip = [python, "-m", "pip", "install", requirement]
    if build == "default":
        return Plan("default", reason, pip, requirement)
    index = cpu_index or env.get("TORCH_CPU_INDEX") or CPU_INDEX
    reachable, why = probe(index)
    if not reachable:
        return Plan(
            "default", reason, pip, requirement, fallback=f"the CPU wheel index {index} cannot be reached ({why})"
        )
    # --extra-index-url keeps the configured index for torch's own dependencies; the CPU index's "+cpu" build is
    # the higher version under PEP 440 (a local version sorts after the plain one), so pip takes it.
    return Plan("cpu", reason, [*pip, "--extra-index-url", index], requirement, index=index)


def describe(plan: Plan) -> str:
    lines = []
    if plan.fallback:
        lines.append(f"torch: wanted the CPU build ({plan.reason}), but {plan.fallback}.")
        lines.append(
            "torch: falling back to what pip finds (on Linux that may be the large CUDA build; "
            "set TORCH_CPU_INDEX to a reachable CPU index to avoid it)."
        )
    else:
        lines.append(f"torch: installing the {'CPU' if plan.build == 'cpu' else 'default'} build: {plan.reason}.")
    lines.append("torch: " + " ".join(shlex.quote(part) for part in plan.command))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Install the PyTorch build that suits this machine (see the docstring)."
    )
    parser.add_argument(
        "--torch", default=os.environ.get("TORCH") or "auto", help="auto (default), cpu or default; also $TORCH"
    )
    parser.add_argument(
        "--python", default=sys.executable, help="the Python whose environment gets torch (default: this one)"
    )
    parser.add_argument("--requirements", default=str(REQUIREMENTS), help="where the torch pin is read from")
    parser.add_argument(
        "--dry-run", action="store_true", help="print the decision and the pip command, install nothing"
    )
    parser.add_argument("--pip-option", action="append", default=[], help="an extra option for pip (repeatable)")
    args = parser.parse_args(argv)
    try:
        start = time.monotonic()
        plan = plan_install(args.torch.strip().lower(), args.python, torch_requirement(Path(args.requirements)))
        plan.command.extend(args.pip_option)
        print(describe(plan), flush=True)
        print(f"torch: decided in {time.monotonic() - start:.1f} s", flush=True)
    except InstallError as exc:
        print(f"torch: {exc}", file=sys.stderr)
        return 2
    if args.dry_run:
        return 0
    result = subprocess.run(plan.command)
    if result.returncode != 0 and plan.build == "cpu":
        print(f"torch: the install from {plan.index} failed; trying plain pip instead.", flush=True)
        result = subprocess.run([args.python, "-m", "pip", "install", plan.requirement, *args.pip_option])
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
