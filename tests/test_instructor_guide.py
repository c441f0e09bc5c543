"""The instructor guide covers every notebook and links the matching exercise and quiz bank; its links resolve and the
quiz question ids it cites exist."""

import re
from pathlib import Path

import pytest

from course_lib import _syllabus as syllabus
from course_lib.interactive.quiz import load_bank

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "INSTRUCTORS.md"
NOTEBOOKS = [ROOT / "notebooks" / row.file for row in syllabus.COURSE]
EXERCISES = sorted((ROOT / "exercises").glob("ex[0-9][0-9]_*.ipynb"))
BANKS = sorted((ROOT / "course_lib" / "interactive" / "quiz" / "banks").glob("*.yaml"))


@pytest.fixture(scope="module")
def guide():
    return GUIDE.read_text(encoding="utf-8")


def links(text):
    return set(re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text))


def section(text, number):
    """The guide's section for notebook ``number`` (from its ### heading to the next one)."""
    match = re.search(rf"^### {number} · .*?(?=^### |\Z)", text, flags=re.M | re.S)
    assert match, f"no section '### {number} · ...' in INSTRUCTORS.md"
    return match.group(0)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.name)
def test_the_guide_covers_every_notebook(guide, notebook):
    number = notebook.name[:2]
    row = syllabus.notebook(number)
    assert f"notebooks/{notebook.name}" in links(guide), f"the guide does not link {notebook.name}"
    text = section(guide, number)
    parts = (
        ("debrief",)
        if number in syllabus.KNOWLEDGE_CHECKS
        else ("Misconceptions to expect", "Discussion prompts", "Run live")
    )
    for part in parts:
        assert part in text, f"the section on {notebook.name} lacks '{part}'"
    if row.exercise:
        assert f"exercises/{row.exercise}.ipynb" in links(text), (
            f"the section on {notebook.name} does not link {row.exercise}"
        )
    if row.quiz:
        bank = f"{row.quiz}.yaml"
        assert f"course_lib/interactive/quiz/banks/{bank}" in links(text), (
            f"the section on {notebook.name} does not link {bank}"
        )


def test_every_exercise_and_quiz_bank_is_linked(guide):
    linked = links(guide)
    for path in EXERCISES:
        assert f"exercises/{path.name}" in linked, path.name
    for path in BANKS:
        assert f"course_lib/interactive/quiz/banks/{path.name}" in linked, path.name


def test_the_guide_has_the_teaching_plans_and_tools(guide):
    for part in (
        "One day",
        "Three sessions",
        "exercises grade",
        "python -m course_lib bundle",
        "slides export",
        "jupyterlab-rise",
        "JupyterHub",
        "pip install -r requirements.txt",
        "quiz check",
    ):
        assert part in guide, part


def test_links_resolve_and_cited_quiz_ids_exist(guide):
    for target in links(guide):
        if re.match(r"^[a-z]+://", target):
            continue
        assert (ROOT / target).exists(), f"INSTRUCTORS.md links {target}, which does not exist"
    known = {question.id for bank in BANKS for question in load_bank(bank.stem).questions}
    cited = set(re.findall(r"`((?:final-)?[a-z0-9]+(?:-[a-z0-9]+)+)`", guide))
    cited = {name for name in cited if not name.startswith(("jupyterlab", "jupyter-"))}
    assert cited, "the misconception tables cite quiz question ids"
    assert cited <= known, f"quiz ids cited in INSTRUCTORS.md that no bank has: {sorted(cited - known)}"


# --------------------------------------------------------------------------- counts and commands


WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
         "ten": 10, "eleven": 11, "twelve": 12}  # fmt: skip


def test_the_guides_counts_come_from_the_syllabus(guide):
    """A count of the course's notebooks, lessons, knowledge checks, exercises or quiz banks in the guide matches the
    syllabus ("all seven are graded" went stale when Part 2 came); phrases about what a learner has open are not
    counts of the course."""
    banks = {row.quiz for row in syllabus.COURSE if row.quiz}
    counts = {
        "notebooks": len(syllabus.COURSE),
        "lessons": len(syllabus.COURSE) - len(syllabus.KNOWLEDGE_CHECKS),
        "knowledge checks": len(syllabus.KNOWLEDGE_CHECKS),
        "exercises": sum(1 for row in syllabus.COURSE if row.exercise),
        "exercise notebooks": sum(1 for row in syllabus.COURSE if row.exercise),
        "quiz banks": len(banks),
        "banks": len(banks),
    }
    text = " ".join(guide.split())
    pattern = (
        r"\b(?:all )?(\d+|"
        + "|".join(WORDS)
        + r") (exercise notebooks|notebooks|lessons|knowledge checks|exercises|quiz banks|banks)\b"
    )
    wrong = []
    for match in re.finditer(pattern, text, re.I):
        before = text[max(0, match.start() - 12) : match.start()].lower()
        if "or " in before[-4:] or "through" in before or "open" in text[match.end() : match.end() + 12]:
            continue  # "one or two notebooks at a time", "four open notebooks": not counts of the course
        number = match.group(1).lower()
        value = int(number) if number.isdigit() else WORDS[number]
        if value != counts[match.group(2).lower()]:
            wrong.append(match.group(0))
    assert not wrong, f"counts in INSTRUCTORS.md that the syllabus contradicts: {wrong}"
    assert len(banks) == len(BANKS)


@pytest.mark.slow  # on the repository only: the CONTRIBUTING walk-through's copy adds a notebook no plan has yet
def test_the_six_week_plan_covers_every_notebook(guide):
    plan = guide[guide.index("### Six weeks") : guide.index("## A syllabus to paste")]
    rows = [line for line in plan.splitlines() if re.match(r"^\| \d \|", line)]
    assert [row.split("|")[1].strip() for row in rows] == [str(week) for week in range(1, 7)]
    taught = {number for row in rows for number in re.findall(r"\b\d\d\b", row.split("|")[2])}
    assert taught == {row.number for row in syllabus.COURSE}, f"not in the plan: {syllabus.NOTEBOOKS.keys() - taught}"
    for heading in ("Objectives", "Reading", "In-class demo", "Hands-on", "Homework"):
        assert heading in rows[0] or heading in plan.splitlines()[plan.splitlines().index(rows[0]) - 2], heading


def fenced_bash(text: str) -> list[tuple[int, str]]:
    """Every ```bash block of the guide: (line number, the block's text, dedented)."""
    blocks = []
    for match in re.finditer(r"^( *)```bash\n(.*?)^\1```", text, re.M | re.S):
        indent = len(match.group(1))
        body = "\n".join(line[indent:] for line in match.group(2).splitlines())
        blocks.append((text[: match.start()].count("\n") + 1, body))
    return blocks


NOT_RUN = "not run by tests/test_instructor_guide.py"


def test_every_inline_command_is_a_command_of_the_course(guide, capsys):
    """The commands quoted in the prose name commands, actions and options the command line has (a command named
    in passing without its required arguments, like `python -m course_lib bundle`, is fine; the blocks run below)."""
    from course_lib.tools.cli import build_parser

    parser = build_parser()
    commands = set(re.findall(r"`python -m course_lib ([^`]+)`", guide))
    for _line, block in fenced_bash(guide):
        commands |= {m.strip() for m in re.findall(r"python -m course_lib ([^#\n\\]+)", block)}
    assert len(commands) > 20
    for command in sorted(commands):
        words = [w for w in re.sub(r"<[^>]*>", "PLACEHOLDER", command.replace("...", "")).split() if w != "[--answers]"]
        try:
            parser.parse_args(words)
        except SystemExit:
            error = capsys.readouterr().err
            if "invalid choice" in error or "unrecognized arguments" in error or "invalid" in error.split("error:")[-1]:
                pytest.fail(
                    f"INSTRUCTORS.md quotes `python -m course_lib {command}`, which the command line refuses: {error}"
                )


@pytest.mark.slow
def test_the_guides_commands_run_as_written_in_a_fresh_clone(guide, tmp_path):
    """Every ```bash block, in order, in a fresh clone of this repository, with the course environment active (its
    bin folder first on PATH, as `source .venv/bin/activate` does). Only blocks whose first line says they are not
    run (the setup, installing on a hub machine) are left out, and there are at most two."""
    import os
    import subprocess
    import sys

    blocks = fenced_bash(guide)
    skipped = [line for line, block in blocks if NOT_RUN in block.splitlines()[0]]
    assert len(skipped) <= 2, f"blocks not run: lines {skipped}"
    clone = tmp_path / "transformers-course"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=120)
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env["VIRTUAL_ENV"] = str(Path(sys.executable).parent.parent)
    for name in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        env.setdefault(name, "Instructor")
    for name in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        env.setdefault(name, "instructor@example.org")
    for line, block in blocks:
        if line in skipped:
            continue
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block], cwd=clone, env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, (
            f"INSTRUCTORS.md line {line}: the block failed ({done.returncode}):\n{block}\n"
            f"--- stdout\n{done.stdout[-2000:]}\n--- stderr\n{done.stderr[-2000:]}"
        )
    # what the blocks promise is there
    assert (tmp_path / "course-learners" / "notebooks" / "02_attention_qkv.ipynb").is_file()
    assert not (tmp_path / "course-learners" / "notebooks" / "03_multi_head_attention.ipynb").exists()
    assert (tmp_path / "decks" / "02_attention_qkv.lecture.html").is_file()
    assert (clone / "scores" / "feedback" / "alice.html").is_file() and (clone / "scores" / "canvas.csv").is_file()
    assert (tmp_path / "exam-part1" / "answers.md").is_file()
