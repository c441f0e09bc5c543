"""The exercise checks: every catalogued mistake gets its own hint, and every way a learner's function can go
wrong becomes a clear message (never an exception, never the reference solution).

The correct implementations are taken from the solution notebooks themselves (exercises/solutions/), so the tests
and the notebooks cannot drift apart.
"""

import contextlib
import inspect
import io
from pathlib import Path

import numpy as np
import pytest
import torch

import course_lib.checks as checks
from course_lib.checks import CHECKS, EXERCISES, MISTAKES, SPECS, CheckResult, run_exercise_checks
from course_lib.tools.exercises.build import checks_output

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "exercises" / "solutions"


def _solution_namespace(exercise: str) -> dict:
    """Execute the solution notebook's code cells (not the check cells) and return the functions it defines."""
    import nbformat

    notebook = nbformat.read(SOLUTIONS / f"{exercise}.ipynb", as_version=4)
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        for cell in notebook.cells:
            if cell.cell_type == "code" and not checks_output(cell):
                exec(compile(cell.source, f"{exercise}.ipynb", "exec"), namespace)
    return namespace


@pytest.fixture(scope="module")
def solutions() -> dict:
    found = {}
    for name, exercise in EXERCISES.items():
        namespace = _solution_namespace(name)
        for _, function in exercise.checks:
            found[function] = namespace[function]
    return found


def flat(result) -> str:
    """The message with its line wrapping undone."""
    return " ".join(result.message.split())


CATALOGUE = [(check, mistake) for check, mistakes in MISTAKES.items() for mistake in mistakes]


def test_every_check_catalogues_at_least_three_mistakes():
    for check, mistakes in MISTAKES.items():
        assert len(mistakes) >= 3, f"{check} catalogues only {len(mistakes)} mistakes"
        keys = [m.key for m in mistakes]
        assert len(keys) == len(set(keys)), f"{check} has duplicate mistake keys"


def test_every_exercise_has_its_checks_registered():
    assert list(EXERCISES) == [
        "ex01_rnn",
        "ex02_attention",
        "ex03_multi_head",
        "ex04_positional_encoding",
        "ex05_layernorm_residual",
        "ex06_encoder_block",
        "ex08_language_model",
        "ex09_induction_heads",
        "ex10_rope_online_softmax",
        "ex11_tokenizer",
    ]
    assert set(CHECKS) == set(SPECS)
    for name in CHECKS:
        assert getattr(checks, name) is CHECKS[name]


@pytest.mark.parametrize("check_name", list(CHECKS))
def test_the_solution_passes(check_name, solutions, capsys):
    result = CHECKS[check_name](solutions[SPECS[check_name].function])
    printed = capsys.readouterr().out
    assert result.passed and result.status == "passed", result.message
    assert printed.startswith("✅") and printed.strip() == result.message


@pytest.mark.parametrize("check_name, mistake", CATALOGUE, ids=[f"{c}-{m.key}" for c, m in CATALOGUE])
def test_each_catalogued_mistake_gets_its_specific_hint(check_name, mistake, capsys):
    result = CHECKS[check_name](mistake.example)
    printed = capsys.readouterr().out
    assert not result.passed
    assert result.mistake == mistake.key, f"expected the hint for {mistake.key!r}, got:\n{result.message}"
    assert " ".join(mistake.hint.split()) in flat(result)
    assert printed.startswith("❌") and "Hint:" in printed
    assert "tensor(" not in printed, "a check must never print tensors (the expected result)"


@pytest.mark.parametrize(
    "check_name, mistake",
    [(c, m) for c, m in CATALOGUE if m.variants],
    ids=[f"{c}-{m.key}" for c, m in CATALOGUE if m.variants],
)
def test_the_variants_of_a_mistake_are_recognised_too(check_name, mistake):
    for variant in mistake.variants:
        result = CHECKS[check_name](variant, verbose=False)
        assert result.mistake == mistake.key, f"{variant.__name__}: {result.message}"


def test_every_mistake_is_really_wrong_on_the_check_inputs():
    """A buggy example must differ from the reference on some test (else the check could never tell them apart)."""
    for check_name, mistake in CATALOGUE:
        spec = SPECS[check_name]
        differs = False
        for case in spec.cases:
            args, expected = case.build()
            try:
                got = mistake.example(*args)
            except Exception:
                differs = True
                break
            if not checks.judging.same(got, expected, 1e-4, 1e-3):
                differs = True
                break
        assert differs, f"{check_name}/{mistake.key}: the buggy example passes every test"


# ---------------------------------------------------------------------------------------- robustness messages


def stub_softmax(scores):
    raise NotImplementedError("softmax: replace this line with your code")


def test_a_stub_is_not_implemented_yet(capsys):
    result = checks.check_softmax(stub_softmax)
    assert result.status == "not_implemented" and not result.passed
    assert "not implemented yet" in capsys.readouterr().out


def test_a_helper_that_is_still_a_stub_is_named():
    def rnn_step(x_t, h_prev, w_xh, w_hh, b):
        raise NotImplementedError("rnn_step: replace this line with your code")

    def rnn_forward(x, h0, w_xh, w_hh, b):
        return rnn_step(x[:, 0], h0, w_xh, w_hh, b)

    result = checks.check_rnn_forward(rnn_forward, verbose=False)
    assert result.status == "not_implemented"
    assert "rnn_forward calls rnn_step" in flat(result)


def test_an_exception_shows_its_type_message_and_the_learner_line():
    def softmax(scores):
        total = scores.sum()
        return scores / undefined_helper(total)  # noqa: F821

    line = inspect.getsourcelines(softmax)[1] + 2
    result = checks.check_softmax(softmax, verbose=False)
    assert result.status == "error" and not result.passed
    assert "NameError: name 'undefined_helper' is not defined" in flat(result)
    assert f"test_checks.py, line {line}" in flat(result)
    assert "undefined_helper(total)" in flat(result)
    assert "Hint:" in flat(result)


def test_an_exception_from_inside_torch_points_at_the_learner_line():
    def attention(queries, keys, values):
        scores = queries @ keys.transpose(-2, -1)
        return torch.softmax(scores, dim=-1) @ values.transpose(-2, -1)

    line = inspect.getsourcelines(attention)[1] + 2
    result = checks.check_attention(attention, verbose=False)
    assert result.status == "error"
    assert "RuntimeError" in flat(result) and f"line {line}" in flat(result)
    assert result.mistake == "matmul_shapes"


def test_a_not_implemented_error_from_deeper_code_is_an_error_not_a_stub():
    def softmax(scores):
        return torch.sparse.softmax(scores.to_sparse(), dim=-1).to_dense() + helper(scores)

    def helper(scores):
        raise ValueError("oops")

    assert checks.check_softmax(softmax, verbose=False).status == "error"


@pytest.mark.parametrize(
    "returned, words",
    [
        (lambda s: None, ["returned None", "`return`"]),
        (lambda s: torch.softmax(s, -1).numpy(), ["NumPy array", "torch"]),
        (lambda s: (torch.softmax(s, -1), torch.softmax(s, -1)), ["a tuple of 2", "single tensor"]),
        (lambda s: [torch.softmax(s, -1)], ["a list of 1 tensors", "torch.stack"]),
        (lambda s: 1.0, ["a float (1.0)"]),
        (lambda s: "weights", ["a string"]),
        (lambda s: torch.softmax(s, -1)[..., :-1], ["expected shape", "got"]),
        (lambda s: torch.softmax(s, -1).double(), ["dtype is float64, expected float32"]),
        (lambda s: torch.softmax(s, -1).long(), ["dtype int64"]),
        (lambda s: torch.softmax(s, -1) * float("nan"), ["NaN in"]),
        (lambda s: torch.softmax(s, -1).to(torch.complex64), ["complex"]),
        (lambda s: torch.softmax(s, -1) + 0.01, ["values are not", "largest by"]),
    ],
)
def test_malformed_results_get_clear_messages(returned, words):
    result = checks.check_softmax(returned, verbose=False)
    assert not result.passed and result.status == "failed"
    for word in words:
        assert word in flat(result), result.message


def test_a_tensor_where_a_tuple_is_expected_and_a_tuple_of_wrong_length():
    def only_states(x, h0, w_xh, w_hh, b):
        return torch.zeros(x.shape[0], x.shape[1], h0.shape[1])

    message = flat(checks.check_rnn_forward(only_states, verbose=False))
    assert "single tensor" in message and "(hidden_states, h_last)" in message
    message = flat(checks.check_rnn_forward(lambda *args: (1, 2, 3), verbose=False))
    assert "tuple of 3" in message
    message = flat(checks.check_rnn_forward(lambda *args: ([torch.zeros(2, 4)] * 5, torch.zeros(2, 4)), verbose=False))
    assert "Python list of 5 tensors" in message and "torch.stack" in message


def test_mutating_an_input_is_reported(solutions):
    def softmax(scores):
        scores -= scores.amax(dim=-1, keepdim=True)  # changes the caller's tensor
        exps = scores.exp()
        return exps / exps.sum(dim=-1, keepdim=True)

    result = checks.check_softmax(softmax, verbose=False)
    assert result.mistake == "mutates_input" and "`scores`" in flat(result) and "in place" in flat(result)

    def layer_norm(x, gamma, beta, eps=1e-5):
        gamma.mul_(1.0)  # harmless
        beta.add_(1.0)  # not harmless
        return solutions["layer_norm"](x, gamma, beta - 1.0, eps)

    result = checks.check_layer_norm(layer_norm, verbose=False)
    assert result.mistake == "mutates_input" and "`beta`" in flat(result) and "`gamma`" not in flat(result)


@pytest.mark.parametrize(
    "value, words",
    [
        (None, ["got None", "check_softmax(softmax)"]),
        (torch.ones(3), ["pass the function itself", "no parentheses"]),
        (np.ones(3), ["pass the function itself"]),
        ("softmax", ["expects your function", "a string"]),
        (5, ["an int (5)"]),
    ],
)
def test_passing_something_other_than_a_function(value, words):
    result = checks.check_softmax(value, verbose=False)
    assert not result.passed
    for word in words:
        assert word in flat(result)


def test_wrong_signature_is_explained():
    result = checks.check_layer_norm(lambda x, gamma, beta: x, verbose=False)
    assert "layer_norm(x, gamma, beta, eps)" in flat(result)


def test_recursion_is_explained():
    def softmax(scores):
        return softmax(scores)

    result = checks.check_softmax(softmax, verbose=False)
    assert "RecursionError" in flat(result) and "calls itself" in flat(result)


def test_keyboard_interrupt_still_stops_a_check():
    def interrupted(scores):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        checks.check_softmax(interrupted)


def test_a_check_does_not_disturb_the_learners_random_state(solutions):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    for name, check in CHECKS.items():
        check(solutions[SPECS[name].function], verbose=False)
    assert torch.equal(torch.rand(3), expected)


def test_check_result_api(solutions):
    result = checks.check_softmax(solutions["softmax"], verbose=False)
    assert isinstance(result, CheckResult) and bool(result) is True
    assert result.to_dict()["status"] == "passed"
    assert "passed=True" in repr(result)
    assert result._ipython_display_() is None  # nothing shown twice in a notebook
    failed = checks.check_softmax(lambda s: None, verbose=False)
    assert bool(failed) is False


def test_run_exercise_checks_reads_a_namespace(solutions):
    results = run_exercise_checks("ex02_attention", {"softmax": solutions["softmax"], "attention": stub_softmax})
    assert [r["status"] for r in results] == ["passed", "error", "missing"]
    assert [r["function"] for r in results] == ["softmax", "attention", "causal_attention"]


def test_the_documentation_lists_every_catalogued_mistake():
    docs = (ROOT / "docs" / "exercises.md").read_text(encoding="utf-8")
    for check_name, mistake in CATALOGUE:
        assert f"`{check_name}`" in docs and f"`{mistake.key}`" in docs, (
            f"docs/exercises.md lacks {check_name}/{mistake.key}"
        )
