"""The course's two parts and the names that moved when they were put in order (issue 25).

Part 1 is 01-06 and its knowledge check 07 (over 01-06 only); Part 2 starts at 08. The language-model exercise takes
its notebook's number (ex08), and 08's questions left Part 1's check for 08's own quiz: what a learner wrote or
recorded under the old names still reads.
"""

from __future__ import annotations

from course_lib import _syllabus as syllabus
from course_lib.interactive.quiz import load_bank
from course_lib.tools.classroom import learning
from course_lib.tools.exercises import files as exercise_files
from course_lib.tools.grading import grade as grading


def test_the_parts_cover_the_course_in_order():
    numbers = [number for part in syllabus.PARTS for number in part.notebooks]
    assert numbers == [row.number for row in syllabus.COURSE], "every notebook in exactly one part, in order"
    first, second = syllabus.PARTS
    assert (
        first.check == "07"
        and first.notebooks[-1] == "07"
        and first.notebooks[:6] == ("01", "02", "03", "04", "05", "06")
    )
    assert second.notebooks[0] == "08"
    assert syllabus.part_of("08") is second and syllabus.part_of("03") is first
    assert "07" not in {row.number for row in syllabus.lessons()}


def test_an_exercise_carries_its_notebooks_number():
    for row in syllabus.COURSE:
        if row.exercise:
            assert row.exercise.startswith(f"ex{row.number}_"), row


def test_part_1_check_quizzes_01_to_06_only():
    final = load_bank("final")
    assert {q.notebook for q in final.questions} <= {"01", "02", "03", "04", "05", "06"}
    assert "language_model" not in {q.topic for q in final.questions}


def test_old_exercise_name_still_resolves():
    assert exercise_files.resolve("ex07_language_model").name == "ex08_language_model"
    assert exercise_files.resolve("ex07_language_model.ipynb").name == "ex08_language_model"
    assert exercise_files.resolve("ex08").name == "ex08_language_model"
    assert grading._exercise_from_stem("ex07_language_model") == "ex08_language_model"


def test_a_record_written_before_the_move_still_reads():
    event = {"v": 1, "time": "2026-12-04T10:00:00Z", "kind": "quiz", "correct": True, "answer": "B"}
    old = [
        {**event, "quiz": "final", "question": "final-lm-causal"},
        {**event, "quiz": "final", "question": "final-lm-top-k"},
    ]
    first = learning.first_answers(old)
    assert set(first) == {("08", "lm-causal-mask"), ("08", "lm-top-k-equivalent")}
    summary = learning.summarize(old)
    row = {quiz.quiz: quiz for quiz in summary.quizzes}["08"]
    assert row.answered == 2 and row.first_try == 2 and row.solved == 2
    for (quiz, question), (new_quiz, new_question) in syllabus.MOVED_QUESTIONS.items():
        assert load_bank(new_quiz).question(new_question), f"{quiz}/{question} moved to a question that exists"


def test_a_part_2_check_record_from_when_it_was_notebook_11_still_reads():
    """The Part 2 check moved from 11 to 12 when notebook 11 (From text to tokens) came in. A record keys its answers
    by the bank's name, 'part2', never by the notebook's number, so answers written before the move count for the
    check, and none of them lands in notebook 11's own quiz."""
    assert syllabus.PART2_CHECK == "12" and syllabus.notebook("12").quiz == "part2"
    assert syllabus.part_of("11") is syllabus.part_of("12")
    event = {"v": 1, "time": "2026-12-06T10:00:00Z", "kind": "quiz", "correct": True, "answer": "C"}
    old = [{**event, "quiz": "part2", "question": "part2-lm-loss-positions"}]
    summary = learning.summarize(old)
    quizzes = {quiz.quiz: quiz for quiz in summary.quizzes}
    assert quizzes["part2"].answered == 1 and quizzes["part2"].first_try == 1
    assert quizzes["11"].answered == 0, "an old answer to the check is not an answer to notebook 11's quiz"
