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
#: As root, a user namespace would map the sandbox's uid back to root on the host (a 0600 root file opens). So root
#: runs bwrap without one (IPC, PID, network, UTS and cgroup namespaces only) and the command inside starts by
#: becoming nobody for real: ``setpriv`` drops every uid, gid, group and capability before Python starts.
ROOT_ISOLATION = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]


def isolation() -> list[str]:
    return ROOT_ISOLATION if os.geteuid() == 0 else ISOLATION


def as_nobody(command: list[str]) -> list[str]:
    """``command`` run as nobody (uid and gid 65534, no groups, no capabilities) when the grader is root."""
    if os.geteuid() != 0:
        return command
    drop = [shutil.which("setpriv") or "/usr/bin/setpriv", f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_UID}",
            "--clear-groups", "--bounding-set=-all", "--inh-caps=-all", "--"]  # fmt: skip
    return drop + command


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
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        _STATUS = SandboxStatus(False, "the grader runs as root and setpriv (util-linux) is missing: the sandbox could "
                                "not drop to nobody", limit)  # fmt: skip
        return _STATUS
    command = [binary, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", *isolation(),
               "--die-with-parent", "--new-session", *as_nobody(["true"])]  # fmt: skip
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
        "/tmp and /run, no network, own PID namespace, "
        + (
            "run as nobody (uid 65534, no user namespace that maps back to root)"
            if os.geteuid() == 0
            else "own user namespace"
        )
        + f", no capabilities{fork}{memory}",
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


def _limits(cpu_seconds: float, group: ProcessGroupLimit | None, user: tuple[int, int] | None = None):
    """A ``preexec_fn``: its own session, the cgroup, resource limits, and (``user``) another uid and gid."""
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
        if user is not None:  # root grades as nobody: the sandbox's user namespace then maps to nobody, not root
            os.setgroups([])
            os.setgid(user[1])
            os.setuid(user[0])

    return apply


def visible_paths(course_root: Path | None = None) -> list[Path]:
    """What the sandbox shows besides the system: Python, its installed packages and the course package's copy.

    Never the checkout that holds the course package (its ``.git``, its solutions, its tests), nor the package
    itself: ``course_root`` is the folder holding the copy made for the exercise (``course_copy``).
    """
    course = Path(__file__).resolve().parents[2]  # course_lib/
    checkout = course.parent
    found = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), Path(os.path.realpath(sys.executable)).parent}
    for entry in sys.path:  # site-packages folders outside the prefixes (a user site, a distribution's dist-packages)
        path = Path(entry).resolve() if entry else None
        if path is not None and path.is_dir() and path.name in ("site-packages", "dist-packages"):
            found.add(path)
    found = {path for path in found if path.exists() and path != checkout and path not in checkout.parents}
    found = {path for path in found if path != course and course not in path.parents}
    if course_root is not None:
        found.add(Path(course_root).resolve())
    return sorted(found)


def bwrap_command(
    command: list[str], staging: Path, hidden: list[Path], workdir: str = "/tmp/work", course_root: Path | None = None
) -> list[str]:
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
        arguments += ["--perms", "1777", "--size", str(size), "--tmpfs", folder]
    arguments += ["--perms", "0777", "--dir", workdir, "--ro-bind", str(staging), "/tmp/in"]
    needed = visible_paths(course_root)
    for path in needed:  # after the private folders, so a venv kept under /tmp is not hidden by them
        arguments += ["--ro-bind", str(path), str(path)]
    for folder in hidden:
        folder = Path(folder).resolve()
        if folder.is_dir() and any(path == folder or path in folder.parents for path in needed):
            arguments += ["--tmpfs", str(folder)]  # e.g. the solutions inside a shown folder: an empty one instead
    bound = [*needed, Path("/tmp/in"), *(Path(p) for p in SYSTEM_PATHS)]  # read-only binds: not bwrap's folders
    parents = {parent for path in bound for parent in Path(path).parents} - {Path("/"), *map(Path, PRIVATE_FOLDERS)}
    parents = sorted(p for p in parents if not any(p == b or b in p.parents for b in bound))
    for parent in parents:  # the folders bwrap made to hold the binds copy the host's modes (/root is 0700)
        arguments += ["--chmod", "0755", str(parent)]
    arguments += ["--remount-ro", "/"]  # the sandbox's root: nothing may be written outside its sized folders
    arguments += [
        *isolation(),  # IPC, PID, network (loopback only), UTS, cgroup and (not as root) user namespaces
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
        # the notebook imports the copy of course_lib made for its exercise, without what the exercise grades
        "--setenv", "PYTHONPATH", str(Path(course_root).resolve()) if course_root else "",
        "--",
        *as_nobody(command),
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


# --------------------------------------------------------------------------- a conversation with a sandboxed process


class Session:
    """A sandboxed process the grader talks to: ``wire`` frames on its stdin and stdout.

    ``receive`` and ``ask`` wait at most the seconds given; a process that writes anything but frames, more than
    ``OUTPUT_BYTES`` in all, or a reply to another request, has lost the conversation (``SessionLost``). ``close``
    kills it, with everything it started. The whole session ends at ``deadline`` seconds after it started.
    """

    def __init__(self, command: list[str], deadline: float, env: dict | None = None, cwd: Path | None = None,
                 user: tuple[int, int] | None = None):  # fmt: skip
        import queue

        self.started = time.monotonic()
        self.deadline = self.started + deadline
        self.group = ProcessGroupLimit()
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            preexec_fn=_limits(deadline, self.group, user),
            env=env,
            cwd=cwd,
            close_fds=True,
        )
        self.frames: queue.Queue = queue.Queue()
        self.read_bytes = 0
        self.too_much_output = False
        self.timed_out = False
        self.lost: str | None = None
        self.requests = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        from course_lib.tools.grading import wire

        def read(size: int) -> bytes:
            if self.read_bytes + size > OUTPUT_BYTES:
                self.too_much_output = True
                raise wire.WireError(f"the notebook wrote more than {OUTPUT_BYTES // (1024 * 1024)} MB to the grader")
            data = self.process.stdout.read(size)
            self.read_bytes += len(data)
            return data

        try:
            while True:
                frame = wire.read_frame(read)
                if frame is None:
                    self.frames.put(("end", "the notebook's process ended (os._exit, a crash, or out of memory)"))
                    return
                self.frames.put(("frame", frame))
        except Exception as exc:
            self.frames.put(("end", f"it wrote something else than the grader's frames ({exc})"))

    def receive(self, seconds: float) -> dict:
        """The next frame; ``SessionLost`` if there is none within ``seconds`` (then the process is killed)."""
        import queue

        from course_lib.tools.grading.remote import NoAnswer, SessionLost

        if self.lost:
            raise SessionLost(self.lost)
        wait = min(seconds, self.deadline - time.monotonic())
        try:
            kind, item = self.frames.get(timeout=max(wait, 0.0))
        except queue.Empty:
            self.timed_out = wait < seconds
            self.lost = f"no answer within {max(wait, 0):.3g} s: it was stopped"
            self.close()
            raise NoAnswer(self.lost) from None
        if kind == "end":
            self.lost = str(item)
            self.close()
            raise SessionLost(self.lost)
        return item

    def ask(self, request: dict, seconds: float) -> dict:
        """Send ``request`` and return the reply to it (given ``seconds`` for the call, plus a margin)."""
        from course_lib.tools.grading import wire
        from course_lib.tools.grading.remote import SessionLost

        if self.lost:
            raise SessionLost(self.lost)
        self.requests += 1
        request = {**request, "id": self.requests}
        try:
            self.process.stdin.write(wire.pack(request))
            self.process.stdin.flush()
        except (OSError, ValueError):
            self.lost = "the notebook's process stopped reading the grader's requests"
            self.close()
            raise SessionLost(self.lost) from None
        reply = self.receive(seconds * 1.5 + 2.0)
        if reply.get("id") != self.requests:
            self.lost = "it answered another request than the grader's"
            self.close()
            raise SessionLost(self.lost)
        return reply

    @property
    def seconds(self) -> float:
        return round(time.monotonic() - self.started, 2)

    def close(self) -> None:
        try:
            self.process.stdin.close()
        except Exception:
            pass
        kill(self.process)
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL does not wait
            pass
        self.group.close()


# --------------------------------------------------------------------------- the course package a sandbox sees

#: What ``course_lib.checks`` is inside a sandbox: every ``check_*`` says the grader checks it; ``short_training``
#: (exercise 05's experiment runs it) and ``seeded_lm`` (exercise 08's demonstration) are given; nothing else is there.
CHECKS_STUB = '''"""The checks are not here: while a notebook is graded, the grader calls its functions and judges them outside."""

import functools
import math

import torch
import torch.nn.functional as F


def _checked_by_the_grader(name):
    def check(*args, **kwargs):
        print(f"{name}: checked by the grader, outside this notebook")

    check.__name__ = name
    return check


def compare_with_prediction(*args, **kwargs):
    print("compare_with_prediction: measured by the grader, outside this notebook")


{short_training}


def seeded_lm(seed: int = 730):
    from course_lib.decoder import DecoderLM
    from course_lib._standins import CachedLM

    torch.manual_seed(seed)
    model = DecoderLM(11, 8, num_heads=1, n_blocks=1, d_ff=16, max_len=128)
    with torch.no_grad():
        model.embed.weight.normal_(0.0, 1.0)
        model.positions.weight.normal_(0.0, 1.0)
    return CachedLM(model.eval().requires_grad_(False))


def __getattr__(name):
    if name.startswith("check_"):
        return _checked_by_the_grader(name)
    if name.startswith("__"):
        raise AttributeError(name)
    raise ImportError(
        f"course_lib.checks.{{name}} is not available while the notebook is graded (the grader judges it outside)"
    )
'''
SUBMODULE_STUB = (
    "from course_lib.checks import *  # noqa: F403\nfrom course_lib.checks import __getattr__  # noqa: F401\n"
)


#: ``course_lib/_graded.py`` in a sandbox's copy: where a withheld function that has the name of a graded one sends
#: its calls (the learner's own version of it, from the notebook's namespace), so a notebook that uses
#: ``course_lib.attention.softmax`` inside its own ``attention`` runs on its own ``softmax``, while a ``softmax`` that
#: hands its work to course_lib's meets itself and gets the withheld message. Never an implementation of course_lib's.
GRADED_MODULE = '''"""While a notebook is graded, course_lib's version of a function the exercise grades is the learner's own."""

import inspect

NAMESPACE: dict = {}  # the notebook's namespace (``serve`` sets it before the cells run)
_ACTIVE: set = set()


def forward(name, message, stub, given):
    """Call the learner's ``name`` with the arguments ``stub`` was called with (``given``: its locals)."""
    function = NAMESPACE.get(name)
    if name in _ACTIVE or function is None or function is stub or not callable(function):
        raise RuntimeError(message)
    parameters = list(inspect.signature(stub).parameters.values())
    args = [given[p.name] for p in parameters]
    while args and parameters[len(args) - 1].default is not inspect.Parameter.empty:
        try:
            inspect.signature(function).bind(*args)
            break
        except TypeError:  # e.g. the learner's softmax(scores) for course_lib's softmax(scores, dim=-1)
            last = parameters[len(args) - 1]
            if not (args[-1] is last.default or args[-1] == last.default):
                raise RuntimeError(message) from None
            args.pop()
        except ValueError:
            break
    _ACTIVE.add(name)
    try:
        return function(*args)
    finally:
        _ACTIVE.discard(name)
'''


def _withheld_body(node, dotted: str, exercise: str, forward: bool = False):
    import ast

    means = "lists, dicts and bytes" if dotted.startswith("course_lib.tokenizer:") else "torch operations"
    message = (
        f"{dotted.replace(':', '.')} is not available while your notebook is graded: {exercise} "
        f"grades your own version of it, so write it with {means}"
    )
    if forward:  # the learner's own function of that name answers (``GRADED_MODULE``)
        name = node.name
        node.body = ast.parse(
            f"import course_lib._graded as _graded\nreturn _graded.forward({name!r}, {message!r}, {name}, locals())"
        ).body
        node.decorator_list = []
        return node
    node.body = [ast.Raise(exc=ast.Call(ast.Name("RuntimeError", ast.Load()), [ast.Constant(message)], []), cause=None)]
    return node


def _withhold(path: Path, names: list[str], exercise: str, forwarded: set[str] = frozenset()) -> None:
    """Rewrite the module at ``path`` so that each ``module:qualified.name`` in ``names`` raises when called (or, for
    a top-level function named in ``forwarded``, calls the learner's function of that name)."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    for dotted in names:
        parts = dotted.split(":", 1)[1].split(".")
        scope, node = tree.body, None
        for part in parts:
            node = next(
                (
                    n
                    for n in scope
                    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == part
                ),
                None,
            )
            if node is None:
                raise RuntimeError(f"{dotted} is not in {path}: the exercise's withheld list is out of date")
            scope = node.body
        _withheld_body(node, dotted, exercise, forward=len(parts) == 1 and parts[0] in forwarded)
    path.write_text(ast.unparse(ast.fix_missing_locations(tree)) + "\n", encoding="utf-8")


def course_copy(exercise: str, into: Path) -> Path:
    """A copy of the course package for ``exercise``'s sandbox, in ``into``: without the checks (a stub that says the
    grader checks), without the tools (but the two modules that serve the grader), and with every implementation the
    exercise grades (``Exercise.withheld``) replaced by a function that raises, or, where it has the name of a function
    the exercise grades, that calls the learner's own (``GRADED_MODULE``). Returns the folder to put on the path."""
    import inspect

    from course_lib.checks import EXERCISES, experiment

    source = Path(__file__).resolve().parents[2]
    root = Path(into)
    target = root / "course_lib"
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "checks", "tools", "*.ipynb")
    shutil.copytree(source, target, ignore=skip)
    (target / "tools" / "grading").mkdir(parents=True)
    (target / "tools" / "__init__.py").write_text("")
    (target / "tools" / "grading" / "__init__.py").write_text("")
    for name in ("serve.py", "wire.py"):
        shutil.copyfile(source / "tools" / "grading" / name, target / "tools" / "grading" / name)
    (target / "checks").mkdir()
    training = "\n\n".join(inspect.getsource(f) for f in (experiment._train, experiment.short_training))
    (target / "checks" / "__init__.py").write_text(CHECKS_STUB.replace("{short_training}", training))
    for module in ("attention", "encoder", "experiment", "induction", "language_model", "modern", "multihead",
                   "normalization", "positions", "rnn", "tokenizer"):  # fmt: skip
        (target / "checks" / f"{module}.py").write_text(SUBMODULE_STUB)
    by_module: dict[str, list[str]] = {}
    for dotted in EXERCISES[exercise].withheld:
        by_module.setdefault(dotted.split(":")[0], []).append(dotted)
    graded = {spec.function for spec in EXERCISES[exercise].specs}
    for module, names in by_module.items():
        path = root / (module.replace(".", "/") + ".py")
        _withhold(path, names, exercise, graded)
    (target / "_graded.py").write_text(GRADED_MODULE)
    for folder, _dirs, files in os.walk(root):  # readable by the sandbox's user, whoever that is
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(Path(folder) / name, 0o644)
    return root
