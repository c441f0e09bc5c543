"""The knowledge checks (07 for Part 1, 11 for Part 2) ask new questions whose form gives nothing away (issue 42).

- Within each check, the right answers' display letters carry no signal: every letter its single-choice questions
  can show holds the right answer at least once, and none more than twice as often as another (by count over
  expectation, as ``quiz check`` pools it, here per check).
- Within each check, the right answer is the strictly longest option in at most 30% of its single-choice questions
  and the strictly shortest in at most 30%.
- 07's computed answers are checked against ``course_lib`` without printing them (no spoilers in a stored output).
- 07's questions are new: no numeric answer of the final bank equals a sum of answers of one lesson quiz, and no
  prompt repeats a lesson question's prompt.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import nbformat
import pytest

from course_lib.interactive.quiz import load_bank
from course_lib.interactive.quiz.balance import correct_is_strictly_longest, correct_is_strictly_shortest

ROOT = Path(__file__).resolve().parents[1]
CHECKS = {"final": "07_knowledge_check.ipynb", "part2": "12_part2_check.ipynb"}


def singles(bank_name: str):
    return [question for question in load_bank(bank_name).questions if question.kind == "single"]


def letter_problem(questions) -> str | None:
    counts, expected = {}, {}
    for question in questions:
        (right,) = question.correct_indices
        counts[right] = counts.get(right, 0) + 1
        for position in range(len(question.options)):
            expected[position] = expected.get(position, 0.0) + 1 / len(question.options)
    rates = {p: counts.get(p, 0) / e for p, e in expected.items() if e >= 1}
    shown = ", ".join(f"{'abcdefgh'[p]} {counts.get(p, 0)}" for p in sorted(expected))
    if min(rates.values()) == 0:
        return f"a letter never holds the right answer ({shown})"
    if max(rates.values()) > 2 * min(rates.values()):
        return f"one letter holds the right answer more than twice as often as another ({shown})"
    return None


@pytest.mark.parametrize("bank_name", sorted(CHECKS))
def test_right_letters_carry_no_signal_within_each_check(bank_name):
    problem = letter_problem(singles(bank_name))
    assert problem is None, f"{bank_name}: {problem}"


@pytest.mark.parametrize("bank_name", sorted(CHECKS))
def test_right_lengths_carry_no_signal_within_each_check(bank_name):
    questions = singles(bank_name)
    longest = [q.id for q in questions if correct_is_strictly_longest(q)]
    shortest = [q.id for q in questions if correct_is_strictly_shortest(q)]
    assert len(longest) <= 0.3 * len(questions), f"{bank_name}: right answer strictly longest in {longest}"
    assert len(shortest) <= 0.3 * len(questions), f"{bank_name}: right answer strictly shortest in {shortest}"


def test_the_letter_measure_sees_an_unbalanced_check():
    class Q:
        def __init__(self, right):
            self.correct_indices, self.options = (right,), [None] * 4

    assert letter_problem([Q(0), Q(1), Q(2), Q(3)] * 2) is None
    assert "never" in letter_problem([Q(0), Q(1), Q(2)] * 3)
    assert "twice" in letter_problem([Q(0)] * 5 + [Q(1), Q(2), Q(3)])


def test_07_does_not_print_the_answers_it_checks():
    notebook = nbformat.read(ROOT / "notebooks" / CHECKS["final"], as_version=4)
    final = load_bank("final")
    answers = {
        f"{question.answer:,}" for question in final.questions if question.kind == "numeric" and question.answer >= 10
    }
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        printed = "".join(output.get("text", "") for output in cell.get("outputs", []))
        assert "quiz answer" not in printed, "07 prints the quiz's answers under a stored output"
        leaked = [answer for answer in answers if answer in printed]
        assert not leaked, f"07 prints numeric answers {leaked} in a stored output"


def test_07_asks_new_questions_not_sums_of_a_lesson_quiz():
    final = load_bank("final")
    lessons = {name: load_bank(name) for name in ("01", "02", "03", "04", "05", "06")}
    lesson_prompts = {" ".join(q.prompt.split()) for bank in lessons.values() for q in bank.questions}
    for question in final.questions:
        assert " ".join(question.prompt.split()) not in lesson_prompts, f"{question.id} repeats a lesson question"
        if question.kind != "numeric":
            continue
        for name, bank in lessons.items():
            numbers = [q.answer for q in bank.questions if q.kind == "numeric"]
            for size in (2, 3):  # one equal number can be chance (256); a sum of two or three is a reused question
                for chosen in itertools.combinations(numbers, size):
                    assert abs(sum(chosen) - question.answer) > max(question.tolerance, 1e-9), (
                        f"{question.id}: its answer {question.answer} is quiz {name}'s answers {chosen} summed"
                    )


def test_07s_layernorm_question_is_not_a_row_of_05s_table():
    lesson = " ".join((ROOT / "course_lib/interactive/quiz/banks/05.yaml").read_text().split())
    prompt = " ".join(load_bank("final").question("final-layernorm-value").prompt.split())
    vector = re.search(r"\$(\[[^$]*\])\$", prompt).group(1)
    assert vector not in lesson, f"07 normalises {vector}, which notebook 05's quiz already works through"
