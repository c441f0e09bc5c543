"""Predict, then observe (course_lib.interactive.predict) and spaced review (course_lib.interactive.review), with record files."""

from __future__ import annotations

import json
import re
from argparse import Namespace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from course_lib._syllabus import lessons
from course_lib._validate import CourseInputError
from course_lib.interactive import predict as predict_module
from course_lib.interactive import record
from course_lib.interactive import review as review_module
from course_lib.interactive.predict import checkpoints, predict, reveal
from course_lib.interactive.review import INTERVALS, due_items, schedule, upcoming

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def record_file(tmp_path, monkeypatch):
    path = tmp_path / "learning-record.jsonl"
    monkeypatch.setenv("COURSE_RECORD", str(path))
    monkeypatch.setattr(predict_module, "_locked", {})
    return path


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


# --- prediction checkpoints ---------------------------------------------------------------------------------------


def test_every_checkpoint_is_valid_and_names_a_notebook_of_the_course():
    numbers = {row.number for row in lessons()}
    for spot in checkpoints().values():
        assert spot.notebook in numbers, spot.id
        if spot.kind == "choice":
            covered = sorted(spot.bins)
            assert covered[0][0] <= 0 and all(a[1] == b[0] for a, b in zip(covered, covered[1:])), (
                f"{spot.id}: the bins must cover the measurement's range without gaps or overlaps"
            )


def checkpoint_calls(notebook: Path) -> tuple[list[str], list[str]]:
    source = "\n".join(
        "".join(cell["source"]) for cell in json.loads(notebook.read_text())["cells"] if cell["cell_type"] == "code"
    )
    return re.findall(r'predict\("([^"]+)"\)', source), re.findall(r'reveal\(\s*"([^"]+)"', source)


@pytest.mark.parametrize("row", lessons(), ids=lambda row: row.number)
def test_every_lesson_notebook_has_a_prediction_checkpoint_whose_prediction_and_measurement_reach_the_record(
    row, record_file
):
    predicted, revealed = checkpoint_calls(ROOT / "notebooks" / row.file)
    assert predicted, f"notebook {row.number} asks for no prediction before its key experiment"
    for checkpoint_id in predicted:
        assert checkpoint_id in revealed, f"{checkpoint_id}: predicted but never revealed"
        spot = checkpoints()[checkpoint_id]
        view = predict(checkpoint_id)  # the notebook's own checkpoint, answered as a learner would
        view.answer.value = "A" if spot.kind == "choice" else "0.5"
        view.on_lock()
        assert view.button.disabled and "Locked" in view.status.value
        measured = spot.bins[-1][0] if spot.kind == "choice" else 0.8
        shown = reveal(checkpoint_id, measured)
        assert "A)" in repr(shown) or "0.5" in repr(shown)
    kinds = [(event["kind"], event["checkpoint"]) for event in lines(record_file)]
    for checkpoint_id in predicted:
        assert ("prediction", checkpoint_id) in kinds and ("observation", checkpoint_id) in kinds
    assert all(record._problem(event) is None for event in lines(record_file))


def test_a_prediction_locks_once_and_the_reveal_judges_it(record_file):
    view = predict("05-no-skip")
    view.answer.value = None
    assert view.on_lock() is None and "choose one of" in view.status.value  # nothing chosen: a friendly message
    view.answer.value = "D"
    assert view.on_lock() == "D"
    assert predict_module.lock("05-no-skip", "A") == "D", "a locked prediction does not change"
    shown = reveal("05-no-skip", 0.08)
    assert shown.correct is True and "matches the measurement" in repr(shown)
    wrong = predict_module.Reveal(checkpoints()["05-no-skip"], "A", 0.08)
    assert wrong.correct is False and "the measurement picks D)" in repr(wrong)
    assert [e["kind"] for e in lines(record_file)] == ["prediction", "observation"]
    assert lines(record_file)[1]["measured"] == 0.08 and lines(record_file)[1]["correct"] is True


def test_a_number_checkpoint_reports_how_far_the_prediction_was(record_file):
    view = predict("03-heads")
    view.answer.value = "lots"
    view.on_lock()
    assert "type a number" in view.status.value
    view.answer.value = "0.6"
    view.on_lock()
    shown = reveal("03-heads", 0.95)
    assert shown.correct is False and shown.error == pytest.approx(-0.35) and "off by 0.35" in repr(shown)


def test_without_a_prediction_the_reveal_shows_the_answer_folded_and_records_nothing(record_file):
    shown = reveal("02-unscaled", 0.12)
    assert shown.correct is None and lines(record_file) == []
    page = shown._repr_html_()
    assert page.startswith('<details class="course-checkpoint">') and "measurement picks C)" in page
    static = predict("02-unscaled")._repr_mimebundle_()
    assert "Predict first." in static["text/plain"] and "<li>C) below 0.5" in static["text/html"]
    with pytest.raises(CourseInputError, match="no prediction checkpoint"):
        predict("99-nothing")
    with pytest.raises(CourseInputError, match="finite number"):
        reveal("02-unscaled", float("nan"))


def test_a_number_revealed_without_a_prediction_states_the_measurement_once(record_file):
    text = repr(reveal("03-heads", 0.93))
    assert text.count("0.93") == 1 and "Measured: 0.93." in text and "Lock in a prediction" in text


def test_the_class_report_shows_each_checkpoints_predictions_and_their_distance(tmp_path, capsys):
    from course_lib.tools.classroom import misconceptions

    def event(kind, **fields):
        return json.dumps({"v": 1, "time": "2026-12-05T10:00:00Z", "kind": kind, **fields})

    class_folder = tmp_path / "class"
    for name, letter, number, seen in [("ana", "D", 0.9, 0.7), ("ben", "A", 0.2, 0.7), ("cy", "D", 0.75, 0.7)]:
        (class_folder / name).mkdir(parents=True)
        (class_folder / name / "learning-record.jsonl").write_text(
            "\n".join(
                [
                    event("prediction", checkpoint="05-no-skip", notebook="05", prediction=letter),
                    event(
                        "observation",
                        checkpoint="05-no-skip",
                        notebook="05",
                        prediction=letter,
                        measured=0.09,
                        correct=letter == "D",
                    ),
                    event("prediction", checkpoint="03-heads", notebook="03", prediction=number),
                    event(
                        "observation",
                        checkpoint="03-heads",
                        notebook="03",
                        prediction=number,
                        measured=seen,
                        correct=abs(number - seen) <= 0.15,
                    ),
                ]
            )
            + "\n"
        )
    args = Namespace(submissions=class_folder, out=tmp_path / "out")
    assert misconceptions._run(args) == 0
    report = (tmp_path / "out" / "misconceptions.md").read_text()
    section = report.split("## Prediction checkpoints")[1]
    assert "`05-no-skip`" in section and "**D** 2" in section and "**A** 1" in section and "2 of 3" in section
    # 03-heads: distances 0.2, 0.5, 0.05 → median 0.2
    assert "`03-heads`" in section and "median distance from the measurement 0.2" in section
    csv_text = (tmp_path / "out" / "misconceptions.csv").read_text()
    assert "prediction,05-no-skip,,3,2,D,2,0.667" in csv_text


# --- spaced review ------------------------------------------------------------------------------------------------

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc)


def at(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


KNOWN = {("01", "a"): None, ("01", "b"): None, ("01", "c"): None, ("02", "x"): None}


def test_the_schedule_brings_back_missed_then_unseen_and_waits_longer_after_each_right_answer():
    events = [
        {"kind": "quiz", "quiz": "01", "question": "a", "correct": True, "time": at(T0)},
        {"kind": "quiz", "quiz": "01", "question": "b", "correct": False, "time": at(T0)},
        {"kind": "quiz", "quiz": "01", "question": "b", "correct": True, "time": at(T0)},  # a retry: not counted
    ]
    items = schedule(events, KNOWN)
    assert {(i.question, i.box) for i in items} == {("a", 1), ("b", 0), ("c", 0)}, "quiz 02 was never started"
    now = T0 + timedelta(hours=1)
    assert [i.question for i in due_items(items, now)] == ["b", "c"], "missed first, then never answered"
    assert [i.question for i in upcoming(items, now)] == ["a"]
    assert [i.question for i in due_items(items, T0 + timedelta(days=INTERVALS[1]))] == ["b", "c", "a"]
    # right in review: a moves to box 2, waits 3 days; wrong: back to box 0
    t1 = T0 + timedelta(days=1)
    events += [{"kind": "review", "quiz": "01", "question": "a", "correct": True, "time": at(t1)}]
    a = next(i for i in schedule(events, KNOWN) if i.question == "a")
    assert a.box == 2 and a.due() == t1 + timedelta(days=INTERVALS[2])
    assert "a" not in [i.question for i in due_items(schedule(events, KNOWN), t1 + timedelta(days=2))]
    assert "a" in [i.question for i in due_items(schedule(events, KNOWN), t1 + timedelta(days=3))]
    events += [{"kind": "review", "quiz": "01", "question": "a", "correct": False, "time": at(t1 + timedelta(days=3))}]
    assert next(i for i in schedule(events, KNOWN) if i.question == "a").box == 0
    boxes = []
    for day in range(10):  # right every time: the box climbs to the top and stays there
        events.append(
            {
                "kind": "review",
                "quiz": "01",
                "question": "a",
                "correct": True,
                "time": at(t1 + timedelta(days=10 + day)),
            }
        )
        boxes.append(next(i for i in schedule(events, KNOWN) if i.question == "a").box)
    assert boxes[:5] == [1, 2, 3, 4, 5] and set(boxes[5:]) == {len(INTERVALS) - 1}


def test_review_in_the_terminal_asks_the_due_questions_and_records_each_answer(record_file, monkeypatch):
    from course_lib.tools.classroom import review as review_command

    known = review_module.known_questions()
    (quiz_id, question_id), (quiz, question) = next(
        (key, value) for key, value in known.items() if value[1].kind == "single"
    )
    record_file.write_text(
        json.dumps({"v": 1, "kind": "quiz", "quiz": quiz_id, "question": question_id, "correct": False, "time": at(T0)})
        + "\n"
    )
    right = "abcdefgh"[next(i for i, option in enumerate(question.options) if option.correct)]
    answers = iter(["zz", right, ""])
    said = []
    args = Namespace(record=record_file, max=2, list=False)
    assert review_command._run(args, now=T0 + timedelta(minutes=5), ask=lambda _p: next(answers), say=said.append) == 0
    text = "\n".join(said)
    assert "[1/2] from quiz" in text and "Right." in text and "Stopped; the rest stays due." in text
    reviews = [e for e in lines(record_file) if e["kind"] == "review"]
    assert len(reviews) == 1 and reviews[0]["question"] == question_id and reviews[0]["correct"] is True
    listed = []
    assert review_command._run(Namespace(record=record_file, max=5, list=True), now=T0, say=listed.append) == 0
    assert "due now" in listed[0]


def test_the_review_widget_shows_one_due_question_at_a_time_and_records_reviews(record_file):
    known = review_module.known_questions()
    (quiz_id, question_id), (quiz, question) = next(
        (key, value) for key, value in known.items() if value[1].kind == "single"
    )
    events = [{"kind": "quiz", "quiz": quiz_id, "question": question_id, "correct": False, "time": at(T0)}]
    view = review_module.ReviewView(events=events, now=T0 + timedelta(minutes=1), limit=2)
    assert len(view.queue) == 2 and view.queue[0].question == question_id
    first = view.current
    wrong = next(i for i, option in enumerate(question.options) if not option.correct)
    first.options[wrong].value = True
    first.check_button.click()
    assert "quiz-wrong" in first.feedback._dom_classes and view.next_button.layout.display is None
    view.next_button.click()
    assert view.current is not first and "Review 2 of 2" in view.header.value
    assert [e["kind"] for e in lines(record_file)] == ["review"]
    assert "Spaced review:" in view._repr_mimebundle_()["text/plain"]
