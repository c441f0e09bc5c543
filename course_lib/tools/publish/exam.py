"""An exam drawn from the quiz banks: a paper without answers and a separate answer key, for the instructor.

    python -m course_lib exam --through 06 --questions 20 --seed 2027 --out exam-part1

writes ``exam-part1/exam.md`` (the questions, options lettered, no answer and no feedback) and
``exam-part1/answers.md`` (for each question: the right letters or number, the explanation, and the quiz question
it came from). The draw is seeded (the same seed gives the same paper) and spread over the notebooks: each notebook
up to ``--through`` gives about the same number of questions. ``--out`` must be a new folder outside the course
folder (or under its ignored ``build/``), so the answer key never lands in a learner bundle or the repository.

One honest limit: the quiz banks ship with the course (learners answer them in the notebooks), so a learner who
worked through the quizzes has seen these questions. Use the paper for a supervised exam that rewards having done
the work, or as a starting point: change the numbers of the numeric questions and reorder the options.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

from course_lib._errors import CommandError


def _letters(n: int) -> list[str]:
    return [chr(ord("A") + i) for i in range(n)]


def draw(through: str, count: int, seed: int):
    """``count`` questions from the banks of notebooks up to ``through``, spread evenly, in notebook order."""
    from course_lib._syllabus import COURSE
    from course_lib.interactive.quiz.loader import load_bank

    number = str(through).zfill(2)
    if number not in {row.number for row in COURSE}:
        raise CommandError(f"--through {through}: not a notebook number ({', '.join(r.number for r in COURSE)}).")
    if count < 1:
        raise CommandError("--questions must be at least 1.")
    banks = [(row.number, load_bank(row.quiz)) for row in COURSE if row.number <= number and row.quiz]
    pools = [(notebook, bank.id, list(bank.questions)) for notebook, bank in banks if bank.questions]
    available = sum(len(pool) for _, _, pool in pools)
    if count > available:
        raise CommandError(f"--questions {count}: the banks up to notebook {number} hold {available} questions.")
    rng = random.Random(seed)
    for _, _, pool in pools:
        rng.shuffle(pool)
    chosen: list[tuple[str, str, object]] = []
    while len(chosen) < count:  # round-robin over the notebooks: an even spread
        for notebook, bank_id, pool in pools:
            if pool and len(chosen) < count:
                chosen.append((notebook, bank_id, pool.pop()))
    order = {notebook: i for i, (notebook, _, _) in enumerate(pools)}
    chosen.sort(key=lambda item: order[item[0]])
    return chosen


def _plain(text: str) -> str:
    return re.sub(r"\n{3,}", "\n\n", str(text).strip())


def papers(chosen, title: str) -> tuple[str, str]:
    exam = [f"# {title}", "", f"{len(chosen)} questions. Choose every option that is right, or give the number.", ""]
    key = [f"# {title}: answer key (instructors only)", ""]
    for index, (notebook, bank_id, question) in enumerate(chosen, start=1):
        exam += [f"**{index}.**", "", _plain(question.prompt), ""]
        if question.options:
            letters = _letters(len(question.options))
            exam += [f"- {letter}) {_plain(option.text)}" for letter, option in zip(letters, question.options)]
            right = ", ".join(letter for letter, option in zip(letters, question.options) if option.correct)
        else:
            unit = f" ({question.unit})" if question.unit else ""
            exam.append(f"Answer{unit}: ______")
            tolerance = f" (± {question.tolerance:g})" if question.tolerance else ""
            right = f"{question.answer:g}{tolerance}"
        exam.append("")
        key += [
            f"**{index}.** {right}. From quiz {bank_id}, question `{question.id}` (notebook {notebook}).",
            f"{_plain(question.explanation)}",
            "",
        ]
    return "\n".join(exam).rstrip() + "\n", "\n".join(key).rstrip() + "\n"


def write_exam(out: Path, through: str, count: int, seed: int) -> tuple[Path, Path]:
    from course_lib.tools.publish.bundle import check_out_dir

    chosen = draw(through, count, seed)
    out = check_out_dir(out)
    out.mkdir(parents=True, exist_ok=True)
    exam, key = papers(chosen, f"Exam: notebooks 01-{str(through).zfill(2)}")
    (out / "exam.md").write_text(exam, encoding="utf-8")
    (out / "answers.md").write_text(key, encoding="utf-8")
    return out / "exam.md", out / "answers.md"


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "exam",
        help="instructors: an exam paper drawn from the quiz banks, with a separate answer key",
        description="Draw --questions questions, spread over the notebooks up to --through, from the quiz banks "
        "(seeded: the same --seed gives the same paper). Writes exam.md (no answers) and answers.md into --out, a "
        "new folder outside the course folder.",
    )
    parser.add_argument("--through", required=True, help="the last notebook the exam covers, e.g. 06")
    parser.add_argument("--questions", type=int, default=20, help="how many questions (default 20)")
    parser.add_argument("--seed", type=int, default=0, help="the draw's seed (default 0)")
    parser.add_argument("--out", type=Path, required=True, help="a new folder outside the course folder")
    parser.set_defaults(handler=_run)


def _run(args) -> int:
    exam, key = write_exam(args.out, args.through, args.questions, args.seed)
    print(f"Wrote {exam} (for the students) and {key} (the answer key: keep it to yourself).")
    return 0
