"""The class report's roster view (``misconceptions --roster``): who completed what and who never answered.

Only with a roster, into its own files (roster.md, roster.csv) marked for instructors; misconceptions.md stays
anonymous. Students on the roster without a record, and records of learners not on the roster, are both listed.
"""

from __future__ import annotations

import csv

from test_learning_record import GOOD, learner_record

from course_lib.checks import EXERCISES
from course_lib.interactive.quiz.loader import load_bank
from course_lib.tools.cli import main


def test_roster_view_names_who_did_what_and_who_never_answered(tmp_path, capsys):
    subs = tmp_path / "submissions"
    bank = load_bank(GOOD["quiz"])
    every_answer = [{**GOOD, "question": q.id, "answer": "A"} for q in bank.questions]
    passed = [
        {"v": 1, "time": "t", "kind": "check", "check": spec.name, "status": "passed", "correct": True}
        for spec in EXERCISES["ex02_attention"].specs
    ]
    learner_record(subs, "alice", *every_answer, *passed)
    learner_record(subs, "bob", {**GOOD, "answer": "B"})
    learner_record(subs, "carol", passed[0])  # ran a check, never answered a question
    learner_record(subs, "zed", GOOD)  # not on the roster
    roster = tmp_path / "roster.csv"
    roster.write_text("student_id,name,section\nalice,Alice M,A\nbob,Bob N,A\ncarol,Carol D,B\nerin,Erin K,B\n")
    out = tmp_path / "debrief"
    assert main(["misconceptions", str(subs), "--out", str(out), "--roster", str(roster)]) == 0
    assert "never answered" in capsys.readouterr().out
    page = (out / "roster.md").read_text()
    assert "Instructors only" in page
    assert "2 (40%) never answered a quiz question**: Carol D, Erin K" in page, page
    rows = {row["student_id"]: row for row in csv.DictReader(open(out / "roster.csv"))}
    assert list(rows) == ["alice", "bob", "carol", "erin", "zed"]
    assert rows["erin"]["has_record"] == "0" and rows["erin"]["never_answered"] == "1"
    assert rows["alice"][f"quiz {GOOD['quiz']} answered"] == str(len(bank.questions))
    assert rows["alice"]["ex02_attention checks passed"] == str(len(EXERCISES["ex02_attention"].specs))
    alice = next(line for line in page.splitlines() if line.startswith("| Alice M"))
    assert GOOD["quiz"] in alice.split("|")[4] and "ex02" in alice.split("|")[5], alice
    assert "Alice" not in (out / "misconceptions.md").read_text(), "the class report stays anonymous"


def test_without_a_roster_no_names_are_written(tmp_path):
    subs = tmp_path / "submissions"
    learner_record(subs, "alice", GOOD)
    assert main(["misconceptions", str(subs), "--out", str(tmp_path / "d")]) == 0
    assert not (tmp_path / "d" / "roster.md").exists()
