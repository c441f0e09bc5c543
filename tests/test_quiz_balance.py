"""The form of a question must not give its answer away (issue 15): options are shuffled deterministically per
question id, and `quiz check` fails a bank whose correct options are too often the longest or sit too often at one
display position. The thresholds are tested on small synthetic banks; the shipped banks' numbers are printed by
`python -m course_lib quiz check`."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from course_lib.quiz import load_bank, parse_bank
from course_lib.quiz.balance import (
    LONGEST_LIMIT,
    MIN_POOLED,
    balance_report,
    bank_balance,
    correct_is_strictly_longest,
    pooled_balance,
)
from course_lib.quiz.model import display_order
from course_lib.quiz.render import quiz_html, quiz_text

ROOT = Path(__file__).resolve().parents[1]


def bank(questions: list[tuple[str, list[str], int]]) -> str:
    """A bank in YAML: (id, option texts, index of the correct one in the file) per single-choice question."""
    lines = ["title: Synthetic", "notebook: '01'", "questions:"]
    for qid, texts, right in questions:
        lines += [f"  - id: {qid}", "    kind: single", "    topic: rnn_limits", "    prompt: Which?"]
        lines += ["    explanation: Because.", "    options:"]
        for i, text in enumerate(texts):
            lines.append(f"      - text: '{text}'")
            if i == right:
                lines.append("        correct: true")
            lines.append(f"        feedback: 'Why {i}.'")
    return "\n".join(lines) + "\n"


def load(questions: list[tuple[str, list[str], int]]):
    return parse_bank(bank(questions), "zz.yaml")


# -- the shuffle ----------------------------------------------------------------------------------------------------
def test_display_order_is_a_permutation_fixed_by_the_id_alone():
    for count in range(2, 9):
        for qid in ("a", "softmax-rows", "final-ffn-role"):
            order = display_order(qid, count)
            assert sorted(order) == list(range(count))
            assert order == display_order(qid, count)
    # not Python's salted hash(): another interpreter (another PYTHONHASHSEED) gives the same order
    code = "from course_lib.quiz.model import display_order; print(display_order('softmax-rows', 5))"
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONHASHSEED": s},
        ).stdout.strip()
        for s in ("1", "2")
    }
    assert outputs == {str(display_order("softmax-rows", 5))}
    # it does shuffle: over many ids every position of a 4-option question is used, and not always the identity
    orders = [display_order(f"q{i}", 4) for i in range(400)]
    assert sum(order == (0, 1, 2, 3) for order in orders) < 40  # a fair shuffle: about 400 / 24 = 17
    firsts = Counter(order[0] for order in orders)
    assert set(firsts) == {0, 1, 2, 3} and max(firsts.values()) < 2 * min(firsts.values())


def test_loaded_options_are_in_display_order_and_answers_follow_what_is_shown():
    texts = ["first written", "second written", "third written", "fourth written"]
    quiz = load([("order-probe", texts, 2)])
    question = quiz.question("order-probe")
    order = display_order("order-probe", 4)
    assert [o.text for o in question.options] == [texts[i] for i in order]
    assert [o.bank_index for o in question.options] == list(order)
    shown = order.index(2)  # where the correct option (third in the file) is displayed
    assert question.correct_indices == (shown,)
    assert quiz.check("order-probe", "abcd"[shown]).correct
    assert not quiz.check("order-probe", "abcd"[(shown + 1) % 4]).correct
    assert question.options[shown].feedback == "Why 2."
    # the static HTML and the text show the same order, under the same letters
    text, page = quiz_text(quiz), quiz_html(quiz)
    for position, option in enumerate(question.options):
        assert f"{'abcd'[position]}) {option.text}" in text
        assert f"<strong>{'abcd'[position]})</strong> {option.text}" in page


def test_editing_an_option_text_does_not_move_any_option():
    texts = ["one", "two", "three", "four"]
    before = load([("stable-probe", texts, 0)]).question("stable-probe")
    texts[3] = "four, reworded at length"
    after = load([("stable-probe", texts, 0)]).question("stable-probe")
    assert [o.bank_index for o in before.options] == [o.bank_index for o in after.options]


def test_shipped_banks_shuffle_the_same_way_every_load():
    first = [(q.id, [o.text for o in q.options]) for q in load_bank("02").questions]
    again = [(q.id, [o.text for o in q.options]) for q in load_bank("02").questions]
    assert first == again


# -- the longest-correct rule -----------------------------------------------------------------------------------------
def test_strictly_longest_ignores_ties_and_counts_characters():
    quiz = load(
        [
            ("tie", ["abcd", "wxyz", "a", "b"], 0),  # tied for longest: not given away
            ("longest", ["a much longer one", "short", "tiny", "brief"], 0),
            ("spaces", ["a    b", "abcd", "x", "y"], 0),  # "a b" (3) after collapsing whitespace
        ]
    )
    assert [correct_is_strictly_longest(q) for q in quiz.questions] == [False, True, False]


def test_a_bank_fails_above_30_percent_longest_correct_and_passes_at_it():
    def synthetic(given_away: int, total: int) -> str:
        questions = []
        for i in range(total):
            if i < given_away:
                questions.append((f"q{i}", ["the right one, long", "no", "nope", "nah"], 0))
            else:
                questions.append((f"q{i}", ["right", "wrong a", "wrong b", "wrong c"], 0))
        return bank(questions)

    at_limit = bank_balance(parse_bank(synthetic(3, 10), "zz.yaml"))
    assert at_limit.longest_share == 0.3 and at_limit.longest_problem() is None
    over = bank_balance(parse_bank(synthetic(4, 10), "zz.yaml"))
    assert over.longest_share == 0.4 > LONGEST_LIMIT
    problem = over.longest_problem()
    assert problem and "4 of 10" in problem and "q0" in problem and "q4" not in problem


# -- the position rule ------------------------------------------------------------------------------------------------
def questions_with_shown_position(count: int, position: int, prefix: str) -> list[tuple[str, list[str], int]]:
    """Synthetic questions whose correct option is displayed at ``position``, found by trying ids."""
    found, i = [], 0
    while len(found) < count:
        qid = f"{prefix}{i}"
        order = display_order(qid, 4)
        found.append((qid, ["same", "size", "each", "opts"], order[position]))
        i += 1
    return found


def test_position_balance_is_judged_pooled_and_fails_beyond_twice():
    # 8 questions shown right at a, b and c, 3 at d: 8 / 3 > 2 fails; 6 at d: 8 / 6 passes
    def pooled(d_count: int):
        questions = []
        for position, count in enumerate([8, 8, 8, d_count]):
            questions += questions_with_shown_position(count, position, prefix=f"p{position}x")
        quiz = load(questions)
        assert Counter(q.correct_indices[0] for q in quiz.questions) == dict(enumerate([8, 8, 8, d_count]))
        return pooled_balance([quiz])

    unbalanced = pooled(3)
    assert unbalanced.singles >= MIN_POOLED and unbalanced.position_ratio() > 2
    assert "unbalanced" in unbalanced.position_problem() and "d 3" in unbalanced.position_problem()
    balanced = pooled(6)
    assert balanced.position_ratio() <= 2 and balanced.position_problem() is None
    # an empty position is infinitely rarer than the others
    never_d = load(sum((questions_with_shown_position(7, p, f"n{p}x") for p in range(3)), []))
    assert pooled_balance([never_d]).position_ratio() == float("inf")
    # too few questions: reported, not judged
    few = load(questions_with_shown_position(5, 0, "f"))
    assert pooled_balance([few]).position_problem() is None
    lines, problems = balance_report([few])
    assert problems == [] and "position not judged" in lines[-1]


def test_quiz_check_fails_an_unbalanced_bank_and_passes_a_balanced_one(tmp_path):
    given_away = bank([(f"q{i}", ["the right one, long", "no", "nope", "nah"], 0) for i in range(5)])
    fair = bank([(f"q{i}", ["right", "wrong a", "wrong b", "wrong c"], 0) for i in range(5)])
    for text, expected in ((given_away, 1), (fair, 0)):
        path = tmp_path / "zz.yaml"
        path.write_text(text, encoding="utf-8")
        result = subprocess.run(
            [sys.executable, "-m", "course_lib", "quiz", "check", str(path)],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        assert result.returncode == expected, result.stdout + result.stderr
        assert "BALANCE bank zz: correct = strictly longest in" in result.stdout
        if expected:
            assert "5 of 5" in result.stderr and "strictly longest" in result.stderr


def test_shipped_banks_pooled_positions_are_balanced():
    from course_lib.quiz.loader import available_banks

    pool = pooled_balance([load_bank(name) for name in available_banks()])
    assert pool.singles >= MIN_POOLED
    assert pool.position_problem() is None, pool.position_problem()
