"""The adversarial suite (tests/adversarial/): every wrong learner solution fails with a true message, every unusual
but correct one passes. The solutions were written from how learners err, not from the mistake catalogues."""

import pytest
from adversarial import all_solutions

from course_lib.checks import CHECKS, SPECS
from course_lib.checks.spec import FAILED, PASSED, salt_scope

SOLUTIONS = all_solutions()


def _param(solution):
    marks = [pytest.mark.slow] if solution.slow else []
    if solution.xfail:
        marks.append(pytest.mark.xfail(strict=True, reason=solution.xfail))
    return pytest.param(solution, id=solution.id, marks=marks)


WRONG = [_param(s) for s in SOLUTIONS if not s.correct]
RIGHT = [_param(s) for s in SOLUTIONS if s.correct]


@pytest.mark.parametrize("solution", WRONG)
def test_wrong_solution_fails_with_a_true_message(solution):
    result = CHECKS[solution.check](solution.function, verbose=False)
    assert not result.passed, f"false pass: {solution.id}"
    assert result.status in (FAILED, "error"), result.status
    assert result.message.startswith("❌ "), result.message
    assert "Traceback" not in result.message
    assert result.mistake in solution.mistakes, f"gave {result.mistake!r}, expected one of {set(solution.mistakes)}"
    catalogue = {mistake.key: mistake.title for mistake in SPECS[solution.check].mistakes}
    if result.mistake in catalogue:  # the message names the mistake the code makes
        assert catalogue[result.mistake] in result.message
    if result.mistake == "delegates":
        assert f"your `{SPECS[solution.check].function}` calls course_lib's own `" in result.message


@pytest.mark.parametrize("solution", RIGHT)
def test_correct_solution_passes(solution):
    result = CHECKS[solution.check](solution.function, verbose=False)
    assert result.passed, result.message
    assert result.status == PASSED


def test_the_suite_covers_every_graded_function_and_cannot_shrink():
    wrong = [s for s in SOLUTIONS if not s.correct and not s.xfail]  # an open false pass does not count
    right = [s for s in SOLUTIONS if s.correct and not s.xfail]
    assert len(wrong) >= 150 and len(right) >= 30, (len(wrong), len(right))
    assert {s.check for s in wrong} == set(SPECS), set(SPECS) - {s.check for s in wrong}
    assert {s.check for s in right} == set(SPECS), set(SPECS) - {s.check for s in right}
    assert len({s.id for s in SOLUTIONS}) == len(SOLUTIONS), "two solutions share a name"


# Salts at which a wrong solution once passed every case (a check's cases are drawn from the salt): each stays failed.
SALTS_THAT_ONCE_PASSED = {
    "check_prefix_matching_score:prefix_half_written_in": (133, 225, 284, 293, 927, 1080, 1187, 1636),
}


@pytest.mark.parametrize(
    ("solution_id", "salt"), [(i, s) for i, salts in SALTS_THAT_ONCE_PASSED.items() for s in salts]
)
def test_wrong_solution_fails_at_the_salts_where_it_once_passed(solution_id, salt):
    (solution,) = [s for s in SOLUTIONS if s.id == solution_id]
    with salt_scope(salt):
        result = CHECKS[solution.check](solution.function, verbose=False)
    assert not result.passed, f"false pass at salt {salt}"
