"""Fixtures for tests that drive the course's notebooks in JupyterLab in a real (headless) browser.

Reusable by any browser test in this folder:

- ``lab_server`` (session): JupyterLab on a free 127.0.0.1 port with token auth on, serving a temporary copy of
  the repository's ``notebooks/`` and ``exercises/`` (tests never touch the real files). Its settings, runtime and
  data folders are temporary too; the venv's kernelspec ("python3") and lab extensions (widgets) stay visible.
- ``browser`` (session): headless Chromium driven by Playwright. Skipped with a clear reason when there is no
  browser, except when the environment variable ``CI`` is set: there a missing browser is a failure.
- ``lab_context`` (session): the browser context (1280×900) the JupyterLab pages share, so that the app's scripts
  come from its cache after the first load.
- ``open_notebook`` (per test): ``nb = open_notebook("notebooks/07_knowledge_check.ipynb")`` starts the notebook's
  kernel on the server, opens the notebook in a new page (which connects to that kernel) and returns a
  ``NotebookPage`` with ``run_all()``, ``wait_until_idle()``, ``widget_errors()``, ``widget_views()``,
  ``error_outputs()`` and ``screenshot(name)``. A failing test leaves a screenshot in ``test-output/``. Afterwards
  its pages close and the kernels shut down in the background.
- ``kernel_free_lab`` (per module): ``nb = kernel_free_lab(path)`` opens notebooks one after another in one
  JupyterLab page, each with no kernel at all (nothing is started or connected), to look at the stored outputs.

Example::

    @pytest.mark.browser
    def test_notebook_runs(open_notebook):
        nb = open_notebook("notebooks/01_why_rnns_struggle.ipynb")
        nb.run_all()
        assert nb.error_outputs() == [] and nb.widget_errors() == []
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OUTPUT_DIR = ROOT / "test-output"  # gitignored
COPIED_FOLDERS = ("notebooks", "exercises")
CHROMIUM_CANDIDATES = ("chromium", "chromium-browser", "google-chrome")  # looked up on PATH
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# JupyterLab settings for a quiet, predictable page: every cell stays in the DOM (no windowing), the notebook's
# kernel starts without a "Select Kernel" dialog, no news or update pop-ups.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {
        "windowingMode": "none",
        "autoStartDefaultKernel": True,
    },
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
}
SERVER_START_TIMEOUT = 60.0


def _unavailable(reason: str) -> None:
    """Skip on a learner's machine; fail in CI, where the browser tests must run."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set, so the browser tests must run)", pytrace=False)
    pytest.skip(reason)


def find_chromium() -> str | None:
    """The Chromium to drive: ``$COURSE_CHROMIUM`` if set, else a system Chromium/Chrome."""
    explicit = os.environ.get("COURSE_CHROMIUM")
    if explicit:
        return explicit if Path(explicit).is_file() else None
    for candidate in map(shutil.which, CHROMIUM_CANDIDATES):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- the JupyterLab server -----------------------------------------------------------------------------------
@dataclass
class LabServer:
    base_url: str  # http://127.0.0.1:PORT
    token: str
    root_dir: Path  # the temporary copy the server serves
    log_path: Path
    process: subprocess.Popen

    def url(self, path: str) -> str:
        """Browser URL that opens ``path`` (relative to the root, e.g. ``notebooks/07_knowledge_check.ipynb``)."""
        return f"{self.base_url}/lab/tree/{path}?token={self.token}"

    def api(self, method: str, endpoint: str, body: dict | None = None) -> object:
        request = urllib.request.Request(
            f"{self.base_url}/api/{endpoint}",
            method=method,
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
            data=None if body is None else json.dumps(body).encode(),
        )
        with urllib.request.urlopen(request, timeout=10) as reply:
            body = reply.read()
        return json.loads(body) if body else None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def shutdown_kernels(self) -> None:
        try:
            for kernel in self.api("GET", "kernels") or []:
                self.api("DELETE", f"kernels/{kernel['id']}")
        except (urllib.error.URLError, OSError, ValueError):
            pass

    def shutdown_kernels_in_background(self) -> threading.Thread:
        """``shutdown_kernels`` in a thread: a kernel takes seconds to exit, and the next test need not wait."""
        thread = threading.Thread(target=self.shutdown_kernels, daemon=True)
        thread.start()
        return thread

    def start_session(self, path: str) -> None:
        """Start the kernel of the notebook at ``path`` (its kernelspec's) as the page would, before the page loads:
        JupyterLab then connects the notebook to this session instead of starting one, and the kernel boots while
        the app loads. Nothing happens for a notebook without a kernelspec."""
        notebook = json.loads((self.root_dir / path).read_text(encoding="utf-8"))
        name = notebook.get("metadata", {}).get("kernelspec", {}).get("name")
        if not name:
            return
        body = {"path": path, "name": Path(path).name, "type": "notebook", "kernel": {"name": name}}
        try:
            self.api("POST", "sessions", body)
        except (urllib.error.URLError, OSError, ValueError) as error:  # the page starts the kernel itself then
            print(f"could not start the kernel of {path} before the page: {error}")


def _copy_course(root: Path) -> None:
    ignore = shutil.ignore_patterns(".ipynb_checkpoints", "backups", "__pycache__")
    for folder in COPIED_FOLDERS:
        if (ROOT / folder).is_dir():
            shutil.copytree(ROOT / folder, root / folder, ignore=ignore)


def _write_settings(config_dir: Path) -> None:
    for relative, values in LAB_SETTINGS.items():
        path = config_dir / "lab" / "user-settings" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory) -> LabServer:
    """JupyterLab (token auth on, 127.0.0.1 only) serving a temporary copy of notebooks/ and exercises/."""
    base = tmp_path_factory.mktemp("lab")
    root, config, data, runtime = (base / name for name in ("root", "config", "data", "runtime"))
    for folder in (root, config, data, runtime):
        folder.mkdir()
    _copy_course(root)
    _write_settings(config)
    token = secrets.token_hex(24)
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTER_DATA_DIR": str(data),
        "JUPYTER_RUNTIME_DIR": str(runtime),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "BROWSER": "true",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    log_path = base / "jupyterlab.log"
    log = log_path.open("w")
    server = None
    try:
        for _attempt in range(3):  # another process may take the free port before JupyterLab binds it: retry
            port = free_port()
            command = [
                sys.executable,
                "-m",
                "jupyter",
                "lab",
                "--no-browser",
                "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.port={port}",
                "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={token}",
                f"--ServerApp.root_dir={root}",
                "--LabApp.news_url=",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                "--ServerApp.allow_root=True",  # harmless for an ordinary user; containers and CI often run as root
                "--LabApp.expose_app_in_browser=True",  # window.jupyterapp: open notebooks without a page load
            ]
            process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, cwd=root, env=env, start_new_session=True
            )
            server = LabServer(f"http://127.0.0.1:{port}", token, root, log_path, process)
            if _wait_until_up(server):
                break
        else:
            pytest.fail(f"JupyterLab exited at start, 3 times:\n{server.log()[-3000:]}", pytrace=False)
        yield server
    finally:
        if server is not None:
            _stop(server)
        log.close()


def _wait_until_up(server: LabServer) -> bool:
    """True once the server answers; False if it exited (for example because its port was taken)."""
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while server.process.poll() is None:
        try:
            server.api("GET", "status")
            return True
        except (urllib.error.URLError, OSError, ValueError):
            if time.monotonic() > deadline:
                _stop(server)
                pytest.fail(
                    f"JupyterLab did not answer within {SERVER_START_TIMEOUT:.0f} s:\n{server.log()[-3000:]}",
                    pytrace=False,
                )
            time.sleep(0.25)
    return False


def _stop(server: LabServer) -> None:
    """Shut down the kernels, then the server (its whole process group)."""
    server.shutdown_kernels()
    process = server.process
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)


# -- the browser ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def chromium_executable() -> str:
    path = find_chromium()
    if path is None:
        _unavailable(
            "no Chromium found (looked at $COURSE_CHROMIUM and /usr/bin/chromium); install it to run the browser tests"
        )
    return path


@pytest.fixture(scope="session")
def browser(chromium_executable):
    """Headless Chromium (Playwright), shared by the whole session."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the Python package playwright is not installed")
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=chromium_executable, args=CHROMIUM_ARGS, headless=True)
        try:
            yield instance
        finally:
            instance.close()


# -- a notebook open in a page -------------------------------------------------------------------------------
class NotebookPage:
    """One notebook open in JupyterLab, with the few actions and checks the browser tests need."""

    def __init__(self, page, server: LabServer, path: str, listen: bool = True):
        self.page = page
        self.server = server
        self.path = path
        self.console_errors: list[str] = []
        if listen:  # the page's console errors (a page shared by several notebooks listens through none of them)
            page.on("console", lambda message: message.type == "error" and self.console_errors.append(message.text))
            page.on("pageerror", lambda error: self.console_errors.append(str(error)))

    @property
    def notebook(self):
        """The notebook's DOM node (a Playwright locator)."""
        return self.page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook").first

    def open(self, timeout: float = 45.0) -> NotebookPage:
        self.page.goto(self.server.url(self.path), wait_until="domcontentloaded", timeout=timeout * 1000)
        self.notebook.locator(".jp-Cell").first.wait_for(timeout=timeout * 1000)
        self.wait_for_kernel(timeout=timeout)
        return self

    def open_without_kernel(self, timeout: float = 30.0) -> NotebookPage:
        """Open the notebook in the JupyterLab already loaded in this page, with no kernel, and wait until every
        stored output has its output view in the page (each is rendering or rendered). See ``kernel_free_lab``."""
        started = self.page.evaluate(OPEN_WITHOUT_KERNEL, self.path)
        assert started is None, f"{self.path} was opened with {started}: its outputs must display without a kernel"
        try:
            self.page.wait_for_function(ALL_OUTPUTS_SHOWN, timeout=timeout * 1000)
        except Exception as error:  # Playwright's TimeoutError: say which cells lack outputs
            missing = self.page.evaluate(MISSING_OUTPUTS)
            raise AssertionError(f"stored outputs not shown after {timeout:.0f} s in cells {missing}") from error
        return self

    def kernel(self) -> dict:
        """This notebook's kernel as the server describes it (``{}`` until its session exists)."""
        try:
            sessions = self.server.api("GET", "sessions") or []
        except (urllib.error.URLError, OSError, ValueError):
            return {}
        for session in sessions:
            if session.get("path") == self.path and session.get("kernel"):
                return session["kernel"]
        return {}

    def kernel_state(self) -> str | None:
        """The execution state of this notebook's kernel as the server reports it ("idle", "busy", ...)."""
        return self.kernel().get("execution_state")

    def kernel_status(self) -> str | None:
        """The kernel status the page shows (the notebook toolbar's execution indicator)."""
        indicator = self.page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator").first
        return indicator.get_attribute("data-status") if indicator.count() else None

    def wait_for_kernel(self, timeout: float = 45.0, restart_after: float = 20.0) -> None:
        """Wait until the notebook's kernel runs and is idle, on the server and in the page.

        If JupyterLab asks which kernel to start (it can, when the page loads before the kernel list), accept its
        choice: the notebook's own kernelspec. A kernel process can miss its start (jupyter_client picks its five
        ports by binding and releasing them, and another process may take one first); the server then reports
        "starting" for ever. After ``restart_after`` seconds in that state the kernel is restarted once, and the
        full ``timeout`` counts again from there; a second miss fails with the server's log.
        """
        deadline = time.monotonic() + timeout
        starting_since: float | None = None
        restarted = False
        while not (self.kernel_state() == "idle" and self.kernel_status() == "idle"):
            dialog = self.page.locator(".jp-Dialog .jp-mod-accept")
            if dialog.count() and dialog.first.is_visible():
                dialog.first.click()
            now = time.monotonic()
            if self.kernel_state() == "starting":
                starting_since = starting_since or now
                kernel = self.kernel().get("id")
                if not restarted and kernel and now - starting_since > restart_after:
                    print(f"the kernel of {self.path} was still starting after {restart_after:.0f} s: restarted")
                    try:
                        self.server.api("POST", f"kernels/{kernel}/restart")
                    except (urllib.error.URLError, OSError, ValueError) as error:
                        print(f"restart failed: {error}")
                    restarted, starting_since, deadline = True, None, now + timeout
            else:
                starting_since = None
            if now > deadline:
                raise AssertionError(
                    f"the kernel of {self.path} is not idle after {timeout:.0f} s "
                    f"(server: {self.kernel_state()!r}, page: {self.kernel_status()!r}; restarted: {restarted})\n"
                    f"the server's log ends:\n{self.server.log()[-2000:]}"
                )
            self.page.wait_for_timeout(250)

    def run_all(self, timeout: float = 60.0) -> None:
        """Run → Run All Cells from the menu bar, then wait until the run is over (see ``wait_until_idle``)."""
        before = self.cell_states()
        self.page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).first.click()
        label = self.page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$"))
        self.page.locator(".lm-Menu-item:visible").filter(has=label).first.click()
        try:  # wait for the run to start (the prompts change), in the page
            self.page.wait_for_function(
                f"before => JSON.stringify(({CELL_STATES})()) !== before",
                arg=json.dumps([list(state) for state in before]),
                polling=100,
                timeout=15_000,
            )
        except Exception:  # Playwright's TimeoutError: wait_until_idle says what the page shows
            pass
        self.wait_until_idle(timeout=timeout)

    def cell_states(self) -> list[tuple[str, bool]]:
        """(input prompt, has source) for every code cell, e.g. ``("[3]:", True)`` or ``("[*]:", True)``."""
        return [tuple(state) for state in self.page.evaluate(CELL_STATES)]

    def wait_until_idle(self, timeout: float = 60.0) -> None:
        """Wait until no cell is queued or running ([*]) and the kernel is idle (in the page's execution indicator
        and on the server), for half a second in a row, and either every non-empty code cell has run or the run
        stopped at an error. The page checks itself every 250 ms (one script, no round trip per check); the server
        is asked once the page is settled."""
        deadline = time.monotonic() + timeout
        self.page.evaluate("() => { window.courseSettledSince = null; }")
        while True:
            try:
                self.page.wait_for_function(
                    SETTLED, arg=500, polling=250, timeout=max(1.0, deadline - time.monotonic()) * 1000
                )
            except Exception as error:  # Playwright's TimeoutError
                states = self.cell_states()
                raise AssertionError(
                    f"cells still running after {timeout:.0f} s: prompts {[p for p, _ in states]}, "
                    f"kernel {self.kernel_status()!r} in the page, {self.kernel_state()!r} on the server"
                ) from error
            if self.kernel_state() == "idle":
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"the server says the kernel is {self.kernel_state()!r} after {timeout:.0f} s")
            self.page.evaluate("() => { window.courseSettledSince = null; }")  # half a second in a row again

    def widget_errors(self) -> list[str]:
        """Texts of outputs where a widget failed to display (only outputs are searched, not the prose)."""
        texts = self.notebook.locator(".jp-OutputArea-output").all_inner_texts()
        return [
            line
            for text in texts
            for line in text.splitlines()
            if "Error displaying widget" in line or "Error rendering" in line
        ]

    def widget_views(self) -> list[str]:
        """Texts of widget outputs: shown as ``application/vnd.jupyter.widget-view+json`` or still "Loading
        widget..." (the widget view's own text until its model loads; it sets no mime type on the node). With no
        kernel, JupyterLab never loads a widget's model, so such an output stays so for ever."""
        return self.notebook.evaluate(
            """notebook => Array.from(notebook.querySelectorAll('.jp-OutputArea-output'))
                .filter(output => output.dataset.mimeType === 'application/vnd.jupyter.widget-view+json'
                    || output.textContent.trim().startsWith('Loading widget'))
                .map(output => output.textContent.trim())"""
        )

    def error_outputs(self) -> list[str]:
        """Error outputs (tracebacks) in the notebook, as text."""
        return self.notebook.locator(
            '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"], '
            '.jp-RenderedText[data-mime-type="application/vnd.jupyter.error"]'
        ).all_inner_texts()

    def screenshot(self, name: str, full_page: bool = True) -> Path:
        path = OUTPUT_DIR / f"{name}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(path), full_page=full_page)
        return path


# (input prompt, has source) for every code cell of the notebook on show
CELL_STATES = """() => Array.from(document.querySelectorAll(
    '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-CodeCell')).map(cell => [
        (cell.querySelector('.jp-InputPrompt')?.textContent || '').trim(),
        (cell.querySelector('.jp-InputArea-editor')?.textContent || '').trim().length > 0,
    ])"""
# True once the notebook on show has been settled for ``settleMs`` in a row: no cell queued or running, the execution
# indicator idle, and every non-empty code cell run or an error output shown (the same selectors as the methods)
SETTLED = f"""settleMs => {{
    const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
    const prompts = ({CELL_STATES})();
    const running = prompts.some(([prompt]) => prompt.startsWith('[*'));
    const allRan = prompts.every(([prompt, hasSource]) => !hasSource || /^\\[\\d/.test(prompt));
    const indicator = panel && panel.querySelector('.jp-Notebook-ExecutionIndicator');
    const idle = !!indicator && indicator.getAttribute('data-status') === 'idle';
    const failed = !!panel && !!panel.querySelector(
        '.jp-Notebook .jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"], '
        + '.jp-Notebook .jp-RenderedText[data-mime-type="application/vnd.jupyter.error"]');
    const now = performance.now();
    if (!(idle && !running && (allRan || failed))) {{ window.courseSettledSince = null; return false; }}
    window.courseSettledSince = window.courseSettledSince || now;
    return now - window.courseSettledSince > settleMs;
}}"""
# The page scripts behind ``NotebookPage.open_without_kernel``. JupyterLab has no setting that stops a notebook from
# starting its kernel; the Notebook widget factory's ``preferKernel`` and ``canStartKernel`` decide, and they are
# read-only properties over these two fields. The script checks that the change took.
OPEN_WITHOUT_KERNEL = """async path => {
    const app = window.jupyterapp;
    await app.restored;
    const factory = app.docRegistry.getWidgetFactory('Notebook');
    factory._preferKernel = false;
    factory._canStartKernel = false;
    if (factory.preferKernel !== false || factory.canStartKernel !== false) {
        throw new Error('this JupyterLab cannot be told to open a notebook without a kernel');
    }
    for (const widget of Array.from(app.shell.widgets('main'))) {
        if (widget.context) widget.dispose();  // the previous notebook: no "save changes?" dialog
    }
    const panel = await app.commands.execute('docmanager:open', {path, factory: 'Notebook'});
    await panel.context.ready;
    await panel.sessionContext.ready;
    await panel.revealed;
    window.courseNotebook = panel;
    const session = panel.sessionContext.session;
    return session ? `the kernel ${session.kernel && session.kernel.name}` : null;
}"""
# every cell of the open notebook is in the page, and every stored output of a code cell has its view
ALL_OUTPUTS_SHOWN = """() => {
    const notebook = window.courseNotebook && window.courseNotebook.content;
    return !!notebook && notebook.widgets.length === notebook.model.cells.length && notebook.widgets.every(
        cell => cell.model.type !== 'code' || cell.outputArea.widgets.length === cell.model.outputs.length);
}"""
MISSING_OUTPUTS = """() => window.courseNotebook.content.widgets
    .map((cell, index) => [index, cell])
    .filter(([, cell]) => cell.model.type === 'code' && cell.outputArea.widgets.length !== cell.model.outputs.length)
    .map(([index]) => index)"""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"report_{report.when}", report)


@pytest.fixture(scope="session")
def lab_context(browser):
    """The browser context (1280×900) of the JupyterLab tests, shared so that the app's scripts load from its cache
    after the first page; each test opens pages of its own in it and closes them."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(30_000)
    yield context
    context.close()


@pytest.fixture
def open_notebook(lab_context, lab_server, request):
    """``open_notebook(path)`` → a ``NotebookPage``: a new page (1280×900) with JupyterLab showing the notebook, its
    kernel (started on the server just before the page loads, see ``LabServer.start_session``) idle."""
    pages: list[NotebookPage] = []

    def opener(path: str, timeout: float = 45.0) -> NotebookPage:
        lab_server.start_session(path)
        notebook_page = NotebookPage(lab_context.new_page(), lab_server, path)
        pages.append(notebook_page)
        return notebook_page.open(timeout=timeout)

    yield opener
    report = getattr(request.node, "report_call", None)
    for number, notebook_page in enumerate(pages):
        if report is not None and report.failed:
            try:
                saved = notebook_page.screenshot(f"FAILED-{request.node.name}-{number}")
                print(f"screenshot of the failure: {saved}")
            except Exception:  # a crashed page cannot be photographed; the failure itself is what matters
                pass
    for notebook_page in pages:
        notebook_page.page.close()
    lab_server.shutdown_kernels_in_background()


@pytest.fixture(scope="module")
def kernel_free_lab(lab_context, lab_server):
    """One browser page with JupyterLab loaded once (a fresh workspace), for opening notebooks with no kernel.

    ``kernel_free_lab(path)`` closes the notebook opened before (if any), opens ``path`` with the app's
    ``docmanager:open`` command (no page load: a fraction of a second instead of seconds), with no kernel started
    or connected, and returns a ``NotebookPage`` once every stored output has its view in the page.
    """
    page = lab_context.new_page()
    page.goto(f"{lab_server.base_url}/lab?reset&token={lab_server.token}", wait_until="domcontentloaded")
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell", timeout=60_000)

    def opener(path: str, timeout: float = 30.0) -> NotebookPage:
        return NotebookPage(page, lab_server, path, listen=False).open_without_kernel(timeout=timeout)

    yield opener
    page.close()
