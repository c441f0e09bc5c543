"""``misconceptions``: what a class got wrong, from the learners' learning records (Markdown and CSV).

    python -m course_lib exercises collect --homes /home --out submissions/     # brings each learning-record.jsonl too
    python -m course_lib misconceptions submissions/ --out debrief/

For every quiz question: how many learners answered it, how many were right the first time, and the share whose
first answer was each wrong option (the option's text names the misconception). For every exercise check: how many
learners ran it, how many failed it at least once, and the catalogued mistakes ranked by the number of learners who
made them. Questions come hardest first, so a debrief can start at the top of ``misconceptions.md``.

SUBMISSIONS holds one folder per learner with ``learning-record.jsonl`` (as ``exercises collect`` writes it), or
files named ``<learner>.jsonl``. Corrupt or half-written lines are skipped with a warning; the rest counts.
"""

from __future__ import annotations

import csv
import sys
import warnings
from pathlib import Path

from course_lib._errors import CommandError
from course_lib.interactive import record


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "misconceptions",
        help="instructors: the class's most common wrong answers and exercise mistakes (Markdown and CSV)",
        description=__doc__.split("\n\n")[2].replace("\n", " "),
    )
    parser.add_argument(
        "submissions", type=Path, help="one folder per learner with learning-record.jsonl, or <learner>.jsonl files"
    )
    parser.add_argument("--out", type=Path, required=True, help="folder for misconceptions.md and misconceptions.csv")
    parser.add_argument(
        "--roster", type=Path, default=None,
        help="instructors only: the class roster CSV (student_id,name,section,email); also writes roster.md and "
        "roster.csv, who completed what and who never answered, by name (keep them out of anything you share)",
    )  # fmt: skip
    parser.set_defaults(handler=_run)


def find_records(folder: Path) -> dict[str, Path]:
    """learner → record file, from ``<learner>/learning-record.jsonl`` or ``<learner>.jsonl``; symlinks are ignored."""
    if not folder.is_dir():
        raise CommandError(f"{folder} is not a folder of submissions.")
    found = {}
    for entry in sorted(folder.iterdir()):
        if entry.is_symlink():
            continue
        if entry.is_dir():
            candidate = entry / record.FILENAME
            if candidate.is_file() and not candidate.is_symlink():
                found[entry.name] = candidate
        elif entry.suffix == ".jsonl" and entry.is_file():
            found[entry.stem] = entry
    return found


def _run(args) -> int:
    from course_lib.tools.classroom.learning import checkpoint_report, class_report

    files = find_records(args.submissions)
    students = None
    if getattr(args, "roster", None) is not None:
        from course_lib.tools.classroom import roster as roster_file

        students = roster_file.read(args.roster)
    if not files and students is None:
        raise CommandError(f"No learning records in {args.submissions} (expected <learner>/{record.FILENAME}).")
    out = args.out
    if out.resolve() == args.submissions.resolve() or args.submissions.resolve() in out.resolve().parents:
        raise CommandError("--out must be outside the submissions folder.")
    records, skipped = {}, 0
    for learner, path in files.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            data = record.read(path)
        for message in data.skipped:
            print(f"warning: {message} (the other lines count)", file=sys.stderr)
        skipped += len(data.skipped)
        records[learner] = data.events
    questions, checks = class_report(records)
    predictions = checkpoint_report(records)
    out.mkdir(parents=True, exist_ok=True)
    (out / "misconceptions.md").write_text(
        markdown(questions, checks, len(records), skipped, predictions), encoding="utf-8"
    )
    write_csv(out / "misconceptions.csv", questions, checks, predictions)
    if students is not None:
        rows = roster_rows(students, records)
        (out / "roster.md").write_text(roster_markdown(rows), encoding="utf-8")
        write_roster_csv(out / "roster.csv", rows)
        never = sum(1 for row in rows if row.never_answered)
        print(f"Roster: {len(rows)} students, {never} never answered a question. Wrote {out / 'roster.md'} and "
              f"{out / 'roster.csv'} (instructors only: they name students).")  # fmt: skip
    print(
        f"{len(records)} learners, {len(questions)} questions answered, {len(checks)} checks run. "
        f"Wrote {out / 'misconceptions.md'} and {out / 'misconceptions.csv'}."
    )
    return 0


def _one_line(text: str, limit: int = 110, table: bool = True) -> str:
    text = " ".join(str(text).split())
    text = text.replace("|", "\\|") if table else text
    return text if len(text) <= limit else text[: limit - 1] + "…"


def markdown(questions, checks, learners: int, skipped: int, predictions=()) -> str:
    lines = [
        "# What the class got wrong",
        "",
        f"From the learning records of {learners} learners"
        + (f" ({skipped} unreadable lines skipped)." if skipped else ".")
        + " A question counts each learner's first answer; hardest questions first.",
        "",
        "## Quiz questions",
        "",
        "| question | topic | answered | right first time | wrong first answers (share of learners) |",
        "|---|---|---:|---:|---|",
    ]
    for q in questions:
        wrong = "<br>".join(f"**{w.choice}** {w.share:.0%}: {_one_line(w.text, 70)}" for w in q.wrong) or "–"
        lines.append(
            f"| `{q.quiz}/{q.question}`<br>{_one_line(q.prompt, 80)} | {q.topic} | {q.answered} | "
            f"{q.first_try / q.answered:.0%} | {wrong} |"
        )
    lines += [
        "",
        "## Exercise checks",
        "",
        "| check | exercise | learners | failed at least once | most common mistakes (learners) |",
        "|---|---|---:|---:|---|",
    ]
    for c in sorted(checks, key=lambda c: (-c.failed / c.tried, c.exercise)):
        mistakes = (
            "<br>".join(
                f"`{key}` ({n}){': ' + _one_line(title, 70) if title else ''}" for key, title, n in c.mistakes[:5]
            )
            or "–"
        )
        lines.append(f"| `{c.check}` | {c.exercise} | {c.tried} | {c.failed} | {mistakes} |")
    if predictions:
        lines += [
            "",
            "## Prediction checkpoints",
            "",
            "What the class predicted before each key experiment, and how far it was from what the experiment measured.",
            "",
            "| checkpoint | predicted | measured | right | predictions (learners) |",
            "|---|---:|---:|---:|---|",
        ]
        for p in predictions:
            if p.choices:
                spread = "<br>".join(f"**{letter}** {n}: {_one_line(text, 60)}" for letter, text, n in p.choices)
            else:
                median = p.median_error
                spread = f"median distance from the measurement {median:.3g}" if median is not None else "–"
            measured = f"{p.measured:.3g}" if p.measured is not None else "–"
            lines.append(
                f"| `{p.checkpoint}`<br>{_one_line(p.prompt, 80)} | {p.learners} | {measured} | "
                f"{p.right} of {p.observed} | {spread} |"
            )
    return "\n".join(lines) + "\n"


def write_csv(path: Path, questions, checks, predictions=()) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            [
                "kind",
                "id",
                "topic_or_exercise",
                "learners",
                "right_first_time_or_failed",
                "choice_or_mistake",
                "learners_with_it",
                "share",
                "text",
            ]
        )
        for q in questions:
            writer.writerow(
                [
                    "question",
                    f"{q.quiz}/{q.question}",
                    q.topic,
                    q.answered,
                    q.first_try,
                    "",
                    "",
                    "",
                    _one_line(q.prompt, 300, table=False),
                ]
            )
            for w in q.wrong:
                writer.writerow(
                    [
                        "wrong_answer",
                        f"{q.quiz}/{q.question}",
                        q.topic,
                        q.answered,
                        q.first_try,
                        w.choice,
                        w.learners,
                        f"{w.share:.3f}",
                        _one_line(w.text, 300, table=False),
                    ]
                )
        for c in checks:
            writer.writerow(["check", c.check, c.exercise, c.tried, c.failed, "", "", "", ""])
            for key, title, n in c.mistakes:
                writer.writerow(
                    ["mistake", c.check, c.exercise, c.tried, c.failed, key, n, f"{n / c.tried:.3f}", title]
                )
        for p in predictions:
            median = p.median_error
            writer.writerow(
                [
                    "checkpoint",
                    p.checkpoint,
                    p.measured if p.measured is not None else "",
                    p.learners,
                    p.right,
                    "",
                    p.observed,
                    f"{median:.4g}" if median is not None else "",
                    _one_line(p.prompt, 300, table=False),
                ]
            )
            for letter, text, n in p.choices:
                share = f"{n / p.learners:.3f}" if p.learners else ""
                writer.writerow(["prediction", p.checkpoint, "", p.learners, p.right, letter, n, share, text])


# --------------------------------------------------------------------------- the roster view (instructors only)


class RosterRow:
    """One student: per quiz the questions answered (of the bank), per exercise the checks passed (of its checks)."""

    def __init__(self, student, summary, has_record: bool):
        self.student = student
        self.has_record = has_record
        self.quizzes = {q.quiz: (q.answered, q.total) for q in summary.quizzes} if summary else {}
        self.exercises = {e.name: (len(e.passed), len(e.checks)) for e in summary.exercises} if summary else {}

    @property
    def never_answered(self) -> bool:
        return not any(answered for answered, _ in self.quizzes.values())

    @property
    def quizzes_done(self) -> list[str]:
        return [quiz for quiz, (answered, total) in self.quizzes.items() if total and answered == total]

    @property
    def exercises_done(self) -> list[str]:
        return [name for name, (passed, total) in self.exercises.items() if total and passed == total]


def roster_rows(students, records: dict[str, list[dict]]) -> list[RosterRow]:
    """Every student of the roster, in roster order, with what their record shows (nothing when they have none);
    then the records of learners the roster does not list, so no one is silently dropped."""
    from course_lib.tools.classroom.learning import summarize
    from course_lib.tools.classroom.roster import Student

    listed = {s.student_id for s in students}
    everyone = list(students) + [Student(name) for name in sorted(records) if name not in listed]
    return [
        RosterRow(s, summarize(records[s.student_id]) if s.student_id in records else None, s.student_id in records)
        for s in everyone
    ]


def roster_markdown(rows: list[RosterRow]) -> str:
    never = [row for row in rows if row.never_answered]
    share = len(never) / len(rows) if rows else 0.0
    quizzes = sorted({quiz for row in rows for quiz in row.quizzes})
    exercises = sorted({name for row in rows for name in row.exercises})
    lines = [
        "# Class roster: who did what",
        "",
        "> **Instructors only.** This page names students; the class report (misconceptions.md) does not. Do not "
        "share it.",
        "",
        f"{len(rows)} students; **{len(never)} ({share:.0%}) never answered a quiz question**"
        + (": " + ", ".join(_one_line(r.student.display, 40) for r in never) if never else "")
        + ". A quiz is *done* when every question of its bank was answered, an exercise when every check passed.",
        "",
        "| student | section | record | quizzes done | exercises done | questions answered |",
        "|---|---|---|---|---|---:|",
    ]
    for row in rows:
        answered = sum(a for a, _ in row.quizzes.values())
        total = sum(t for _, t in row.quizzes.values())
        lines.append(
            f"| {_one_line(row.student.display, 40)} ({_one_line(row.student.student_id, 32)}) | "
            f"{_one_line(row.student.section, 20) or '–'} | {'yes' if row.has_record else '**none**'} | "
            f"{', '.join(q for q in quizzes if q in row.quizzes_done) or '–'} | "
            f"{', '.join(e.split('_')[0] for e in exercises if e in row.exercises_done) or '–'} | "
            f"{answered} of {total} |"
            if row.has_record
            else f"| {_one_line(row.student.display, 40)} ({_one_line(row.student.student_id, 32)}) | "
            f"{_one_line(row.student.section, 20) or '–'} | **none** | – | – | 0 |"
        )
    return "\n".join(lines) + "\n"


def write_roster_csv(path: Path, rows: list[RosterRow]) -> None:
    quizzes = sorted({quiz for row in rows for quiz in row.quizzes})
    exercises = sorted({name for row in rows for name in row.exercises})
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            ["student_id", "name", "section", "has_record", "never_answered"]
            + [f"quiz {q} answered" for q in quizzes]
            + [f"{e} checks passed" for e in exercises]
        )
        for row in rows:
            writer.writerow(
                [_safe(row.student.student_id), _safe(row.student.name), _safe(row.student.section),
                 int(row.has_record), int(row.never_answered)]
                + [row.quizzes.get(q, (0, 0))[0] for q in quizzes]
                + [row.exercises.get(e, (0, 0))[0] for e in exercises]
            )  # fmt: skip


def _safe(text: str) -> str:
    """A CSV field a spreadsheet will not run as a formula."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text
