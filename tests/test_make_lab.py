"""`make lab` starts JupyterLab bound to 127.0.0.1 with token authentication on.

The test runs the Makefile's real `lab` recipe against the current environment (install step marked as done),
on a free port, then talks to the server: without the token it is refused, with it the API answers.
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed (the README gives the plain pip route)")
def test_make_lab_binds_localhost_with_a_token(tmp_path):
    port = free_port()
    venv = Path(sys.prefix)
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "BROWSER": "true"}
    process = subprocess.Popen(
        ["make", "-C", str(ROOT), "-o", f"{venv}/.course-installed", "lab", f"VENV={venv}", f"PORT={port}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(process.stdout.readline, "")), daemon=True)
    reader.start()
    output = ""
    try:
        deadline = time.time() + 90
        token = None
        while time.time() < deadline and token is None:
            output = "".join(lines)
            match = re.search(rf"http://127\.0\.0\.1:{port}/lab\?token=(\w+)", output)
            token = match.group(1) if match else None
            if process.poll() is not None and token is None:
                break
            time.sleep(0.5)
        assert token, f"JupyterLab did not print a 127.0.0.1 URL with a token:\n{output[-3000:]}"
        assert "--IdentityProvider.token=''" not in output and "token=''" not in output

        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/contents", timeout=10)
        assert refused.value.code == 403, "without the token the server must refuse"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/contents?token={token}", timeout=10) as reply:
            listing = json.load(reply)
        names = {entry["name"] for entry in listing["content"]}
        assert {"course_lib", "README.md"} <= names, f"the server's root is the course folder, got {sorted(names)}"

        # bound to loopback only: no listening socket on another interface's address
        ss = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True)
        if ss.returncode == 0 and ss.stdout.strip():
            for line in ss.stdout.strip().splitlines():
                local = line.split()[3]
                assert local.startswith(("127.0.0.1:", "[::1]:")), f"listening on {local}"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
