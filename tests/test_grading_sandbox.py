"""Grading a teacher can trust: the verdict cannot be forged and a submission cannot get out of its sandbox.

The acceptance fuzz test grades, in one run, generated wrong solutions (catalogued mistakes and near misses put
into the solution notebooks) and hostile notebooks (a monkeypatch of the checks, a forged marker and forged
results, file escapes, a fork bomb, endless loops, huge output, a process left behind) and asserts: no false
pass, no forged grade, no file outside the sandbox touched, no process left, no traceback from course_lib.

Every run is bounded: the grader kills a sandbox at its time limit; each subprocess here has a timeout too.
"""

from __future__ import annotations

import csv
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest
from optional_tools import require_sandbox

from course_lib.checks import EXERCISES, SPECS
from course_lib.tools import cli
from course_lib.tools.exercises import build as generate
from course_lib.tools.grading import grade as grading
from course_lib.tools.grading import sandbox

ROOT = Path(__file__).resolve().parents[1]
EXERCISES_DIR = ROOT / "exercises"

# Without bubblewrap: skipped with the install hint on a learner's machine, a failure in CI (tests/optional_tools.py).
require_sandbox(module_level=True)


def notebook_with(base: Path, *cells: str) -> str:
    """The notebook ``base`` with ``cells`` appended, as JSON text."""
    notebook = nbformat.read(base, as_version=4)
    for source in cells:
        notebook.cells.append(nbformat.v4.new_code_cell(source))
    return nbformat.writes(notebook)


def solution(name: str) -> Path:
    return generate.solution_path(EXERCISES_DIR, name)


def stubs(name: str) -> Path:
    return generate.learner_path(EXERCISES_DIR, name)


def _command_lines() -> dict[int, tuple[int, str]]:
    """pid → (parent pid, command line) of every process this user can see."""
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            command = Path(f"/proc/{entry.name}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            parent = int(Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        table[int(entry.name)] = (parent, command)
    return table


def sandbox_processes(own: str) -> list[str]:
    """Command lines of processes of a grading sandbox (the worker or what it started) that this test started.

    A process is this test's when its command line, or an ancestor's, names ``own`` (a folder of this test that the
    sandbox's command binds, or a token in its code). Inside a sandbox's PID namespace every process descends from
    its bubblewrap, so one left behind is still found; graders that other programs run on the machine are not.
    """
    table, found = _command_lines(), []
    for pid, (parent, command) in table.items():
        if pid == os.getpid() or not ("grading.serve" in command or "course-sandbox-marker" in command):
            continue
        chain, seen = [command], {pid}
        while parent in table and parent not in seen and parent > 1:
            seen.add(parent)
            parent, ancestor = table[parent]
            chain.append(ancestor)
        if any(own in line for line in chain):
            found.append(command)
    return found


def leftover_cgroups() -> list[str]:
    """The sandbox cgroups this process's graders created (named after the grader's pid) that still exist."""
    return [
        str(path)
        for root in {*sandbox.ProcessGroupLimit.ROOTS, *sandbox.ProcessGroupLimit.MEMORY_ROOTS}
        if root.is_dir()
        for path in root.glob(f"course-grade-{os.getpid()}-*")
    ]


# ---------------------------------------------------------------------------------------------- the sandbox itself


def run_in_sandbox(code: str, tmp_path: Path, hidden: list[Path] = ()) -> sandbox.Outcome:
    staging = tmp_path / "staging"
    staging.mkdir(exist_ok=True)
    copy = tmp_path / "course-copy"
    root = copy if copy.exists() else sandbox.course_copy("ex02_attention", copy)
    command = sandbox.bwrap_command([sys.executable, "-c", code], staging, list(hidden), course_root=root)
    return sandbox.run(command, timeout=60)


@pytest.fixture
def outside_tmp():
    """A folder outside /tmp (the sandbox's /tmp is its own, so a file in the host's /tmp proves nothing)."""
    import tempfile

    folder = Path(
        tempfile.mkdtemp(prefix="course-outside-", dir="/var/tmp" if os.path.isdir("/var/tmp") else str(ROOT))
    )
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_the_sandbox_has_a_read_only_system_a_private_tmp_no_network_and_hidden_folders(tmp_path, outside_tmp):
    secret = tmp_path / "submissions" / "bob"
    secret.mkdir(parents=True)
    (secret / "ex02.ipynb").write_text("bob's work")
    outside = outside_tmp / "outside.txt"
    outside.write_text("keep")
    code = f"""
import os, socket, json
report = {{}}
for target in ({str(outside)!r}, {str(ROOT / "escape.txt")!r}, os.path.expanduser('~root') + '/escape.txt'):
    try:
        open(target, 'a').write('x'); report[target] = 'written'
    except OSError as exc:
        report[target] = type(exc).__name__
try:
    os.remove({str(outside)!r}); report['delete'] = 'deleted'
except OSError as exc:
    report['delete'] = type(exc).__name__
open('/tmp/course-private-{os.getpid()}.txt', 'w').write('mine'); report['tmp'] = os.listdir('/tmp')
try:
    socket.create_connection(('1.1.1.1', 53), timeout=3); report['net'] = 'connected'
except OSError as exc:
    report['net'] = type(exc).__name__
try:
    report['hidden'] = os.listdir({str(tmp_path / "submissions")!r})
except OSError as exc:
    report['hidden'] = type(exc).__name__
report['pid'] = os.getpid()
report['uid'] = os.getuid()
report['caps'] = [l for l in open('/proc/self/status') if l.startswith('CapEff')][0].split()[1]
print(json.dumps(report))
"""
    outcome = run_in_sandbox(code, tmp_path, hidden=[tmp_path / "submissions"])
    report = json.loads(outcome.stdout.decode())
    # a checkout kept under /tmp (a fresh clone in CI) shows as a folder of the sandbox's own private /tmp: a write
    # there stays inside the sandbox; everywhere else nothing can be written, and no host file changes
    outside_private_tmp = [key for key in report if key.startswith("/") and not key.startswith("/tmp/")]
    assert all(report[key] != "written" for key in outside_private_tmp), report
    assert not Path(os.path.expanduser("~root"), "escape.txt").exists()
    assert report["delete"] != "deleted" and outside.read_text() == "keep"
    assert not (ROOT / "escape.txt").exists()
    assert (
        f"course-private-{os.getpid()}.txt" in report["tmp"]
        and not Path(f"/tmp/course-private-{os.getpid()}.txt").exists()
    )
    assert report["net"] != "connected", "the sandbox must have no network"
    assert report["hidden"] in ([], "FileNotFoundError"), "the other submissions are not shown"
    assert report["pid"] < 10, "the sandbox has its own PID namespace"
    assert report["uid"] == sandbox.SANDBOX_UID and int(report["caps"], 16) == 0, "no capabilities inside"


def test_the_sandbox_shows_no_home_no_checkout_no_solutions_no_other_staging_and_no_host_socket(tmp_path, outside_tmp):
    """What a notebook could read outside its run: a 0600 file of the grader's user in its home, the course's .git
    and solutions, another submission being staged under a TMPDIR outside /tmp, and a unix socket of the grader's user
    listening on the host. The sandbox shows none of them, and the course package it needs still imports."""
    import socket
    import threading

    secret = Path(tempfile.mkdtemp(prefix=".course-secret-", dir=Path.home())) / "token"
    secret.write_text("grader's secret")
    secret.chmod(0o600)
    other_staging = outside_tmp / "course-grade-other" / "notebook.ipynb"
    other_staging.parent.mkdir()
    other_staging.write_text("another learner's notebook")
    socket_path = outside_tmp / "grader.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(socket_path))
    server.listen(1)
    served = []

    def answer() -> None:
        server.settimeout(20)
        try:
            connection, _ = server.accept()
            connection.sendall(b"host secret")
            served.append(True)
            connection.close()
        except OSError:
            pass

    listener = threading.Thread(target=answer, daemon=True)
    listener.start()
    targets = {
        "home secret": str(secret),
        "git": str(ROOT / ".git" / "HEAD") if (ROOT / ".git").exists() else str(ROOT / "pyproject.toml"),
        "solutions": str(solution("ex02_attention")),
        "other staging": str(other_staging),
        "tests": str(ROOT / "tests" / "conftest.py"),
    }
    code = f"""
import json, socket
report = {{}}
for name, path in {targets!r}.items():
    try:
        report[name] = open(path).read()[:20]
    except OSError as exc:
        report[name] = type(exc).__name__
client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
client.settimeout(3)
try:
    client.connect({str(socket_path)!r}); report['socket'] = client.recv(64).decode()
except OSError as exc:
    report['socket'] = type(exc).__name__
import course_lib.checks, torch
report['course'] = 'imports'
print(json.dumps(report))
"""
    try:
        outcome = run_in_sandbox(code, tmp_path)
    finally:
        server.close()
        shutil.rmtree(secret.parent, ignore_errors=True)
    listener.join(timeout=5)
    report = json.loads(outcome.stdout.decode() or "{}")
    assert report.get("course") == "imports", outcome.stderr[-2000:]
    for name in targets:
        assert report[name] in ("FileNotFoundError", "PermissionError"), (name, report[name])
    assert report["socket"] in ("FileNotFoundError", "ConnectionRefusedError") and not served, report["socket"]


def test_the_memory_of_a_submission_as_a_whole_is_capped(tmp_path):
    """Three processes of 0.9 GB each stay under the per-process limit (3 GB of address space) but not under the
    submission's 2 GB: the memory cgroup stops them. Where the grader cannot create one, probe() says so instead."""
    if not sandbox.ProcessGroupLimit.supported().memory:
        assert "not per submission" in sandbox.probe(refresh=True).reason
        pytest.skip("this machine lets the grader create no memory cgroup (probe() says so in every report)")
    assert "memory capped at 2 GB per submission" in sandbox.probe(refresh=True).reason
    each = int(0.9 * 2**30)
    assert each < sandbox.MEMORY_BYTES and 3 * each > sandbox.SUBMISSION_MEMORY_BYTES
    code = f"""
import subprocess, sys
hog = "import time; block = bytearray(b'x') * {each}; time.sleep(4); print('held')"
children = [subprocess.Popen([sys.executable, '-c', hog], stdout=subprocess.PIPE) for _ in range(3)]
print(sum(child.communicate()[0].strip() == b'held' for child in children))
"""
    outcome = run_in_sandbox(code, tmp_path)
    held = outcome.stdout.decode().strip()
    assert held != "3", "three 0.9 GB processes must not all fit in one submission's 2 GB"


def test_a_fork_bomb_is_capped_and_nothing_survives_the_kill(tmp_path):
    code = """
import os, time
children = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(600)  # course-sandbox-marker
            os._exit(0)
        children += 1
except OSError:
    pass
print(children, flush=True)
time.sleep(600)
"""
    started = time.monotonic()
    staging = tmp_path / "staging"
    staging.mkdir()
    command = sandbox.bwrap_command([sys.executable, "-c", code], staging, [])
    outcome = sandbox.run(command, timeout=8)
    assert outcome.timed_out and time.monotonic() - started < 30
    children = int(outcome.stdout.decode().split()[0])
    assert 10 < children <= sandbox.PROCESSES, f"the fork bomb made {children} processes"
    time.sleep(0.5)
    assert not sandbox_processes(str(staging)) and not leftover_cgroups()


# ---------------------------------------------------------------------------------------------- judging a record


def wrong_solutions(rng: random.Random) -> dict[str, tuple[str, str, str]]:
    """name → (exercise, check that must fail, notebook JSON): a wrong learner solution from tests/adversarial (its
    module as a cell, self-contained: the checks and their catalogue are not in the sandbox) bound in a solution
    notebook, or a near miss of the solution."""
    from adversarial import all_solutions

    made = {}
    wrong = sorted((s for s in all_solutions() if not s.correct and not s.slow), key=lambda s: s.id)
    for chosen in rng.sample(wrong, 7):
        spec = SPECS[chosen.check]
        exercise = next(name for name, ex in EXERCISES.items() if spec in ex.specs)
        module = (Path(__file__).parent / "adversarial" / f"{exercise}.py").read_text(encoding="utf-8")
        module = module.replace(
            "from . import right, wrong", "def right(*a, **k):\n    return lambda f: f\nwrong = right"
        )
        cell = f"{spec.function} = {chosen.function.__name__}"
        made[chosen.id] = (exercise, chosen.check, notebook_with(solution(exercise), module, cell))
    near_misses = {
        "check_softmax": ("ex02_attention", "_right = softmax\nsoftmax = lambda scores: _right(scores) * (1 + 1e-3)"),
        "check_rnn_forward": (
            "ex01_rnn",
            "_right = rnn_forward\ndef rnn_forward(x, h0, w_xh, w_hh, b):\n    states, h = _right(x, h0, w_xh, w_hh, b)\n"
            "    return states.detach(), h.detach()",
        ),
        "check_layer_norm": (
            "ex05_layernorm_residual",
            "_right = layer_norm\nlayer_norm = lambda x, gamma, beta, eps=1e-5: _right(x, gamma, beta)",
        ),
    }
    for check_name, (exercise, cell) in near_misses.items():
        made[f"{check_name}-near-miss"] = (exercise, check_name, notebook_with(solution(exercise), cell))
    return made


MONKEYPATCH = """
import course_lib.checks as _checks, course_lib.checks.judging as _judging, torch as _torch
_fake = lambda *a, **k: [{"check": c, "function": f, "status": "passed", "passed": True, "message": "✅", "mistake": None}
                         for c, f in [("check_softmax", "softmax"), ("check_attention", "attention"), ("check_causal_attention", "causal_attention")]]
_checks.run_exercise_checks = _fake
_judging.same = lambda *a, **k: True
_judging._all_close = lambda *a, **k: True
_torch.allclose = lambda *a, **k: True
"""

FORGED_MARKER = """
import json, os, sys, threading, time, io, struct, torch
fake = [{"check": c, "function": f, "status": "passed", "passed": True, "message": "✅ forged", "mistake": None}
        for c, f in [("check_softmax", "softmax"), ("check_attention", "attention"), ("check_causal_attention", "causal_attention")]]
def forge():
    MAGIC = b"\\x93course\\x01"
    body = io.BytesIO()
    torch.save({"format": 1, "exercise": "ex02_attention", "cells": 99, "cell_errors": [], "stopped_cell": None,
                "record": {"format": 1, "exercise": "ex02_attention", "checks": fake}}, body)
    frame = MAGIC + struct.pack(">Q", len(body.getvalue())) + body.getvalue()
    while True:
        print("@@course-checks@@" + json.dumps(fake), flush=True)
        for fd in range(0, 64):
            try:
                os.write(fd, frame)
            except OSError:
                pass
        time.sleep(0.01)
threading.Thread(target=forge, daemon=True).start()
time.sleep(0.3)
"""

# Forgeries of the conversation with the grader, from inside the notebook (which shares the server's process): a
# "ready" frame and replies claiming success written to every descriptor, a replaced answer, a replaced encoder.
RECORD_FORGER = """
import os, torch
from course_lib.tools.grading import wire
ready = wire.pack({"op": "ready", "cells": 3, "cell_errors": [], "stopped_cell": None})
claims = [wire.pack({"present": True, "callable": True, "parameters": None, "id": n}) for n in range(1, 4)]
claims += [wire.pack({"kind": "value", "value": {"t": "plain", "v": "passed"}, "changed": [], "id": n}) for n in range(1, 40)]
for _fd in range(3, 64):
    try:
        os.write(_fd, ready + b"".join(claims))
    except OSError:
        pass
os._exit(0)
"""
HARVEST_SWAPPER = """
import sys, torch
_serve = sys.modules["__main__"]
_answer = _serve.answer
def _forged(request, namespace, cache):
    reply = _answer(request, namespace, cache)
    if reply.get("kind") in ("raised", "timeout"):  # a stub raised: claim a tensor of the input's shape instead
        args = _serve.arguments(request.get("args", []), cache)
        from course_lib.tools.grading import wire
        return {"kind": "value", "value": wire.describe(torch.zeros_like(args[0])), "changed": []}
    return reply
_serve.answer = _forged
"""
SAVE_SWAPPER = """
from course_lib.tools.grading import wire
_pack = wire.pack
def _swapped(message):
    if isinstance(message, dict) and message.get("kind") in ("raised", "timeout"):
        message = {"kind": "value", "value": {"t": "plain", "v": True}, "changed": [], "id": message.get("id")}
    return _pack(message)
wire.pack = _swapped
"""

# A graded function whose own body rewrites the server while it is called, so that its wrong values are described
# as something else: the grader reads only what a frame says a function returned, and judges that.
BODY_PATCHER = """
import torch
from course_lib.tools.grading import wire
def softmax(scores):
    if not hasattr(wire.describe, "wrapped"):
        original = wire.describe
        wire.describe = lambda value, depth=0: original(value.exp() / value.exp().sum(-1, keepdim=True) if isinstance(value, torch.Tensor) else value, depth)
        wire.describe.wrapped = True
    return scores * 0.5
"""

ESCAPE = """
import os, pathlib, shutil
for target in {targets!r}:
    try:
        pathlib.Path(target).write_text("escaped")
    except OSError:
        pass
for victim in {victims!r}:
    try:
        os.remove(victim)
    except OSError:
        pass
    try:
        shutil.rmtree(pathlib.Path(victim).parent)
    except OSError:
        pass
"""

FORK_BOMB = """
import os
try:
    while True:
        os.fork()
except OSError:
    pass
"""

# The sleeps' lengths are this run's own (600.xxxx s), so that the check for survivors finds only them.
LINGER = f"{600 + random.Random().randrange(1, 10_000) / 10_000:.4f}"
LEFT_BEHIND = f"""
import subprocess, os
subprocess.Popen(["sleep", "{LINGER}"], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if os.fork() == 0:
    os.setsid()
    os.execvp("sleep", ["sleep", "{LINGER}"])
"""

ENDLESS_CELL = "while True:\n    pass"
# Swallows every stop the worker raises in it, so only the kill at the grader's hard limit ends it; it waits in a sleep
# rather than spinning, which takes the same path (the timer's signal interrupts the sleep) without using a core.
STUBBORN_LOOP = "import time\nwhile True:\n    try:\n        while True:\n            time.sleep(60)\n    except BaseException:\n        pass"
ENDLESS_FUNCTION = "def softmax(scores):\n    while True:\n        pass"
HUGE_OUTPUT = (
    "print('x' * 200_000_000)\nimport os, sys\nos.write(1, b'y' * 50_000_000)\nsys.stderr.write('z' * 50_000_000)"
)
HUGE_RESULT = "import os\nfor fd in range(3, 64):\n    try:\n        os.write(fd, b'w' * 100_000_000)\n    except OSError:\n        pass"
MEMORY_BOMB = "hoard = bytearray(50 * 1024**3)"
HUGE_RETURN = "import torch\ndef softmax(scores):\n    return torch.zeros(4000, 4000)"


@pytest.fixture(scope="module")
def fuzz_run(tmp_path_factory):
    """Grade every generated wrong solution and hostile notebook in one run; keep what the tests inspect."""
    import tempfile

    base = tmp_path_factory.mktemp("fuzz")
    submissions, out = base / "submissions", base / "results"
    outside = Path(
        tempfile.mkdtemp(prefix="course-outside-", dir="/var/tmp" if os.path.isdir("/var/tmp") else str(ROOT))
    )
    submissions.mkdir()
    (outside / "keep.txt").write_text("keep")
    home = Path(os.path.expanduser("~"))
    targets = [str(outside / "new.txt"), str(home / "course-escape.txt"), str(ROOT / "course-escape.txt"),
               str(submissions / "mallory" / "written.txt"), "/tmp/course-escape.txt", str(out / "scores.md")]  # fmt: skip
    victims = [str(outside / "keep.txt"), str(submissions / "alice" / "ex02_attention.ipynb")]
    expected_fail: dict[tuple[str, str], str] = {}

    def put(learner: str, exercise: str, text: str) -> None:
        folder = submissions / learner
        folder.mkdir(exist_ok=True)
        (folder / f"{exercise}.ipynb").write_text(text, encoding="utf-8")

    for exercise in EXERCISES:  # the controls: every exercise's solution passes, graded from its definitions alone
        put("alice", exercise, notebook_with(solution(exercise)))
    for index, (_name, (exercise, check, text)) in enumerate(sorted(wrong_solutions(random.Random(13)).items())):
        put(f"wrong{index:02d}", exercise, text)
        expected_fail[(f"wrong{index:02d}", exercise)] = check
    hostile = {
        "monkeypatch": notebook_with(stubs("ex02_attention"), MONKEYPATCH),
        "forger": notebook_with(stubs("ex02_attention"), FORGED_MARKER),
        "recordforger": notebook_with(stubs("ex02_attention"), RECORD_FORGER),
        "harvestswapper": notebook_with(stubs("ex02_attention"), HARVEST_SWAPPER),
        "saveswapper": notebook_with(stubs("ex02_attention"), SAVE_SWAPPER),
        "bodypatcher": notebook_with(stubs("ex02_attention"), BODY_PATCHER),
        "escaper": notebook_with(stubs("ex02_attention"), ESCAPE.format(targets=targets, victims=victims)),
        "forkbomb": notebook_with(stubs("ex02_attention"), FORK_BOMB),
        "lingerer": notebook_with(stubs("ex02_attention"), LEFT_BEHIND),
        # the two longest (the cells' whole time; the hard limit) are named to be graded first (the grader takes
        # the learners in order of their names), so that the others are graded while they run
        "a-looper": notebook_with(stubs("ex02_attention"), ENDLESS_CELL),
        "a-stubborn": notebook_with(stubs("ex02_attention"), STUBBORN_LOOP),
        "slowfn": notebook_with(stubs("ex02_attention"), ENDLESS_FUNCTION),
        "shouter": notebook_with(stubs("ex02_attention"), HUGE_OUTPUT),
        "flooder": notebook_with(stubs("ex02_attention"), HUGE_RESULT),
        "hoarder": notebook_with(stubs("ex02_attention"), MEMORY_BOMB),
        "giant": notebook_with(stubs("ex02_attention"), HUGE_RETURN),
    }
    for learner, text in hostile.items():
        put(learner, "ex02_attention", text)
    (submissions / "mallory").mkdir()
    os.symlink("/etc/hostname", submissions / "mallory" / "ex01_rnn.ipynb")
    before = {path: path.read_bytes() for path in submissions.rglob("*") if path.is_file() and not path.is_symlink()}
    printed: list[str] = []
    started = time.monotonic()
    staging_root = base / "staging"  # the grader stages each notebook here: its sandboxes' commands name it
    staging_root.mkdir()
    saved_tempdir, tempfile.tempdir = tempfile.tempdir, str(staging_root)
    try:
        # 20 s of cells per notebook: the controls' cells must finish for a pass (ex05 trains; on a busy machine 10 s
        # ran out). (The wrong function, in the last cell, is graded whatever the cells' time: definitions come first.)
        # 3 at a time on 2 cores: a-stubborn only sleeps until the grader kills it, the other two use the cores
        report = grading.grade(submissions, out, timeout=20, jobs=3, echo=printed.append)
    finally:
        tempfile.tempdir = saved_tempdir
    seconds = time.monotonic() - started
    time.sleep(1.0)
    yield {
        "report": report, "printed": "\n".join(printed), "out": out, "submissions": submissions, "outside": outside,
        "targets": targets, "before": before, "expected_fail": expected_fail, "seconds": seconds,
        "hostile": list(hostile), "processes": sandbox_processes(str(staging_root)), "cgroups": leftover_cgroups(),
    }  # fmt: skip
    shutil.rmtree(outside, ignore_errors=True)


def _scores(fuzz_run) -> dict[str, dict]:
    return {row["student_id"]: row for row in csv.DictReader((fuzz_run["out"] / "scores.csv").open(encoding="utf-8"))}


def test_fuzz_no_false_pass(fuzz_run):
    scores = _scores(fuzz_run)
    for exercise in EXERCISES:
        assert scores["alice"][exercise] == "pass", f"the control (the solution of {exercise}) must pass"
    for (learner, exercise), check in fuzz_run["expected_fail"].items():
        assert scores[learner][f"{exercise}:{check}"] != "pass", f"{learner}: a wrong {check} passed"
        assert scores[learner][exercise] == "fail", (
            f"{learner}: the wrong solution must run and fail, not {scores[learner][exercise]}"
        )


def test_fuzz_no_forged_grade(fuzz_run):
    scores = _scores(fuzz_run)
    for learner in fuzz_run["hostile"]:
        row = scores[learner]
        assert row["ex02_attention"] != "pass" and row["ex02_attention points"] == "0", (
            f"{learner}: {row['ex02_attention']}"
        )
    assert scores["monkeypatch"]["ex02_attention:check_softmax"] == "not_implemented", "the real checks ran anyway"
    assert scores["bodypatcher"]["ex02_attention:check_softmax"] != "pass", "a function that rewrote the grader passed"
    for forger in ("forger", "recordforger", "harvestswapper", "saveswapper"):
        for check in ("check_softmax", "check_attention", "check_causal_attention"):  # no point, and no false claim
            assert scores[forger][f"ex02_attention:{check}"] in ("not_implemented", "fail", "error"), (forger, check)


def test_fuzz_no_file_outside_the_sandbox_touched(fuzz_run):
    submissions = fuzz_run["submissions"]
    after = {path: path.read_bytes() for path in submissions.rglob("*") if path.is_file() and not path.is_symlink()}
    assert after == fuzz_run["before"], "the submissions must be exactly as they were"
    assert (fuzz_run["outside"] / "keep.txt").read_text() == "keep"
    for target in fuzz_run["targets"]:
        path = Path(target)
        assert not path.exists() or "escaped" not in path.read_text(errors="replace"), f"{target} was written"


def test_fuzz_no_process_left(fuzz_run):
    assert fuzz_run["processes"] == [], fuzz_run["processes"]
    assert fuzz_run["cgroups"] == []
    leftovers = subprocess.run(["pgrep", "-f", f"sleep {LINGER}"], capture_output=True, text=True, timeout=10)
    assert leftovers.stdout.strip() == "", "a process a submission started outlived its sandbox"


def test_fuzz_no_traceback_and_a_readable_report(fuzz_run):
    markdown = (fuzz_run["out"] / "scores.md").read_text(encoding="utf-8")
    for text in (markdown, fuzz_run["printed"]):
        assert "Traceback" not in text and 'File "/' not in text
    scores = _scores(fuzz_run)
    assert scores["a-looper"]["ex02_attention"] == "timeout" and scores["a-stubborn"]["ex02_attention"] == "timeout"
    assert scores["slowfn"]["ex02_attention:check_softmax"] == "timeout"
    assert scores["flooder"]["ex02_attention"] == "error"  # it wrote into the grader's channel: stopped at once
    assert "notebook wrote into the grader" in markdown or "more than 64 MB" in markdown
    assert "mallory/ex01\\_rnn.ipynb" in markdown and "symbolic link" in markdown  # Markdown-escaped, shows as is
    hostname = Path("/etc/hostname").read_text().strip() if Path("/etc/hostname").exists() else ""
    if hostname:
        assert hostname not in markdown, "a link's target must never be read"


def test_fuzz_bounded_in_time(fuzz_run):
    count = len(fuzz_run["report"].cells)
    assert fuzz_run["seconds"] < 60 * count, f"{count} notebooks took {fuzz_run['seconds']:.0f} s"


# ---------------------------------------------------------------------------------------------- the report an instructor needs


@pytest.fixture(scope="module")
def class_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("class")
    submissions = base / "submissions"
    for learner, name, source in (
        ("ana.lopez", "ex02_attention", solution("ex02_attention")),
        ("ana.lopez", "ex04_positional_encoding", solution("ex04_positional_encoding")),
        ("=cmd", "ex02_attention", stubs("ex02_attention")),
    ):
        (submissions / learner).mkdir(parents=True, exist_ok=True)
        notebook = json.loads(source.read_text(encoding="utf-8"))
        for cell in notebook["cells"]:
            cell.pop("id", None)  # an older notebook without cell ids: nbformat would warn about it
        notebook["nbformat_minor"] = 4
        (submissions / learner / f"{name}.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    (submissions / "ana.lopez" / "notes.txt").write_text("my notes")
    out = base / "out"
    result = subprocess.run(
        [sys.executable, "-m", "course_lib", "exercises", "grade", str(submissions), "--out", str(out),
         "--exercise", "ex02", "--timeout", "30", "--jobs", "2"],
        capture_output=True, text=True, timeout=600, cwd=base,
    )  # fmt: skip
    return {"result": result, "out": out}


def test_only_the_assigned_exercise_is_graded(class_run):
    assert class_run["result"].returncode == 0, class_run["result"].stderr
    markdown = (class_run["out"] / "scores.md").read_text(encoding="utf-8")
    assert "| ana.lopez | pass 3/3 checks, 15 / 15 points | 1 | 0 | 0 | 0 | 0 | 3/3 | 15/15 |" in markdown, markdown
    assert r"ex04\_positional\_encoding is not among the exercises graded \(\-\-exercise\)" in markdown


def test_scores_have_per_check_columns_and_the_lms_imports(class_run):
    out = class_run["out"]
    rows = list(csv.reader((out / "scores.csv").open(encoding="utf-8")))
    assert rows[0] == [
        "student_id", "ex02_attention", "ex02_attention checks passed", "ex02_attention points",
        "ex02_attention possible", "ex02_attention:check_softmax", "ex02_attention:check_attention",
        "ex02_attention:check_causal_attention", "pass", "fail", "error", "timeout", "missing", "checks_passed",
        "checks", "points", "points_possible",
    ]  # fmt: skip
    assert rows[1][0] == "'=cmd", "a learner name that a spreadsheet would run as a formula is quoted"
    assert not (out / "gradebook.csv").exists(), "the LMS imports are canvas.csv and moodle.csv"
    moodle = list(csv.reader((out / "moodle.csv").open(encoding="utf-8")))
    assert moodle[0] == ["Username", "ID number", "Section", "ex02_attention (out of 15)"]
    assert ["ana.lopez", "ana.lopez", "", "15"] in moodle
    checks = list(csv.DictReader((out / "checks.csv").open(encoding="utf-8")))
    stub = [row for row in checks if row["student_id"] == "'=cmd"]
    assert [row["result"] for row in stub] == ["not_implemented"] * 3 and stub[0]["diagnosis"].endswith(
        "not implemented yet"
    )


def test_the_console_lists_skipped_files_and_shows_no_warnings(class_run):
    result = class_run["result"]
    assert "notes.txt: not a notebook" in result.stdout
    assert "Sandbox: bubblewrap" in result.stdout
    assert "Warning" not in result.stderr and "MissingIDField" not in result.stdout + result.stderr, result.stderr


def test_a_result_typed_in_for_one_salt_does_not_pass_the_grader(tmp_path):
    """The experiment's results, copied for the seeds of one salt (here the salt a grader without salts would use),
    pass a judge at that salt, and fail the grader, which draws a salt of its own for every run."""
    from course_lib.checks import experiment, spec

    with spec.salt_scope(0):
        table = {
            seed: experiment.short_training(seed, residual=False).tolist()
            for seed in map(experiment.check_seed, (1, 2))
        }
    source = f"import torch\nTABLE = {table!r}\ndef experiment(seed):\n    return torch.tensor(TABLE[seed])\n"
    namespace: dict = {}
    exec(source, namespace)
    from course_lib.tools.grading import remote

    with spec.salt_scope(0):
        replayed = remote.judge("ex05_layernorm_residual", remote.local_ask(namespace))
    assert {c["check"]: c["passed"] for c in replayed}["check_experiment"], "the copied results must pass at their salt"
    path = tmp_path / "ex05_layernorm_residual.ipynb"
    path.write_text(notebook_with(stubs("ex05_layernorm_residual"), source), encoding="utf-8")
    graded = grading.grade_notebook(path, "ex05_layernorm_residual", timeout=30)
    verdicts = {check["check"]: check for check in graded.checks}
    assert not verdicts["check_experiment"]["passed"], verdicts["check_experiment"]["message"]


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_a_timeout_that_is_not_a_positive_number_is_refused(value, tmp_path, capsys):
    (tmp_path / "subs").mkdir()
    assert (
        cli.main(["exercises", "grade", str(tmp_path / "subs"), "--out", str(tmp_path / "out"), "--timeout", value])
        == 2
    )
    assert "--timeout must be a positive number" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_without_a_sandbox_the_grader_says_so_loudly(tmp_path, monkeypatch):
    submissions = tmp_path / "submissions" / "ana"
    submissions.mkdir(parents=True)
    shutil.copyfile(solution("ex04_positional_encoding"), submissions / "ex04.ipynb")
    unavailable = sandbox.SandboxStatus(False, "bubblewrap (bwrap) is not installed")
    monkeypatch.setattr(sandbox, "probe", lambda refresh=False: unavailable)
    printed: list[str] = []
    grading.grade(
        tmp_path / "submissions", tmp_path / "out", timeout=30, jobs=1, echo=printed.append, exercises=["ex04"]
    )
    assert printed[0].startswith("WARNING: NOT SANDBOXED") and printed[-1].startswith("WARNING: NOT SANDBOXED")
    markdown = (tmp_path / "out" / "scores.md").read_text(encoding="utf-8")
    assert "WARNING: NOT SANDBOXED" in markdown and "WITHOUT a sandbox" in markdown
    assert "| ana | pass 1/1 checks, 10 / 10 points |" in markdown
    with pytest.raises(grading.ExerciseToolError, match="--require-sandbox"):
        grading.grade(tmp_path / "submissions", tmp_path / "out2", timeout=30, echo=None, require_sandbox=True)


def test_a_course_kept_under_tmp_stays_visible_behind_the_private_tmp(tmp_path, monkeypatch):
    """The sandbox mounts a private /tmp; a venv (or the course) under /tmp is bound back read-only, or the grader
    could not even start its Python (a clone made with mktemp -d lives there)."""
    from course_lib.tools.grading import sandbox

    venv = Path(tempfile.mkdtemp(dir="/tmp")) / "course" / ".venv"
    venv.mkdir(parents=True)
    try:
        monkeypatch.setattr(sys, "prefix", str(venv))
        command = sandbox.bwrap_command(["python", "-c", "pass"], tmp_path, hidden=[])
    finally:
        shutil.rmtree(venv.parents[1])
    resolved = str(venv.resolve())
    bind = command.index(resolved) - 1
    assert command[bind : bind + 3] == ["--ro-bind", resolved, resolved]
    assert bind > command.index("/tmp"), "bound after the private /tmp is mounted, so it is not hidden by it"
