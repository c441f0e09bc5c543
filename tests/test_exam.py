"""An exam drawn from the quiz banks (course_lib/tools/publish/exam.py): seeded, spread over the notebooks, the
paper without answers, the key apart and never inside the course folder."""

from __future__ import annotations

import pytest

from course_lib._errors import CommandError
from course_lib._syllabus import COURSE
from course_lib.tools.cli import main
from course_lib.tools.publish import exam


def test_the_draw_is_seeded_and_spread_over_the_notebooks():
    first = exam.draw("06", 12, seed=7)
    again = exam.draw("06", 12, seed=7)
    assert [q.id for _, _, q in first] == [q.id for _, _, q in again]
    assert [q.id for _, _, q in exam.draw("06", 12, seed=8)] != [q.id for _, _, q in first]
    notebooks = [notebook for notebook, _, _ in first]
    expected = [row.number for row in COURSE if row.number <= "06" and row.quiz]
    assert sorted(set(notebooks)) == expected and all(notebooks.count(n) == 2 for n in expected)
    assert len({q.id for _, _, q in first}) == 12


def test_the_paper_has_no_answers_and_the_key_has_them(tmp_path):
    paper, key = exam.write_exam(tmp_path / "exam", "04", 8, seed=3)
    chosen = exam.draw("04", 8, seed=3)
    paper_text, key_text = paper.read_text(), key.read_text()
    for _, _, question in chosen:
        assert f"`{question.id}`" in key_text and question.id not in paper_text
        explanation = question.explanation.strip().splitlines()[0]
        assert explanation in key_text and explanation not in paper_text
        for option in question.options:
            assert option.feedback.strip().splitlines()[0] not in paper_text, "option feedback gives answers away"


def test_bad_requests_are_refused_with_a_message(tmp_path, capsys):
    with pytest.raises(CommandError, match="not a notebook number"):
        exam.draw("42", 3, 0)
    with pytest.raises(CommandError, match="hold"):
        exam.draw("01", 10_000, 0)
    inside = exam.__file__.rsplit("/course_lib/", 1)[0] + "/exam-key"
    assert main(["exam", "--through", "02", "--questions", "3", "--out", inside]) == 2
    assert "inside the course folder" in capsys.readouterr().err
