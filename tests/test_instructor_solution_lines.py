"""The instructor guide names every line of an exercise solution that a lesson also shows.

``solution_lines_in_lessons`` compares each solution block's lines (comments and indentation aside) with the code of
every lesson; INSTRUCTORS.md must carry exactly the table it produces, so a lesson that starts showing a solution
line (or stops) makes this test fail until the guide says so.
"""

from pathlib import Path

from course_lib.tools.publish import bundle

ROOT = Path(__file__).resolve().parents[1]


def test_code_only_drops_comments_but_not_hashes_in_strings():
    assert bundle.code_only("    mean = x.mean(dim=-1)  # (..., 1)") == "mean = x.mean(dim=-1)"
    assert bundle.code_only('label = "#1"  # a label') == 'label = "#1"'
    assert bundle.code_only("# only a comment") == ""


def test_the_finder_sees_the_complete_layer_norm_of_notebook_05():
    shared = {(item.exercise, item.function): item for item in bundle.solution_lines_in_lessons(ROOT)}
    assert ("ex05_layernorm_residual", "layer_norm") in shared, "notebook 05's layer_norm ends with the solution's line"
    assert all(item.notebooks for item in shared.values())


def test_the_instructor_guide_carries_the_table_of_shared_lines():
    guide = (ROOT / "INSTRUCTORS.md").read_text(encoding="utf-8")
    table = bundle.shared_lines_table(ROOT)
    assert f"\n{table.strip()}\n\n" in guide, (  # the whole table: a stale row after it fails too
        "INSTRUCTORS.md no longer lists exactly the solution lines the lessons show; replace its table with:\n\n"
        + table
    )
