"""`quiz check` on hostile banks: one friendly QuizBankError each, never a traceback, and no false alarm.

Each case here made an earlier loader raise a raw Python error (unhashable topic or key, a superscript digit as a
notebook number, a 400-digit answer), report a bank's ids as duplicates of themselves, or accept math that YAML's
double-quote escapes had turned into control characters.
"""

from __future__ import annotations

import pytest

from course_lib.interactive.quiz import QuizBankError, check_banks, load_bank, parse_bank
from course_lib.tools.cli import main as cli_main

HEADER = "title: A test bank\nnotebook: '02'\nquestions:\n"


def question(**fields) -> str:
    base = {
        "id": "q1",
        "kind": "single",
        "topic": "scaling",
        "prompt": "'Pick one.'",
        "options": "\n      - {text: A, correct: true, feedback: Yes.}\n      - {text: B, feedback: No.}",
        "explanation": "Because.",
    }
    base.update(fields)
    lines = [f"  - id: {base.pop('id')}"] + [f"    {key}: {value}" for key, value in base.items()]
    return HEADER + "\n".join(lines) + "\n"


NUMERIC = (
    HEADER + "  - id: q1\n    kind: numeric\n    topic: scaling\n    prompt: How many?\n    answer: {answer}\n"
    "    tolerance: 0\n    wrong_feedback: No.\n    explanation: Because.\n"
)


@pytest.mark.parametrize(
    "text, words",
    [
        (question(topic="[qkv_attention]"), "unknown topic"),
        (question(topic="{a: 1}"), "unknown topic"),
        (HEADER + "  - id: q1\n    ? [a, b]\n    : 1\n", "a key must be a plain word"),
        (question(notebook="'²'"), "not one of the course notebooks"),
        (NUMERIC.format(answer="1" * 400), "too large"),
        (NUMERIC.format(answer="-" + "9" * 20), "too large"),
        (question(prompt='"Why is $\\beta$ small?"'), "control character"),
        (question(prompt='"The angle $\\theta$"'), "control character"),
        (question(prompt='"Gradient $\\nabla L$"'), "as LaTeX"),
        (question(prompt='"$\\frac{1}{2}$"'), "control character"),
        (question(explanation='"Use \\alpha here"'), "control character"),
        (question(prompt='"A bell \\a"'), "control character U+0007"),
        (
            question(
                options='\n      - {text: "$\\tau$", correct: true, feedback: Yes.}\n      - {text: B, feedback: No.}'
            ),
            "control character",
        ),
        (
            question(
                options='\n      - {text: A, correct: true, feedback: "\\beta"}\n      - {text: B, feedback: No.}'
            ),
            "control character",
        ),
        (question(quotes="\n      - {number: '0.7', range: ['0.6', '0.8'], output: 'x ([0-9.]+)'}"), "one of"),
        (question(quotes="\n      - {below: '0.3'}"), 'needs "output:"'),
        (question(quotes="\n      - {range: '0.6 to 0.8', output: 'x ([0-9.]+)'}"), "two numbers written in quotes"),
        (question(quotes="\n      - {range: ['0.6'], output: 'x ([0-9.]+)'}"), "two numbers written in quotes"),
        (question(quotes="\n      - {number: '0.7', output: 'x ([0-9.]+)', source: prose}"), '"source:" is'),
    ],
    ids=[
        "list topic",
        "mapping topic",
        "complex key",
        "superscript notebook",
        "400 digits",
        "20 digits",
        "beta",
        "theta",
        "nabla",
        "frac",
        "alpha outside math",
        "bell",
        "option text",
        "feedback",
        "quote with two claims",
        "quote without output",
        "range as text",
        "range of one",
        "unknown source",
    ],
)
def test_a_hostile_bank_gives_one_friendly_error(text, words, tmp_path):
    path = tmp_path / "hostile.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(QuizBankError) as caught:
        load_bank(path)
    assert words in str(caught.value), str(caught.value)
    quizzes, errors = check_banks([path])
    assert quizzes == [] and len(errors) == 1


def test_escapes_that_are_meant_stay_allowed():
    quiz = parse_bank(question(prompt='"Line one\\nLine two, and a quote \\" and a backslash \\\\beta"'))
    assert quiz.questions[0].prompt == 'Line one\nLine two, and a quote " and a backslash \\beta'
    quiz = parse_bank(question(prompt="'$\\beta$ in single quotes is LaTeX'"))
    assert "\\beta" in quiz.questions[0].prompt


def test_checking_a_bank_twice_is_not_a_duplicate(capsys):
    quizzes, errors = check_banks(["01", "01", "1"])
    assert errors == [] and len(quizzes) == 1
    cli_main(["quiz", "check", "01", "01"])  # its exit code also reflects the answer balance (test_quiz_balance.py)
    err = capsys.readouterr().err
    assert "duplicate" not in err and "also used in" not in err


def test_the_command_line_never_shows_a_traceback(tmp_path, capsys):
    path = tmp_path / "hostile.yaml"
    path.write_text(question(topic="[qkv_attention]"), encoding="utf-8")
    assert cli_main(["quiz", "check", str(path)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "hostile.yaml" in err
