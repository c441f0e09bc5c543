"""Run one untrusted command in a sandbox: bubblewrap (``bwrap``) where the machine allows it.

The sandbox (``bwrap_command``) shows only what a run needs: the system's programs and libraries (``/usr``, ``/etc``
and the links into ``/usr``), Python and its installed packages, and the course package itself, all read-only, plus
the staged notebook at ``/tmp/in``. It does not show the home folders, other checkouts, the course's ``.git`` or its
solutions, ``/var``, or any of the host's sockets: ``/tmp``, ``/var/tmp``, ``/run`` and ``/dev/shm`` are its own
small private folders, and the staging folder of another submission is invisible wherever ``TMPDIR`` puts it. It
has no network (its own network namespace with only loopback), its own user (without any capability), PID, IPC and
UTS namespaces, and dies with the grader.

Limits on memory, file size and CPU time apply to every process. Where the grader may create cgroups (as root), a
``pids`` cgroup caps the number of processes and a ``memory`` cgroup caps the memory of the submission as a whole
(``SUBMISSION_MEMORY_BYTES``); elsewhere ``RLIMIT_NPROC`` caps the processes and only the per-process address-space
limit bounds memory (``probe()`` says which). At the time limit everything is killed: bwrap, its PID namespace with
every process inside, and whatever is left in the cgroups.

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
SUBMISSION_MEMORY_BYTES = 2 * 1024 * 1024 * 1024  # resident memory of all of a submission's processes together
FILE_BYTES = 64 * 1024 * 1024  # largest file a submission may write
PROCESSES = 96  # processes and threads one sandbox may run at once
OUTPUT_BYTES = 64 * 1024 * 1024  # the most the grader reads from the sandbox's stdout
SANDBOX_UID = 65534  # the sandbox's user inside its namespace (nobody); it has no capability at all
# the system's programs and libraries, shown read-only (a link such as /bin -> usr/bin is recreated as a link)
SYSTEM_PATHS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
PRIVATE_FOLDERS = ("/tmp", "/var/tmp", "/run", "/dev/shm")  # each an empty, size-limited folder of the sandbox's own

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
    supported = ProcessGroupLimit.supported()
    limit = "a pids cgroup" if supported.pids else "RLIMIT_NPROC" if os.geteuid() != 0 else ""
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
    memory = (
        f", memory capped at {SUBMISSION_MEMORY_BYTES / 2**30:g} GB per submission by a memory cgroup"
        if supported.memory
        else f", memory capped only per process ({MEMORY_BYTES / 2**30:g} GB of address space each), not per submission"
    )
    _STATUS = SandboxStatus(
        True,
        "bubblewrap: only the system, Python and the course package (read-only) and the notebook visible, private "
        f"/tmp and /run, no network, own PID and user namespaces, no capabilities{fork}{memory}",
        limit,
    )
    return _STATUS


@dataclass(frozen=True)
class CgroupSupport:
    pids: bool
    memory: bool


class ProcessGroupLimit:
    """The cgroups (v1 or v2) holding one sandbox: ``pids`` caps its processes and lists them to kill at the end;
    ``memory`` caps the memory of all of them together. Either is left out where the grader may not create it."""

    ROOTS = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))
    MEMORY_ROOTS = (Path("/sys/fs/cgroup/memory"), Path("/sys/fs/cgroup"))

    def __init__(self) -> None:
        name = f"course-grade-{os.getpid()}-{uuid.uuid4().hex[:12]}"  # the grader's pid: whose cgroup it is
        self.path = self._create(self.ROOTS, "pids", name, {"pids.max": str(PROCESSES)})
        memory_limits = {  # v2 names, then v1 names; the swap limit is optional (swap accounting may be off)
            "memory.max": str(SUBMISSION_MEMORY_BYTES),
            "memory.limit_in_bytes": str(SUBMISSION_MEMORY_BYTES),
        }
        if self.path is not None and self.path.parent == Path("/sys/fs/cgroup"):  # v2: one cgroup holds both
            self.memory_path = self.path if self._write_limits(self.path, memory_limits) else None
        else:
            self.memory_path = self._create(self.MEMORY_ROOTS, "memory", name, memory_limits)
        for path in {self.memory_path} - {None}:
            for swap in ("memory.swap.max", "memory.memsw.limit_in_bytes"):
                try:
                    (path / swap).write_text(str(0 if swap.endswith("max") else SUBMISSION_MEMORY_BYTES))
                except OSError:
                    pass

    @staticmethod
    def _write_limits(path: Path, limits: dict[str, str]) -> bool:
        """Write the first of ``limits``' files that the cgroup has; True if one was written."""
        for file, value in limits.items():
            if (path / file).exists():
                try:
                    (path / file).write_text(value)
                    return True
                except OSError:
                    return False
        return False

    @classmethod
    def _create(cls, roots: tuple[Path, ...], controller: str, name: str, limits: dict[str, str]) -> Path | None:
        for root in roots:
            if cls._usable(root, controller):
                path = root / name
                try:
                    path.mkdir()
                except OSError:
                    continue
                if cls._write_limits(path, limits):
                    return path
                try:
                    path.rmdir()
                except OSError:
                    pass
        return None

    @staticmethod
    def _usable(root: Path, controller: str = "pids") -> bool:
        if not os.access(root, os.W_OK):
            return False
        if (root / "cgroup.controllers").exists():  # v2: the controller must be enabled for children
            try:
                return controller in (root / "cgroup.subtree_control").read_text().split()
            except OSError:
                return False
        return root.name == controller

    @classmethod
    def supported(cls) -> CgroupSupport:
        limit = cls()
        found = CgroupSupport(limit.path is not None, limit.memory_path is not None)
        limit.close()
        return found

    def enter(self) -> None:
        """Called in the child before exec: move this process (and so all it starts) into the cgroups."""
        for path in dict.fromkeys((self.path, self.memory_path)):
            if path is not None:
                (path / "cgroup.procs").write_text(str(os.getpid()))

    def pids(self) -> list[int]:
        found: set[int] = set()
        for path in (self.path, self.memory_path):
            if path is None:
                continue
            try:
                found.update(int(pid) for pid in (path / "cgroup.procs").read_text().split())
            except OSError:
                pass
        return sorted(found)

    def close(self) -> None:
        """Kill whatever is still in the cgroups, then remove them."""
        if self.path is None and self.memory_path is None:
            return
        for _ in range(250):  # up to 5 s: on a busy machine a killed process can take a while to leave the cgroup
            pids = self.pids()
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.02)
        for path in dict.fromkeys((self.path, self.memory_path)):
            if path is None:
                continue
            for _ in range(250):
                try:
                    path.rmdir()
                    break
                except OSError:
                    time.sleep(0.02)
        self.path = self.memory_path = None


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


def visible_paths() -> list[Path]:
    """What the sandbox shows besides the system: Python, its installed packages and the course package.

    Never the checkout that holds the course package (its ``.git``, its solutions, its tests): only the package
    folder itself is shown, at its own path, so an installed (or editable) course imports as it does outside.
    """
    course = Path(__file__).resolve().parents[2]  # course_lib/
    checkout = course.parent
    found = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), Path(os.path.realpath(sys.executable)).parent}
    for entry in sys.path:  # site-packages folders outside the prefixes (a user site, a distribution's dist-packages)
        path = Path(entry).resolve() if entry else None
        if path is not None and path.is_dir() and path.name in ("site-packages", "dist-packages"):
            found.add(path)
    found = {path for path in found if path.exists() and path != checkout and path not in checkout.parents}
    found.add(course)
    return sorted(found)


def bwrap_command(command: list[str], staging: Path, hidden: list[Path], workdir: str = "/tmp/work") -> list[str]:
    """The bwrap command line that runs ``command`` with ``staging`` visible read-only at ``/tmp/in``."""
    arguments = [_bwrap() or "bwrap"]
    for system in SYSTEM_PATHS:
        path = Path(system)
        if path.is_symlink():
            arguments += ["--symlink", os.readlink(path), system]
        elif path.is_dir():
            arguments += ["--ro-bind", system, system]
    arguments += ["--dev", "/dev", "--proc", "/proc"]
    # the CPU's description (PyTorch reads it to choose its kernels); nothing else of /sys
    arguments += ["--ro-bind-try", "/sys/devices/system/cpu", "/sys/devices/system/cpu"]
    for folder in PRIVATE_FOLDERS:
        size = TMP_BYTES if folder == "/tmp" else 16 * 1024 * 1024
        arguments += ["--size", str(size), "--tmpfs", folder]
    arguments += ["--dir", workdir, "--ro-bind", str(staging), "/tmp/in"]
    needed = visible_paths()
    for path in needed:  # after the private folders, so a venv kept under /tmp is not hidden by them
        arguments += ["--ro-bind", str(path), str(path)]
    for folder in hidden:
        folder = Path(folder).resolve()
        if folder.is_dir() and any(path == folder or path in folder.parents for path in needed):
            arguments += ["--tmpfs", str(folder)]  # e.g. the solutions inside a shown folder: an empty one instead
    arguments += ["--remount-ro", "/"]  # the sandbox's root: nothing may be written outside its sized folders
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
