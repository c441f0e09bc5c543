"""The environment check: OK/FAIL per package, the device, widgets, and a non-zero exit on a FAIL."""

import subprocess
import sys

from course_lib.tools import doctor
from course_lib.tools.cli import main


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

    process = subprocess.Popen([sys.executable, "-m", "course_lib", "doctor"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.readline()  # read one line, like `| head -1`, then stop reading
    process.stdout.close()
    stderr = process.stderr.read().decode()
    process.wait(timeout=60)
    assert "Traceback" not in stderr, stderr
