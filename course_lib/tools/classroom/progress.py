"""``progress`` and ``record``: a learner's own learning record, summarised, shown, reset or deleted.

    python -m course_lib progress                    # quizzes, exercises, first-try score per topic, what to revisit
    python -m course_lib progress --html progress.html
    python -m course_lib record show                 # where the record is and every line in it
    python -m course_lib record reset                # empty it (a backup copy is kept next to it first)
    python -m course_lib record delete --yes         # delete it (with --backups, its backups too)

What the record holds and where it lives: ``course_lib/interactive/record.py`` and docs/learning-record.md.
"""

from __future__ import annotations

import html
import json
import os
import sys
import warnings
from datetime import datetime
from pathlib import Path

from course_lib._errors import CommandError
from course_lib.interactive import record


def register(subparsers) -> None:
    progress = subparsers.add_parser(
        "progress",
        help="your learning record: quizzes and exercises done, first-try score per topic, what to revisit",
        description="Summarise your learning record (the quiz answers you checked and the exercise checks you ran).",
    )
    progress.add_argument("--record", type=Path, default=None, help="the record file (default: your course folder's)")
    progress.add_argument("--html", type=Path, default=None, help="also write the summary as an HTML page here")
    progress.set_defaults(handler=_progress)

    rec = subparsers.add_parser(
        "record",
        help="see, reset (with a backup) or delete your learning record",
        description="Your learning record is one line per checked quiz answer or exercise check, in your course "
        "folder. Nothing in it leaves your machine unless you hand it in.",
    )
    rec.set_defaults(handler=lambda args: (rec.print_help(), 2)[1])
    actions = rec.add_subparsers(dest="action", metavar="action")
    show = actions.add_parser("show", help="print where the record is and every line in it")
    show.set_defaults(handler=_show)
    reset = actions.add_parser("reset", help="start a new, empty record; the old one is kept as a backup first")
    reset.set_defaults(handler=_reset)
    delete = actions.add_parser("delete", help="delete the record")
    delete.add_argument("--yes", action="store_true", help="really delete it (nothing is kept)")
    delete.add_argument("--backups", action="store_true", help="delete the backups of earlier resets too")
    delete.set_defaults(handler=_delete)
    for parser in (show, reset, delete):
        parser.add_argument("--record", type=Path, default=None, help="the record file (default: your course folder's)")


def where(explicit: Path | None) -> Path:
    path = explicit or record.record_path()
    if path is None:
        if os.environ.get("COURSE_RECORD", "").strip().lower() in ("off", "0", "no", "false"):
            raise CommandError("Recording is switched off (COURSE_RECORD=off), so there is no record.")
        raise CommandError(
            "This is not a course folder (no notebooks/ and exercises/ here or above): run the command from your "
            "copy of the course, or give the file with --record."
        )
    if path.exists() and not path.is_file():
        raise CommandError(f"{path} is not a file.")
    return path


def load(path: Path) -> record.Record:
    """Read the record; every skipped line is reported on stderr, once."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = record.read(path)
    for message in data.skipped:
        print(f"warning: {message} (the other lines are kept)", file=sys.stderr)
    return data


NOTHING_TO_REVISIT = (
    "Nothing to revisit: every topic you answered was right the first time at least two times in three."
)


def tables(summary) -> list[tuple[str, list[str], list[list[str]]]]:
    """The summary's three tables as (title, headers, rows), for the terminal and the HTML page alike."""
    quizzes = [[q.title, f"{q.answered} / {q.total}", str(q.first_try), str(q.solved)] for q in summary.quizzes]
    topics = [[t.label, f"{t.answered} / {t.total}", _percent(t.first_try, t.answered)] for t in summary.topics]
    exercises = [
        [e.name, f"{len(e.passed)} / {len(e.checks)}", str(len(e.passed_first)), "yes" if e.done else ""]
        for e in summary.exercises
    ]
    return [
        ("Quizzes", ["Quiz", "answered", "right first time", "solved"], quizzes),
        ("First-try score per topic", ["Topic", "answered", "first-try score"], topics),
        ("Exercises", ["Exercise", "checks passed", "passed first time", "done"], exercises),
    ]


def _progress(args) -> int:
    from course_lib.tools.classroom.learning import revisit_text, summarize

    path = where(args.record)
    data = load(path)
    summary = summarize(data.events)
    print(f"Your learning record: {path} ({len(data.events)} entries)\n")
    if not data.events:
        print("Nothing recorded yet: answer a quiz question with its Check button or run an exercise's check cell.")
    for _title, headers, rows in tables(summary):
        print(format_table(headers, rows) + "\n")
    if summary.revisit:
        print("Worth revisiting:")
        for row in summary.revisit:
            print(f"  - {revisit_text(row)}")
    elif data.events:
        print(NOTHING_TO_REVISIT)
    if args.html:
        args.html.write_text(html_page(summary, path), encoding="utf-8")
        print(f"\nWrote {args.html}")
    return 0


def _percent(part: int, whole: int) -> str:
    return f"{round(100 * part / whole)}%" if whole else "–"


def format_table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=True)]

    def line(cells) -> str:
        return "  ".join(str(cell).ljust(width) for cell, width in zip(cells, widths, strict=True)).rstrip()

    return "\n".join([line(headers), "  ".join("-" * width for width in widths), *(line(row) for row in rows)])


def html_page(summary, path: Path) -> str:
    from course_lib.tools.classroom.learning import revisit_text

    def table(headers, rows):
        head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    sections = "\n".join(f"<h2>{html.escape(title)}</h2>\n{table(h, rows)}" for title, h, rows in tables(summary))
    revisit = "".join(f"<li>{html.escape(revisit_text(row))}</li>" for row in summary.revisit)
    revisit = f"<ul>{revisit}</ul>" if revisit else f"<p>{NOTHING_TO_REVISIT}</p>"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Your progress in the Transformers course</title>
<style>body{{font-family:system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;color:#222}}
table{{border-collapse:collapse;margin:0 0 1.5rem}}
th,td{{padding:.3rem .8rem;border-bottom:1px solid #ddd;text-align:left}} th{{background:#f3f3f3}}</style></head><body>
<h1>Your progress</h1>
<p>From your learning record, <code>{html.escape(str(path))}</code>: {summary.attempts} entries.</p>
{sections}
<h2>Worth revisiting</h2>
{revisit}
</body></html>
"""


def _show(args) -> int:
    path = where(args.record)
    if not path.exists():
        print(f"No record yet at {path}.")
        return 0
    data = load(path)
    print(f"{path}: {len(data.events)} entries, {len(data.skipped)} unreadable lines skipped")
    for event in data.events:
        print("  " + json.dumps(event, ensure_ascii=False))
    return 0


def backup_name(path: Path) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    candidate = path.with_name(f"{path.stem}.backup-{stamp}{path.suffix}")
    number = 1
    while candidate.exists():
        number += 1
        candidate = path.with_name(f"{path.stem}.backup-{stamp}-{number}{path.suffix}")
    return candidate


def _reset(args) -> int:
    path = where(args.record)
    if not path.exists() or path.stat().st_size == 0:
        print(f"Your record at {path} is already empty.")
        return 0
    backup = backup_name(path)
    backup.write_bytes(path.read_bytes())  # if this fails, the record is untouched
    if backup.read_bytes() != path.read_bytes():
        raise CommandError(f"The backup {backup} does not match the record; nothing was reset.")
    path.write_bytes(b"")
    print(f"Your record is empty now. The old one is kept in {backup}.")
    return 0


def _delete(args) -> int:
    path = where(args.record)
    backups = sorted(path.parent.glob(f"{path.stem}.backup-*{path.suffix}")) if args.backups else []
    if not args.yes:
        what = f"{path}" + (f" and {len(backups)} backups" if backups else "")
        raise CommandError(
            f"This deletes {what} for good. Add --yes to go ahead (or use `record reset` to keep a backup)."
        )
    removed = 0
    for file in [path, *backups]:
        if file.exists():
            file.unlink()
            removed += 1
    print(f"Deleted {removed} file(s)." if removed else f"There was no record at {path}.")
    return 0
