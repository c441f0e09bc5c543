"""Running the course on Colab and Binder: the Colab setup cell, the binder/ files and the commands they run.

What can be tested without Colab or Binder themselves: the Colab cell does nothing off Colab and runs exactly one pip
command on Colab (a fake ``google.colab`` module stands in); that command's requirement is a valid direct reference
and pip can install the course from one (here from the local checkout instead of the repository URL); every notebook
starts with the current cell; binder/ pins the CPU build of torch (pip, resolving binder/requirements.txt against a
local "CPU" index and a local default index, picks the ``+cpu`` wheel); postBuild installs the course; the Binder link
opens an existing notebook.

``test_every_notebook_starts_with_the_colab_cell`` covers notebooks/*.ipynb, exercises/*.ipynb and
exercises/solutions/*.ipynb; it passes once ``python -m course_lib notebook prepare`` has been applied (and the
learner exercises rebuilt with ``python -m course_lib exercises build``).
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import subprocess
import sys
import threading
import types
from pathlib import Path
from unittest import mock

import pytest
from packaging.requirements import Requirement

from course_lib.tools.publish import colab

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_install_torch import install_torch, make_index  # noqa: E402  (the local-index helpers)

ROOT = Path(__file__).resolve().parents[1]
COVERED = (
    sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    + sorted((ROOT / "exercises").glob("ex[0-9][0-9]_*.ipynb"))
    + sorted((ROOT / "exercises" / "solutions").glob("ex[0-9][0-9]_*.ipynb"))
)


PUBLISHED = "course-owner/course-name"  # stands in for [project.urls] Repository once it is set


@pytest.fixture
def published(monkeypatch):
    """The course as it will be once pyproject.toml's [project.urls] names its repository."""
    monkeypatch.setattr(colab, "repository", lambda: PUBLISHED)
    return PUBLISHED


def run_cell(colab_present: bool) -> tuple[mock.MagicMock, mock.MagicMock, str]:
    """Execute the Colab cell's source with subprocess.run replaced; return (run mock, widget-manager mock, printed)."""
    fake_output = types.SimpleNamespace(enable_custom_widget_manager=mock.MagicMock())
    modules = {}
    if colab_present:
        modules = {"google": types.ModuleType("google"), "google.colab": types.ModuleType("google.colab")}
        modules["google.colab"].output = fake_output
        modules["google"].colab = modules["google.colab"]
    env = {k: v for k, v in os.environ.items() if k != "COLAB_RELEASE_TAG"}
    printed = []
    with (
        mock.patch.dict(sys.modules, modules),
        mock.patch.dict(os.environ, env, clear=True),
        mock.patch("subprocess.run") as run,
        mock.patch("builtins.print", lambda *a, **k: printed.append(" ".join(map(str, a)))),
    ):
        exec(compile(colab.colab_cell_source(), "<colab cell>", "exec"), {})
    return run, fake_output.enable_custom_widget_manager, "\n".join(printed)


@pytest.mark.parametrize("address", ["unset", "set"])
def test_the_colab_cell_does_nothing_elsewhere(address, monkeypatch):
    if address == "set":
        monkeypatch.setattr(colab, "repository", lambda: PUBLISHED)
    run, widgets, printed = run_cell(colab_present=False)
    run.assert_not_called()
    widgets.assert_not_called()
    assert printed == "", "off Colab the cell prints nothing, so stored outputs stay empty"


def test_while_the_address_is_unset_the_colab_cell_installs_nothing_and_says_how_to_run_locally():
    assert colab.repository() is None, "pyproject.toml names a repository: remove this test's premise"
    run, widgets, printed = run_cell(colab_present=True)
    run.assert_not_called()
    assert "no published address yet" in printed and "make lab" in printed
    assert "github" not in colab.colab_cell_source() and colab.colab_url("notebooks/x.ipynb") is None
    assert colab.binder_url("notebooks/x.ipynb") is None and colab.install_requirement() is None


def test_the_address_is_read_from_pyproject(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(f'[project]\nname = "x"\n[project.urls]\nRepository = "https://github.com/{PUBLISHED}.git"\n')
    assert colab.repository.__wrapped__(pyproject) == PUBLISHED
    pyproject.write_text('[project]\nname = "x"\n')
    assert colab.repository.__wrapped__(pyproject) is None


def test_the_colab_cell_installs_the_course_on_colab_and_says_so(published):
    run, widgets, printed = run_cell(colab_present=True)
    run.assert_called_once()
    command = run.call_args.args[0]
    assert command[0] == sys.executable and command[1:] == colab.install_command()[1:]
    assert run.call_args.kwargs.get("check") is True, "a failed install stops the notebook with pip's message"
    widgets.assert_called_once()
    assert "installing the course" in printed
    source = colab.colab_cell_source()
    assert source.startswith(colab.COLAB_MARKER) and "does nothing" in source.splitlines()[1], (
        "the cell says what it does"
    )


def test_the_install_requirement_is_a_direct_reference_to_the_repository(published):
    requirement = Requirement(colab.install_requirement())
    assert requirement.name == "course_lib"
    assert requirement.url == f"git+{colab.repository_url()}@{colab.BRANCH}"


def test_pip_can_install_the_course_from_a_direct_reference(tmp_path):
    """The same command as on Colab, with the local checkout in place of the repository URL (no network here)."""
    report = tmp_path / "report.json"
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--dry-run",
        "--no-deps",
        "--no-build-isolation",
        "--no-index",
        "--ignore-installed",
        "--report",
        str(report),
        f"course_lib @ {ROOT.as_uri()}",
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    installed = json.loads(report.read_text())["install"]
    assert [item["metadata"]["name"] for item in installed] == ["course_lib"]


def test_the_website_and_binder_links_open_existing_notebooks(published):
    for path in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"):
        relative = f"notebooks/{path.name}"
        binder = colab.binder_url(relative)
        assert binder.startswith(f"https://mybinder.org/v2/gh/{published}/{colab.BRANCH}?urlpath=lab/tree/")
        assert binder.endswith(f"?urlpath=lab/tree/{relative}")
        assert (
            colab.colab_url(relative)
            == f"https://colab.research.google.com/github/{published}/blob/{colab.BRANCH}/{relative}"
        )


@pytest.mark.parametrize("path", COVERED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_notebook_starts_with_the_colab_cell(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    first = next(cell for cell in cells if cell["cell_type"] == "code")
    source = "".join(first["source"]) if isinstance(first["source"], list) else first["source"]
    assert source == colab.colab_cell_source(), (
        f"{path.name}: the first code cell is not the current Colab setup cell; run python -m course_lib notebook prepare"
    )
    assert set(colab.COLAB_TAGS) <= set(first.get("metadata", {}).get("tags", []))
    assert first.get("outputs", []) == [], "off Colab the cell has no output"


# --------------------------------------------------------------------------- Binder


def test_binder_installs_the_course_with_cpu_torch():
    lines = [line.strip() for line in (ROOT / "binder" / "requirements.txt").read_text().splitlines()]
    options = [line for line in lines if line and not line.startswith("#")]
    assert f"--extra-index-url {install_torch.CPU_INDEX}" in options, "Binder uses the same CPU index as make install"
    assert "-r ../requirements.txt" in options and (ROOT / "requirements.txt").is_file()
    post_build = ROOT / "binder" / "postBuild"
    assert os.access(post_build, os.X_OK), "repo2docker runs postBuild only if it is executable"
    assert "python -m pip install --no-deps -e ." in post_build.read_text()
    runtime = (ROOT / "binder" / "runtime.txt").read_text().strip()
    assert re.fullmatch(r"python-3\.(1[0-9])", runtime), runtime


@pytest.mark.skipif(os.name != "posix", reason="served indexes and shell paths as on Binder (Linux)")
def test_pip_resolves_binders_requirements_to_the_cpu_build(tmp_path):
    def serve(folder: Path) -> tuple[str, http.server.ThreadingHTTPServer]:
        handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
        handler.log_message = lambda *args: None
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{server.server_address[1]}", server

    cpu, cpu_server = serve(make_index(tmp_path / "cpu", "2.13.0+cpu"))
    default, default_server = serve(make_index(tmp_path / "default", "2.13.0"))
    try:
        # binder/requirements.txt as Binder reads it, with the CPU index served locally and the course's pins
        # reduced to torch's (the other packages need a real index; their pins are tested by the install itself)
        binder = tmp_path / "binder"
        binder.mkdir()
        text = (ROOT / "binder" / "requirements.txt").read_text().replace(install_torch.CPU_INDEX, cpu)
        (binder / "requirements.txt").write_text(text)
        (tmp_path / "requirements.txt").write_text(install_torch.torch_requirement(ROOT / "requirements.txt") + "\n")
        report = tmp_path / "report.json"
        env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
        env.update(PIP_CONFIG_FILE=os.devnull, PIP_INDEX_URL=default + "/", PIP_NO_CACHE_DIR="1")
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--dry-run",
                "--ignore-installed",
                "--no-deps",
                "--quiet",
                "--report",
                str(report),
                "-r",
                "binder/requirements.txt",
            ],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        versions = {
            item["metadata"]["name"]: item["metadata"]["version"] for item in json.loads(report.read_text())["install"]
        }
        assert versions == {"torch": "2.13.0+cpu"}
    finally:
        for server in (cpu_server, default_server):
            server.shutdown()
            server.server_close()


def test_citation_and_links_name_the_same_repository(tmp_path):
    citation = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    copy = tmp_path / "CITATION.cff"
    copy.write_text(citation, encoding="utf-8")
    assert not colab.sync_citation(copy), (
        "CITATION.cff follows [project.urls]: run python -m course_lib notebook prepare"
    )
    if colab.repository() is None:
        assert "repository-code" not in citation
    assert "cff-version: 1.2.0" in citation and "- MIT" in citation and "- CC-BY-4.0" in citation
    assert "MIT License" in (ROOT / "LICENSE").read_text() and "CC BY 4.0" in (ROOT / "LICENSE-content").read_text()
