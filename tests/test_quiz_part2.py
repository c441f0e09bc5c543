"""The Part 2 knowledge check covers Part 2, and the form of its questions gives nothing away (issue 42).

- notebook 12's bank (``part2``) has at least 18 questions, with at least one on every section of Part 2: sampling,
  weight tying, the KV cache's cost, cross-attention, the phase change, the one-layer limit, K-composition, SwiGLU,
  RoPE's pairing and extrapolation, the online softmax's rescale, grouped-query attention, tiled attention's memory;
- over Part 2's checks pooled (the ``part2`` bank and the quizzes of notebooks 08, 09, 10 and 11), every letter holds
  the right answer about as often as any other, and the right answer is neither systematically the longest option
  nor never the longest (the pooled rules of ``course_lib/interactive/quiz/balance.py``, applied to Part 2 alone).
"""

from __future__ import annotations

import pytest

from course_lib.interactive.quiz.balance import bank_balance, pooled_balance
from course_lib.interactive.quiz.loader import load_bank

PART_2_BANKS = ("08", "09", "10", "11", "part2")
# every section of Part 2, as words that a question on it must contain (prompt, options or explanation)
SECTIONS = {
    "sampling": ("top-p", "temperature"),
    "weight tying": ("ties", "tied", "weight tying"),
    "the KV cache's cost": ("cached", "kv cache"),
    "cross-attention": ("cross-attention",),
    "the phase change": ("phase change",),
    "the one-layer limit": ("single attention layer", "one layer"),
    "K-composition": ("path ablation",),
    "SwiGLU": ("swiglu",),
    "RoPE pairing": ("pairing",),
    "RoPE extrapolation": ("positions 16",),
    "the online softmax's rescale": ("online softmax",),
    "grouped-query attention": ("grouped-query",),
    "tiled attention": ("tiled attention",),
    "BPE merges": ("merge",),
    "bits per byte": ("bits per byte",),
}


def _text(question) -> str:
    options = " ".join(option.text for option in getattr(question, "options", ()) or ())
    return f"{question.prompt} {options} {question.explanation}".lower()


def test_the_part_2_check_has_at_least_18_questions():
    assert len(load_bank("part2")) >= 18, f"notebook 12 asks only {len(load_bank('part2'))} questions"


@pytest.mark.parametrize("section", sorted(SECTIONS))
def test_the_part_2_check_asks_about_every_section(section):
    texts = [_text(question) for question in load_bank("part2").questions]
    assert any(any(word in text for word in SECTIONS[section]) for text in texts), (
        f"no question of notebook 12 asks about {section}"
    )


def test_right_letters_and_lengths_carry_no_signal_across_part_2():
    pool = pooled_balance([load_bank(name) for name in PART_2_BANKS], name="Part 2")
    assert pool.singles >= 20, "too few single-choice questions to judge"
    counts = [pool.positions.get(position, 0) for position in sorted(pool.expected)]
    assert min(counts) > 0, f"a letter never holds the right answer in Part 2: {pool.positions_text()}"
    assert pool.position_ratio() <= 1.5, f"the right letters are unbalanced across Part 2: {pool.positions_text()}"
    assert pool.position_problem() is None, pool.position_problem()
    assert not pool.pooled_length_problems(), pool.pooled_length_problems()


@pytest.mark.parametrize("name", PART_2_BANKS)
def test_each_part_2_check_uses_several_letters_and_is_not_won_by_the_longest_option(name):
    balance = bank_balance(load_bank(name))
    used = sum(1 for position in balance.expected if balance.positions.get(position, 0))
    assert used >= 3, f"bank {name}: the right answer sits at only {used} letters ({balance.positions_text()})"
    assert balance.longest_problem() is None, balance.longest_problem()


def test_within_the_part_2_check_letters_and_lengths_carry_no_signal():
    """Notebook 12 alone: every letter a single-choice question can show holds the right answer at least once and
    none more than twice as often as another (count over expectation); the right answer is the strictly longest
    option in at most 30% of its single-choice questions, and the strictly shortest in at most 30%."""
    balance = bank_balance(load_bank("part2"))
    assert balance.singles >= 12, f"notebook 12 has only {balance.singles} single-choice questions"
    missing = [position for position in balance.expected if not balance.positions.get(position, 0)]
    assert not missing, f"a letter never holds the right answer in notebook 12: {balance.positions_text()}"
    assert balance.position_ratio() <= 2.0, (
        f"the right letters are unbalanced in notebook 12: {balance.positions_text()}"
    )
    longest, shortest = len(balance.longest_correct), len(balance.shortest_correct)
    assert 10 * longest <= 3 * balance.singles, (
        f"right = strictly longest in {longest} of {balance.singles}: {balance.longest_correct}"
    )
    assert 10 * shortest <= 3 * balance.singles, (
        f"right = strictly shortest in {shortest} of {balance.singles}: {balance.shortest_correct}"
    )
