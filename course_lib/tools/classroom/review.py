"""``review``: the quiz questions due for spaced review, one at a time in the terminal (``course_lib.interactive.review``).

    python -m course_lib review              # up to 5 questions due now; type the letter(s) or the number
    python -m course_lib review --list       # what is due now and what comes next, and when
    python -m course_lib review --max 10

The schedule (Leitner boxes, from your learning record) is in ``course_lib/interactive/review.py``; each answer is recorded.
"""

from __future__ import annotations

import warnings
from datetime import datetime, timezone
from pathlib import Path

from course_lib._errors import CommandError
from course_lib.interactive import record


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "review",
        help="spaced review: questions from earlier quizzes, due by a Leitner schedule, one at a time",
        description="Bring back quiz questions you missed or answered a while ago, from your learning record.",
    )
    parser.add_argument("--list", action="store_true", help="only show what is due now and what comes next")
    parser.add_argument("--max", type=int, default=5, help="at most this many questions now (default 5)")
    parser.add_argument("--record", type=Path, default=None, help="the record file (default: your course folder's)")
    parser.set_defaults(handler=_run)


def _run(args, now: datetime | None = None, ask=input, say=print) -> int:
    from course_lib.interactive.quiz.errors import QuizAnswerError
    from course_lib.interactive.quiz.render import plain
    from course_lib.interactive.review import due_items, known_questions, plan_text, schedule

    path = args.record or record.record_path()
    if path is None:
        raise CommandError("No learning record here: run this from your course folder (or pass --record FILE).")
    if args.max < 1:
        raise CommandError("--max must be at least 1.")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        events = record.read(Path(path)).events
    now = now or datetime.now(timezone.utc)
    known = known_questions()
    items = schedule(events, known)
    if args.list or not items:
        say(plan_text(items, now))
        return 0
    queue = due_items(items, now)[: args.max]
    if not queue:
        say(plan_text(items, now))
        return 0
    say(f"{len(queue)} question(s) to review. Type the letter(s) (e.g. b, or a,c) or the number; an empty line stops.")
    for number, item in enumerate(queue, start=1):
        quiz, question = known[(item.quiz, item.question)]
        say(f"\n[{number}/{len(queue)}] from quiz {item.quiz} · box {item.box}")
        say(plain(question.prompt))
        for index, option in enumerate(question.options):
            say(f"  {chr(ord('a') + index)}) {plain(option.text)}")
        if question.kind == "numeric":
            say(f"  (a number{', in ' + question.unit if question.unit else ''})")
        while True:
            try:
                answer = ask("> ").strip()
            except EOFError:
                answer = ""
            if not answer:
                say("Stopped; the rest stays due.")
                return 0
            try:
                result = quiz.check(question.id, answer)
            except QuizAnswerError as exc:
                say(str(exc).split(": ", 1)[-1])
                continue
            break
        record.review_attempt(quiz, question, answer, result, path=Path(path))
        say(("Right. " if result.correct else "Not quite. ") + plain(result.feedback))
        if result.correct and result.explanation:
            say(plain(result.explanation))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        events = record.read(Path(path)).events
    say("\n" + plan_text(schedule(events, known), now))
    return 0
