"""Does the form of a single-choice question give its answer away? Two statistics ``quiz check`` reports and enforces.

- **Longest correct.** A learner who always picks the longest option should not score well. Per bank, the share of
  single-choice questions whose correct option is the *strictly* longest (longer than every other option; a tie does
  not count) must be at most ``LONGEST_LIMIT`` (30%). Length is the number of characters of the option's text as
  written in the bank, with runs of whitespace counted as one space.
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

from .model import Question, Quiz, letter

LONGEST_LIMIT = 0.30
POSITION_RATIO = 2.0
MIN_POOLED = 20


def option_length(text: str) -> int:
    """Characters of an option's text, whitespace runs counted once."""
    return len(" ".join(text.split()))


def correct_is_strictly_longest(question: Question) -> bool:
    """Single choice: is the correct option longer than every wrong one?"""
    (right,) = question.correct_indices
    lengths = [option_length(option.text) for option in question.options]
    return all(lengths[right] > length for i, length in enumerate(lengths) if i != right)


@dataclass
class Balance:
    """The statistics of some single-choice questions (one bank, or several pooled)."""

    name: str
    singles: int = 0
    longest_correct: list[str] = field(default_factory=list)  # ids of the questions given away by length
    positions: dict[int, int] = field(default_factory=dict)  # display position of the correct option -> count
    expected: dict[int, float] = field(default_factory=dict)  # display position -> expected count under a fair order

    def add(self, question: Question) -> None:
        if question.kind != "single":
            return
        self.singles += 1
        if correct_is_strictly_longest(question):
            self.longest_correct.append(question.id)
        (right,) = question.correct_indices
        self.positions[right] = self.positions.get(right, 0) + 1
        for position in range(len(question.options)):
            self.expected[position] = self.expected.get(position, 0.0) + 1 / len(question.options)

    @property
    def longest_share(self) -> float:
        return len(self.longest_correct) / self.singles if self.singles else 0.0

    def position_ratio(self) -> float:
        """max / min over positions of (count / expected); ``inf`` when a possible position is never correct."""
        rates = [self.positions.get(p, 0) / e for p, e in self.expected.items() if e > 0]
        if not rates:
            return 1.0
        return float("inf") if min(rates) == 0 else max(rates) / min(rates)

    def positions_text(self) -> str:
        return ", ".join(f"{letter(p)} {self.positions.get(p, 0)}" for p in sorted(self.expected))

    def longest_problem(self) -> str | None:
        if self.singles and self.longest_share > LONGEST_LIMIT:
            return (
                f"{self.name}: in {len(self.longest_correct)} of {self.singles} single-choice questions "
                f"({self.longest_share:.0%}, limit {LONGEST_LIMIT:.0%}) the correct option is the strictly longest: "
                f"{', '.join(self.longest_correct)}. Write options of similar length (shorten the right one, or "
                "give a wrong one the same care)."
            )
        return None

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
        lines.append(
            f"{balance.name}: correct = strictly longest in {len(balance.longest_correct)} of {balance.singles} "
            f"single-choice ({balance.longest_share:.0%}, limit {LONGEST_LIMIT:.0%}); "
            f"correct at {balance.positions_text()}"
        )
        problem = balance.longest_problem()
        if problem:
            problems.append(problem)
    pool = pooled_balance(quizzes)
    if pool.singles:
        judged = (
            f"ratio {pool.position_ratio():.2f}, limit {POSITION_RATIO:g}"
            if pool.singles >= MIN_POOLED
            else f"fewer than {MIN_POOLED} questions: position not judged"
        )
        lines.append(
            f"{pool.name}: correct = strictly longest in {len(pool.longest_correct)} of {pool.singles} "
            f"({pool.longest_share:.0%}); correct at {pool.positions_text()} ({judged})"
        )
        problem = pool.position_problem()
        if problem:
            problems.append(problem)
    return lines, problems
