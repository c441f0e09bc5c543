"""Marks an instructor can hand back (course_lib/tools/grading/gradebook.py).

A class of made-up submissions is graded for real (the sandbox, a plain ``exercises grade`` with a roster): a
solution, a catalogued softmax mistake that the learner's own attention and causal attention carry along, the same
mistake with a causal attention wrong in a way of its own, a near miss the grader cannot name, and an untouched stub.
The recognised mistake earns part of a check's points, and so does a check that fails only because of it; the stub,
the near miss and the unrelated wrong function none; the points are the same in the console, scores.md, scores.csv,
checks.csv, canvas.csv, moodle.csv and the feedback files; every student gets a Markdown and an HTML feedback file
with each check's message and hint; canvas.csv and moodle.csv parse into the columns their importers document.
"""

from __future__ import annotations

import contextlib
import csv
import html.parser
import inspect
import io
import textwrap
from pathlib import Path

import nbformat
import pytest

from course_lib._errors import CommandError
from course_lib.checks import EXERCISES, MISTAKES
from course_lib.tools import cli
from course_lib.tools.classroom import roster
from course_lib.tools.exercises import build as generate
from course_lib.tools.grading import gradebook, remote
from course_lib.tools.grading.grade import Graded, GradeReport

ROOT = Path(__file__).resolve().parents[1]
EXERCISE = "ex02_attention"


def report_with(results: dict[str, list[dict] | None], exercise: str = EXERCISE) -> GradeReport:
    cells = {}
    for learner, checks in results.items():
        if checks is None:
            cells[(learner, exercise)] = None
        else:
            graded = Graded(f"{learner}.ipynb", exercise, "ran")
            graded.checks = checks
            cells[(learner, exercise)] = graded
    return GradeReport(sorted(results), [exercise], cells, [], Path("scores.md"), Path("scores.csv"))


def entry(check: str, status: str, mistake=None, message="") -> dict:
    return {"check": check, "function": "f", "status": status, "passed": status == "passed", "message": message,
            "mistake": mistake}  # fmt: skip


SPECS = EXERCISES[EXERCISE].specs
FIRST = SPECS[0]  # check_softmax
KNOWN = FIRST.mistakes[0].key


def test_credit_rule_passed_recognised_unnamed_error_stub():
    config = gradebook.Config(points={EXERCISE: 9}, mistake_credit=0.5)
    others = [entry(spec.name, "passed") for spec in SPECS[1:]]
    cases = {
        "right": [entry(FIRST.name, "passed"), *others],
        "named": [entry(FIRST.name, "failed", KNOWN), *others],
        "unnamed": [entry(FIRST.name, "failed", "wrong_values"), *others],
        "raised": [entry(FIRST.name, "error", KNOWN), *others],
        "stub": [entry(FIRST.name, "not_implemented"), *others],
        "absent": None,
    }
    marks = {m.student_id: m for m in gradebook.marks(report_with(cases), config)}
    share = 9 / len(SPECS)
    first = {name: marks[name].exercises[0].checks[0].points for name in cases}
    assert first["right"] == pytest.approx(share, abs=0.01)
    assert first["named"] == pytest.approx(share / 2, abs=0.01), "a recognised mistake earns half the check"
    assert first["unnamed"] == first["raised"] == first["stub"] == first["absent"] == 0
    assert marks["absent"].points == 0 and marks["right"].points == pytest.approx(9)
    assert marks["stub"].points < marks["named"].points < marks["right"].points


def test_a_full_pass_earns_every_point_when_the_share_does_not_divide():
    """Three checks share 10 points: a pass is 10 / 10 (each share rounded first made it 9.99), a check 3.33."""
    config = gradebook.Config(points={EXERCISE: 10}, mistake_credit=0.5)
    cases = {"right": [entry(spec.name, "passed") for spec in SPECS]}
    (student,) = gradebook.marks(report_with(cases), config)
    assert len(SPECS) == 3, "the case needs a share that does not divide"
    assert student.points == 10 and gradebook._number(student.points) == "10"
    assert gradebook._number(student.exercises[0].checks[0].points) == "3.33"
    assert "10 / 10 points" in gradebook.feedback_markdown(student)


def test_a_knock_on_needs_a_named_mistake_upstream():
    """A failure the grader explains by an earlier check (``explained_by``) earns credit only when that check failed
    with one of its own catalogued mistakes, and only for a check after it."""
    config = gradebook.Config(points={EXERCISE: 9}, mistake_credit=0.5)
    second, third = SPECS[1], SPECS[2]
    follows = {"explained_by": FIRST.name}
    cases = {
        "carried": [entry(FIRST.name, "failed", KNOWN), {**entry(second.name, "failed"), **follows},
                    entry(third.name, "passed")],
        "upstream_unnamed": [entry(FIRST.name, "failed", "wrong_values"), {**entry(second.name, "failed"), **follows},
                             entry(third.name, "passed")],
        "upstream_later": [entry(FIRST.name, "passed"), {**entry(second.name, "failed"), "explained_by": third.name},
                           entry(third.name, "failed", third.mistakes[0].key)],
    }  # fmt: skip
    marks = {m.student_id: m.exercises[0] for m in gradebook.marks(report_with(cases), config)}
    share = 9 / len(SPECS)
    assert [c.points for c in marks["carried"].checks] == pytest.approx([share / 2, share / 2, share], abs=0.01)
    assert marks["carried"].checks[1].explained_by == FIRST.name
    assert marks["upstream_unnamed"].checks[1].points == 0 and marks["upstream_unnamed"].checks[1].explained_by is None
    assert marks["upstream_later"].checks[1].points == 0


def test_config_is_read_and_wrong_values_are_friendly(tmp_path):
    good = tmp_path / "g.yaml"
    good.write_text("points:\n  ex02: 20\ndefault_points: 5\nmistake_credit: 0.25\n")
    config = gradebook.load_config(good)
    assert config.maximum(EXERCISE) == 20 and config.maximum("ex01_rnn") == 5 and config.mistake_credit == 0.25
    assert gradebook.load_config().maximum(EXERCISE) == 15  # the shipped default file
    for text, words in [
        ("points:\n  ex99: 3\n", "not an exercise"),
        ("mistake_credit: 2\n", "between 0 and 1"),
        ("weights: {}\n", "unknown keys"),
        ("points: [1, 2]\n", "must map"),
    ]:
        good.write_text(text)
        with pytest.raises(CommandError, match=words):
            gradebook.load_config(good)


def test_roster_errors_name_the_line(tmp_path):
    path = tmp_path / "roster.csv"
    path.write_text("student_id,name,section\nalice,Alice,A\nAlice Smith,Bob,B\n")
    with pytest.raises(CommandError, match="line 3"):
        roster.read(path)
    path.write_text("student_id,name\nalice,A\nalice,B\n")
    with pytest.raises(CommandError, match="already on line 2"):
        roster.read(path)
    path.write_text("login,name\nalice,A\n")
    with pytest.raises(CommandError, match="no student_id column"):
        roster.read(path)


class _Text(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.text = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def test_feedback_escapes_every_field():
    hostile = "<img src=x onerror=alert(1)> *bold* [link](http://x) | pipe"
    checks = [entry(spec.name, "failed", None, f"❌ {spec.name}: {hostile}\n   Hint: {hostile}") for spec in SPECS]
    report = report_with({"<script>x</script>": checks})
    student = gradebook.marks(report, gradebook.Config())[0]
    page = gradebook.feedback_html(student)
    parser = _Text()
    parser.feed(page)
    assert "img" not in parser.tags and "script" not in parser.tags
    assert hostile in "".join(parser.text), "the message is shown as text"
    markdown = gradebook.feedback_markdown(student)
    from markdown_it import MarkdownIt

    rendered = _Text()
    rendered.feed(MarkdownIt("commonmark").enable("table").render(markdown))
    assert not {"img", "script", "a", "em"} & set(rendered.tags), f"Markdown made markup: {set(rendered.tags)}"
    assert hostile in "".join(rendered.text), "the Markdown shows the message as text"


# --------------------------------------------------------------------------- a class graded for real


def _notebook_with(base: Path, *cells: str) -> str:
    notebook = nbformat.read(base, as_version=4)
    for source in cells:
        notebook.cells.append(nbformat.v4.new_code_cell(source))
    return nbformat.writes(notebook)


def _mistake_source(check: str, key: str) -> str:
    """A catalogued mistake's example as the learner's own code (the sandbox holds no checks to import it from)."""
    mistake = next(m for m in MISTAKES[check] if m.key == key)
    source = textwrap.dedent(inspect.getsource(mistake.example))
    return source.replace(f"def {mistake.example.__name__}(", "def softmax(", 1)


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    from optional_tools import require_sandbox

    require_sandbox()
    base = tmp_path_factory.mktemp("class")
    submissions = base / "submissions"
    solution = generate.solution_path(ROOT / "exercises", EXERCISE)
    stub = generate.learner_path(ROOT / "exercises", EXERCISE)
    unrelated = (  # causal_attention wrong in a way of its own, on top of the learner's softmax mistake
        "_causal_with_my_softmax = causal_attention\n\n\n"
        "def causal_attention(queries, keys, values):\n"
        "    return _causal_with_my_softmax(queries, keys, values) * 1.01\n"
    )
    work = {
        "alice": _notebook_with(solution),
        "bob": _notebook_with(solution, _mistake_source("check_softmax", "not_normalised")),
        "carol": _notebook_with(solution, "_right = softmax\nsoftmax = lambda scores: _right(scores) * (1 + 1e-3)"),
        "dan": stub.read_text(encoding="utf-8"),
        "fay": _notebook_with(solution, _mistake_source("check_softmax", "not_normalised"), unrelated),
    }
    for learner, text in work.items():
        (submissions / learner).mkdir(parents=True)
        (submissions / learner / f"{EXERCISE}.ipynb").write_text(text, encoding="utf-8")
    class_roster = base / "roster.csv"
    class_roster.write_text(
        'student_id,name,section,email\nalice,"Martin, Alice",A,\nbob,Bob Ng,A,\ncarol,Carol,B,\n'
        "dan,Dan,B,\nerin,Erin Never,B,\nfay,Fay,A,\n",
        encoding="utf-8",
    )
    out = base / "scores"
    console = io.StringIO()
    with contextlib.redirect_stdout(console):  # no --gradebook: every run counts points and writes the hand-backs
        code = cli.main(
            ["exercises", "grade", str(submissions), "--out", str(out), "--exercise", "ex02", "--jobs", "2",
             "--roster", str(class_roster)]
        )  # fmt: skip
    assert code == 0
    (out / "console.txt").write_text(console.getvalue(), encoding="utf-8")
    return out


def _rows(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))


def test_canvas_csv_has_canvas_columns_and_points_possible(graded_class):
    rows = _rows(graded_class / "canvas.csv")
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", EXERCISE]
    assert rows[1][0] == "Points Possible" and rows[1][5] == "15"
    by_login = {row[3]: row for row in rows[2:]}
    assert set(by_login) == {"alice", "bob", "carol", "dan", "erin", "fay"}
    assert by_login["alice"][0] == "Martin, Alice" and by_login["alice"][4] == "A"
    points = {login: float(row[5]) for login, row in by_login.items()}
    assert points["alice"] == 15
    assert 0 < points["bob"] < 15, f"the recognised mistake (softmax not normalised) earns part: {points}"
    assert points["dan"] == 0 and points["erin"] == 0, "an empty stub and a student who submitted nothing earn none"
    assert points["carol"] < points["bob"], f"a near miss the grader cannot name earns less than a named one: {points}"


def test_moodle_csv_maps_username_and_states_the_maximum(graded_class):
    rows = _rows(graded_class / "moodle.csv")
    assert rows[0] == ["Username", "ID number", "Section", f"{EXERCISE} (out of 15)"]
    table = {row[0]: row for row in rows[1:]}
    assert table["carol"][2] == "B" and float(table["alice"][3]) == 15 and float(table["erin"][3]) == 0


def test_feedback_files_carry_each_checks_message_and_hint(graded_class):
    folder = graded_class / "feedback"
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        f"{who}{suffix}" for who in ["alice", "bob", "carol", "dan", "erin", "fay"] for suffix in (".md", ".html")
    )
    bob = (folder / "bob.md").read_text(encoding="utf-8")
    mistake = next(m for m in MISTAKES["check_softmax"] if m.key == "not_normalised")
    assert gradebook.md_escape(mistake.title) in bob and "Hint:" in bob
    assert "not implemented yet" in (folder / "dan.md").read_text(encoding="utf-8")
    assert "Not submitted." in (folder / "erin.html").read_text(encoding="utf-8")
    assert "Total: 15 / 15 points" in (folder / "alice.html").read_text(encoding="utf-8")


def test_a_bad_config_stops_before_grading(tmp_path, capsys):
    (tmp_path / "subs" / "alice").mkdir(parents=True)
    bad = tmp_path / "bad.yaml"
    bad.write_text("mistake_credit: 3\n")
    code = cli.main(
        ["exercises", "grade", str(tmp_path / "subs"), "--out", str(tmp_path / "o"), "--gradebook", str(bad)]
    )
    assert code != 0 and "between 0 and 1" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_judge_of_nothing_is_zero():
    """The grader's own result for a notebook that returned nothing: every check fails, no credit."""
    checks = remote.judge(EXERCISE, None)
    marks = gradebook.marks(report_with({"x": checks}), gradebook.Config())
    assert marks[0].points == 0


# --------------------------------------------------------------------------- one notion of points


def _expected_points() -> dict[str, float]:
    """What the course's gradebook.yaml gives this class: bob's softmax mistake is named and his attention and causal
    attention fail only because they call that softmax (each a named mistake's credit); fay's causal attention is
    wrong in a way of its own (0); carol's near miss is named nowhere, dan's stub and erin's nothing earn 0."""
    config = gradebook.load_config()
    share = config.maximum(EXERCISE) / len(SPECS)
    named = config.mistake_credit * share
    assert 0 < named < share, "the course's default config gives a named mistake part of a check"
    return {"alice": config.maximum(EXERCISE), "bob": 3 * named, "fay": 2 * named, "carol": 0, "dan": 0, "erin": 0}


def test_a_knock_on_failure_earns_the_named_mistakes_credit_and_an_unrelated_one_none(graded_class):
    rows = list(csv.DictReader(io.StringIO((graded_class / "checks.csv").read_text(encoding="utf-8"))))
    follows = {(r["student_id"], r["check"]): r["follows_from"] for r in rows}
    assert follows[("bob", "check_softmax")] == "" and rows[0]["points"]
    assert follows[("bob", "check_attention")] == follows[("bob", "check_causal_attention")] == "check_softmax"
    assert follows[("fay", "check_attention")] == "check_softmax"
    assert follows[("fay", "check_causal_attention")] == "", "a downstream bug of its own is not a knock-on"
    assert follows[("carol", "check_attention")] == "", "an unnamed upstream failure carries no credit"
    points = {(r["student_id"], r["check"]): r["points"] for r in rows}
    assert points[("fay", "check_causal_attention")] == "0" and rows[0]["possible"] == f"{15 / len(SPECS):g}"
    assert (
        points[("bob", "check_causal_attention")]
        == points[("bob", "check_softmax")]
        != points[("dan", "check_softmax")]
    )
    bob = (graded_class / "feedback" / "bob.md").read_text(encoding="utf-8")
    assert "follows from the mistake check\\_softmax names in your softmax" in bob, bob


def test_points_are_the_same_everywhere(graded_class):
    expected = _expected_points()
    console = (graded_class / "console.txt").read_text(encoding="utf-8")
    scores = {r["student_id"]: r for r in csv.DictReader(io.StringIO((graded_class / "scores.csv").read_text("utf-8")))}
    canvas = {row[3]: row[5] for row in _rows(graded_class / "canvas.csv")[2:]}
    moodle = {row[0]: row[3] for row in _rows(graded_class / "moodle.csv")[1:]}
    markdown = (graded_class / "scores.md").read_text(encoding="utf-8")
    for learner, points in expected.items():
        text = f"{points:g}"
        assert scores[learner][f"{EXERCISE} points"] == text and scores[learner]["points"] == text, scores[learner]
        assert canvas[learner] == text and moodle[learner] == text, (learner, canvas, moodle)
        feedback = (graded_class / "feedback" / f"{learner}.md").read_text(encoding="utf-8")
        assert f"**Total: {text} / 15 points**" in feedback, feedback
        html_page = (graded_class / "feedback" / f"{learner}.html").read_text(encoding="utf-8")
        assert f"Total: {text} / 15 points" in html_page
        if learner != "erin":  # erin is on the roster only: nothing was graded, so the console names her nowhere
            line = next(line for line in console.splitlines() if line.strip().startswith(learner + " "))
            assert f"{text} / 15 points" in line, line
            row = next(line for line in markdown.splitlines() if line.startswith(f"| {learner} | "))
            assert row.startswith(f"| {learner} | ") and f", {text} / 15 points |" in row, row
    assert "| erin | missing 0/3 checks, 0 / 15 points |" in markdown
    assert scores["dan"][f"{EXERCISE}:check_softmax"] == "not_implemented" and expected["dan"] == 0
    assert "canvas.csv" in console and "12 feedback files" in console
    assert not (graded_class / "gradebook.csv").exists()
