"""The environment check: OK/FAIL per package, the device, widgets, and a non-zero exit on a FAIL."""

import subprocess
import sys

import pytest

from course_lib.tools.cli import main
from course_lib.tools.setup import doctor


def test_doctor_passes_here_and_reports_every_package(capsys):
    assert doctor.run() == 0
    out = capsys.readouterr().out
    for _, distribution, _, _ in doctor.REQUIRED:
        assert f"OK    {distribution}" in out
    assert "device: cpu" in out or "device: cuda" in out
    assert "widgets" in out


def test_doctor_fails_on_a_missing_package(monkeypatch, capsys):
    monkeypatch.setattr(doctor, "REQUIRED", doctor.REQUIRED + [("no_such_module_xyz", "no-such-dist", "1.0", "a test")])
    assert doctor.run() == 1
    out = capsys.readouterr().out
    assert "FAIL  no-such-dist" in out and "cannot import" in out
    assert "make install" in out, "a FAIL must say what to do next"


def test_doctor_fails_on_an_old_version(monkeypatch, capsys):
    monkeypatch.setattr(doctor, "REQUIRED", [("torch", "torch", "99.0", "a test")])
    assert doctor.run() == 1
    assert "too old" in capsys.readouterr().out


def test_version_comparison():
    assert doctor._version_tuple("2.13.0+cpu") == (2, 13, 0)
    assert doctor._version_tuple("8.1.9rc1") == (8, 1, 9)
    assert doctor._version_tuple("3.10") > doctor._version_tuple("3.9")


@pytest.mark.slow
def test_module_entry_point_exit_code():
    result = subprocess.run([sys.executable, "-m", "course_lib", "doctor"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "All good" in result.stdout


def test_cli_without_command_prints_help(capsys):
    assert main([]) == 2
    assert "doctor" in capsys.readouterr().out


def test_output_piped_into_a_reader_that_stops_early_gives_no_traceback():
    import subprocess
    import sys

    process = subprocess.Popen(
        [sys.executable, "-m", "course_lib", "doctor"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    process.stdout.readline()  # read one line, like `| head -1`, then stop reading
    process.stdout.close()
    stderr = process.stderr.read().decode()
    process.wait(timeout=60)
    assert "Traceback" not in stderr, stderr


def _bare_python(*args, cwd):
    """This Python without its site-packages (``-S``): no torch, numpy, yaml, jupyter; course_lib from the repository."""
    import os
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["PYTHONPATH"] = str(root)
    return subprocess.run([sys.executable, "-S", *args], capture_output=True, text=True, timeout=120, cwd=cwd, env=env)


def test_doctor_runs_on_a_bare_python_and_prints_its_fail_table(tmp_path):
    check = _bare_python("-c", "import torch", cwd=tmp_path)
    assert check.returncode != 0, "this test needs a Python whose -S hides torch"
    result = _bare_python("-m", "course_lib", "doctor", cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert "FAIL  torch" in result.stdout and "FAIL  pyyaml" in result.stdout and "make install" in result.stdout


def test_other_commands_and_the_library_explain_a_missing_package(tmp_path):
    result = _bare_python("-m", "course_lib", "quiz", "check", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr and "doctor" in result.stderr, result.stderr
    result = _bare_python("-c", "import course_lib; course_lib.LayerNorm", cwd=tmp_path)
    assert "course_lib needs torch" in result.stderr and "doctor" in result.stderr
