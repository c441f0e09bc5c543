"""Run one untrusted command in a sandbox: bubblewrap (``bwrap``) where the machine allows it.

The sandbox (``bwrap_command``) sees the whole system read-only, gets a private, size-limited ``/tmp`` as its only
writable place, no network (its own network namespace with only loopback), its own user (without any capability),
PID, IPC and UTS namespaces, and dies with the grader. The folders that hold the submissions, the results and the
solutions are hidden behind empty ones. Limits on memory, file size and CPU time apply to every process; the
number of processes is capped by a ``pids`` cgroup where the grader may create one (as root), else by
``RLIMIT_NPROC``, so a fork bomb stops. At the time limit everything is killed: bwrap, its PID namespace with every
process inside, and whatever is left in the cgroup.

``probe()`` tries a real sandbox once and says why when it cannot have one (bwrap missing, user namespaces
refused, ...). Without a sandbox the command still runs with the same limits, in its own process group, but it can
read and write whatever the grader's user can: ``grading`` then says so loudly on the console and in the report.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

TMP_BYTES = 256 * 1024 * 1024  # the sandbox's private /tmp
MEMORY_BYTES = 3 * 1024 * 1024 * 1024  # address space of each process (torch alone reserves about 0.8 GB)
FILE_BYTES = 64 * 1024 * 1024  # largest file a submission may write
PROCESSES = 96  # processes and threads one sandbox may run at once
OUTPUT_BYTES = 64 * 1024 * 1024  # the most the grader reads from the sandbox's stdout
SANDBOX_UID = 65534  # the sandbox's user inside its namespace (nobody); it has no capability at all

ISOLATION = [
    "--unshare-all",
    "--unshare-user",
    "--cap-drop",
    "ALL",
    "--uid",
    str(SANDBOX_UID),
    "--gid",
    str(SANDBOX_UID),
]


@dataclass
class SandboxStatus:
    available: bool
    reason: str  # why not, or what it is
    process_limit: str = ""


_STATUS: SandboxStatus | None = None


def _bwrap() -> str | None:
    return shutil.which("bwrap")


def probe(refresh: bool = False) -> SandboxStatus:
    """Can this machine run a bubblewrap sandbox with every namespace? Tried once, then remembered."""
    global _STATUS
    if _STATUS is not None and not refresh:
        return _STATUS
    binary = _bwrap()
    limit = "a pids cgroup" if ProcessGroupLimit.supported() else "RLIMIT_NPROC" if os.geteuid() != 0 else ""
    if os.name != "posix" or binary is None:
        _STATUS = SandboxStatus(
            False, "bubblewrap (bwrap) is not installed (Debian/Ubuntu: apt-get install bubblewrap)", limit
        )
        return _STATUS
    command = [binary, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", *ISOLATION,
               "--die-with-parent", "--new-session", "true"]  # fmt: skip
    try:
        run = subprocess.run(command, capture_output=True, text=True, timeout=30)
    except Exception as exc:  # pragma: no cover - depends on the machine
        _STATUS = SandboxStatus(False, f"bwrap could not start ({type(exc).__name__}: {exc})", limit)
        return _STATUS
    if run.returncode != 0:
        detail = (run.stderr or "").strip().splitlines()
        _STATUS = SandboxStatus(
            False,
            f"bwrap is installed but refused to create the namespaces ({detail[-1] if detail else run.returncode}); "
            "unprivileged user namespaces may be switched off (sysctl kernel.unprivileged_userns_clone, or "
            "AppArmor's restriction on Ubuntu 24.04: kernel.apparmor_restrict_unprivileged_userns)",
            limit,
        )
        return _STATUS
    fork = f", processes capped by {limit}" if limit else ", NO cap on the number of processes (fork bombs)"
    _STATUS = SandboxStatus(
        True,
        f"bubblewrap: read-only system, private /tmp, no network, own PID and user namespaces, no capabilities{fork}",
        limit,
    )
    return _STATUS


class ProcessGroupLimit:
    """A ``pids`` cgroup (v1 or v2) holding one sandbox: caps its processes, and lists them to kill at the end."""

    ROOTS = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))

    def __init__(self) -> None:
        self.path: Path | None = None
        for root in self.ROOTS:
            if self._usable(root):
                path = root / f"course-grade-{uuid.uuid4().hex[:12]}"
                try:
                    path.mkdir()
                    (path / "pids.max").write_text(str(PROCESSES))
                    self.path = path
                    break
                except OSError:
                    try:
                        path.rmdir()
                    except OSError:
                        pass

    @staticmethod
    def _usable(root: Path) -> bool:
        if not os.access(root, os.W_OK):
            return False
        if (root / "cgroup.controllers").exists():  # v2: the pids controller must be enabled for children
            try:
                return "pids" in (root / "cgroup.subtree_control").read_text().split()
            except OSError:
                return False
        return (root / "pids.max").exists() or root.name == "pids"

    @classmethod
    def supported(cls) -> bool:
        limit = cls()
        ok = limit.path is not None
        limit.close()
        return ok

    def enter(self) -> None:
        """Called in the child before exec: move this process (and so all it starts) into the cgroup."""
        if self.path is not None:
            (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def pids(self) -> list[int]:
        if self.path is None:
            return []
        try:
            return [int(pid) for pid in (self.path / "cgroup.procs").read_text().split()]
        except OSError:
            return []

    def close(self) -> None:
        """Kill whatever is still in the cgroup, then remove it."""
        if self.path is None:
            return
        for _ in range(50):
            pids = self.pids()
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.02)
        for _ in range(50):
            try:
                self.path.rmdir()
                break
            except OSError:
                time.sleep(0.02)
        self.path = None


def _threads_of(uid: int) -> int:
    """Processes and threads that ``uid`` runs now (RLIMIT_NPROC counts both)."""
    count = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status", "rb") as status:
                uid_line = threads = None
                for line in status:
                    if line.startswith(b"Uid:"):
                        uid_line = int(line.split()[1])
                    elif line.startswith(b"Threads:"):
                        threads = int(line.split()[1])
                if uid_line == uid:
                    count += threads or 1
        except (OSError, ValueError):
            continue
    return count


def _limits(cpu_seconds: float, group: ProcessGroupLimit | None):
    """A ``preexec_fn``: its own session, the cgroup, and resource limits."""
    nproc = (
        None
        if group is not None and group.path is not None or os.geteuid() == 0
        else _threads_of(os.geteuid()) + PROCESSES
    )

    def apply() -> None:
        import resource

        os.setsid()
        if group is not None:
            group.enter()
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
        resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_BYTES, FILE_BYTES))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        cpu = max(1, int(cpu_seconds) + 5)
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
        if nproc is not None:
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))

    return apply


def bwrap_command(command: list[str], staging: Path, hidden: list[Path], workdir: str = "/tmp/work") -> list[str]:
    """The bwrap command line that runs ``command`` with ``staging`` visible read-only at ``/tmp/in``."""
    arguments = [
        _bwrap() or "bwrap",
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--size", str(TMP_BYTES), "--tmpfs", "/tmp",
        "--size", str(16 * 1024 * 1024), "--tmpfs", "/dev/shm",
        "--dir", workdir,
        "--ro-bind", str(staging), "/tmp/in",
    ]  # fmt: skip
    needed = [
        Path(p).resolve()
        for p in (os.path.realpath(sys.executable), sys.prefix, sys.base_prefix, Path(__file__).parents[3])
    ]
    # A course (or its venv) kept under /tmp would vanish behind the private /tmp: bind it back, read-only.
    for path in sorted({path for path in needed if Path("/tmp") in path.parents and path.exists()}):
        arguments += ["--ro-bind", str(path), str(path)]
    for folder in hidden:
        folder = Path(folder).resolve()
        if folder.is_dir() and not any(path == folder or folder in path.parents for path in needed):
            arguments += ["--tmpfs", str(folder)]  # e.g. the other submissions: an empty folder in their place
    arguments += [
        *ISOLATION,  # user (no capabilities), IPC, PID, network (loopback only), UTS and cgroup namespaces
        "--hostname", "sandbox",
        "--die-with-parent",
        "--new-session",
        "--chdir", workdir,
        "--clearenv",
        "--setenv", "HOME", workdir,
        "--setenv", "TMPDIR", "/tmp",
        "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin",
        "--setenv", "LANG", "C.UTF-8",
        "--setenv", "MPLBACKEND", "Agg",
        "--setenv", "MPLCONFIGDIR", f"{workdir}/.matplotlib",
        "--setenv", "IPYTHONDIR", f"{workdir}/.ipython",
        "--setenv", "PYTHONDONTWRITEBYTECODE", "1",
        "--setenv", "OMP_NUM_THREADS", "1",
        "--setenv", "MKL_NUM_THREADS", "1",
        # the worker imports the grader's own course_lib (the same checks that judge it), not another installed copy
        "--setenv", "PYTHONPATH", str(Path(__file__).resolve().parents[3]),
        "--",
        *command,
    ]  # fmt: skip
    return arguments


@dataclass
class Outcome:
    returncode: int | None
    stdout: bytes
    stderr: str
    timed_out: bool
    too_much_output: bool
    seconds: float


def run(command: list[str], timeout: float, env: dict | None = None, cwd: Path | None = None) -> Outcome:
    """Run ``command`` (wrapped by ``bwrap_command`` when sandboxed) with the limits; kill all of it at ``timeout``."""
    started = time.monotonic()
    group = ProcessGroupLimit()
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_limits(timeout, group),
        env=env,
        cwd=cwd,
        close_fds=True,
    )
    chunks: list[bytes] = []
    errors: list[bytes] = []
    state = {"size": 0, "too_much": False}

    def read_stdout() -> None:
        while True:
            chunk = process.stdout.read(1 << 16)
            if not chunk:
                return
            if state["size"] + len(chunk) > OUTPUT_BYTES:
                state["too_much"] = True
                kill(process)
                return
            state["size"] += len(chunk)
            chunks.append(chunk)

    def read_stderr() -> None:
        kept = 0
        while True:
            chunk = process.stderr.read(1 << 14)
            if not chunk:
                return
            if kept < 1 << 16:
                errors.append(chunk[: (1 << 16) - kept])
                kept += len(chunk)

    readers = [threading.Thread(target=read_stdout, daemon=True), threading.Thread(target=read_stderr, daemon=True)]
    for reader in readers:
        reader.start()
    timed_out = False
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill(process)
        process.wait()
    kill(process)  # the process group, in case something inside outlived its parent
    group.close()  # and everything left in the cgroup
    for reader in readers:
        reader.join(timeout=5)
    return Outcome(
        process.returncode,
        b"".join(chunks),
        b"".join(errors).decode("utf-8", "replace"),
        timed_out,
        state["too_much"],
        round(time.monotonic() - started, 2),
    )


def kill(process: subprocess.Popen) -> None:
    """SIGKILL the process's group (it leads its own session); bwrap's PID namespace dies with it."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        process.kill()
    except ProcessLookupError:
        pass
