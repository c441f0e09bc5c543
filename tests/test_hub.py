"""A class on the course's JupyterHub, for real: deploy/jupyterhub_config.py started on 127.0.0.1.

The test creates three learners through the REST API (the hub creates their Linux accounts), spawns their servers,
logs each in through PAM and opens the nbgitpuller link `hub link` prints (the course comes from a git server on
loopback), runs a course notebook in every server at the same time through the Jupyter server API, proves that one
learner can neither read another's files nor reach their server, lets the kernel culler stop the idle kernels and
jupyterhub-idle-culler stop the idle servers (an active learner keeps theirs), collects the class with `exercises
collect` and reads the misconception report, and shuts everything down: no account and no process of the run is
left.

It needs root (the hub starts servers as the learners' accounts) and configurable-http-proxy (`make hub-proxy`);
without them it is skipped on a learner's machine and fails in CI. About 2 minutes on a 2-core machine.
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import stat
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hub_support import account_pids, accounts_of, missing_requirements, running_hub, survivors

from course_lib.tools.classroom.hub import collect, nbgitpuller_link
from course_lib.tools.cli import main

pytestmark = [pytest.mark.hub, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
TARGET = "transformers-course"  # the folder nbgitpuller creates in each home
NOTEBOOK = f"{TARGET}/notebooks/07_knowledge_check.ipynb"
KERNEL_IDLE, SERVER_IDLE, ACTIVITY = 5, 15, 3  # seconds, short for the test (a class uses 20 min and 60 min)

PROBE = """
import http.client, json, os
result = {"uid": os.getuid()}
for label, action in (("list_home", lambda: os.listdir(OTHER_HOME)), ("read_file", lambda: open(OTHER_FILE).read(10))):
    try:
        action()
        result[label] = "allowed"
    except PermissionError:
        result[label] = "denied"
host, port = OTHER_SERVER.split("//")[1].split(":")
own_token = {"Authorization": "token " + os.environ["JUPYTERHUB_API_TOKEN"]}
for label, headers in (("anonymous", {}), ("own_token", own_token)):
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    connection.request("GET", OTHER_PATH, headers=headers)
    response = connection.getresponse()
    result[label] = [response.status, response.getheader("Location") or ""]
    connection.close()
print(json.dumps(result))
"""


WRONG_SOFTMAX = """
from course_lib.checks import check_softmax
check_softmax(lambda scores: scores.exp() / scores.exp().sum(dim=-1, keepdim=True))
"""


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set, so the hub test must run)", pytrace=False)
    pytest.skip(reason)


def _wait(condition, timeout: float, what: str, every: float = 1.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"{what} did not happen within {timeout:.0f} s")


def test_a_class_on_the_hub():
    problems = missing_requirements()
    if problems:
        _unavailable("cannot start the hub: " + "; ".join(problems))
    started = time.monotonic()
    code_cells = sum(
        1
        for cell in json.loads((ROOT / "notebooks/07_knowledge_check.ipynb").read_text())["cells"]
        if cell["cell_type"] == "code"
    )

    with running_hub(kernel_idle=KERNEL_IDLE, server_idle=SERVER_IDLE, activity_interval=ACTIVITY) as hub:
        names = [f"{hub.prefix}-{number}" for number in (1, 2, 3)]
        hub.hub.create_learners(names)
        for name in names:  # the hub made a Linux account per learner, with a private home
            home = Path(pwd.getpwnam(name).pw_dir)
            assert stat.S_IMODE(home.stat().st_mode) == 0o700 and home.stat().st_uid == pwd.getpwnam(name).pw_uid

        with ThreadPoolExecutor(len(names)) as pool:
            list(pool.map(hub.hub.spawn, names))
        learners = [hub.learner(name) for name in names]

        # The course arrives through the link `python -m course_lib hub link` prints, cloned into each home by
        # nbgitpuller as the learner.
        link = nbgitpuller_link(hub.url, hub.course_url, "main", TARGET, "notebooks/07_knowledge_check.ipynb")
        for learner in learners:
            password = secrets.token_urlsafe(12)
            hub.set_password(learner.name, password)
            learner.open_link(learner.log_in(hub.url, password), link, hub=hub.hub)
            cloned = Path(pwd.getpwnam(learner.name).pw_dir) / NOTEBOOK
            assert cloned.stat().st_uid == pwd.getpwnam(learner.name).pw_uid

        # Everyone runs the same course notebook at once, in their own kernel.
        with ThreadPoolExecutor(len(learners)) as pool:
            runs = list(pool.map(lambda learner: learner.run_notebook(NOTEBOOK, timeout=180), learners))
        for learner, run in zip(learners, runs, strict=True):
            assert run.errors == [], f"{learner.name}: {run.errors}"
            assert len(run.cells) == code_cells, f"{learner.name} ran {len(run.cells)} of {code_cells} code cells"
        assert any("Score" in cell.text or "Question" in cell.text for cell in runs[0].cells), "the quiz did not render"

        # One learner cannot read another's files or reach their server.
        alice, bob, carol = learners
        bob_home = pwd.getpwnam(bob.name).pw_dir
        bob_server = hub.direct_url(bob.name)
        bob_path = f"/user/{bob.name}/api/contents/{TARGET}"
        assert bob.session.get(f"{bob_server}{bob_path}", timeout=10).status_code == 200, (
            "control: bob reaches his own server"
        )
        assert bob.get(f"/api/contents/{TARGET}").status_code == 200, "control: bob reaches it through the proxy"
        assert alice.session.get(f"{hub.url}{bob_path}", timeout=10, allow_redirects=False).status_code == 403
        probe = alice.open_notebook(f"{TARGET}/probe.ipynb")
        try:
            setup = f"OTHER_HOME, OTHER_FILE = {bob_home!r}, {bob_home + '/' + NOTEBOOK!r}\n"
            setup += f"OTHER_SERVER, OTHER_PATH = {bob_server!r}, {bob_path!r}\n"
            cell = probe.execute(setup + PROBE, timeout=30)
            # alice also tries an exercise check the classic wrong way: it goes into her learning record
            attempt = probe.execute(WRONG_SOFTMAX, timeout=60)
        finally:
            probe.close()
        assert cell.error is None, cell.error
        assert attempt.error is None and "❌" in attempt.text, attempt
        seen = json.loads(cell.text.strip().splitlines()[-1])
        assert seen["uid"] == pwd.getpwnam(alice.name).pw_uid, "alice's kernel must run as alice's account"
        assert seen["list_home"] == "denied" and seen["read_file"] == "denied", seen
        status, location = seen["anonymous"]
        assert status == 403 or (status == 302 and "/hub/" in location), f"no token must mean no access: {seen}"
        assert seen["own_token"][0] == 403, f"alice's own token must not open bob's server: {seen}"

        # Carol keeps working; Alice and Bob go idle. Their kernels are culled first, then their servers. Each poll
        # asks the hub's API whether a server still runs before asking the server for its kernels: while the culler
        # stops a server, the proxy answers for it with a redirect or a page, not the server's JSON.
        active = carol.open_notebook(f"{TARGET}/working.ipynb")
        kernels_culled = servers_culled = None
        idle = {alice.name: alice, bob.name: bob}
        kernel_free = set()  # the idle learners whose running server was seen with no kernel
        try:
            deadline = time.monotonic() + KERNEL_IDLE + SERVER_IDLE + 90
            while servers_culled is None:
                assert time.monotonic() < deadline, (
                    f"culling too slow: kernels culled after {kernels_culled} s, servers not"
                )
                assert active.execute("x = 1", timeout=30).error is None  # carol is busy
                now = time.monotonic() - started
                if kernels_culled is None:
                    kernel_free |= {
                        name for name, learner in idle.items() if learner.kernels_while_running(hub.hub) == []
                    }
                    if kernel_free == set(idle):
                        kernels_culled = now  # from here on nobody touches alice's and bob's servers
                if not any(hub.hub.running(name) for name in idle):
                    servers_culled = now
                time.sleep(2)
            assert kernels_culled is not None and kernels_culled <= servers_culled, (
                f"a server was culled before its kernels were seen culled ({sorted(set(idle) - kernel_free)})"
            )
            assert hub.hub.running(carol.name), "the culler stopped the server of a learner who was working"
            assert len(carol.kernels()) == 1, "the kernel of a learner who is working was culled"
        finally:
            active.close()
        assert "idle-culler" in hub.log.read_text()

        # The instructor collects the class from the home folders, then reads the misconception report.
        submissions = hub.log.parent / "submissions"
        rows = collect(Path("/home"), submissions, TARGET, names)
        exercises = sorted(path.name for path in (ROOT / "exercises").glob("ex*.ipynb"))
        for row in rows:
            assert sorted(name for name in row["copied"] if name.endswith(".ipynb")) == exercises, row
        alice_record = (submissions / alice.name / "learning-record.jsonl").read_text().splitlines()
        assert [json.loads(line)["mistake"] for line in alice_record] == ["no_max_subtraction"]
        assert main(["misconceptions", str(submissions), "--out", str(hub.log.parent / "debrief")]) == 0
        report = (hub.log.parent / "debrief" / "misconceptions.md").read_text()
        assert "`check_softmax` | ex02_attention | 1 | 1 | `no_max_subtraction` (1)" in report
        prefix, uids, hub_pid = hub.prefix, set(accounts_of(hub.prefix).values()), hub.process.pid
        hub_processes = hub.started

    assert accounts_of(prefix) == {}, "the test accounts were not deleted"
    assert account_pids(uids) == [], "a process of the test accounts is still running"
    assert not Path(f"/proc/{hub_pid}").exists(), "the hub is still running"
    assert len(hub_processes) >= 2, "the hub's proxy and culler were not seen"
    assert survivors(hub_processes) == [], "a process the hub started (proxy, culler, a server) is still running"
    assert time.monotonic() - started < 300, f"the hub test took {time.monotonic() - started:.0f} s (bound: 300 s)"
