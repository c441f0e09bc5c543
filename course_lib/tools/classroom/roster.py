"""A class roster: one CSV file, one row per student, read by every instructor tool that names students.

    student_id,name,section,email
    alice,Alice Martin,A,alice@example.org
    bob,Bob Ng,B,

``student_id`` (required) is the learner's login: their account on the hub (``deploy/accounts.py`` creates the
accounts from this file), their folder under ``submissions/`` (``exercises collect``) and the id an LMS gradebook
import matches (Canvas "SIS Login ID", Moodle "Username"). ``name``, ``section`` and ``email`` are optional.
Used by ``exercises grade --gradebook`` (sections, names), ``misconceptions --roster`` (who did what, who never
answered) and ``deploy/accounts.py``.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

from course_lib._errors import CommandError

# A login that is a valid Linux user name and a safe folder name: starts with a letter, then letters, digits, . _ -
LOGIN = re.compile(r"[a-z_][a-z0-9_.-]{0,31}\Z")
COLUMNS = ("student_id", "name", "section", "email")


@dataclass(frozen=True)
class Student:
    student_id: str
    name: str = ""
    section: str = ""
    email: str = ""

    @property
    def display(self) -> str:
        return self.name or self.student_id


def read(path: Path) -> list[Student]:
    """The students of ``path``, in file order. Bad input raises ``CommandError`` naming the line and the fix."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise CommandError(
            f"No roster at {path}: a CSV file with a header line student_id,name,section,email."
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"Could not read the roster {path} ({exc}); save it as UTF-8 CSV.") from None
    rows = list(csv.reader(text.splitlines()))
    if not rows or not any(cell.strip() for cell in rows[0]):
        raise CommandError(f"The roster {path} is empty; its first line must be: student_id,name,section,email")
    header = [cell.strip().lower() for cell in rows[0]]
    if "student_id" not in header:
        raise CommandError(
            f"The roster {path} has no student_id column (its header is {','.join(header)}); "
            "the first line must name the columns: student_id,name,section,email"
        )
    unknown = [name for name in header if name and name not in COLUMNS]
    if unknown:
        raise CommandError(f"The roster {path} has unknown columns {unknown}; use only {', '.join(COLUMNS)}.")
    students: list[Student] = []
    seen: dict[str, int] = {}
    for number, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) > len(header):
            raise CommandError(
                f"{path}, line {number}: {len(row)} fields for {len(header)} columns (a comma in a name? quote it)."
            )
        values = {name: (row[i].strip() if i < len(row) else "") for i, name in enumerate(header)}
        login = values["student_id"]
        if not LOGIN.match(login):
            raise CommandError(
                f"{path}, line {number}: {login!r} is not a usable student_id: it must be a login of at most 32 "
                "characters, lower-case letters, digits, '.', '_' or '-', starting with a letter."
            )
        if login in seen:
            raise CommandError(f"{path}, line {number}: student_id {login!r} is already on line {seen[login]}.")
        seen[login] = number
        students.append(Student(login, values.get("name", ""), values.get("section", ""), values.get("email", "")))
    if not students:
        raise CommandError(f"The roster {path} lists no students.")
    return students
