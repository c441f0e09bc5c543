"""The learner-only bundle: every notebook and learner exercise, no solution, `exercises reset` works inside it, and
bad `--out` values are refused with a clear message (nothing written, nothing overwritten)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from course_lib.checks import EXERCISES
from course_lib.tools import cli
from course_lib.tools.exercises import build as generate
from course_lib.tools.publish import bundle as bundle_module
from course_lib.tools.publish.speaker_notes import all_notes, strip_notes

ROOT = Path(__file__).resolve().parents[1]


def run_course(args, cwd, timeout=120):
    """``python -m course_lib ARGS`` in ``cwd`` (so the bundle's own course_lib is the one imported there)."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        [sys.executable, "-m", "course_lib", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env
    )


@pytest.fixture(scope="module")
def learners(tmp_path_factory):
    out = tmp_path_factory.mktemp("bundle") / "course-for-learners"
    bundle_module.build_bundle(out, echo=None)
    return out


@pytest.fixture(scope="module")
def blocks():
    found = bundle_module.solution_blocks(ROOT / "exercises")
    assert len(found) >= sum(len(exercise.checks) for exercise in EXERCISES.values()), (
        "every checked function has a solution block"
    )
    return found


def test_the_bundle_has_every_notebook_and_learner_exercise(learners):
    for notebook in (ROOT / "notebooks").glob("*.ipynb"):
        ours, theirs = (
            nbformat.read(notebook, as_version=4),
            nbformat.read(learners / "notebooks" / notebook.name, as_version=4),
        )
        assert all_notes(ours), f"{notebook.name}: every lesson carries speaker notes (cells or cell metadata)"
        strip_notes(ours)
        assert ours.cells == theirs.cells, f"{notebook.name}: the lesson minus its speaker notes"
        assert not any("Speaker notes" in cell.source for cell in theirs.cells), notebook.name
        assert all_notes(theirs) == [], notebook.name
    for name in EXERCISES:
        learner = learners / "exercises" / f"{name}.ipynb"
        assert learner.read_text(encoding="utf-8") == generate.generate_text(ROOT / "exercises", name)
        assert (learners / "exercises" / "pristine" / f"{name}.ipynb").read_bytes() == learner.read_bytes()
    for name in (
        "README.md",
        "requirements.txt",
        "pyproject.toml",
        "course_lib/__init__.py",
        "course_lib/tools/cli.py",
        "course_lib/interactive/quiz/banks/final.yaml",
        "docs/exercises.md",
        "docs/quizzes.md",
    ):
        assert (learners / name).is_file(), name


def test_the_bundle_contains_no_solution(learners, blocks):
    assert not (learners / "exercises" / "solutions").exists()
    assert not list(learners.rglob("tests")), "the test suite reads the solutions; it stays with the instructor"
    notebooks = list(learners.rglob("*.ipynb"))
    assert len(notebooks) >= 7 + 2 * len(EXERCISES)
    marked = [p.name for p in notebooks if generate.BEGIN in p.read_text() or generate.END in p.read_text()]
    assert marked == [], f"solution markers in {marked}"
    assert bundle_module.find_solution_text(learners, blocks) == []
    # the only whole solution blocks anywhere are course_lib's own reference code, named one by one
    everything = {(file, block.exercise, block.function) for file, block in _all_hits(learners, blocks)}
    allowed = {
        (file, exercise, function)
        for (exercise, function), files in bundle_module.ALLOWED_REFERENCE_CODE.items()
        for file in files
    }
    assert everything <= allowed, everything - allowed
    assert "BEGIN SOLUTION" not in (learners / "INSTRUCTORS.md").read_text()


def _all_hits(folder, blocks):
    saved = bundle_module.ALLOWED_REFERENCE_CODE
    try:
        bundle_module.ALLOWED_REFERENCE_CODE = {}
        return bundle_module.find_solution_text(folder, blocks)
    finally:
        bundle_module.ALLOWED_REFERENCE_CODE = saved


def test_the_scan_finds_solution_code_when_it_is_there(tmp_path, blocks):
    softmax = next(block for block in blocks if block.function == "softmax")
    (tmp_path / "notes.py").write_text(
        "def softmax(scores):\n" + "\n".join("    " + line for line in softmax.lines) + "\n"
    )
    (tmp_path / "copy.ipynb").write_bytes(
        (ROOT / "exercises" / "solutions" / "ex05_layernorm_residual.ipynb").read_bytes()
    )
    hits = {(file, block.function) for file, block in bundle_module.find_solution_text(tmp_path, blocks)}
    assert ("notes.py", "softmax") in hits
    assert ("copy.ipynb", "layer_norm") in hits and ("copy.ipynb", "sublayer_connection") in hits


def test_exercises_reset_works_inside_the_bundle(learners, capsys):
    target = learners / "exercises" / "ex02_attention.ipynb"
    fresh = target.read_bytes()
    notebook = nbformat.read(target, as_version=4)
    notebook.cells[-1].source += "\n# my own work"
    nbformat.write(notebook, target)
    # as a learner runs it: from the bundle's folder, with the bundle's own course_lib and no solutions anywhere
    run = run_course(["exercises", "reset", "ex02"], learners)
    assert run.returncode == 0, run.stderr
    assert str(target) in run.stdout, "the bundle's exercises folder was the one reset"
    assert target.read_bytes() == fresh, "reset restores the fresh copy"
    backups = list((learners / "exercises" / "backups").glob("ex02_attention-*.ipynb"))
    assert len(backups) == 1 and "# my own work" in backups[0].read_text()
    assert cli.main(["exercises", "list", "--dir", str(learners / "exercises")]) == 0
    assert "ex06_encoder_block" in capsys.readouterr().out


def test_instructor_tools_explain_that_a_bundle_has_no_solutions(learners, capsys):
    for args in (["exercises", "build"], ["exercises", "build", "--check"]):
        assert cli.main([*args, "--dir", str(learners / "exercises")]) == 2
        assert "no solutions/ folder" in capsys.readouterr().err


@pytest.mark.parametrize(
    "case", ["not-empty", "a-file", "inside-the-course", "the-course-itself", "a-parent-of-the-course", "empty"]
)
def test_bad_out_is_refused_with_a_clear_message(case, tmp_path, capsys):
    if case == "not-empty":
        out = tmp_path / "taken"
        out.mkdir()
        (out / "my-work.txt").write_text("keep me")
        expected = "not empty"
    elif case == "a-file":
        out = tmp_path / "file.txt"
        out.write_text("keep me")
        expected = "is a file"
    elif case == "inside-the-course":
        out = ROOT / "notebooks" / "learners"
        expected = "inside the course folder"
    elif case == "the-course-itself":
        out, expected = ROOT, "not empty"
    elif case == "a-parent-of-the-course":
        out, expected = ROOT.parent, "not empty"
    else:
        out, expected = "", "--out is empty"
    before = sorted(p.name for p in tmp_path.rglob("*"))
    assert cli.main(["bundle", "--out", str(out)]) == 2
    assert expected in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.rglob("*")) == before, "nothing was written or removed"
    assert not (ROOT / "notebooks" / "learners").exists()


def test_the_command_prints_one_message_not_a_traceback(tmp_path):
    (tmp_path / "my-work.txt").write_text("keep me")
    run = run_course(["bundle", "--out", str(tmp_path)], ROOT)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.strip().startswith("--out") and "not empty" in run.stderr


def test_a_bundle_under_the_ignored_build_folder_is_allowed(tmp_path, monkeypatch):
    course = tmp_path / "course"
    course.mkdir()
    assert (
        bundle_module.check_out_dir(course / "build" / "learners", course) == (course / "build" / "learners").resolve()
    )
    with pytest.raises(bundle_module.BundleError, match="inside the course folder"):
        bundle_module.check_out_dir(course / "docs" / "learners", course)


def test_the_bundles_makefile_has_no_contributor_targets(learners):
    import shutil
    import subprocess

    text = (learners / "Makefile").read_text()
    for target in ("test", "test-fast", "test-notebook", "lint", "format", "benchmark", "hub-proxy", "install-dev"):
        assert not re.search(rf"^{re.escape(target)}:", text, re.M), f"make {target} ships in the learner bundle"
    if shutil.which("make"):
        lab = subprocess.run(["make", "-n", "lab"], cwd=learners, capture_output=True, text=True)
        assert lab.returncode == 0 and "jupyter lab" in lab.stdout, lab.stderr
        test = subprocess.run(["make", "-n", "test"], cwd=learners, capture_output=True, text=True)
        assert test.returncode != 0 and "No rule" in test.stderr


def test_through_releases_the_course_up_to_a_notebook(tmp_path):
    from course_lib._syllabus import COURSE

    out = tmp_path / "week2"
    bundle_module.build_bundle(out, echo=None, through="4")
    early = [row for row in COURSE if row.number <= "04"]
    assert sorted(p.name for p in (out / "notebooks").glob("*.ipynb")) == sorted(row.file for row in early)
    expected = sorted(f"{row.exercise}.ipynb" for row in early if row.exercise)
    assert sorted(p.name for p in (out / "exercises").glob("*.ipynb")) == expected
    assert sorted(p.name for p in (out / "exercises" / "pristine").glob("*.ipynb")) == expected
    readme = (out / "README.md").read_text()
    assert "notebooks/04_" in readme and "notebooks/05_" not in readme
    with pytest.raises(bundle_module.BundleError, match="not a notebook number"):
        bundle_module.build_bundle(tmp_path / "bad", echo=None, through="99")
