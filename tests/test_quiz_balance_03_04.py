"""Banks 03 and 04 do not give the answer away by length (issue 15): across each bank, the correct option is the
strictly longest in at most 30% of the single-choice questions."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

BANKS = Path(__file__).resolve().parents[1] / "course_lib" / "quiz" / "banks"


def correct_is_strictly_longest(question: dict) -> bool:
    lengths = [len(option["text"]) for option in question["options"]]
    correct = next(i for i, option in enumerate(question["options"]) if option.get("correct"))
    return all(lengths[correct] > length for i, length in enumerate(lengths) if i != correct)


@pytest.mark.parametrize("bank", ["03", "04"])
def test_the_correct_option_is_rarely_the_longest(bank):
    questions = yaml.safe_load((BANKS / f"{bank}.yaml").read_text(encoding="utf-8"))["questions"]
    singles = [q for q in questions if q["kind"] == "single"]
    longest = [q["id"] for q in singles if correct_is_strictly_longest(q)]
    assert len(longest) <= 0.3 * len(singles), f"bank {bank}: the correct option is the longest in {longest}"


def test_the_count_would_catch_a_longest_answer():
    question = {"options": [{"text": "short"}, {"text": "the much longer right answer", "correct": True}]}
    assert correct_is_strictly_longest(question)
    question["options"][0]["text"] = "an equally long wrong answer"
    assert not correct_is_strictly_longest(question)
