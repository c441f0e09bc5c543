"""The learning record (course_lib/interactive/record.py), `progress`, `record show|reset|delete` and `misconceptions`.

The quiz widget and the exercise checks append to the record; a corrupt or half-written line is skipped with a
warning and never costs the rest of the record.
"""

from __future__ import annotations

import csv
import json
import warnings

import pytest
import torch

from course_lib.checks import check_softmax, run_exercise_checks
from course_lib.interactive import record
from course_lib.interactive.quiz import load_bank
from course_lib.interactive.quiz.widget import QuizView
from course_lib.tools.cli import main


@pytest.fixture
def course(tmp_path, monkeypatch):
    """A learner's course folder as the working directory, recording on (the suite switches it off elsewhere)."""
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "exercises").mkdir()
    monkeypatch.delenv("COURSE_RECORD", raising=False)
    monkeypatch.chdir(tmp_path / "exercises")
    return tmp_path


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_record_lives_in_the_course_folder_or_where_COURSE_RECORD_says(course, tmp_path_factory, monkeypatch):
    assert record.record_path() == course / "learning-record.jsonl"
    elsewhere = tmp_path_factory.mktemp("other") / "mine.jsonl"
    monkeypatch.setenv("COURSE_RECORD", str(elsewhere))
    assert record.record_path() == elsewhere
    monkeypatch.setenv("COURSE_RECORD", "off")
    assert record.record_path() is None and record.append({"kind": "quiz"}) is False
    monkeypatch.delenv("COURSE_RECORD")
    monkeypatch.chdir(tmp_path_factory.mktemp("not-a-course"))
    assert record.record_path() is None  # outside a course folder nothing is recorded


def test_a_checked_quiz_answer_is_recorded(course):
    quiz = load_bank("02")
    view = QuizView(quiz)
    item = view.question_widget("soft-lookup")
    (right,) = item.question.correct_indices  # display positions, after the engine's shuffle
    wrong = (right + 1) % len(item.options)
    item.options[wrong].value = True  # a wrong answer
    item.on_check()
    item.options[right].value = True  # right (ticking it unticks the wrong one)
    item.on_check()
    first, second = lines(course / "learning-record.jsonl")
    assert first["kind"] == "quiz" and first["quiz"] == "02" and first["question"] == "soft-lookup"
    assert first["topic"] == "qkv_attention" and first["answer"] == "ABCDEFGH"[wrong] and first["correct"] is False
    assert second["answer"] == "ABCDEFGH"[right] and second["correct"] is True
    assert set(first) == {"v", "time", "kind", "quiz", "question", "topic", "answer", "correct"}, "only these fields"


def test_an_unreadable_answer_is_not_an_attempt(course):
    view = QuizView(load_bank("02"))
    view.question_widget("soft-lookup").on_check()  # nothing ticked: a hint, not an attempt
    assert not (course / "learning-record.jsonl").exists()


def test_an_exercise_check_run_by_the_learner_is_recorded_quiet_tool_runs_are_not(course):
    def softmax(scores):  # the classic mistake: no max subtraction
        return scores.exp() / scores.exp().sum(dim=-1, keepdim=True)

    def good(scores):
        return torch.softmax(scores, dim=-1)

    def stub(scores):
        raise NotImplementedError("write softmax")

    check_softmax(stub)  # not written yet: not an attempt
    check_softmax(softmax)
    check_softmax(good)
    run_exercise_checks("ex02_attention", {"softmax": softmax})  # progress/grading tools: not the learner's attempt
    wrong, right = lines(course / "learning-record.jsonl")
    assert wrong["check"] == "check_softmax" and wrong["mistake"] == "no_max_subtraction" and wrong["correct"] is False
    assert right["status"] == "passed" and right["correct"] is True


def test_a_record_that_cannot_be_written_warns_once_and_the_check_goes_on(course, monkeypatch):
    monkeypatch.setenv("COURSE_RECORD", str(course / "no-such-folder" / "record.jsonl"))
    monkeypatch.setattr(record, "_warned", False)
    with pytest.warns(UserWarning, match="could not be written"):
        result = check_softmax(lambda scores: torch.softmax(scores, dim=-1), verbose=True)
    assert result.passed


GOOD = {
    "v": 1,
    "time": "2026-12-03T10:00:00Z",
    "kind": "quiz",
    "quiz": "02",
    "question": "soft-lookup",
    "topic": "qkv_attention",
    "answer": "B",
    "correct": False,
}


def write_record(path, *items):
    path.write_text("".join((item if isinstance(item, str) else json.dumps(item)) + "\n" for item in items))


def test_corrupt_and_half_written_lines_are_skipped_with_a_warning_and_the_rest_is_kept(course):
    path = course / "learning-record.jsonl"
    second = {**GOOD, "answer": "D", "correct": True}
    check = {
        "v": 1,
        "time": "t",
        "kind": "check",
        "check": "check_softmax",
        "status": "passed",
        "mistake": None,
        "correct": True,
    }
    path.write_bytes(
        (json.dumps(GOOD) + "\n").encode()
        + b"\x00\xff garbage\n"
        + b'{"kind": "quiz", "quiz": "02"}\n'  # complete JSON, but not an event
        + (json.dumps(second) + "\n").encode()
        + (json.dumps(check) + "\n").encode()
        + json.dumps(GOOD).encode()[:40]  # the last write was cut off
    )
    with pytest.warns(UserWarning) as caught:
        data = record.read(path)
    assert [e.get("answer", e.get("status")) for e in data.events] == ["B", "D", "passed"]
    assert len(data.skipped) == 3 and len(caught) == 3
    assert "line 2" in data.skipped[0] and "line 3" in data.skipped[1] and "line 6" in data.skipped[2]
    record.append({"kind": "check", "check": "check_attention", "status": "passed", "mistake": None, "correct": True})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert len(record.read(path).events) == 4, "appending after a cut-off line keeps the new event readable"


def test_progress_shows_first_try_scores_and_what_to_revisit(course, capsys):
    write_record(
        course / "learning-record.jsonl",
        GOOD,  # soft-lookup: wrong first
        {**GOOD, "answer": "D", "correct": True},
        {**GOOD, "question": "video-search-roles", "answer": "A", "correct": False},
        {**GOOD, "question": "attention-shapes", "answer": "A", "correct": True},
        {
            "v": 1,
            "time": "t",
            "kind": "check",
            "check": "check_softmax",
            "status": "failed",
            "mistake": "no_max_subtraction",
            "correct": False,
        },
        {
            "v": 1,
            "time": "t",
            "kind": "check",
            "check": "check_softmax",
            "status": "passed",
            "mistake": None,
            "correct": True,
        },
        "{broken",
    )
    assert main(["progress", "--html", str(course / "progress.html")]) == 0
    out, err = capsys.readouterr()
    assert "skipped line 7" in err and "the other lines are kept" in err
    assert "(6 entries)" in out
    topic = next(line for line in out.splitlines() if line.startswith("Attention with queries, keys and values"))
    assert "3 / " in topic and topic.rstrip().endswith("33%"), topic  # 1 of 3 right the first time
    exercise = next(line for line in out.splitlines() if line.startswith("ex02_attention"))
    assert exercise.split()[1:3] == ["1", "/"] and exercise.split()[4] == "0", exercise  # passed, but not first time
    assert "Worth revisiting" in out and "1 of 3 right the first time — revisit 02" in out
    page = (course / "progress.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "33%" in page and "revisit 02" in page


def test_record_show_reset_with_a_backup_and_delete(course, capsys):
    path = course / "learning-record.jsonl"
    write_record(path, GOOD)
    assert main(["record", "show"]) == 0
    assert "soft-lookup" in capsys.readouterr().out
    assert main(["record", "reset"]) == 0
    backups = list(course.glob("learning-record.backup-*.jsonl"))
    assert len(backups) == 1 and lines(backups[0]) == [GOOD] and path.read_text() == ""
    assert main(["record", "delete"]) == 2, "delete asks for --yes"
    assert "--yes" in capsys.readouterr().err and path.exists()
    assert main(["record", "delete", "--yes"]) == 0
    assert not path.exists() and backups[0].exists(), "backups stay unless asked"
    assert main(["record", "delete", "--yes", "--backups"]) == 0
    assert not backups[0].exists()


def test_record_commands_outside_a_course_folder_explain_themselves(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("COURSE_RECORD", raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(["progress"]) == 2
    assert "not a course folder" in capsys.readouterr().err


def learner_record(folder, name, *events):
    (folder / name).mkdir(parents=True)
    write_record(folder / name / "learning-record.jsonl", *events)


def test_misconceptions_report_shares_of_wrong_first_answers_and_common_mistakes(tmp_path, capsys):
    subs = tmp_path / "submissions"
    failed = {"v": 1, "time": "t", "kind": "check", "check": "check_softmax", "status": "failed", "correct": False}
    learner_record(
        subs, "alice", GOOD, {**GOOD, "answer": "D", "correct": True}, {**failed, "mistake": "no_max_subtraction"}
    )
    learner_record(
        subs,
        "bob",
        {**GOOD, "answer": "B"},
        {**failed, "mistake": "no_max_subtraction"},
        {**failed, "mistake": "wrong_axis"},
    )
    learner_record(
        subs,
        "carol",
        {**GOOD, "answer": "D", "correct": True},
        {**failed, "mistake": "wrong_axis", "correct": True, "status": "passed"},
        "half a li",
    )
    learner_record(subs, "dan", {**GOOD, "answer": "A"}, {**failed, "mistake": None})
    assert main(["misconceptions", str(subs), "--out", str(tmp_path / "debrief")]) == 0
    err = capsys.readouterr().err
    assert "carol" in err and "skipped line 3" in err
    report = (tmp_path / "debrief" / "misconceptions.md").read_text()
    row = next(line for line in report.splitlines() if "02/soft-lookup" in line)
    cells = [cell.strip() for cell in row.split("|")]
    assert cells[3:5] == ["4", "25%"], row  # 4 answered, 1 right first time (carol)
    assert "**B** 50%" in row and "**A** 25%" in row and row.index("**B**") < row.index("**A**")
    rows = list(csv.DictReader(open(tmp_path / "debrief" / "misconceptions.csv")))
    wrong = {r["choice_or_mistake"]: r for r in rows if r["kind"] == "wrong_answer" and r["id"] == "02/soft-lookup"}
    assert wrong["B"]["learners_with_it"] == "2" and wrong["B"]["share"] == "0.500" and wrong["B"]["text"]
    mistakes = [r for r in rows if r["kind"] == "mistake" and r["id"] == "check_softmax"]
    assert [(r["choice_or_mistake"], r["learners_with_it"]) for r in mistakes] == [
        ("no_max_subtraction", "2"),
        ("(not a catalogued mistake)", "1"),
        ("wrong_axis", "1"),
    ]
    assert mistakes[0]["text"], "a catalogued mistake carries its title"
    check = next(r for r in rows if r["kind"] == "check" and r["id"] == "check_softmax")
    assert check["learners"] == "4" and check["right_first_time_or_failed"] == "3"


def test_misconceptions_needs_records(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["misconceptions", str(tmp_path / "empty"), "--out", str(tmp_path / "out")]) == 2
    assert "No learning records" in capsys.readouterr().err
