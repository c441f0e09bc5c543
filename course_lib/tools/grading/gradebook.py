"""Points and feedback from a graded class: partial credit, weights, one feedback file per student, LMS exports.

    python -m course_lib exercises grade submissions/ --out scores/ [--gradebook grading.yaml] [--roster roster.csv]

Every grade run counts points here (``marks``), with ``gradebook.yaml`` beside this file unless ``--gradebook``
names another configuration: the console, ``scores.md`` and ``scores.csv`` show these points, and ``write`` puts
the same points, from what the grader judged (``grade.GradeReport``: per learner and exercise, one result per check
with its status, message and the catalogue key of a recognised mistake), into ``scores/``:

- ``feedback/<student>.md`` and ``feedback/<student>.html``: each exercise's points and, for every check, its
  result, the grader's message and its hint; every field is escaped (a learner's text never becomes markup);
- ``canvas.csv``: Canvas's gradebook import layout: ``Student, ID, SIS User ID, SIS Login ID, Section``, then one
  column per exercise, and a second row ``Points Possible`` stating each exercise's maximum;
- ``moodle.csv``: for Moodle's "Import grades: CSV file": ``Username, ID number, Section``, then one column per
  exercise named ``<exercise> (out of <maximum>)``; map ``Username`` to the user and each column to a grade item
  whose maximum is the one stated.

**Credit per check.** An exercise's points are shared equally by its checks. A check that passes earns its share;
a check that fails with a *recognised* mistake (one of the check's catalogued mistakes, named in the message,
e.g. "the scores are not divided by √d_k") earns ``mistake_credit`` of it (default 0.5), and so does a check that
fails *only because of* such a mistake in an earlier check's function of the same notebook (``explained_by``: the
grader found the function's output equal, on every test, to course_lib's computation with that earlier function
replaced by the learner's own, e.g. an ``attention`` right but for the learner's named ``softmax`` mistake,
``grade.explain_knock_ons``); a check that fails otherwise, raises, times out, is missing or is still the stub earns
nothing. An exercise not submitted earns 0.

The configuration (YAML, every key optional; ``gradebook.yaml`` beside this file is the default, with comments)::

    points:            # the maximum of each exercise; unlisted exercises get default_points
      ex02_attention: 20
    default_points: 10
    mistake_credit: 0.5
"""

from __future__ import annotations

import csv
import html
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

from course_lib._errors import CommandError

DEFAULT_CONFIG = Path(__file__).with_name("gradebook.yaml")
CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
MOODLE_COLUMNS = ("Username", "ID number", "Section")
STATUS_TEXT = {
    "passed": "passed",
    "failed": "failed",
    "error": "raised an error",
    "timeout": "ran out of time",
    "not_implemented": "not implemented yet",
    "missing": "missing",
}


@dataclass(frozen=True)
class Config:
    points: dict[str, float] = field(default_factory=dict)
    default_points: float = 10.0
    mistake_credit: float = 0.5

    def maximum(self, exercise: str) -> float:
        return float(self.points.get(exercise, self.default_points))


@dataclass
class CheckMark:
    check: str
    function: str
    status: str
    credit: float  # 1, mistake_credit or 0
    points: float
    possible: float
    message: str
    hint: str
    mistake: str | None
    explained_by: str | None = None  # the earlier check whose named mistake this failure follows from


@dataclass
class ExerciseMark:
    exercise: str
    title: str
    submitted: bool
    outcome: str
    detail: str
    checks: list[CheckMark]
    possible: float

    @property
    def points(self) -> float:
        return _round(sum(check.points for check in self.checks))

    @property
    def passed(self) -> int:
        return sum(check.status == "passed" for check in self.checks)


@dataclass
class StudentMarks:
    student_id: str
    name: str
    section: str
    exercises: list[ExerciseMark]

    @property
    def points(self) -> float:
        return _round(sum(mark.points for mark in self.exercises))

    @property
    def possible(self) -> float:
        return _round(sum(mark.possible for mark in self.exercises))


# --------------------------------------------------------------------------- configuration


def load_config(path: Path | None = None) -> Config:
    """Read a gradebook configuration; a wrong key or value raises ``CommandError`` saying what to write."""
    import yaml

    from course_lib.checks import EXERCISES

    path = Path(path) if path is not None else DEFAULT_CONFIG
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CommandError(f"No gradebook configuration at {path} (copy {DEFAULT_CONFIG} and edit it).") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise CommandError(f"Could not read the gradebook configuration {path}: {str(exc).splitlines()[0]}") from None
    data = data or {}
    if not isinstance(data, dict):
        raise CommandError(
            f"{path}: expected keys points, default_points, mistake_credit, not a {type(data).__name__}."
        )
    unknown = sorted(set(data) - {"points", "default_points", "mistake_credit"})
    if unknown:
        raise CommandError(f"{path}: unknown keys {unknown}; the keys are points, default_points, mistake_credit.")

    def number(value, what: str, low: float, high: float | None = None) -> float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value >= low
        if not ok or (high is not None and value > high):
            bound = f"between {low:g} and {high:g}" if high is not None else f"at least {low:g}"
            raise CommandError(f"{path}: {what} must be a number {bound}, not {value!r}.")
        return float(value)

    points_in = data.get("points") or {}
    if not isinstance(points_in, dict):
        raise CommandError(f"{path}: points must map exercise names to numbers (ex02_attention: 20).")
    points = {}
    for name, value in points_in.items():
        matches = [e for e in EXERCISES if e == str(name) or e.split("_")[0] == str(name)]
        if not matches:
            raise CommandError(f"{path}: points names {name!r}, which is not an exercise ({', '.join(EXERCISES)}).")
        points[matches[0]] = number(value, f"points of {name}", 0)
    return Config(
        points=points,
        default_points=number(data.get("default_points", 10), "default_points", 0),
        mistake_credit=number(data.get("mistake_credit", 0.5), "mistake_credit", 0, 1),
    )


# --------------------------------------------------------------------------- marks


def _round(value: float) -> float:
    return round(value + 0.0, 2)


def _hint(message: str) -> str:
    for line in message.splitlines():
        if line.strip().startswith("Hint:"):
            return line.strip()[len("Hint:") :].strip()
    return ""


def check_credit(
    entry: dict | None, recognised: set[str], mistake_credit: float, named_upstream: set[str] = frozenset()
) -> float:
    """The share of a check's points its result earns: 1 passed; ``mistake_credit`` for a failure the check names as
    one of its catalogued mistakes, or one the grader explains by a named mistake of an earlier check of the same
    notebook (``entry["explained_by"]`` in ``named_upstream``); 0 for anything else (wrong without a named mistake,
    error, timeout, stub)."""
    if not entry:
        return 0.0
    if entry.get("passed") is True and entry.get("status") == "passed":
        return 1.0
    if entry.get("status") == "failed" and entry.get("mistake") in recognised:
        return float(mistake_credit)
    if entry.get("status") == "failed" and entry.get("explained_by") in named_upstream:
        return float(mistake_credit)
    return 0.0


def named_mistakes(exercise: str, checks: list[dict]) -> set[str]:
    """The checks of one graded notebook that failed with one of their own catalogued mistakes."""
    from course_lib.checks import EXERCISES

    by_check = {entry.get("check"): entry for entry in checks}
    return {
        spec.name
        for spec in EXERCISES[exercise].specs
        if (by_check.get(spec.name) or {}).get("status") == "failed"
        and by_check[spec.name].get("mistake") in {m.key for m in spec.mistakes}
    }


def exercise_mark(exercise: str, graded, config: Config) -> ExerciseMark:
    """One notebook's points (``graded``: a ``grade.Graded``, or None when it was not submitted)."""
    from course_lib.checks import EXERCISES

    specs = EXERCISES[exercise].specs
    possible = config.maximum(exercise)
    share = possible / len(specs) if specs else 0.0
    entries = list(graded.checks) if graded is not None else []
    by_check = {e.get("check"): e for e in entries}
    named = named_mistakes(exercise, entries)
    checks = []
    for index, spec in enumerate(specs):
        entry = by_check.get(spec.name)
        upstream = named & {earlier.name for earlier in specs[:index]}
        credit = check_credit(entry, {m.key for m in spec.mistakes}, config.mistake_credit, upstream)
        message = str((entry or {}).get("message") or ("not submitted" if graded is None else ""))
        explained = (entry or {}).get("explained_by")
        checks.append(
            CheckMark(
                spec.name,
                spec.function,
                str((entry or {}).get("status") or "missing"),
                credit,
                credit * share,  # unrounded: a total is rounded once (three thirds of 10 make 10, not 9.99)
                share,
                message,
                _hint(message),
                (entry or {}).get("mistake"),
                explained if explained in upstream else None,
            )
        )
    return ExerciseMark(
        exercise,
        EXERCISES[exercise].title,
        graded is not None,
        "missing" if graded is None else graded.outcome,
        "" if graded is None else graded.detail,
        checks,
        _round(possible),
    )


def marks(report, config: Config, roster=None) -> list[StudentMarks]:
    """Every student's marks, from a ``grade.GradeReport``; ``roster``: ``roster.Student`` list (names, sections,
    and students who submitted nothing, who then get 0 everywhere)."""
    people = {s.student_id: s for s in roster or []}
    ids = list(people) + [learner for learner in report.learners if learner not in people]
    students = []
    for student_id in ids:
        exercises = [exercise_mark(e, report.cells.get((student_id, e)), config) for e in report.exercises]
        person = people.get(student_id)
        students.append(
            StudentMarks(student_id, person.name if person else "", person.section if person else "", exercises)
        )
    return students


# --------------------------------------------------------------------------- exports


def _cell(value) -> str:
    """A CSV field a spreadsheet will not run as a formula."""
    text = str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def _number(value: float) -> str:
    return f"{_round(value):g}"


def canvas_csv(students: list[StudentMarks], exercises: list[str], config: Config) -> str:
    """Canvas's gradebook layout: identity columns, one column per exercise, then a ``Points Possible`` row."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*CANVAS_COLUMNS, *exercises])
    writer.writerow(["Points Possible", "", "", "", "", *(_number(config.maximum(e)) for e in exercises)])
    for student in students:
        name = student.name or student.student_id
        points = [_number(mark.points) for mark in student.exercises]
        writer.writerow(
            [_cell(name), "", _cell(student.student_id), _cell(student.student_id), _cell(student.section), *points]
        )
    return buffer.getvalue()


def moodle_csv(students: list[StudentMarks], exercises: list[str], config: Config) -> str:
    """Moodle's CSV grade import: a user column to map, then one column per grade item with its maximum named."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*MOODLE_COLUMNS, *(f"{e} (out of {_number(config.maximum(e))})" for e in exercises)])
    for student in students:
        points = [_number(mark.points) for mark in student.exercises]
        writer.writerow([_cell(student.student_id), _cell(student.student_id), _cell(student.section), *points])
    return buffer.getvalue()


# --------------------------------------------------------------------------- feedback files

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~&])")


def md_escape(text) -> str:
    """Text shown literally in Markdown (no emphasis, links, HTML or table breaks); newlines become spaces."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


def _code(text) -> str:
    """A code span that holds ``text`` literally (no backtick can close it early)."""
    text = " ".join(str(text).split()).replace("`", "'")
    return f"`{text}`"


def feedback_markdown(student: StudentMarks, course: str = "Transformers course") -> str:
    lines = [
        f"# Feedback: {md_escape(student.name or student.student_id)}",
        "",
        f"{md_escape(course)} · student {md_escape(student.student_id)}"
        + (f" · section {md_escape(student.section)}" if student.section else ""),
        "",
        f"**Total: {_number(student.points)} / {_number(student.possible)} points**",
        "",
    ]
    for mark in student.exercises:
        lines += [f"## {md_escape(mark.exercise)}: {md_escape(mark.title)}", ""]
        lines += [f"**{_number(mark.points)} / {_number(mark.possible)} points** ({md_escape(mark.outcome)})", ""]
        if not mark.submitted:
            lines += ["Not submitted.", ""]
            continue
        if mark.detail:
            lines += [f"Note: {md_escape(mark.detail)}", ""]
        for check in mark.checks:
            lines.append(
                f"- **{md_escape(check.check)}** ({_code(check.function)}): {STATUS_TEXT.get(check.status, md_escape(check.status))}, "
                f"{_number(check.points)} / {_number(check.possible)}"
            )
            first = check.message.splitlines()[0].lstrip("✅❌⏳⌛ ") if check.message else ""
            if first and check.status != "passed":
                lines.append(f"  - {md_escape(first)}")
            if check.explained_by:
                lines.append(f"  - {md_escape(_follows(check, mark))}")
            if check.hint:
                lines.append(f"  - Hint: {md_escape(check.hint)}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def feedback_html(student: StudentMarks, course: str = "Transformers course") -> str:
    e = html.escape
    title = e(student.name or student.student_id)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Feedback: {title}</title>",
        "<style>body{font-family:sans-serif;max-width:46rem;margin:2rem auto;line-height:1.45}"
        "td,th{border:1px solid #bbb;padding:.3rem .5rem;vertical-align:top}table{border-collapse:collapse}"
        ".passed{color:#1a7f37}.hint{color:#444}</style></head><body>",
        f"<h1>Feedback: {title}</h1>",
        f"<p>{e(course)} · student {e(student.student_id)}"
        + (f" · section {e(student.section)}" if student.section else "")
        + "</p>",
        f"<p><strong>Total: {_number(student.points)} / {_number(student.possible)} points</strong></p>",
    ]
    for mark in student.exercises:
        parts.append(f"<h2>{e(mark.exercise)}: {e(mark.title)}</h2>")
        parts.append(
            f"<p><strong>{_number(mark.points)} / {_number(mark.possible)} points</strong> ({e(mark.outcome)})</p>"
        )
        if not mark.submitted:
            parts.append("<p>Not submitted.</p>")
            continue
        if mark.detail:
            parts.append(f"<p>Note: {e(mark.detail)}</p>")
        parts.append("<table><tr><th>check</th><th>result</th><th>points</th><th>message and hint</th></tr>")
        for check in mark.checks:
            first = check.message.splitlines()[0].lstrip("✅❌⏳⌛ ") if check.message else ""
            text = "" if check.status == "passed" else e(first)
            if check.explained_by:
                text += f"<div>{e(_follows(check, mark))}</div>"
            if check.hint:
                text += f'<div class="hint">Hint: {e(check.hint)}</div>'
            parts.append(
                f"<tr><td>{e(check.check)} (<code>{e(check.function)}</code>)</td>"
                f'<td class="{e(check.status)}">{e(STATUS_TEXT.get(check.status, check.status))}</td>'
                f"<td>{_number(check.points)} / {_number(check.possible)}</td><td>{text}</td></tr>"
            )
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _follows(check: CheckMark, mark: ExerciseMark) -> str:
    upstream = next((c for c in mark.checks if c.check == check.explained_by), None)
    function = upstream.function if upstream else check.explained_by
    return (
        f"This failure follows from the mistake {check.explained_by} names in your {function}: with it, the rest of "
        f"your {check.function} is right on every test, so it earns the same partial credit. Fix {function} first."
    )


def _file_stem(student_id: str, taken: set[str]) -> str:
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", student_id).lstrip(".") or "student"
    candidate, number = stem, 2
    while candidate.lower() in taken:
        candidate, number = f"{stem}-{number}", number + 1
    taken.add(candidate.lower())
    return candidate


def write(report, out_dir: Path, config: Config | None = None, roster=None) -> list[Path]:
    """Write the feedback files and the Canvas and Moodle CSVs for a graded class; returns the files written."""
    config = config or load_config()
    out_dir = Path(out_dir)
    students = marks(report, config, roster)
    feedback = out_dir / "feedback"
    feedback.mkdir(parents=True, exist_ok=True)
    written, taken = [], set()
    for student in students:
        stem = _file_stem(student.student_id, taken)
        for suffix, text in ((".md", feedback_markdown(student)), (".html", feedback_html(student))):
            path = feedback / f"{stem}{suffix}"
            path.write_text(text, encoding="utf-8")
            written.append(path)
    for name, text in (
        ("canvas.csv", canvas_csv(students, report.exercises, config)),
        ("moodle.csv", moodle_csv(students, report.exercises, config)),
    ):
        (out_dir / name).write_text(text, encoding="utf-8")
        written.append(out_dir / name)
    return written
