"""README.md's learning path agrees with the notebooks (issue 42): the minutes of each notebook are the range its
own header states (the one measure, ``python -m course_lib reading-time``), and every notebook and every exercise of
the syllabus is named."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from course_lib._syllabus import COURSE
from course_lib.tools.publish import reading_time

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def readme_row(number: str) -> str:
    match = re.search(rf"^\| {number} \| .*$", README, re.M)
    assert match, f"README's learning path has no row for notebook {number}"
    return match.group(0)


@pytest.mark.parametrize("row", COURSE, ids=lambda row: row.number)
def test_readme_states_the_minutes_the_notebook_header_states(row):
    header = reading_time.stated(nbformat.read(ROOT / "notebooks" / row.file, as_version=4))
    assert header, f"{row.file} states no estimated time"
    cells = [cell.strip() for cell in readme_row(row.number).strip("|").split("|")]
    assert f"notebooks/{row.file}" in cells[1], f"README's row {row.number} links {cells[1]}, not {row.file}"
    assert cells[-1] == f"{header[0]}–{header[1]}", (
        f"README says {cells[-1]} minutes for {row.file}; its header says {header[0]}–{header[1]}"
    )


def test_readme_names_every_exercise():
    exercises = [row.exercise for row in COURSE if row.exercise]
    missing = [name for name in exercises if name.split("_")[0] not in README]
    assert not missing, f"README never names {missing}"
