"""The torch install choice of `make install` (course_lib/tools/setup/install_torch.py), tested offline.

The decision table is tested directly; then the script runs for real against two package indexes served on
127.0.0.1 (a "CPU" index holding a fake ``torch 2.13.0+cpu`` wheel and a "default" one holding ``torch 2.13.0``), with
pip's configuration switched off, a fake ``nvidia-smi`` on PATH where a GPU is wanted, and pip in ``--dry-run
--report`` mode, so the test reads which wheel pip would have installed without installing anything.
"""

from __future__ import annotations

import functools
import http.server
import importlib.util
import json
import os
import platform
import socket
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "course_lib" / "tools" / "setup" / "install_torch.py"
spec = importlib.util.spec_from_file_location("install_torch", SCRIPT)
install_torch = importlib.util.module_from_spec(spec)
sys.modules["install_torch"] = install_torch
spec.loader.exec_module(install_torch)


# --------------------------------------------------------------------------- the decision table


@pytest.mark.parametrize(
    "requested, system, gpu, build",
    [
        ("auto", "Linux", False, "cpu"),
        ("auto", "Linux", True, "default"),
        ("auto", "Darwin", False, "default"),
        ("auto", "Windows", False, "default"),
        ("cpu", "Linux", True, "cpu"),
        ("cpu", "Darwin", False, "cpu"),
        ("default", "Linux", False, "default"),
    ],
)
def test_choose_build(requested, system, gpu, build):
    chosen, reason = install_torch.choose_build(requested, system, gpu)
    assert chosen == build and reason


def test_an_unknown_choice_is_refused_with_the_valid_ones():
    with pytest.raises(install_torch.InstallError, match="auto, cpu, default"):
        install_torch.choose_build("cuda", "Linux", False)
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--torch", "cuda", "--dry-run"], capture_output=True, text=True
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr and "auto, cpu, default" in result.stderr


def test_the_pin_comes_from_requirements(tmp_path):
    assert install_torch.torch_requirement(ROOT / "requirements.txt").startswith("torch==")
    pins = tmp_path / "requirements.txt"
    pins.write_text("# runtime\nnumpy>=1.26\ntorch>=2.2,<3  # any recent\ntorchvision==0.1\n")
    assert install_torch.torch_requirement(pins) == "torch>=2.2,<3"
    pins.write_text("numpy\n")
    assert install_torch.torch_requirement(pins) == "torch"


def fake_nvidia_smi(folder: Path, output: str, code: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    smi = folder / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\necho '{output}'\nexit {code}\n")
    smi.chmod(0o755)
    return folder


@pytest.mark.skipif(os.name != "posix", reason="fake nvidia-smi is a shell script")
def test_gpu_detection_uses_nvidia_smi(tmp_path):
    no_proc = str(tmp_path / "no-proc")
    with_gpu = fake_nvidia_smi(tmp_path / "gpu", "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-1234)", 0)
    broken = fake_nvidia_smi(
        tmp_path / "broken", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver", 9
    )
    assert install_torch.has_nvidia_gpu({"PATH": str(with_gpu)}, proc_root=no_proc)
    assert not install_torch.has_nvidia_gpu({"PATH": str(broken)}, proc_root=no_proc)
    assert not install_torch.has_nvidia_gpu({"PATH": str(tmp_path / "empty")}, proc_root=no_proc)
    (tmp_path / "proc" / "0000:00:1e.0").mkdir(parents=True)  # the driver's folder lists a GPU
    assert install_torch.has_nvidia_gpu({"PATH": str(tmp_path / "empty")}, proc_root=str(tmp_path / "proc"))


# --------------------------------------------------------------------------- local indexes


def make_wheel(folder: Path, version: str) -> Path:
    """A minimal valid wheel named torch (a stand-in: it holds one empty module)."""
    name = f"torch-{version}-py3-none-any.whl"
    info = f"torch-{version}.dist-info"
    files = {
        "torch/__init__.py": "",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{path},,\n" for path in files) + f"{info}/RECORD,,\n"
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(folder / name, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return folder / name


def make_index(root: Path, version: str) -> Path:
    """A PEP 503 simple index at ``root`` with one project, torch, holding one wheel."""
    wheel = make_wheel(root / "torch", version)
    href = wheel.name.replace("+", "%2B")
    (root / "torch" / "index.html").write_text(
        f'<!DOCTYPE html><html><body><a href="{href}">{wheel.name}</a></body></html>\n'
    )
    (root / "index.html").write_text('<!DOCTYPE html><html><body><a href="torch/">torch</a></body></html>\n')
    return root


@pytest.fixture
def served(tmp_path):
    """``served(folder)`` → an http://127.0.0.1:PORT URL serving ``folder``; servers stop after the test."""
    servers = []

    def serve(folder: Path) -> str:
        handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
        handler.log_message = lambda *args: None
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"  # nothing listens there any more


def test_index_probe(tmp_path, served):
    index = make_index(tmp_path / "cpu", "2.13.0+cpu")
    assert install_torch.index_reachable(served(index)) == (True, "")
    assert install_torch.index_reachable(index.as_uri())[0]
    assert not install_torch.index_reachable((tmp_path / "missing").as_uri())[0]
    start = time.monotonic()
    reachable, why = install_torch.index_reachable(closed_port_url())
    assert not reachable and why
    assert time.monotonic() - start < 2, "an unreachable index must be given up quickly"
    empty = tmp_path / "empty"
    empty.mkdir()
    reachable, why = install_torch.index_reachable(served(empty))
    assert not reachable and "404" in why, "an index without torch is no use"


# --------------------------------------------------------------------------- the script, end to end with pip


def run_script(tmp_path: Path, cpu_index: str, default_index: str, path_dirs: list[Path], torch: str = "auto"):
    """Run install_torch.py as make does, with pip resolving (dry run) against the two local indexes only."""
    report = tmp_path / f"report-{time.monotonic_ns()}.json"
    env = {key: value for key, value in os.environ.items() if not key.startswith("PIP_")}
    env.update(
        PIP_CONFIG_FILE=os.devnull,  # ignore this machine's pip configuration (its indexes and wheel folders)
        PIP_INDEX_URL=default_index + "/",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_NO_CACHE_DIR="1",
        TORCH_CPU_INDEX=cpu_index,
        PATH=os.pathsep.join([*map(str, path_dirs), str(Path(sys.executable).parent), "/usr/bin", "/bin"]),
    )
    env.pop("TORCH", None)
    pip_options = ["--dry-run", "--ignore-installed", "--no-deps", "--quiet", "--report", str(report)]
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, str(SCRIPT), f"--torch={torch}", *(f"--pip-option={o}" for o in pip_options)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    seconds = time.monotonic() - start
    assert result.returncode == 0, result.stdout + result.stderr
    chosen = json.loads(report.read_text())["install"]
    assert len(chosen) == 1, chosen
    return chosen[0]["metadata"]["version"], result.stdout, seconds


@pytest.mark.slow  # starts a kernel or a subprocess (make test-fast leaves it to make test)
@pytest.mark.skipif(platform.system() != "Linux", reason="the CPU index is chosen automatically on Linux only")
def test_script_picks_the_cpu_index_without_a_gpu_and_falls_back_fast(tmp_path, served):
    cpu = served(make_index(tmp_path / "cpu-index", "2.13.0+cpu"))
    default = served(make_index(tmp_path / "default-index", "2.13.0"))
    no_gpu = [tmp_path / "bin-empty"]

    version, out, _ = run_script(tmp_path, cpu, default, no_gpu)
    assert version == "2.13.0+cpu", out
    assert "CPU build" in out and f"--extra-index-url {cpu}" in out

    version, out, _ = run_script(tmp_path, cpu, default, [fake_nvidia_smi(tmp_path / "bin-gpu", "GPU 0: NVIDIA T4", 0)])
    assert version == "2.13.0", "with an NVIDIA GPU, the default (CUDA) build"
    assert "NVIDIA GPU is present" in out and "--extra-index-url" not in out

    version, out, _ = run_script(tmp_path, cpu, default, no_gpu, torch="default")
    assert version == "2.13.0" and "TORCH=default" in out

    version, out, seconds = run_script(tmp_path, closed_port_url(), default, no_gpu)
    assert version == "2.13.0", "an unreachable CPU index falls back to what pip finds"
    assert "cannot be reached" in out and "falling back" in out
    assert seconds < 30, f"the fallback took {seconds:.1f} s (pip's own dry run included)"

    version, out, _ = run_script(tmp_path, (tmp_path / "cpu-index").as_uri(), default, no_gpu)
    assert version == "2.13.0+cpu", "a CPU index in a local folder (file://) works too"


def test_makefile_runs_the_script_before_the_requirements():
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("$(VENV)/.course-installed:", 1)[1].split("\n\n", 1)[0]
    script_at, requirements_at = recipe.find("install_torch.py --torch=$(TORCH)"), recipe.find("-r requirements.txt")
    assert 0 <= script_at < requirements_at, recipe
    assert "TORCH  ?= auto" in makefile
