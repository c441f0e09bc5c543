"""The form of a question must not give its answer away (issue 15): options are shuffled deterministically per
question id, and `quiz check` fails a bank whose correct options are too often the longest, banks pooled whose
correct options are too rarely the longest (a learner could rule the longest out) or too often the shortest, and
banks pooled whose correct options sit too often at one display position. The thresholds are tested on small
synthetic banks; every shipped bank is checked against them at the end, and `python -m course_lib quiz check` prints
the numbers."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from course_lib.interactive.quiz import load_bank, parse_bank
from course_lib.interactive.quiz.balance import (
    LONGEST_LIMIT,
    MIN_BANK_SINGLES,
    MIN_POOLED,
    POOLED_LONGEST_RANGE,
    SHORTEST_LIMIT,
    balance_report,
    bank_balance,
    correct_is_strictly_longest,
    correct_is_strictly_shortest,
    pooled_balance,
)
from course_lib.interactive.quiz.loader import available_banks
from course_lib.interactive.quiz.model import display_order
from course_lib.interactive.quiz.render import quiz_html, quiz_text

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
@pytest.mark.slow  # starts a kernel or a subprocess (make test-fast leaves it to make test)
def test_display_order_is_a_permutation_fixed_by_the_id_alone():
    for count in range(2, 9):
        for qid in ("a", "softmax-rows", "final-ffn-role"):
            order = display_order(qid, count)
            assert sorted(order) == list(range(count))
            assert order == display_order(qid, count)
    # not Python's salted hash(): another interpreter (another PYTHONHASHSEED) gives the same order
    code = "from course_lib.interactive.quiz.model import display_order; print(display_order('softmax-rows', 5))"
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


def test_strictly_shortest_ignores_ties_and_counts_characters():
    quiz = load(
        [
            ("tie", ["ab", "xy", "longer one", "longer two"], 0),  # tied for shortest: not given away
            ("shortest", ["no", "a longer wrong", "another wrong", "and a third"], 0),
            ("spaces", ["a  b", "abc", "wxyz", "vwxy"], 1),  # "a b" (3) ties "abc" (3)
            ("longest", ["a much longer one", "short", "tiny", "brief"], 0),
        ]
    )
    assert [correct_is_strictly_shortest(q) for q in quiz.questions] == [False, True, False, False]


LONG_RIGHT = ["the right one, long", "no", "nope", "nah"]  # correct = strictly longest
SHORT_RIGHT = ["ok", "a wrong one", "another one", "a third one"]  # correct = strictly shortest
EVEN = ["same", "size", "each", "opts"]  # all tied: neither longest nor shortest


def placed(qid: str, texts: list[str], shown: int) -> tuple[str, list[str], int]:
    """A question whose right option (``texts[0]``) is displayed at position ``shown`` after the shuffle."""
    right = display_order(qid, len(texts))[shown]
    wrong = iter(texts[1:])
    return qid, [texts[0] if i == right else next(wrong) for i in range(len(texts))], right


def pool_of(longest: int, shortest: int, total: int, prefix: str = "q"):
    """One synthetic bank of ``total`` single-choice questions: ``longest`` with the right option strictly longest,
    ``shortest`` with it strictly shortest, the rest with four options of equal length. The right option is shown
    at a, b, c, d in turn, so that the position rule stays out of the way."""
    kinds = [LONG_RIGHT] * longest + [SHORT_RIGHT] * shortest + [EVEN] * (total - longest - shortest)
    names = [f"{prefix}{i}" for i in range(longest)] + [f"{prefix}s{i}" for i in range(shortest)]
    names += [f"{prefix}e{i}" for i in range(total - longest - shortest)]
    return load([placed(qid, texts, i % 4) for i, (qid, texts) in enumerate(zip(names, kinds))])


def test_pooled_longest_share_must_lie_between_15_and_35_percent():
    low, high = POOLED_LONGEST_RANGE
    assert (low, high) == (0.15, 0.35) and MIN_POOLED == 20
    shares = {}
    for longest in range(0, 10):
        pool = pooled_balance([pool_of(longest, 0, 20)])
        assert len(pool.longest_correct) == longest and pool.singles == 20
        shares[longest] = pool.pooled_length_problems()
    # 3 of 20 is exactly 15% and 7 of 20 exactly 35%: both allowed; one fewer or one more is not
    assert [n for n, problems in shares.items() if not problems] == [3, 4, 5, 6, 7]
    assert "rule out the longest" in shares[2][0] and "2 of 20" in shares[2][0]
    assert "rule out the longest" in shares[0][0] and "0 of 20" in shares[0][0]
    assert "picking the longest pays" in shares[8][0] and "8 of 20" in shares[8][0]


def test_pooled_shortest_share_must_be_at_most_35_percent():
    assert SHORTEST_LIMIT == 0.35
    at_limit = pooled_balance([pool_of(4, 7, 20)])
    assert len(at_limit.shortest_correct) == 7 and at_limit.pooled_length_problems() == []
    over = pooled_balance([pool_of(4, 8, 20)])
    (problem,) = over.pooled_length_problems()
    assert "8 of 20" in problem and "strictly shortest" in problem and "qs0" in problem


def test_pooled_length_rules_are_not_judged_below_min_pooled_but_judged_across_banks():
    few = pool_of(0, 0, MIN_POOLED - 1)
    assert pooled_balance([few]).pooled_length_problems() == []
    # two banks each too small alone, and each fine per bank, fail together: nowhere is the right option the longest
    first, second = pool_of(0, 0, 10, prefix="a"), pool_of(0, 0, 10, prefix="b")
    assert bank_balance(first).longest_problem() is None and bank_balance(second).longest_problem() is None
    lines, problems = balance_report([first, second])
    assert "a 6, b 6, c 4, d 4 (ratio 1.50" in lines[-1]  # positions fine: the only problem is the length
    assert len(problems) == 1 and "all banks: in only 0 of 20" in problems[0]
    assert "allowed 15%-35%" in lines[-1]


def test_the_per_bank_rule_spares_banks_with_fewer_than_4_single_choice_questions():
    assert MIN_BANK_SINGLES == 4
    small = bank_balance(pool_of(1, 0, 3))  # 1 of 3 = 33% > 30%, but too few questions to judge
    assert small.longest_share > LONGEST_LIMIT and small.longest_problem() is None
    judged = bank_balance(pool_of(2, 0, 4))  # 2 of 4 = 50%
    assert judged.longest_problem() is not None and "2 of 4" in judged.longest_problem()
    lines, _ = balance_report([pool_of(1, 0, 3)])
    assert "not judged per bank" in lines[0]


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
    assert problems == [] and "length and position not judged" in lines[-1]


@pytest.mark.slow  # starts a kernel or a subprocess (make test-fast leaves it to make test)
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


def test_quiz_check_fails_banks_where_the_right_option_is_never_the_longest(tmp_path):
    path = tmp_path / "zz.yaml"
    overcorrected = [placed(f"q{i}", SHORT_RIGHT, i % 4) for i in range(20)]  # never longest, always shortest
    path.write_text(bank(overcorrected), encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "course_lib", "quiz", "check", str(path)], capture_output=True, text=True, cwd=ROOT
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "in only 0 of 20" in result.stderr and "rule out the longest" in result.stderr
    assert "20 of 20" in result.stderr and "strictly shortest" in result.stderr
    assert "2 problem(s) found." in result.stderr


def test_shipped_banks_pooled_positions_are_balanced():
    from course_lib.interactive.quiz.loader import available_banks

    pool = pooled_balance([load_bank(name) for name in available_banks()])
    assert pool.singles >= MIN_POOLED
    assert pool.position_problem() is None, pool.position_problem()


@pytest.mark.parametrize("name", available_banks())
def test_every_shipped_bank_keeps_the_longest_correct_share_within_the_per_bank_limit(name):
    balance = bank_balance(load_bank(name))
    assert balance.singles, f"bank {name} has no single-choice questions"
    assert balance.longest_problem() is None, balance.longest_problem()


def test_shipped_banks_pooled_lengths_carry_no_signal():
    pool = pooled_balance([load_bank(name) for name in available_banks()])
    assert pool.singles >= MIN_POOLED
    assert pool.pooled_length_problems() == [], pool.pooled_length_problems()
