"""Issue 15: the correct option must not give itself away by being the longest.

Across a bank, at most 30% of the single-choice questions may have their correct option strictly longer than every
other option. Checked here for the banks of notebooks 05, 06 and the final check (07); the other banks are being
rewritten separately and join the list when they pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

BANKS = Path(__file__).resolve().parents[1] / "course_lib" / "quiz" / "banks"
LIMIT = 0.30


def longest_is_correct(question: dict) -> bool:
    lengths = [len(str(option["text"])) for option in question["options"]]
    correct = [i for i, option in enumerate(question["options"]) if option.get("correct")]
    (index,) = correct
    return all(lengths[index] > length for i, length in enumerate(lengths) if i != index)


@pytest.mark.parametrize("bank", ["05", "06", "final"])
def test_the_correct_option_is_rarely_the_longest(bank):
    questions = yaml.safe_load((BANKS / f"{bank}.yaml").read_text(encoding="utf-8"))["questions"]
    single = [q for q in questions if q["kind"] == "single"]
    longest = [q["id"] for q in single if longest_is_correct(q)]
    assert single, f"bank {bank} has no single-choice questions"
    assert len(longest) <= LIMIT * len(single), (
        f"bank {bank}: the correct option is the longest in {len(longest)} of {len(single)} single-choice questions "
        f"({', '.join(longest)}); rewrite the options to similar lengths"
    )


def test_the_count_sees_a_giveaway():
    question = {"options": [{"text": "short"}, {"text": "a much longer, correct answer", "correct": True}]}
    assert longest_is_correct(question)
    question["options"][0]["text"] = "an equally long wrong answer!"
    assert not longest_is_correct(question)
