"""Exercises that grow with the learner: every exercise states its difficulty and a time range, and every task
offers tiered help (hint 1: the direction, hint 2: the step, then pseudo-code), each tier collapsed inside the
previous one, none of them the solution.

The format of a hint cell (a markdown cell tagged ``hints``, right before the task's function cell) is described
in docs/exercises.md ("Tiered hints"). The solution lines compared with are read from the solution notebooks'
``### BEGIN SOLUTION`` blocks, so a hint that starts quoting the solution fails here.
"""

import re
from pathlib import Path

import nbformat
import pytest

from course_lib.checks import EXERCISES
from course_lib.tools.exercises import build as generate
from course_lib.tools.publish.bundle import code_only

ROOT = Path(__file__).resolve().parents[1]
EXERCISES_DIR = ROOT / "exercises"
HINTS_TAG = "hints"
TIERS = ("Hint 1", "Hint 2", "Pseudo-code")
DIFFICULTY = re.compile(r"^- \*\*Difficulty:\*\* (★☆☆|★★☆|★★★) \S", re.M)
TIME_RANGE = re.compile(r"^- \*\*Estimated time:\*\* (\d+)–(\d+) minutes", re.M)
TAG = re.compile(r"<details>|</details>|<summary>(.*?)</summary>", re.S)


def _solution(name: str):
    return nbformat.read(generate.solution_path(EXERCISES_DIR, name), as_version=4)


def _learner(name: str):
    return nbformat.read(generate.learner_path(EXERCISES_DIR, name), as_version=4)


def _tasks(notebook) -> list[tuple[str, int]]:
    """``(function name, cell index)`` of every code cell the learner fills in (a stub or a solution block)."""
    found = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "code" and (generate.BEGIN in cell.source or "raise NotImplementedError(" in cell.source):
            found.append((re.search(r"def (\w+)\(", cell.source).group(1), index))
    return found


def _hint_cell(notebook, index: int):
    """The hint cell of the task at ``index``: the markdown cell right before it, tagged ``hints``."""
    before = notebook.cells[index - 1] if index else None
    if before is None or before.cell_type != "markdown" or HINTS_TAG not in before.metadata.get("tags", []):
        return None
    return before


def tiers(text: str) -> list[tuple[str, str]]:
    """``[(summary, text shown when opened), ...]`` of a hint cell; raises AssertionError if it is not nested right.

    The cell must read ``<details><summary>Hint 1…</summary> … <details><summary>Hint 2…</summary> … <details>
    <summary>Pseudo-code…</summary> … </details></details></details>``: each tier inside the one before, so the
    learner opens them one after another.
    """
    tokens = list(TAG.finditer(text))
    shape = [
        "open" if t.group(0) == "<details>" else "close" if t.group(0) == "</details>" else "summary" for t in tokens
    ]
    assert shape == ["open", "summary"] * 3 + ["close"] * 3, f"not three nested <details> tiers: {shape}"
    found = []
    for number in range(3):
        summary = tokens[2 * number + 1]
        following = tokens[2 * number + 2]
        shown = re.sub(r"<[^>]+>", "", summary.group(1)).strip()
        found.append((shown, text[summary.end() : following.start()].strip()))
    return found


def _normal(text: str) -> str:
    return " ".join(text.replace("`", " ").split())


def solution_statements(notebook) -> list[str]:
    """The code of every solution line, and the right-hand side of every ``return``/assignment, 10+ characters."""
    statements = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        inside = False
        for line in cell.source.splitlines():
            if line.strip() in (generate.BEGIN, generate.END):
                inside = line.strip() == generate.BEGIN
                continue
            code = _normal(code_only(line)) if inside else ""
            right = re.sub(r"^[\w, ]+=\s*(?!=)", "", re.sub(r"^return\s+", "", code)).rstrip(":")
            statements += [part for part in {code, right} if len(part) >= 10]
    return statements


def test_every_exercise_states_its_difficulty_and_a_time_range():
    for name in EXERCISES:
        for notebook in (_solution(name), _learner(name)):
            first = notebook.cells[0].source
            assert DIFFICULTY.search(first), f"{name}: no '- **Difficulty:** ★☆☆/★★☆/★★★ ...' line in the first cell"
            times = TIME_RANGE.search(first)
            assert times, f"{name}: no '- **Estimated time:** N–M minutes' range in the first cell"
            low, high = int(times.group(1)), int(times.group(2))
            assert 0 < low < high, f"{name}: the time range {low}–{high} is not a range"


@pytest.mark.parametrize("name", list(EXERCISES))
def test_every_task_has_three_nested_tiers_of_help(name):
    notebook = _solution(name)
    tasks = _tasks(notebook)
    assert {function for function, _ in tasks} >= {function for _, function in EXERCISES[name].checks}
    for function, index in tasks:
        cell = _hint_cell(notebook, index)
        assert cell is not None, f"{name}: no markdown cell tagged {HINTS_TAG!r} right before the cell of {function}"
        assert f"`{function}`" in cell.source.split("<details>")[0], f"{name}: the hint cell does not name {function}"
        found = tiers(cell.source)
        for (summary, shown), tier in zip(found, TIERS):
            assert summary.startswith(tier), f"{name}/{function}: tier {summary!r} where {tier!r} belongs"
            assert len(shown) >= 40, f"{name}/{function}: {tier} says almost nothing: {shown!r}"
        assert "```" in found[2][1], f"{name}/{function}: the pseudo-code is not in a code block"


@pytest.mark.parametrize("name", list(EXERCISES))
def test_no_hint_contains_a_line_of_the_solution(name):
    notebook = _solution(name)
    statements = solution_statements(notebook)
    assert statements, f"{name}: no solution lines found to compare with"
    for function, index in _tasks(notebook):
        text = _normal(_hint_cell(notebook, index).source)
        leaked = [statement for statement in statements if statement in text]
        assert not leaked, f"{name}/{function}: the hints contain solution code: {leaked}"


@pytest.mark.parametrize("name", list(EXERCISES))
def test_the_learner_version_keeps_every_hint_cell_before_its_task(name):
    solution, learner = _solution(name), _learner(name)
    expected = {function: _hint_cell(solution, index).source for function, index in _tasks(solution)}
    kept = {}
    for function, index in _tasks(learner):
        cell = _hint_cell(learner, index)
        assert cell is not None, f"{name}: the learner version lost the hints of {function}"
        kept[function] = cell.source
    assert kept == expected


def test_the_tier_parser_refuses_flat_or_missing_tiers():
    nested = (
        "<details><summary>Hint 1</summary>\n\na\n\n<details><summary>Hint 2</summary>\n\nb\n\n"
        "<details><summary>Pseudo-code</summary>\n\nc\n\n</details></details></details>"
    )
    assert [summary for summary, _ in tiers(nested)] == list(TIERS)
    flat = (
        "<details><summary>Hint 1</summary>a</details><details><summary>Hint 2</summary>b</details>"
        "<details><summary>Pseudo-code</summary>c</details>"
    )
    for broken in (flat, nested.replace("<details><summary>Hint 2</summary>", "")):
        with pytest.raises(AssertionError):
            tiers(broken)


def test_the_leak_finder_sees_a_quoted_solution_line():
    notebook = _solution("ex01_rnn")
    statements = solution_statements(notebook)
    quoted = "Try `torch.tanh(x_t @ w_xh.T + h_prev @ w_hh.T + b)`."
    assert any(statement in _normal(quoted) for statement in statements)


def test_the_weight_layout_switch_is_made_explicit_where_it_happens():
    """ex01 keeps nn.Linear's (out, in) layout, x @ w.T; ex03 and ex06 use (in, out) weights, x @ w, and say so."""
    text = {name: "\n".join(cell.source for cell in _learner(name).cells) for name in EXERCISES}
    assert "x W^\\top" in text["ex01_rnn"] and "`(in, out)`" in text["ex01_rnn"] and "exercise 03" in text["ex01_rnn"]
    assert "The weight layout changes here." in text["ex03_multi_head"] and "`x @ w.T`" in text["ex03_multi_head"]
    assert "as in exercise 03" in text["ex06_encoder_block"] and "`(d_model, d_ff)`" in text["ex06_encoder_block"]


def test_ex01_counts_positions_from_0_like_notebook_01():
    text = "\n".join(cell.source for cell in _learner("ex01_rnn").cells if cell.cell_type == "markdown")
    assert "Positions are counted from 0, as in notebook 01" in text
    assert not re.search(r"position 1\b", text), "ex01 still counts a first position 1"
    notebook_01 = next((ROOT / "notebooks").glob("01_*.ipynb"))
    assert "t=0 " in notebook_01.read_text(encoding="utf-8"), "notebook 01 no longer starts its positions at t=0"
