"""Start the course's JupyterHub (deploy/jupyterhub_config.py) on 127.0.0.1 and drive it as learners would.

Used by the hub integration test (tests/test_hub.py) and the load benchmark (benchmarks/hub_load.py):

- ``running_hub(...)``: a context manager that starts the hub as root with the deploy configuration unchanged
  except for environment variables (ports, state folder, culling times) and one extra admin service whose token the
  caller uses; on exit it stops every server, the hub and the proxy, ends every process the test accounts still
  run (by pid) and deletes the accounts with their home folders.
- ``Hub``: the REST API (create learners, spawn and stop servers, make tokens).
- ``Learner``: one learner's server through the hub's proxy, with that learner's own token: contents, sessions,
  and ``run_notebook(path)``, which executes every code cell over the kernel's websocket, like JupyterLab does.

Nothing leaves loopback: the hub, the proxy and every server listen on 127.0.0.1, and course content comes from a
local git repository through nbgitpuller.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlsplit

import requests
import websocket

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
PROXY = DEPLOY / "node_modules" / ".bin" / "configurable-http-proxy"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def missing_requirements() -> list[str]:
    """What this machine lacks to start the hub for real (empty when everything is there)."""
    problems = []
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        problems.append("the hub must run as root to start servers as the learners' own Linux accounts")
    if not PROXY.exists():
        problems.append("configurable-http-proxy is not installed in deploy/node_modules (run `make hub-proxy`)")
    for tool in ("useradd", "userdel", "git", "node"):  # node runs configurable-http-proxy
        if shutil.which(tool) is None:
            problems.append(f"`{tool}` is not installed")
    for module in ("jupyterhub", "nbgitpuller", "jupyterhub_idle_culler"):
        try:
            __import__(module)
        except ImportError:
            problems.append(f"the Python package {module} is not installed (pip install -r requirements-dev.txt)")
    # The learners' servers run this environment (its Python, the course) under their own accounts: every folder
    # on the way must be open to them, except folders the hub's private view opens (``private_view_command``).
    for path in needed_paths():
        closed = closed_folders(path)
        if len(closed) > 1:
            problems.append(f"more than one folder above {path} is closed to other users: {[str(c) for c in closed]}")
        elif closed and shutil.which("unshare") is None:
            problems.append(f"{closed[0]} is closed to other users (chmod o+x) and `unshare` is not installed")
    return problems


def closed_folders(path: Path) -> list[Path]:
    """The folders above ``path`` that other users cannot enter (no o+x), outermost first."""
    return [
        folder for folder in reversed(Path(path).parents) if folder.is_dir() and not os.stat(folder).st_mode & 0o001
    ]


def needed_paths() -> list[Path]:
    """What a learner's server must reach: the Python interpreter, this environment and the course."""
    return [Path(sys.executable).resolve(), Path(sys.prefix).resolve(), ROOT.resolve()]


def private_view_command(command: list[str], stash: Path) -> list[str]:
    """Run ``command`` where learners can reach the course's environment, without changing the machine.

    Python installed under root's home (pyenv in /root, mode 0700, as on CI) cannot be run by a learner's account.
    A real hub installs the course environment where learners can read it (deploy/README.md). For the test, the hub
    runs in a private mount namespace in which each closed folder is replaced by an empty one that others may enter,
    holding only the paths down to what the servers need; nothing changes outside that namespace, which ends with
    the hub.
    """
    views: dict[Path, set[Path]] = {}
    for path in needed_paths():
        for folder in closed_folders(path):
            views.setdefault(folder, set()).add(folder / path.relative_to(folder).parts[0])
    if not views:
        return command
    script, args = ["set -e"], []
    for number, (folder, children) in enumerate(sorted(views.items())):
        keep = sorted(children)
        for index, child in enumerate(keep):  # set each child aside, cover the folder, put the children back
            aside = stash / f"{number}-{index}"
            aside.mkdir(parents=True)
            args += [str(child), str(aside)]
            script.append(f'mount --bind "${{{len(args) - 1}}}" "${{{len(args)}}}"')
        args.append(str(folder))
        script.append(f'mount -t tmpfs -o mode=0711 course-hub "${{{len(args)}}}"')
        for child in keep:
            position = args.index(str(child)) + 1
            script.append(f'mkdir -p "${{{position}}}"; mount --bind "${{{position + 1}}}" "${{{position}}}"')
    script.append(f'shift {len(args)}; exec "$@"')
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", "; ".join(script), "sh", *args, *command]


def make_course_repo(parent: Path) -> Path:
    """A git repository (branch ``main``) holding the course's notebooks and learner exercises, readable by all."""
    repo = parent / "transformers-course.git"
    work = parent / "course-work"
    work.mkdir(parents=True)
    for folder in ("notebooks", "exercises"):
        shutil.copytree(
            ROOT / folder, work / folder, ignore=shutil.ignore_patterns("solutions", "backups", ".ipynb_checkpoints")
        )
    git(work, "init", "-q", "-b", "main")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "Course")
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(repo)], check=True)
    for path in [parent, *parent.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return repo


def git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Course",
        "GIT_AUTHOR_EMAIL": "course@localhost",
        "GIT_COMMITTER_NAME": "Course",
        "GIT_COMMITTER_EMAIL": "course@localhost",
    }
    done = subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True)
    return done.stdout


@dataclass
class CellRun:
    index: int
    seconds: float
    error: str | None = None
    text: str = ""


@dataclass
class NotebookRun:
    path: str
    seconds: float
    cells: list[CellRun] = field(default_factory=list)

    @property
    def errors(self) -> list[str]:
        return [f"cell {cell.index}: {cell.error}" for cell in self.cells if cell.error]


class Hub:
    """The hub's REST API with an admin service token."""

    def __init__(self, url: str, token: str):
        self.url = url.rstrip("/")
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"token {token}"

    def api(self, method: str, path: str, expect: tuple[int, ...] = (200, 201, 202, 204), **kwargs):
        response = self.session.request(method, f"{self.url}/hub/api{path}", timeout=30, **kwargs)
        if response.status_code not in expect:
            raise AssertionError(f"{method} {path}: HTTP {response.status_code} {response.text[:300]}")
        return response.json() if response.content else None

    def user(self, name: str) -> dict:
        return self.api("GET", f"/users/{name}")

    def create_learners(self, names: list[str]) -> None:
        """Create the hub users (and, through LocalAuthenticator, their Linux accounts) in one request."""
        self.api("POST", "/users", json={"usernames": names})

    def token_for(self, name: str) -> str:
        return self.api("POST", f"/users/{name}/tokens", json={"note": "course test", "expires_in": 3600})["token"]

    def spawn(self, name: str, timeout: float = 120.0) -> dict:
        self.api("POST", f"/users/{name}/server")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            server = self.user(name)["servers"].get("", {})
            if server.get("ready"):
                return server
            time.sleep(0.5)
        raise AssertionError(f"the server of {name} was not ready after {timeout:.0f} s")

    def running(self, name: str) -> bool:
        return bool(self.user(name)["servers"].get("", {}).get("ready"))

    def stop(self, name: str) -> None:
        self.api("DELETE", f"/users/{name}/server", expect=(202, 204, 400, 404))


class Learner:
    """One learner's single-user server, reached through the hub's proxy with the learner's own token."""

    def __init__(self, hub_url: str, name: str, token: str):
        self.name = name
        self.base = f"{hub_url.rstrip('/')}/user/{name}"
        self.token = token
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"token {token}"

    def get(self, path: str, **kwargs) -> requests.Response:
        return self.session.get(f"{self.base}{path}", timeout=30, allow_redirects=False, **kwargs)

    def log_in(self, hub_url: str, password: str) -> requests.Session:
        """Log in on the hub's login page with the account's password (PAM), as a browser does; returns the session."""
        browser = requests.Session()
        browser.get(f"{hub_url}/hub/login", timeout=30).raise_for_status()
        response = browser.post(
            f"{hub_url}/hub/login",
            data={"username": self.name, "password": password, "_xsrf": browser.cookies.get("_xsrf", "")},
            timeout=60,
            allow_redirects=False,
        )
        if response.status_code != 302:
            raise AssertionError(f"{self.name} could not log in: HTTP {response.status_code}")
        return browser

    def open_link(
        self, browser: requests.Session, link: str, timeout: float = 120.0, hub: Hub | None = None
    ) -> list[str]:
        """Open an nbgitpuller link in the learner's logged-in browser session: the hub redirects to their server's
        git-pull page, whose script then calls the pull API with the same query; returns the pull's messages.

        If the server is not running when the link is opened (the test's short idle limit lets the culler stop a
        server nobody has used yet on a loaded machine), the hub starts it and shows its spawn-pending page, as a
        browser would see; with ``hub``, this waits on the hub's API until the server is ready, then opens the link
        again, as that page's script does.
        """
        deadline = time.monotonic() + timeout
        while True:
            page = browser.get(link, timeout=30, allow_redirects=True)
            page.raise_for_status()
            landed = urlsplit(page.url)
            if landed.path == f"{urlsplit(self.base).path}/git-pull":
                return self._pull(landed.query, timeout)
            pending = landed.path.endswith(f"/hub/spawn-pending/{self.name}")
            if not (pending and hub is not None and time.monotonic() < deadline):
                raise AssertionError(f"the link led to {page.url}, not to {self.name}'s git-pull page")
            while not hub.running(self.name):
                if time.monotonic() > deadline:
                    raise AssertionError(f"the server of {self.name} was not ready {timeout:.0f} s after the link")
                time.sleep(0.5)

    def pull_course(self, repo: str, branch: str, target: str, timeout: float = 120.0) -> list[str]:
        """What an nbgitpuller link does once the server runs: clone or merge the course, reading the event stream."""
        return self._pull(f"repo={quote(repo, safe='')}&branch={quote(branch)}&targetpath={quote(target)}", timeout)

    def _pull(self, query: str, timeout: float) -> list[str]:
        response = self.session.get(f"{self.base}/git-pull/api?{query}", stream=True, timeout=timeout)
        response.raise_for_status()
        events = []
        for line in response.iter_lines(decode_unicode=True):
            if line and line.startswith("data:"):
                event = json.loads(line[5:])
                events.append(event.get("output") or event.get("message") or event.get("phase"))
                if event.get("phase") == "finished":
                    return events
                if event.get("phase") == "error":
                    raise AssertionError(f"nbgitpuller failed for {self.name}: {event.get('message')}")
        raise AssertionError(f"nbgitpuller's stream ended without 'finished' for {self.name}: {events[-5:]}")

    def contents(self, path: str) -> dict:
        response = self.get(f"/api/contents/{quote(path)}?content=1")
        response.raise_for_status()
        return response.json()

    def kernels(self) -> list[dict]:
        response = self.get("/api/kernels")
        response.raise_for_status()
        return response.json()

    def kernels_while_running(self, hub: Hub) -> list[dict] | None:
        """The learner's kernels, or None once the hub's API says the server is not running or while the culler is
        stopping it (the proxy then answers with a redirect or an HTML page instead of the server's JSON)."""
        if not hub.running(self.name):
            return None
        response = self.get("/api/kernels")
        if response.status_code != 200 or "json" not in response.headers.get("Content-Type", ""):
            return None
        try:
            return response.json()
        except ValueError:  # the body was cut short as the server stopped
            return None

    def open_notebook(self, path: str) -> KernelConnection:
        """Open the notebook as JupyterLab does: a session (notebook + kernel), then the kernel's websocket."""
        response = self.session.post(
            f"{self.base}/api/sessions",
            json={"path": path, "name": Path(path).name, "type": "notebook", "kernel": {"name": "python3"}},
            timeout=60,
        )
        response.raise_for_status()
        return KernelConnection(self, response.json()["kernel"]["id"])

    def run_notebook(self, path: str, timeout: float = 300.0) -> NotebookRun:
        """Execute every code cell of the notebook in a new kernel; the kernel stays open (idle) afterwards."""
        cells = [cell for cell in self.contents(path)["content"]["cells"] if cell["cell_type"] == "code"]
        kernel = self.open_notebook(path)
        started = time.monotonic()
        run = NotebookRun(path, 0.0)
        try:
            for index, cell in enumerate(cells):
                source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
                remaining = timeout - (time.monotonic() - started)
                run.cells.append(kernel.execute(source, index, timeout=max(remaining, 1.0)))
                if run.cells[-1].error:
                    break
        finally:
            kernel.close()
        run.seconds = time.monotonic() - started
        return run


class KernelConnection:
    """The kernel's websocket (Jupyter messaging protocol, JSON over one socket for all channels)."""

    def __init__(self, learner: Learner, kernel_id: str):
        self.kernel_id = kernel_id
        self.session_id = uuid.uuid4().hex
        url = (
            learner.base.replace("http://", "ws://", 1)
            + f"/api/kernels/{kernel_id}/channels?session_id={self.session_id}"
        )
        self.socket = websocket.create_connection(url, header=[f"Authorization: token {learner.token}"], timeout=60)

    def execute(self, code: str, index: int = 0, timeout: float = 120.0) -> CellRun:
        msg_id = uuid.uuid4().hex
        message = {
            "header": {
                "msg_id": msg_id,
                "msg_type": "execute_request",
                "session": self.session_id,
                "username": "course-test",
                "version": "5.3",
                "date": "",
            },
            "parent_header": {},
            "metadata": {},
            "channel": "shell",
            "buffers": [],
            "content": {
                "code": code,
                "silent": False,
                "store_history": True,
                "user_expressions": {},
                "allow_stdin": False,
                "stop_on_error": True,
            },
        }
        started = time.monotonic()
        self.socket.send(json.dumps(message))
        error, texts, replied, idle = None, [], False, False
        while not (replied and idle):
            left = timeout - (time.monotonic() - started)
            if left <= 0:
                return CellRun(index, time.monotonic() - started, f"no reply within {timeout:.0f} s", "".join(texts))
            self.socket.settimeout(left)
            reply = json.loads(self.socket.recv())
            if reply.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = reply["msg_type"], reply["content"]
            if kind == "stream":
                texts.append(content.get("text", ""))
            elif kind in ("execute_result", "display_data"):
                texts.append(content.get("data", {}).get("text/plain", ""))
            elif kind == "error":
                error = f"{content.get('ename')}: {content.get('evalue')}"
            elif kind == "execute_reply":
                replied = True
                if content.get("status") == "error" and error is None:
                    error = f"{content.get('ename')}: {content.get('evalue')}"
            elif kind == "status" and content.get("execution_state") == "idle":
                idle = True
        return CellRun(index, time.monotonic() - started, error, "".join(texts))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.socket.close()


class GitServer:
    """The course repository served by ``git daemon`` on 127.0.0.1, as a git host serves it to nbgitpuller."""

    def __init__(self, folder: Path, timeout: float = 15.0):
        port = free_port()
        self.url = f"git://127.0.0.1:{port}"
        self.process = subprocess.Popen(
            [
                "git",
                "daemon",
                "--reuseaddr",
                "--listen=127.0.0.1",
                f"--port={port}",
                f"--base-path={folder}",
                "--export-all",
                str(folder),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.close()
                raise RuntimeError("git daemon did not start")
            time.sleep(0.1)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


@dataclass
class RunningHub:
    url: str
    hub: Hub
    course_repo: Path
    course_url: str
    log: Path
    prefix: str
    process: subprocess.Popen
    proxy_api: str
    proxy_token: str
    started: dict[int, str] = field(default_factory=dict)  # every process the hub started (pid → start time)

    def learner(self, name: str) -> Learner:
        return Learner(self.url, name, self.hub.token_for(name))

    def set_password(self, name: str, password: str) -> None:
        """Give a test account a password, so that it can log in through PAM like a learner."""
        subprocess.run(["chpasswd"], input=f"{name}:{password}\n", text=True, check=True, capture_output=True)

    def direct_url(self, name: str) -> str:
        """Where the learner's server itself listens (the proxy's route target), bypassing the proxy."""
        response = requests.get(
            f"{self.proxy_api}/api/routes", headers={"Authorization": f"token {self.proxy_token}"}, timeout=10
        )
        response.raise_for_status()
        return response.json()[f"/user/{name}"]["target"].rstrip("/")


def account_pids(uids: set[int]) -> list[int]:
    """Processes owned by the given accounts (read from /proc)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid in uids and not _zombie(int(entry.name)):
                    pids.append(int(entry.name))
    return pids


def accounts_of(prefix: str) -> dict[str, int]:
    return {entry.pw_name: entry.pw_uid for entry in pwd.getpwall() if entry.pw_name.startswith(prefix)}


@contextlib.contextmanager
def running_hub(
    kernel_idle: int = 600, server_idle: int = 3600, activity_interval: int = 60, start_timeout: float = 60.0
):
    """Start the hub from deploy/jupyterhub_config.py; stop it and remove every trace on exit (see module doc)."""
    problems = missing_requirements()
    if problems:
        raise RuntimeError("; ".join(problems))
    prefix = "crs" + secrets.token_hex(3)  # learner accounts of this run: crsXXXXXX-1, -2, ... (valid Linux names)
    workdir = Path(tempfile.mkdtemp(prefix="course-hub-"))
    workdir.chmod(0o755)
    token = secrets.token_hex(32)
    port, proxy_port, proxy_token = free_port(), free_port(), secrets.token_hex(32)
    overlay = workdir / "test_config.py"
    overlay.write_text(
        "c = get_config()  # noqa\n"
        f"load_subconfig({str(DEPLOY / 'jupyterhub_config.py')!r})  # noqa\n"
        "# The one addition for tests and benchmarks: an admin service whose token drives the REST API.\n"
        f"c.JupyterHub.services.append({{'name': 'course-test', 'api_token': {token!r}}})\n"
        "c.JupyterHub.load_roles.append({'name': 'admin', 'services': ['course-test']})\n"
    )
    env = {
        **os.environ,
        "COURSE_HUB_BIND_URL": f"http://127.0.0.1:{port}",
        "COURSE_HUB_API_PORT": str(free_port()),
        "COURSE_HUB_PROXY_API_PORT": str(proxy_port),
        "COURSE_HUB_STATE_DIR": str(workdir / "state"),
        "COURSE_HUB_SPAWNER": "local",
        "COURSE_HUB_KERNEL_IDLE": str(kernel_idle),
        "COURSE_HUB_SERVER_IDLE": str(server_idle),
        "COURSE_HUB_ACTIVITY_INTERVAL": str(activity_interval),
        "CONFIGPROXY_AUTH_TOKEN": proxy_token,
    }
    log = workdir / "jupyterhub.log"
    course_repo = make_course_repo(workdir / "upstream")
    git_server = GitServer(course_repo.parent)
    url = f"http://127.0.0.1:{port}"
    with open(log, "wb") as out:
        command = [str(Path(sys.prefix) / "bin" / "jupyterhub"), "-f", str(overlay)]
        process = subprocess.Popen(
            private_view_command(command, workdir / "python-view"),
            cwd=workdir,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    hub = Hub(url, token)
    running = RunningHub(
        url,
        hub,
        course_repo,
        f"{git_server.url}/{course_repo.name}",
        log,
        prefix,
        process,
        f"http://127.0.0.1:{proxy_port}",
        proxy_token,
    )
    try:
        deadline = time.monotonic() + start_timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the hub exited with code {process.returncode}:\n{log.read_text()[-3000:]}")
            with contextlib.suppress(requests.RequestException):
                if hub.session.get(f"{url}/hub/api/", timeout=2).ok:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the hub did not answer within {start_timeout:.0f} s:\n{log.read_text()[-3000:]}")
            time.sleep(0.3)
        yield running
    except BaseException:
        with contextlib.suppress(OSError):  # the hub's own account of what went wrong, before its folder goes
            print(
                "--- the last lines of the hub's log ---",
                *log.read_text().splitlines()[-60:],
                sep="\n",
                file=sys.stderr,
            )
        raise
    finally:
        _shut_down(running)
        git_server.close()
        shutil.rmtree(workdir, ignore_errors=True)


def _start_time(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def descendants(root: int) -> dict[int, str]:
    """pid → start time of every process below ``root`` (the start time tells a process from a reused pid)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                children.setdefault(parent, []).append(int(entry.name))
    found, todo = {}, [root]
    while todo:
        for child in children.get(todo.pop(), []):
            started = _start_time(child)
            if started is not None and child not in found:
                found[child] = started
                todo.append(child)
    return found


def survivors(processes: dict[int, str]) -> list[int]:
    """The processes of ``descendants(...)`` that still run. A zombie runs nothing: an orphan that has ended stays one
    on machines whose first process does not reap orphans (a VM's init), and is not a survivor."""
    return [pid for pid, started in processes.items() if _start_time(pid) == started and not _zombie(pid)]


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def _shut_down(running: RunningHub) -> None:
    """Stop the servers and the hub (which stops the proxy), end leftovers by pid, delete the test accounts."""
    with contextlib.suppress(Exception):
        for user in running.hub.api("GET", "/users"):
            if user["servers"]:
                running.hub.stop(user["name"])
    # The hub starts its services (the idle culler) in sessions of their own: note them all before it goes.
    running.started.update(descendants(running.process.pid))
    process = running.process
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)  # the proxy and services share the hub's process group
    for _ in range(2):
        for pid in survivors(running.started):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)
    accounts = accounts_of(running.prefix)
    for _ in range(20):
        pids = account_pids(set(accounts.values()))
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)
    for name in accounts:
        subprocess.run(["userdel", "--remove", name], capture_output=True)
