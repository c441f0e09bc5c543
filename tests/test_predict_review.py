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
from course_lib.interactive.predict import LETTERS, checkpoints, predict, reveal
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
    view = predict("04-no-positions")
    view.answer.value = None
    assert view.on_lock() is None and "choose one of" in view.status.value  # nothing chosen: a friendly message
    view.answer.value = "D"
    assert view.on_lock() == "D"
    assert predict_module.lock("04-no-positions", "A") == "D", "a locked prediction does not change"
    shown = reveal("04-no-positions", 0.95)
    assert shown.correct is True and "matches the measurement" in repr(shown)
    wrong = predict_module.Reveal(checkpoints()["04-no-positions"], "A", 0.95)
    assert wrong.correct is False and "the measurement picks D)" in repr(wrong)
    assert [e["kind"] for e in lines(record_file)] == ["prediction", "observation"]
    assert lines(record_file)[1]["measured"] == 0.95 and lines(record_file)[1]["correct"] is True


def test_a_number_checkpoint_reports_how_far_the_prediction_was(record_file):
    view = predict("03-one-head")
    view.answer.value = "lots"
    view.on_lock()
    assert "type a number" in view.status.value
    view.answer.value = "2.5"
    view.on_lock()
    shown = reveal("03-one-head", 4)
    assert shown.correct is False and shown.error == pytest.approx(-1.5) and "off by 1.5" in repr(shown)


@pytest.mark.parametrize(
    "typed, value",
    [("0,5", 0.5), ("2,75", 2.75), ("3", 3.0), (" 4.0 ", 4.0), ("1,000", 1.0), ("1,000,000", 1e6), ("-0,5", -0.5)],
)
def test_a_lone_comma_between_digits_is_a_decimal_point(typed, value):
    assert predict_module.parse_number(typed) == value


def test_a_guess_outside_the_stated_range_gets_a_clear_message_and_nothing_is_locked(record_file):
    view = predict("03-one-head")
    assert "from 0 to 5" in view.text(), "the question states the range a guess must fall in"
    for typed in ("7", "-1", "50"):
        view.answer.value = typed
        assert view.on_lock() is None
        assert "outside what this question asks" in view.status.value and "from 0 to 5" in view.status.value
    assert lines(record_file) == [] and "03-one-head" not in predict_module._locked
    view.answer.value = "0,5"  # a decimal comma: 0.5, inside the range (not 5, and not 05)
    assert view.on_lock() == 0.5
    assert lines(record_file)[0]["prediction"] == 0.5
    with pytest.raises(CourseInputError, match="type a number"):
        predict_module.parse_number("1,2,3")


def test_a_guess_locked_after_the_measurement_ran_is_recorded_as_hindsight(record_file):
    # Run All: the experiment and its reveal run before anyone clicks "Lock in"
    view = predict("04-no-positions")
    first = reveal("04-no-positions", 0.06)
    assert first.correct is None and lines(record_file) == []
    view.answer.value = "D"
    assert view.on_lock() == "D"
    assert "hindsight" in view.status.value and "not as a prediction" in view.status.value
    assert [e["kind"] for e in lines(record_file)] == ["hindsight"]
    assert lines(record_file)[0]["measured"] == 0.06 and lines(record_file)[0]["prediction"] == "D"
    again = reveal("04-no-positions", 0.06)  # the learner reruns the result cell
    assert again.correct is None and "hindsight, not as a prediction" in repr(again)
    assert [e["kind"] for e in lines(record_file)] == ["hindsight"], "no observation: nothing was predicted"
    assert all(record._problem(event) is None for event in lines(record_file))


def test_every_reveal_explains_why_in_a_sentence(record_file):
    for spot in checkpoints().values():
        if spot.notebook <= "07":
            assert spot.why.endswith(".") and len(spot.why.split()) >= 8, f"{spot.id}: the reveal must say why"
            shown = repr(reveal(spot.id, spot.bins[0][0] if spot.bins else 1.0))
            assert f"Why: {spot.why}" in shown, spot.id


def test_part_1_right_answers_vary():
    """The measured answer of each Part 1 checkpoint (as stored in its notebook) is not always the failing end."""
    picked = {}
    for row in lessons():
        if row.number > "07":
            continue
        cells = json.loads((ROOT / "notebooks" / row.file).read_text())["cells"]
        for cell in cells:
            text = "".join(
                "".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", ""))
                for o in cell.get("outputs", [])
            )
            if found := re.search(r"The measurement picks ([A-J])\)", text):
                spot = re.search(r'reveal\("([^"]+)"', "".join(cell["source"])).group(1)
                picked[spot] = (found.group(1), len(checkpoints()[spot].options))
    last = [spot for spot, (letter, count) in picked.items() if LETTERS.index(letter) == count - 1]
    assert len(picked) >= 4 and len(last) <= len(picked) // 2, f"right answers at the last option: {last} of {picked}"


def test_without_a_prediction_the_reveal_shows_the_answer_folded_and_records_nothing(record_file):
    shown = reveal("02-unscaled", 0.12)
    assert shown.correct is None and lines(record_file) == []
    page = shown._repr_html_()
    assert page.startswith('<details class="course-checkpoint">') and "measurement picks A)" in page
    static = predict("02-unscaled")._repr_mimebundle_()
    assert "Predict first." in static["text/plain"] and "<li>A) below 0.5" in static["text/html"]
    with pytest.raises(CourseInputError, match="no prediction checkpoint"):
        predict("99-nothing")
    with pytest.raises(CourseInputError, match="finite number"):
        reveal("02-unscaled", float("nan"))


def test_a_number_revealed_without_a_prediction_states_the_measurement_once(record_file):
    text = repr(reveal("03-one-head", 3))
    assert text.count("Measured: 3") == 1 and "Measured: 3 of 5 seeds." in text and "Lock in a prediction" in text


def test_the_class_report_shows_each_checkpoints_predictions_and_their_distance(tmp_path, capsys):
    from course_lib.tools.classroom import misconceptions

    def event(kind, **fields):
        return json.dumps({"v": 1, "time": "2026-12-05T10:00:00Z", "kind": kind, **fields})

    class_folder = tmp_path / "class"
    for name, letter, number, seen in [("ana", "D", 4.25, 4), ("ben", "A", 3.5, 4), ("cy", "D", 4.0, 4)]:
        (class_folder / name).mkdir(parents=True)
        (class_folder / name / "learning-record.jsonl").write_text(
            "\n".join(
                [
                    event("prediction", checkpoint="04-no-positions", notebook="04", prediction=letter),
                    event(
                        "observation",
                        checkpoint="04-no-positions",
                        notebook="04",
                        prediction=letter,
                        measured=0.09,
                        correct=letter == "D",
                    ),
                    event("prediction", checkpoint="03-one-head", notebook="03", prediction=number),
                    event(
                        "observation",
                        checkpoint="03-one-head",
                        notebook="03",
                        prediction=number,
                        measured=seen,
                        correct=abs(number - seen) <= 0.5,
                    ),
                ]
            )
            + "\n"
        )
    args = Namespace(submissions=class_folder, out=tmp_path / "out")
    assert misconceptions._run(args) == 0
    report = (tmp_path / "out" / "misconceptions.md").read_text()
    section = report.split("## Prediction checkpoints")[1]
    assert "`04-no-positions`" in section and "**D** 2" in section and "**A** 1" in section and "2 of 3" in section
    # 03-one-head: distances 0.25, 0.5, 0 → median 0.25
    assert "`03-one-head`" in section and "median distance from the measurement 0.25" in section
    csv_text = (tmp_path / "out" / "misconceptions.csv").read_text()
    assert "prediction,04-no-positions,,3,2,D,2,0.667" in csv_text


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
