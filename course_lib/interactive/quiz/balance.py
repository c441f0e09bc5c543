"""Does the form of a single-choice question give its answer away? Two statistics ``quiz check`` reports and enforces.

- **Length.** Neither "pick the longest" nor "rule out the longest" nor "pick the shortest" should help a learner.
  Per bank, the share of single-choice questions whose correct option is the *strictly* longest (longer than every
  other option; a tie does not count) must be at most ``LONGEST_LIMIT`` (30%); banks with fewer than
  ``MIN_BANK_SINGLES`` (4) single-choice questions are exempt (a single such question would be a third or more).
  Over the checked banks pooled (when they hold at least ``MIN_POOLED`` single-choice questions), that share must
  lie between ``POOLED_LONGEST_RANGE`` (15% and 35%; chance with four options is about 25%): a pool where the right
  answer is *never* the longest is as much a signal as one where it always is. The share whose correct option is
  the strictly shortest must be at most ``SHORTEST_LIMIT`` (35%) pooled. Length is the number of characters of the
  option's text as written in the bank, with runs of whitespace counted as one space.
- **Position.** The display position (a, b, c, ...) of the correct option, after the engine's shuffle
  (``model.display_order``), must carry no signal: no position may hold the correct option more than
  ``POSITION_RATIO`` (2) times as often as another. A bank has only 5-10 single-choice questions, too few for this
  rule (with 4 positions, a fair shuffle leaves one empty in about a third of such banks), so it is applied to the
  checked banks pooled together, and only when they hold at least ``MIN_POOLED`` (20) single-choice questions.
  Positions are compared by count over expectation: a question with ``n`` options expects ``1/n`` at each of its
  positions, so banks mixing 3- and 4-option questions are judged fairly. Per-bank counts are reported, not enforced.

The shuffle is a hash of the question id (deterministic per question, see ``display_order``), so the positions are
as good as random; if the pooled rule fails after questions are added, the report says which position is off.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction

from .model import Question, Quiz, letter

LONGEST_LIMIT = 0.30  # per bank, at most
MIN_BANK_SINGLES = 4  # fewer single-choice questions in a bank: the per-bank length rule is not applied
POOLED_LONGEST_RANGE = (0.15, 0.35)  # pooled, correct = strictly longest: at least, at most
SHORTEST_LIMIT = 0.35  # pooled, correct = strictly shortest: at most
POSITION_RATIO = 2.0
MIN_POOLED = 20


def _share(count: int, total: int) -> Fraction:
    """count / total as an exact fraction, compared with a limit written as a decimal: 3 of 10 is exactly 30%."""
    return Fraction(count, total)


def _limit(value: float) -> Fraction:
    return Fraction(str(value))


def option_length(text: str) -> int:
    """Characters of an option's text, whitespace runs counted once."""
    return len(" ".join(text.split()))


def correct_is_strictly_longest(question: Question) -> bool:
    """Single choice: is the correct option longer than every wrong one?"""
    (right,) = question.correct_indices
    lengths = [option_length(option.text) for option in question.options]
    return all(lengths[right] > length for i, length in enumerate(lengths) if i != right)


def correct_is_strictly_shortest(question: Question) -> bool:
    """Single choice: is the correct option shorter than every wrong one?"""
    (right,) = question.correct_indices
    lengths = [option_length(option.text) for option in question.options]
    return all(lengths[right] < length for i, length in enumerate(lengths) if i != right)


@dataclass
class Balance:
    """The statistics of some single-choice questions (one bank, or several pooled)."""

    name: str
    singles: int = 0
    longest_correct: list[str] = field(default_factory=list)  # ids of the questions whose right option is longest
    shortest_correct: list[str] = field(default_factory=list)  # ids of the questions whose right option is shortest
    positions: dict[int, int] = field(default_factory=dict)  # display position of the correct option -> count
    expected: dict[int, float] = field(default_factory=dict)  # display position -> expected count under a fair order

    def add(self, question: Question) -> None:
        if question.kind != "single":
            return
        self.singles += 1
        if correct_is_strictly_longest(question):
            self.longest_correct.append(question.id)
        if correct_is_strictly_shortest(question):
            self.shortest_correct.append(question.id)
        (right,) = question.correct_indices
        self.positions[right] = self.positions.get(right, 0) + 1
        for position in range(len(question.options)):
            self.expected[position] = self.expected.get(position, 0.0) + 1 / len(question.options)

    @property
    def longest_share(self) -> float:
        return len(self.longest_correct) / self.singles if self.singles else 0.0

    @property
    def shortest_share(self) -> float:
        return len(self.shortest_correct) / self.singles if self.singles else 0.0

    def position_ratio(self) -> float:
        """max / min over positions of (count / expected); ``inf`` when a possible position is never correct."""
        rates = [self.positions.get(p, 0) / e for p, e in self.expected.items() if e > 0]
        if not rates:
            return 1.0
        return float("inf") if min(rates) == 0 else max(rates) / min(rates)

    def positions_text(self) -> str:
        return ", ".join(f"{letter(p)} {self.positions.get(p, 0)}" for p in sorted(self.expected))

    def longest_problem(self) -> str | None:
        """The per-bank rule: at most ``LONGEST_LIMIT`` correct = strictly longest (banks of >= MIN_BANK_SINGLES)."""
        if self.singles >= MIN_BANK_SINGLES and _share(len(self.longest_correct), self.singles) > _limit(LONGEST_LIMIT):
            return (
                f"{self.name}: in {len(self.longest_correct)} of {self.singles} single-choice questions "
                f"({self.longest_share:.0%}, limit {LONGEST_LIMIT:.0%}) the correct option is the strictly longest: "
                f"{', '.join(self.longest_correct)}. Write options of similar length (shorten the right one, or "
                "give a wrong one the same care)."
            )
        return None

    def pooled_length_problems(self) -> list[str]:
        """The pooled rules: correct = strictly longest within ``POOLED_LONGEST_RANGE``, strictly shortest at most
        ``SHORTEST_LIMIT``. Not judged below ``MIN_POOLED`` single-choice questions."""
        if self.singles < MIN_POOLED:
            return []
        low, high = POOLED_LONGEST_RANGE
        longest, shortest = len(self.longest_correct), len(self.shortest_correct)
        problems = []
        if _share(longest, self.singles) > _limit(high):
            problems.append(
                f"{self.name}: in {longest} of {self.singles} single-choice questions ({self.longest_share:.0%}, "
                f"limit {high:.0%}) the correct option is the strictly longest, so picking the longest pays. "
                "Write options of similar length (shorten the right one, or give a wrong one the same care)."
            )
        if _share(longest, self.singles) < _limit(low):
            problems.append(
                f"{self.name}: in only {longest} of {self.singles} single-choice questions ({self.longest_share:.0%}, "
                f"at least {low:.0%}; chance is about 25% with four options) the correct option is the strictly "
                "longest, so a learner can rule out the longest option. Let the right option be the longest in "
                "about a quarter of the questions (a precise clause, or a tighter distractor)."
            )
        if _share(shortest, self.singles) > _limit(SHORTEST_LIMIT):
            problems.append(
                f"{self.name}: in {shortest} of {self.singles} single-choice questions ({self.shortest_share:.0%}, "
                f"limit {SHORTEST_LIMIT:.0%}) the correct option is the strictly shortest: "
                f"{', '.join(self.shortest_correct)}. Write options of similar length."
            )
        return problems

    def position_problem(self) -> str | None:
        if self.singles < MIN_POOLED:
            return None
        ratio = self.position_ratio()
        if ratio > POSITION_RATIO:
            return (
                f"{self.name}: the correct option's display position is unbalanced ({self.positions_text()}; "
                f"the most common is {ratio:.1f} times the least, limit {POSITION_RATIO:g})."
            )
        return None


def bank_balance(quiz: Quiz) -> Balance:
    balance = Balance(name=f"bank {quiz.id}")
    for question in quiz.questions:
        balance.add(question)
    return balance


def pooled_balance(quizzes: Iterable[Quiz], name: str = "all banks") -> Balance:
    balance = Balance(name=name)
    for quiz in quizzes:
        for question in quiz.questions:
            balance.add(question)
    return balance


def balance_report(quizzes: list[Quiz]) -> tuple[list[str], list[str]]:
    """(lines to print, problems). One line per bank and one for the pool; a problem per rule broken."""
    lines, problems = [], []
    for quiz in quizzes:
        balance = bank_balance(quiz)
        if not balance.singles:
            continue
        bank_limit = (
            f"limit {LONGEST_LIMIT:.0%}"
            if balance.singles >= MIN_BANK_SINGLES
            else f"fewer than {MIN_BANK_SINGLES} questions: not judged per bank"
        )
        lines.append(
            f"{balance.name}: correct = strictly longest in {len(balance.longest_correct)} of {balance.singles} "
            f"single-choice ({balance.longest_share:.0%}, {bank_limit}), strictly shortest in "
            f"{len(balance.shortest_correct)}; correct at {balance.positions_text()}"
        )
        problem = balance.longest_problem()
        if problem:
            problems.append(problem)
    pool = pooled_balance(quizzes)
    if pool.singles:
        low, high = POOLED_LONGEST_RANGE
        counts = (
            f"{pool.name}: correct = strictly longest in {len(pool.longest_correct)} of {pool.singles} "
            f"({pool.longest_share:.0%}{{}}), strictly shortest in {len(pool.shortest_correct)} "
            f"({pool.shortest_share:.0%}{{}}); correct at {pool.positions_text()} ({{}})"
        )
        if pool.singles >= MIN_POOLED:
            lines.append(
                counts.format(
                    f", allowed {low:.0%}-{high:.0%}",
                    f", limit {SHORTEST_LIMIT:.0%}",
                    f"ratio {pool.position_ratio():.2f}, limit {POSITION_RATIO:g}",
                )
            )
        else:
            lines.append(counts.format("", "", f"fewer than {MIN_POOLED} questions: length and position not judged"))
        problems += pool.pooled_length_problems()
        problem = pool.position_problem()
        if problem:
            problems.append(problem)
    return lines, problems
