"""The exercise tooling: one source of truth (generation), learner notebooks that run, reset that never loses
work, progress, and grading that survives crashing and hanging submissions.

Every tool works on a folder passed in, so these tests use temporary copies and never touch the repository's
exercises/ (only read it).
"""

import csv
import datetime as dt
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from course_lib.checks import EXERCISES
from course_lib.tools import cli
from course_lib.tools.exercises import build as generate
from course_lib.tools.exercises import files as tools
from course_lib.tools.grading import grade as grading
from course_lib.tools.grading import gradebook
from course_lib.tools.grading.runner import run_notebooks

ROOT = Path(__file__).resolve().parents[1]
EXERCISES_DIR = ROOT / "exercises"


@pytest.fixture
def workdir(tmp_path) -> Path:
    """A copy of exercises/ (solutions and learner versions) to run the tools on."""
    target = tmp_path / "exercises"
    shutil.copytree(EXERCISES_DIR, target, ignore=shutil.ignore_patterns("backups", ".ipynb_checkpoints"))
    return target


def _read(path: Path):
    return nbformat.read(path, as_version=4)


def _check_cells(notebook):
    return [
        cell
        for cell in notebook.cells
        if cell.cell_type == "code" and any(f"{c}(" in cell.source for c, _ in _all_checks())
    ]


def _all_checks():
    return [pair for exercise in EXERCISES.values() for pair in exercise.checks]


def _stdout(cell) -> str:
    return "".join(output.get("text", "") for output in cell.outputs if output.get("output_type") == "stream")


# ---------------------------------------------------------------------------------------- one source of truth


def test_committed_learner_notebooks_equal_a_fresh_generation():
    stale = generate.stale(EXERCISES_DIR)
    assert not stale, f"regenerate with `python -m course_lib exercises build`: {stale} differ from their solutions"


def test_learner_notebooks_have_no_outputs_and_no_solution_left():
    for name in EXERCISES:
        learner = _read(generate.learner_path(EXERCISES_DIR, name))
        solution = _read(generate.solution_path(EXERCISES_DIR, name))
        text = "\n".join(cell.source for cell in learner.cells)
        assert generate.BEGIN not in text and generate.END not in text and generate.CHECK_MARKER not in text
        for cell in learner.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, f"{name}: outputs left in a learner cell"
            assert "execution" not in cell.metadata
        solution_lines = []
        for cell in solution.cells:
            inside = False
            for line in cell.source.splitlines():
                if line.strip() == generate.BEGIN:
                    inside = True
                elif line.strip() == generate.END:
                    inside = False
                elif inside and line.strip():
                    solution_lines.append(line.strip())
        assert solution_lines, f"{name}: no solution between markers"
        learner_lines = {line.strip() for cell in learner.cells for line in cell.source.splitlines()}
        leaked = [line for line in solution_lines if line in learner_lines]
        assert not leaked, f"{name}: solution lines leaked into the learner version: {leaked}"


def test_solution_notebooks_are_executed_and_every_check_passes():
    for name, exercise in EXERCISES.items():
        notebook = _read(generate.solution_path(EXERCISES_DIR, name))
        counts = [cell.execution_count for cell in notebook.cells if cell.cell_type == "code"]
        assert counts == list(range(1, len(counts) + 1)), f"{name}: run it top to bottom in a fresh kernel"
        calls = {}
        for cell in notebook.cells:
            if cell.cell_type == "code":
                assert not any(o.get("output_type") == "error" for o in cell.outputs), f"{name}: an error cell"
                for check, function in exercise.checks:
                    if f"{check}({function})" in cell.source:
                        assert generate.checks_output(cell), f"{name}: {check} cell lacks the nbval marker"
                        calls[check] = _stdout(cell)
        assert set(calls) == {check for check, _ in exercise.checks}, f"{name}: missing check cells"
        for check, text in calls.items():
            assert text.startswith(f"✅ {check}:"), f"{name}: {check} printed {text!r}"


def test_stub_source_keeps_the_indentation_and_names_the_function():
    source = (
        "class Model:\n"
        "    def forward(self, x):\n"
        '        """doc"""\n'
        "        ### BEGIN SOLUTION\n"
        "        return x * 2\n"
        "        ### END SOLUTION\n"
        "\n"
        "def helper(x):\n"
        "    y = x + 1\n"
        "    ### BEGIN SOLUTION\n"
        "    if y > 0:\n"
        "        return y\n"
        "    return -y\n"
        "    ### END SOLUTION\n"
    )
    stubbed = generate.stub_source(source)
    assert '        raise NotImplementedError("forward: replace this line with your code")' in stubbed
    assert '    raise NotImplementedError("helper: replace this line with your code")' in stubbed
    assert "return x * 2" not in stubbed and "return -y" not in stubbed and "    y = x + 1" in stubbed
    compile(stubbed, "stub", "exec")


@pytest.mark.parametrize(
    "source, problem",
    [
        ("def f():\n    ### BEGIN SOLUTION\n    return 1\n", "never closed"),
        ("def f():\n    return 1\n    ### END SOLUTION\n", "without"),
        ("### BEGIN SOLUTION\nx = 1\n### END SOLUTION\n", "indented"),
        ("def f():\n    ### BEGIN SOLUTION\n    ### BEGIN SOLUTION\n", "inside another"),
    ],
)
def test_malformed_markers_are_refused(source, problem):
    with pytest.raises(generate.GenerationError, match=problem):
        generate.stub_source(source)


def test_learner_version_drops_solution_only_cells_markers_and_outputs():
    solution = nbformat.v4.new_notebook()
    banner = nbformat.v4.new_markdown_cell("solution banner")
    banner.metadata["tags"] = ["solution-only"]
    body = nbformat.v4.new_code_cell("def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION")
    check = nbformat.v4.new_code_cell("# NBVAL_CHECK_OUTPUT\ncheck(f)", execution_count=2)
    check.outputs = [nbformat.v4.new_output("stream", text="✅ ok\n")]
    check.metadata["execution"] = {"iopub.status.busy": "2024"}
    tagged = nbformat.v4.new_code_cell("check(f)", execution_count=3)
    tagged.metadata["tags"] = ["nbval-check-output"]
    solution.cells = [banner, body, check, tagged]
    learner = generate.learner_version(solution)
    assert [cell.source for cell in learner.cells] == [
        'def f(x):\n    raise NotImplementedError("f: replace this line with your code")',
        "check(f)",
        "check(f)",
    ]
    assert "tags" not in learner.cells[2].metadata, "the nbval tag goes with the outputs it would compare"
    assert generate.checks_output(tagged) and generate.checks_output(check) and not generate.checks_output(body)
    assert learner.cells[1].outputs == [] and learner.cells[1].execution_count is None
    assert "execution" not in learner.cells[1].metadata
    assert solution.cells[2].outputs, "the solution itself is left untouched"


def test_learner_version_drops_the_check_output_tag_and_keeps_other_tags():
    solution = nbformat.v4.new_notebook()
    check = nbformat.v4.new_code_cell("check(f)", execution_count=1)
    check.metadata["tags"] = ["nbval-check-output"]
    folded = nbformat.v4.new_code_cell("show()", execution_count=2)
    folded.metadata["tags"] = ["fold", "nbval-check-output"]
    solution.cells = [check, folded]
    learner = generate.learner_version(solution)
    assert "tags" not in learner.cells[0].metadata, "the learner version stores no output to compare"
    assert learner.cells[1].metadata["tags"] == ["fold"]
    assert solution.cells[1].metadata["tags"] == ["fold", "nbval-check-output"], "the solution is left untouched"


def test_build_writes_only_what_changed(workdir):
    target = generate.learner_path(workdir, "ex04_positional_encoding")
    target.write_text("{}", encoding="utf-8")
    results = dict(tools.build(workdir, echo=None))
    assert results["ex04_positional_encoding"] is True
    assert sum(results.values()) == 1
    (backup,) = (workdir / "backups").iterdir()
    assert backup.name.startswith("ex04_positional_encoding-") and backup.read_text() == "{}", (
        "build keeps what it replaces"
    )
    assert generate.stale(workdir) == []
    assert cli.main(["exercises", "build", "--check", "--dir", str(workdir)]) == 0


@pytest.mark.parametrize("broken", ["not json at all", '{"cells": "not a list"}'], ids=["not JSON", "not a notebook"])
def test_build_validates_every_solution_before_writing_anything(workdir, broken, capsys):
    for name in ("ex01_rnn", "ex02_attention"):  # stale learner notebooks that a build would rewrite
        generate.learner_path(workdir, name).write_text("{}", encoding="utf-8")
    before = {path: path.read_bytes() for path in workdir.rglob("*.ipynb")}
    generate.solution_path(workdir, "ex05_layernorm_residual").write_text(broken, encoding="utf-8")
    before[generate.solution_path(workdir, "ex05_layernorm_residual")] = broken.encode()
    for argv in (["exercises", "build"], ["exercises", "build", "--check"], ["exercises", "build", "--execute"]):
        assert cli.main([*argv, "--dir", str(workdir)]) == 2
        err = capsys.readouterr().err
        assert "ex05_layernorm_residual.ipynb" in err and "not a valid notebook" in err and "Traceback" not in err, err
    assert {path: path.read_bytes() for path in workdir.rglob("*.ipynb")} == before, "nothing may be written"
    assert not (workdir / "backups").exists()


def test_build_check_reports_a_stale_learner_notebook(workdir, capsys):
    path = generate.learner_path(workdir, "ex01_rnn")
    path.write_text(path.read_text(encoding="utf-8").replace("rnn_step", "rnn_stp"), encoding="utf-8")
    assert cli.main(["exercises", "build", "--check", "--dir", str(workdir)]) == 1
    assert "ex01_rnn" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------- learner notebooks run


@pytest.mark.slow
def test_learner_notebooks_run_and_every_check_says_not_implemented_yet(tmp_path):
    """All the learner notebooks in ONE kernel (a %reset between them), to keep the suite fast."""
    from nbclient import NotebookClient

    combined = nbformat.v4.new_notebook(
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    )
    origin = []
    for name in EXERCISES:
        for index, cell in enumerate(_read(generate.learner_path(EXERCISES_DIR, name)).cells):
            combined.cells.append(cell)
            origin.append((name, index))
        combined.cells.append(nbformat.v4.new_code_cell("%reset -f"))
        origin.append((name, "reset"))
    NotebookClient(
        combined,
        kernel_name="python3",
        timeout=120,
        allow_errors=True,
        record_timing=False,
        resources={"metadata": {"path": str(tmp_path)}},
    ).execute()
    seen = {name: 0 for name in EXERCISES}
    for cell, (name, index) in zip(combined.cells, origin):
        if cell.cell_type != "code":
            continue
        errors = [o for o in cell.outputs if o.get("output_type") == "error"]
        assert not errors, f"{name} cell {index} raised {errors[0].get('ename')}: {errors[0].get('evalue')}"
        for check, function in EXERCISES[name].checks:
            if cell.source.strip() == f"{check}({function})":
                text = _stdout(cell)
                assert text.startswith(f"⏳ {check}: not implemented yet"), f"{name}: {check} printed {text!r}"
                seen[name] += 1
    assert seen == {name: len(exercise.checks) for name, exercise in EXERCISES.items()}


# ---------------------------------------------------------------------------------------- reset


def _modify(path: Path) -> bytes:
    notebook = _read(path)
    notebook.cells[2].source += "\n# my own notes: keep me!"
    nbformat.write(notebook, path)
    return path.read_bytes()


def test_reset_backs_up_the_learners_work_then_gives_a_fresh_copy(workdir):
    path = generate.learner_path(workdir, "ex02_attention")
    mine = _modify(path)
    outcome = tools.reset("ex02_attention", workdir, now=dt.datetime(2025, 1, 2, 3, 4, 5))
    assert outcome.backup == workdir / "backups" / "ex02_attention-20250102-030405.ipynb"
    assert outcome.backup.read_bytes() == mine, "the backup must hold exactly the learner's version"
    assert path.read_text(encoding="utf-8") == generate.generate_text(workdir, "ex02_attention")
    assert "Saved your version" in outcome.message


def test_reset_twice_in_the_same_second_keeps_both_backups(workdir):
    path = generate.learner_path(workdir, "ex03_multi_head")
    now = dt.datetime(2025, 1, 2, 3, 4, 5)
    first = _modify(path)
    tools.reset("ex03", workdir, now=now)
    second = _modify(path) + b""
    path.write_bytes(second.replace(b"keep me!", b"keep me too!"))
    second = path.read_bytes()
    tools.reset("3", workdir, now=now)
    backups = sorted((workdir / "backups").iterdir())
    assert [b.name for b in backups] == [
        "ex03_multi_head-20250102-030405-2.ipynb",
        "ex03_multi_head-20250102-030405.ipynb",
    ]
    assert {b.read_bytes() for b in backups} == {first, second}


def test_reset_changes_nothing_when_the_backup_cannot_be_written(workdir):
    path = generate.learner_path(workdir, "ex05_layernorm_residual")
    mine = _modify(path)
    (workdir / "backups").write_text("a file where the backups folder should be")
    with pytest.raises(tools.ExerciseToolError, match="Nothing was changed"):
        tools.reset("ex05_layernorm_residual", workdir)
    assert path.read_bytes() == mine


def test_reset_of_a_fresh_or_missing_notebook(workdir):
    outcome = tools.reset("ex06_encoder_block", workdir)
    assert outcome.backup is None and "already a fresh copy" in outcome.message
    path = generate.learner_path(workdir, "ex06_encoder_block")
    path.unlink()
    outcome = tools.reset("ex06_encoder_block.ipynb", workdir)
    assert outcome.backup is None and path.exists() and not (workdir / "backups").exists()


def test_reset_with_an_unknown_name_lists_the_exercises(workdir, capsys):
    assert cli.main(["exercises", "reset", "ex09_magic", "--dir", str(workdir)]) == 2
    error = capsys.readouterr().err
    assert "no exercise called 'ex09_magic'" in error and "Traceback" not in error
    for name in EXERCISES:
        assert name in error


def test_the_command_line_gives_friendly_errors_without_tracebacks(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "course_lib", "exercises", "reset", "attention_please", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert "no exercise called" in run.stderr and "ex02_attention" in run.stderr


def test_a_folder_that_is_not_the_exercises_folder_is_explained(tmp_path, capsys):
    assert cli.main(["exercises", "reset", "ex01", "--dir", str(tmp_path)]) == 2
    assert "does not look like the course's exercises folder" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------- progress


@pytest.mark.slow
def test_progress_lists_which_exercises_pass(workdir):
    shutil.copyfile(
        generate.solution_path(workdir, "ex04_positional_encoding"),
        generate.learner_path(workdir, "ex04_positional_encoding"),
    )
    for name in ("ex01_rnn", "ex02_attention", "ex03_multi_head", "ex06_encoder_block"):
        generate.learner_path(workdir, name).unlink()
    lines = []
    rows = tools.progress(workdir, timeout=60, jobs=2, echo=lines.append)
    states = {row.exercise: row.state for row in rows}
    assert states == {
        "ex01_rnn": "missing",
        "ex02_attention": "missing",
        "ex03_multi_head": "missing",
        "ex04_positional_encoding": "passes",
        "ex05_layernorm_residual": "not started",
        "ex06_encoder_block": "missing",
        "ex08_language_model": "not started",
        "ex09_induction_heads": "not started",
        "ex10_rope_online_softmax": "not started",
        "ex11_tokenizer": "not started",
    }
    report = lines[-1]
    assert "1 of 10 exercises pass." in report and "✅ sinusoidal_encoding" in report


# ---------------------------------------------------------------------------------------- grading


def _notebook_with(base: Path, extra_source: str, path: Path) -> None:
    notebook = _read(base)
    notebook.cells.insert(2, nbformat.v4.new_code_cell(extra_source))
    nbformat.write(notebook, path)


def test_grading_survives_crashing_and_hanging_submissions(workdir, tmp_path):
    submissions = tmp_path / "submissions"
    (submissions / "alice").mkdir(parents=True)
    (submissions / "bob").mkdir()
    shutil.copyfile(
        generate.solution_path(workdir, "ex04_positional_encoding"),
        submissions / "alice" / "ex04_positional_encoding.ipynb",
    )
    shutil.copyfile(generate.learner_path(workdir, "ex05_layernorm_residual"), submissions / "alice" / "ex05.ipynb")
    _notebook_with(
        generate.learner_path(workdir, "ex04_positional_encoding"),
        "import os\nos._exit(3)",
        submissions / "bob" / "ex04_positional_encoding.ipynb",
    )
    _notebook_with(
        generate.learner_path(workdir, "ex05_layernorm_residual"),
        "while True:\n    pass",
        submissions / "carol__ex05_layernorm_residual.ipynb",
    )
    (submissions / "bob" / "notes.txt").write_text("not a notebook")
    (submissions / "stray.ipynb").write_text("{}")
    before = {path: path.read_bytes() for path in submissions.rglob("*") if path.is_file()}

    out = tmp_path / "scores"
    assert cli.main(["exercises", "grade", str(submissions), "--out", str(out), "--timeout", "10", "--jobs", "4"]) == 0

    after = {path: path.read_bytes() for path in submissions.rglob("*") if path.is_file()}
    assert after == before, "grading must never modify the submissions"
    rows = list(csv.DictReader((out / "scores.csv").open(encoding="utf-8")))
    table = {row["student_id"]: row for row in rows}
    outcome = {"ex04_positional_encoding": "pass", "ex05_layernorm_residual": "fail"}
    assert [table["alice"][e] for e in EXERCISES] == [outcome.get(e, "missing") for e in EXERCISES]
    config = gradebook.load_config()  # the course's gradebook.yaml: points per exercise, shared by its checks
    ex04 = config.maximum("ex04_positional_encoding")
    everything = sum(config.maximum(e) for e in EXERCISES)
    checks = sum(len(exercise.specs) for exercise in EXERCISES.values())
    assert [
        table["alice"][k]
        for k in ("pass", "fail", "error", "timeout", "missing", "checks_passed", "checks", "points", "points_possible")
    ] == ["1", "1", "0", "0", str(len(EXERCISES) - 2), "1", str(checks), f"{ex04:g}", f"{everything:g}"]
    assert (
        table["alice"]["ex04_positional_encoding points"] == f"{ex04:g}"
        and table["alice"]["ex04_positional_encoding checks passed"] == "1"
        and table["alice"]["ex05_layernorm_residual points"] == "0"
        and table["alice"]["ex05_layernorm_residual:check_layer_norm"] == "not_implemented"
    )
    assert (
        table["bob"]["ex04_positional_encoding"] == "error" and table["carol"]["ex05_layernorm_residual"] == "timeout"
    )
    markdown = (out / "scores.md").read_text(encoding="utf-8")
    cells = [
        f"{outcome.get(e, 'missing')} {int(e == 'ex04_positional_encoding')}/{len(EXERCISES[e].specs)} checks, "
        f"{ex04 if e == 'ex04_positional_encoding' else 0:g} / {config.maximum(e):g} points"
        for e in EXERCISES
    ]
    row = (
        f"| alice | {' | '.join(cells)} | 1 | 1 | 0 | 0 | {len(EXERCISES) - 2} | 1/{checks} | {ex04:g}/{everything:g} |"
    )
    assert row in markdown, markdown
    assert "process died" in markdown and "did not finish" in markdown
    assert "stray.ipynb" in markdown and "notes.txt" in markdown and "Skipped files" in markdown


def test_grading_refuses_to_write_into_the_submissions(tmp_path, capsys):
    (tmp_path / "alice").mkdir()
    assert cli.main(["exercises", "grade", str(tmp_path), "--out", str(tmp_path / "alice" / "out")]) == 2
    assert "outside the submissions folder" in capsys.readouterr().err
    assert cli.main(["exercises", "grade", str(tmp_path / "nowhere"), "--out", str(tmp_path / "out")]) == 2


def test_discover_reads_both_layouts(tmp_path):
    (tmp_path / "dana" / ".ipynb_checkpoints").mkdir(parents=True)
    for name in (
        "dana/ex1_rnn.ipynb",
        "dana/ex02_attention.ipynb",
        "dana/ex02_attention (1).ipynb",
        "dana/.ipynb_checkpoints/ex03_multi_head-checkpoint.ipynb",
        "dana/scratch.ipynb",
        "eve__ex06.ipynb",
        "eve_ex05.ipynb",
    ):
        (tmp_path / name).write_text("{}")
    found, skipped = grading.discover(tmp_path)
    assert [(s.learner, s.exercise, s.path.name) for s in found] == [
        ("dana", "ex01_rnn", "ex1_rnn.ipynb"),
        ("dana", "ex02_attention", "ex02_attention.ipynb"),
        ("eve", "ex06_encoder_block", "eve__ex06.ipynb"),
    ]
    assert {path.name for path, _ in skipped} == {"ex02_attention (1).ipynb", "scratch.ipynb", "eve_ex05.ipynb"}


def test_an_unreadable_notebook_is_an_error_not_a_crash(tmp_path):
    path = tmp_path / "ex01_rnn.ipynb"
    path.write_text("this is not json")
    (run,) = run_notebooks([(path, "ex01_rnn")], timeout=10)
    assert run.status == "unreadable" and run.outcome == "error" and "not a valid notebook" in run.detail
