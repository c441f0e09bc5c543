"""``quiz``: validate the question banks and read a quiz in the terminal.

python -m course_lib quiz check              # validate every bank and its answer balance (exit 1 on a problem)
python -m course_lib quiz check my_bank.yaml # validate one file, e.g. before copying it into banks/
python -m course_lib quiz list               # the banks and their questions per topic
python -m course_lib quiz show 01 [--answers]
"""

from __future__ import annotations

import sys
from collections import Counter


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "quiz",
        help="validate the quiz banks, list them, or print a quiz as text",
        description="Tools for the self-check quizzes (banks in course_lib/interactive/quiz/banks/, see docs/quizzes.md).",
    )
    parser.set_defaults(handler=lambda args: (parser.print_help(), 2)[1])
    actions = parser.add_subparsers(dest="action", metavar="action")

    check = actions.add_parser(
        "check",
        help="validate banks (default: all shipped banks); exit 1 if one is malformed",
        description="Load and validate question banks: schema, exactly the right number of correct options, "
        "feedback on every option, numeric answers with a tolerance, unique ids. Then the answer balance "
        "(course_lib/interactive/quiz/balance.py): per bank (of 4 or more single-choice questions), at most 30%% of single-choice "
        "questions may have the correct option as the strictly longest; over the checked banks pooled (20 or more "
        "single-choice questions), that share must lie between 15%% and 35%%, the share with the correct option as "
        "the strictly shortest must be at most 35%%, and no display position may hold the correct option more than "
        "twice as often as another. Prints one line per bank and one for the pool.",
    )
    check.add_argument("files", nargs="*", help="bank names (01, final) or paths to .yaml files; default: all banks")
    check.set_defaults(handler=_check)

    listing = actions.add_parser("list", help="list the banks with their number of questions")
    listing.set_defaults(handler=_list)

    show = actions.add_parser("show", help="print a quiz as text, e.g. `quiz show 01`")
    show.add_argument("bank", help="a bank name (01 … 06, final) or a path to a .yaml file")
    show.add_argument("--answers", action="store_true", help="also print the answers and explanations")
    show.set_defaults(handler=_show)


def _describe(quiz) -> str:
    kinds = Counter(q.kind for q in quiz.questions)
    kinds_text = ", ".join(f"{kinds[k]} {k}" for k in ("single", "multiple", "numeric") if kinds[k])
    return f"{len(quiz)} questions ({kinds_text})"


def _check(args) -> int:
    return check(args.files)


def check(files: list[str] | None = None) -> int:
    """Validate the banks ``files`` (names or paths; default: every shipped bank) and their answer balance, printing
    one line per bank; 0 if all are valid and balanced, else 1."""
    from ..interactive.quiz.balance import balance_report
    from ..interactive.quiz.loader import check_banks

    quizzes, errors = check_banks(files or None)
    for quiz in quizzes:
        if not any(error.path == quiz.path for error in errors):
            print(f"OK    {quiz.path.name}: {_describe(quiz)}")
    lines, unbalanced = balance_report(quizzes)
    for line in lines:
        print(f"BALANCE {line}")
    for error in errors:
        print(f"ERROR {error}", file=sys.stderr)
    for problem in unbalanced:
        print(f"ERROR {problem}", file=sys.stderr)
    if errors or unbalanced:
        print(f"{len(errors) + len(unbalanced)} problem(s) found.", file=sys.stderr)
        return 1
    print(f"All {len(quizzes)} banks are valid and balanced.")
    return 0


def _list(args) -> int:
    from ..interactive.quiz.errors import QuizBankError
    from ..interactive.quiz.loader import available_banks, load_bank

    status = 0
    for name in available_banks():
        try:
            quiz = load_bank(name)
        except QuizBankError as exc:
            print(f"{name:<6} ERROR {exc}")
            status = 1
            continue
        topics = Counter(q.topic for q in quiz.questions)
        print(f"{name:<6} {quiz.title}: {_describe(quiz)}")
        print("       topics: " + ", ".join(f"{topic} {count}" for topic, count in topics.items()))
    return status


def _show(args) -> int:
    from ..interactive.quiz.errors import QuizBankError
    from ..interactive.quiz.loader import load_bank
    from ..interactive.quiz.render import quiz_text

    try:
        quiz = load_bank(args.bank)
    except QuizBankError as exc:
        print(exc, file=sys.stderr)
        return 2
    print(quiz_text(quiz, answers=args.answers), end="")
    return 0
