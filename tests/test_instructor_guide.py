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
