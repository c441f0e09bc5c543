"""The checks a teacher can trust: no false pass, no hint that gives the answer away, no misdiagnosis.

Each test here is a wrong (or hostile) learner function that an earlier version of the checks passed, told an
unrelated mistake, answered with the whole formula, or let hang. Bounded in time: a check stops a learner's call
after ``core.TIME_LIMIT`` seconds, set lower here.
"""

import math
import re
import threading
import time
from pathlib import Path

import nbformat
import pytest
import torch

import course_lib.checks as checks
from course_lib.checks import CHECKS, EXERCISES, MISTAKES, SPECS, calling, core, judging

ROOT = Path(__file__).resolve().parents[1]


def flat(result) -> str:
    return " ".join(result.message.split())


# ---------------------------------------------------------------------------------------------- false passes


def rnn_step(x_t, h_prev, w_xh, w_hh, b):
    return torch.tanh(x_t @ w_xh.T + h_prev @ w_hh.T + b)


def rnn_forward_detached(x, h0, w_xh, w_hh, b):
    h, states = h0, []
    for t in range(x.shape[1]):
        h = rnn_step(x[:, t], h.detach(), w_xh, w_hh, b)  # cuts the gradient through time
        states.append(h)
    return torch.stack(states, dim=1), h


def rnn_forward_no_grad(x, h0, w_xh, w_hh, b):
    with torch.no_grad():
        h, states = h0, []
        for t in range(x.shape[1]):
            h = rnn_step(x[:, t], h, w_xh, w_hh, b)
            states.append(h)
        return torch.stack(states, dim=1), h


def rnn_forward_rebuilt(x, h0, w_xh, w_hh, b):
    h, states = h0, []
    for t in range(x.shape[1]):
        h = torch.tensor(rnn_step(x[:, t], h, w_xh, w_hh, b).tolist())  # the values survive, the graph does not
        states.append(h)
    return torch.stack(states, dim=1), h


def test_a_loop_that_cuts_the_gradient_through_time_fails():
    result = checks.check_rnn_forward(rnn_forward_detached, verbose=False)
    assert not result.passed and result.mistake == "wrong_gradient", result.message
    assert "flow back through time" in flat(result) and "detach" in flat(result)
    for cut in (rnn_forward_no_grad, rnn_forward_rebuilt):
        result = checks.check_rnn_forward(cut, verbose=False)
        assert not result.passed and result.mistake == "no_gradient", result.message
        assert "Backpropagation through time" in flat(result)


def test_a_step_that_detaches_its_result_fails():
    result = checks.check_rnn_step(lambda *args: rnn_step(*args).detach(), verbose=False)
    assert not result.passed and result.mistake == "no_gradient"


def _layer_norm(x, gamma, beta, eps, dim=-1):
    mean = x.mean(dim=dim, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=dim, keepdim=True)
    return gamma * (x - mean) / torch.sqrt(var + eps) + beta


@pytest.mark.parametrize(
    "wrong, mistake",
    [
        (lambda x, gamma, beta, eps=1e-5: _layer_norm(x, gamma, beta, eps, dim=2), "fixed_axis_number"),
        (
            lambda x, gamma, beta, eps=1e-5: _layer_norm(x, gamma.view(1, 1, -1), beta.view(1, 1, -1), eps),
            "gamma_reshaped_for_3d",
        ),
        (lambda x, gamma, beta, eps=1e-5: _layer_norm(x, gamma, beta, 1e-5), "ignores_eps"),
        (lambda x, gamma, beta, eps=1e-5: _layer_norm(x, gamma, beta, 1e-3), "ignores_eps"),
    ],
    ids=["dim=2", "gamma.view(1, 1, -1)", "ignores eps", "eps 1e-3 hard-coded"],
)
def test_layer_norm_is_tested_on_every_input_form_and_eps(wrong, mistake):
    result = checks.check_layer_norm(wrong, verbose=False)
    assert not result.passed and result.mistake == mistake, result.message


def test_layer_norm_cases_cover_every_promised_input_form():
    dims = {case.build()[0][0].dim() for case in SPECS["check_layer_norm"].cases}
    eps = {case.build()[0][3] for case in SPECS["check_layer_norm"].cases}
    assert dims == {1, 2, 3, 4} and len(eps) >= 2
    assert {case.build()[0][0].dim() for case in SPECS["check_softmax"].cases} == {1, 2, 3, 4}


# ---------------------------------------------------------------------------------------------- no answer-giving hints


def _solution_statements() -> dict[str, list[str]]:
    """Every statement between the solution markers, per function, without comments, `return` or `name =`."""
    found: dict[str, list[str]] = {}
    for name in EXERCISES:
        notebook = nbformat.read(ROOT / "exercises" / "solutions" / f"{name}.ipynb", as_version=4)
        for cell in notebook.cells:
            if cell.cell_type != "code":
                continue
            inside, function = False, None
            for line in cell.source.splitlines():
                match = re.match(r"def (\w+)\(", line)
                if match:
                    function = match.group(1)
                if line.strip() in ("### BEGIN SOLUTION", "### END SOLUTION"):
                    inside = line.strip() == "### BEGIN SOLUTION"
                    continue
                if inside:
                    code = re.sub(r"^[\w, ]+=\s*(?!=)", "", re.sub(r"^return\s+", "", line.split("#")[0].strip()))
                    code = " ".join(code.split())
                    if len(code) >= 12:
                        found.setdefault(function, []).append(code)
    return found


STATEMENTS = _solution_statements()


def _leaks(check_name: str, text: str) -> list[str]:
    text = " ".join(text.split())
    return [s for s in STATEMENTS[SPECS[check_name].function] if s in text]


def test_no_hint_in_the_catalogue_prints_a_solution_statement():
    for check_name, mistakes in MISTAKES.items():
        for mistake in mistakes:
            assert not _leaks(check_name, mistake.title + " " + mistake.hint), (check_name, mistake.key)


WRONG_OUTPUTS = {
    "return the input": lambda *args: args[0],
    "return NaN": lambda *args: args[0] * float("nan"),
    "return zeros": lambda *args: torch.zeros_like(args[0]),
    "return input + 1": lambda *args: args[0] + 1,
}


@pytest.mark.parametrize(
    "check_name", ["check_sublayer_connection", "check_encoder_block", "check_attention", "check_layer_norm"]
)
@pytest.mark.parametrize("label", list(WRONG_OUTPUTS))
def test_a_wrong_output_never_gets_the_formula(check_name, label):
    result = CHECKS[check_name](WRONG_OUTPUTS[label], verbose=False)
    assert not result.passed
    assert not _leaks(check_name, result.message), result.message
    assert "Post-LN, step by step" not in result.message and "h = norm1" not in result.message


def test_the_encoder_block_points_at_the_first_wrong_step():
    def feed_forward(h, w_1, b_1, w_2, b_2):
        return torch.relu(h @ w_1 + b_1) @ w_2 + b_2

    def encoder_block(x, self_attention, norm1, norm2, w_1, b_1, w_2, b_2, norm_first=False):
        if norm_first:  # right: the mistake below is then the only one, on every test it fails
            h = x + self_attention(norm1(x))
            return h + feed_forward(norm2(h), w_1, b_1, w_2, b_2)
        h = norm1(x + self_attention(x))
        return norm2(h + feed_forward(x, w_1, b_1, w_2, b_2))  # no catalogue entry has it in this form... except one

    result = checks.check_encoder_block(encoder_block, verbose=False)
    assert result.mistake == "ffn_reads_input"

    def encoder_block(x, self_attention, norm1, norm2, w_1, b_1, w_2, b_2, norm_first=False):
        h = norm1(self_attention(x) * 2 + x)
        return norm2(h + feed_forward(h, w_1, b_1, w_2, b_2))

    result = checks.check_encoder_block(encoder_block, verbose=False)
    message = flat(result)
    assert "✓ self_attention receives the right input" in message and "✗ norm1 receives" in message, message
    assert not _leaks("check_encoder_block", message)


def test_the_sublayer_connection_points_at_the_first_wrong_step():
    def sublayer_connection(x, sublayer, norm, norm_first=False):
        return norm(0.5 * x + sublayer(x))

    message = flat(checks.check_sublayer_connection(sublayer_connection, verbose=False))
    assert "✓ sublayer receives the right input; ✗ norm receives a tensor that is none of" in message, message
    assert not _leaks("check_sublayer_connection", message), message


# ---------------------------------------------------------------------------------------------- no misdiagnosis


def softmax_plus_epsilon(scores):
    exps = (scores - scores.amax(dim=-1, keepdim=True)).exp()
    return exps / (exps.sum(dim=-1, keepdim=True) + 1e-3)


def softmax_float16(scores):
    half = scores.half()
    exps = (half - half.amax(dim=-1, keepdim=True)).exp()
    return (exps / exps.sum(dim=-1, keepdim=True)).float()


@pytest.mark.parametrize("softmax", [softmax_plus_epsilon, softmax_float16])
def test_a_slightly_off_softmax_is_not_told_an_unrelated_mistake(softmax):
    result = checks.check_softmax(softmax, verbose=False)
    assert not result.passed and result.mistake == "wrong_values", result.message
    assert "largest by" in flat(result) and "of the largest expected value" in flat(result)


def test_a_mistake_is_named_only_where_it_differs_from_the_reference():
    """Every catalogued buggy version that equals the reference on a test must not be named on that test."""
    for check_name, mistakes in MISTAKES.items():
        spec = SPECS[check_name]
        for case in spec.cases:
            args, expected = case.build()
            for mistake in mistakes:
                if mistake.probe is not None or mistake.raises is not None:
                    continue
                try:
                    buggy = mistake.example(*calling._clone(args))
                except Exception:
                    continue
                if judging.same(buggy, expected, spec.atol, spec.rtol):
                    nearly = expected + 1e-3 if isinstance(expected, torch.Tensor) else None
                    if nearly is not None:
                        assert not judging._recognise(spec, mistake, nearly, args, expected), (check_name, mistake.key)


def test_the_learners_own_type_error_is_not_blamed_on_the_signature():
    def softmax(scores):
        def helper(a):
            return a

        return helper(scores, 1)

    result = checks.check_softmax(softmax, verbose=False)
    assert result.status == "error" and "keep the signature" not in flat(result).lower()
    assert "helper(scores, 1)" in flat(result)

    result = checks.check_softmax(lambda scores, dim: scores, verbose=False)
    assert result.mistake == "signature" and "softmax(scores)" in flat(result)


def test_merged_head_axes_are_explained():
    def split_heads(x, num_heads):
        batch, seq, d_model = x.shape
        return x.reshape(batch, seq, num_heads, -1).transpose(1, 2).reshape(batch * num_heads, seq, -1)

    message = flat(checks.check_split_heads(split_heads, verbose=False))
    assert "(batch * num_heads, seq, d_head)" in message and "merged" in message, message


def test_where_the_values_differ_is_reported():
    def causal_attention(queries, keys, values):
        n = queries.shape[-2]
        scores = queries @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1])
        scores = scores.masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(1), float("-inf"))
        return torch.softmax(scores, dim=-1) @ values

    message = flat(checks.check_causal_attention(causal_attention, verbose=False))
    assert "only at seq = 0, 1, 2 out of 0–3" in message, message
    assert "your mask lets 3 later position(s) through" in message


# ---------------------------------------------------------------------------------------------- which step went wrong


def attention_scaled_twice(queries, keys, values):
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1]) / 3
    return torch.softmax(scores, dim=-1) @ values


def attention_output_halved(queries, keys, values):
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1])
    return (torch.softmax(scores, dim=-1) @ values) * 0.5


def attention_weights_halved(queries, keys, values):
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1])
    return 0.5 * torch.softmax(scores, dim=-1) @ values


def attention_global_softmax(queries, keys, values):
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1])
    exps = scores.exp()
    return exps / exps.sum() @ values


@pytest.mark.parametrize(
    "attention, words",
    [
        (
            attention_scaled_twice,
            ["✓ your scores match Q Kᵀ", "✗ your scaled scores equal Q Kᵀ / 6", "not Q Kᵀ / √d_k = Q Kᵀ / 2"],
        ),
        (attention_output_halved, ["✓ your weights match the softmax over the keys", "✗ so the last step differs"]),
        (attention_weights_halved, ["✓ your function computes the softmax over the keys", "changes it afterwards"]),
        (attention_global_softmax, ["✓ your scaled scores match Q Kᵀ / √d_k", "✗ no tensor with rows that sum to 1"]),
    ],
)
def test_attention_says_which_stage_went_wrong_first(attention, words):
    message = flat(checks.check_attention(attention, verbose=False))
    for word in words:
        assert word in message, message


# ---------------------------------------------------------------------------------------------- time limit


@pytest.fixture
def short_limit(monkeypatch):
    monkeypatch.setattr(core, "TIME_LIMIT", 1.0)


def endless_softmax(scores):
    while True:
        try:
            scores = scores + 0
        except Exception:  # a learner's broad except must not swallow the time limit
            pass


def test_an_endless_loop_ends_with_a_message(short_limit, capsys):
    started = time.monotonic()
    result = checks.check_softmax(endless_softmax)
    assert time.monotonic() - started < 5
    printed = capsys.readouterr().out
    assert result.status == "timeout" and not result.passed
    assert "did not finish within 1 s" in printed and "It was running" in printed and "line" in printed
    assert "Traceback" not in printed and "course_lib/checks" not in printed


def test_an_endless_loop_ends_outside_the_main_thread_too(short_limit):
    box = {}
    worker = threading.Thread(
        target=lambda: box.setdefault("result", checks.check_softmax(endless_softmax, verbose=False))
    )
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive() and box["result"].status == "timeout"


def test_an_outer_timer_survives_a_check(short_limit):
    import signal

    if not hasattr(signal, "setitimer"):
        pytest.skip("no interval timers on this platform")
    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *a: fired.append(1))
    try:
        signal.setitimer(signal.ITIMER_REAL, 3.0)
        checks.check_softmax(lambda s: torch.softmax(s, -1), verbose=False)
        remaining, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 0 < remaining <= 3.0, "the check must give an outer timer back what is left of it"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ---------------------------------------------------------------------------------------------- one gradient rule


def softmax_through_numpy(scores):
    import numpy as np

    a = scores.numpy()  # raises on a tensor that requires grad: the check used to skip the gradients then
    e = np.exp(a - a.max(-1, keepdims=True))
    return torch.from_numpy(e / e.sum(-1, keepdims=True))


def layer_norm_through_numpy(x, gamma, beta, eps=1e-5):
    import numpy as np

    a = x.numpy()
    mean, var = a.mean(-1, keepdims=True), a.var(-1, keepdims=True)
    return torch.from_numpy((a - mean) / np.sqrt(var + eps)) * gamma + beta


def feed_forward_through_numpy(x, w1, b1, w2, b2):
    import numpy as np

    hidden = np.maximum(x.numpy() @ w1.numpy() + b1.numpy(), 0)
    return torch.from_numpy(hidden @ w2.numpy() + b2.numpy())


@pytest.mark.parametrize(
    "check_name, function",
    [
        ("check_softmax", softmax_through_numpy),
        ("check_layer_norm", layer_norm_through_numpy),
        ("check_feed_forward", feed_forward_through_numpy),
    ],
    ids=["softmax", "layer_norm", "feed_forward"],
)
def test_a_function_that_fails_on_inputs_requiring_grad_fails(check_name, function):
    result = CHECKS[check_name](function, verbose=False)
    assert not result.passed
    assert "fails when its inputs require gradients" in flat(result), flat(result)


def top_k_without_grad(logits, k):
    with torch.no_grad():
        kth = torch.topk(logits, k, dim=-1).values[..., -1:]
        return logits.masked_fill(logits < kth, float("-inf"))


def top_k_by_log_mask(logits, k):
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]
    return logits + torch.log((logits >= kth).to(logits.dtype))


@pytest.mark.parametrize("function", [top_k_without_grad, top_k_by_log_mask], ids=["no_grad", "log_mask"])
def test_a_sampling_filter_need_not_carry_gradients(function):
    result = CHECKS["check_top_k_filter"](function, verbose=False)
    assert result.passed, flat(result)


def test_the_gradient_rule_is_declared_for_every_check_with_a_reference():
    untrained = {name for name, spec in SPECS.items() if spec.reference is not None and not spec.trains}
    assert untrained == {"check_top_k_filter", "check_top_p_filter"}, "only the sampling filters may cut the graph"


# ---------------------------------------------------------------------------------------------- sizes and ranges


def feed_forward_relu6(x, w_1, b_1, w_2, b_2):
    return torch.clamp(x @ w_1 + b_1, 0, 6) @ w_2 + b_2


def feed_forward_for_d_model_8(x, w_1, b_1, w_2, b_2):
    hidden = torch.relu(x.reshape(-1, 8) @ w_1 + b_1)
    return (hidden @ w_2 + b_2).reshape(x.shape)


def feed_forward_for_d_ff_16(x, w_1, b_1, w_2, b_2):
    return torch.relu(x @ w_1[:, :16] + b_1[:16]) @ w_2[:16] + b_2


@pytest.mark.parametrize("function", [feed_forward_relu6, feed_forward_for_d_model_8, feed_forward_for_d_ff_16])
def test_a_feed_forward_written_for_one_size_or_range_fails(function):
    assert not CHECKS["check_feed_forward"](function, verbose=False).passed


def test_the_feed_forward_cases_reach_past_relu6():
    hidden = []
    for case in SPECS["check_feed_forward"].cases:
        (x, w_1, b_1, *_), _ = case.build()
        hidden.append(float((x @ w_1 + b_1).max()))
    assert max(hidden) > 6, hidden


# ---------------------------------------------------------------------------------------------- state between calls


def kv_step_keeping_its_cache_on_the_model(lm, cache_keys, cache_values, new_tokens):
    """Stores the cache on ``lm`` and, once it has one, ignores the cache it is given."""
    from course_lib.attention import causal_mask, scaled_dot_product_attention

    old_keys, old_values = getattr(lm, "_keys", cache_keys), getattr(lm, "_values", cache_values)
    n_cached, n_new = old_keys.shape[1], new_tokens.shape[1]
    x = lm.embed(new_tokens, torch.arange(n_cached, n_cached + n_new))
    queries, keys, values = lm.project(x)
    keys, values = torch.cat([old_keys, keys], 1), torch.cat([old_values, values], 1)
    lm._keys, lm._values = keys, values
    attended, _ = scaled_dot_product_attention(queries, keys, values, causal_mask(n_cached + n_new)[n_cached:])
    return lm.readout(x, attended), keys, values


def test_a_step_that_keeps_state_on_the_model_fails():
    result = CHECKS["check_kv_cache_step"](kv_step_keeping_its_cache_on_the_model, verbose=False)
    assert not result.passed and "earlier call" in flat(result), flat(result)


# ---------------------------------------------------------------------------------------------- unknowable inputs


def test_every_check_call_draws_its_inputs_from_a_salt(monkeypatch):
    """Inside one salt scope a case builds the same inputs every time; another salt builds others."""
    from course_lib.checks.spec import SALT_VARIABLE, salt_scope

    monkeypatch.delenv(SALT_VARIABLE, raising=False)
    for spec in SPECS.values():
        case = spec.cases[0]
        with salt_scope(1):
            first, again = case.build()[0], case.build()[0]
        with salt_scope(2):
            other = case.build()[0]
        tensors, repeated, others = (
            [a for a in built if isinstance(a, torch.Tensor)] for built in (first, again, other)
        )
        assert all(torch.equal(a, b) for a, b in zip(tensors, repeated, strict=True)), spec.name
        if tensors:  # every check with tensor inputs: another salt, other values (or other sizes)
            assert any(a.shape != b.shape or not torch.equal(a, b) for a, b in zip(tensors, others)), spec.name


def test_a_failing_check_tells_its_salt_and_the_variable_repeats_it(monkeypatch):
    from course_lib.checks.spec import SALT_VARIABLE

    def softmax_plus_one(scores):
        return torch.softmax(scores, dim=-1) + 1

    monkeypatch.delenv(SALT_VARIABLE, raising=False)
    salts = {re.search(r"inputs salt (\d+);", checks.check_softmax(softmax_plus_one, False).message)[1] for _ in "ab"}
    assert len(salts) == 2, salts  # a fresh salt on every call (two equal draws of 10⁶: once in a million runs)
    monkeypatch.setenv(SALT_VARIABLE, "123456")
    message = checks.check_softmax(softmax_plus_one, verbose=False).message
    assert "(inputs salt 123456; set COURSE_CHECK_SALT=123456 to repeat)" in message
    passed = checks.check_softmax(lambda scores: torch.softmax(scores, dim=-1), verbose=False)
    assert passed.passed and "salt" not in passed.message


def _tensors_in_callers(shape):
    """Every tensor of ``shape`` held in the locals of the frames that called this one (one level into tuples)."""
    import sys

    found, frame = [], sys._getframe(2)
    while frame is not None:
        for value in list(frame.f_locals.values()):
            for item in value if isinstance(value, (tuple, list)) else (value,):
                if isinstance(item, torch.Tensor) and tuple(item.shape) == tuple(shape):
                    found.append(item)
        frame = frame.f_back
    return found


def softmax_found_in_the_callers(scores):
    """Returns a tensor of the output's shape held by a caller, one that is not the input (the expected result?)."""
    for tensor in _tensors_in_callers(scores.shape):
        if tensor is not scores and not torch.equal(tensor, scores):
            return tensor.clone()
    return scores


def attention_found_in_the_callers(queries, keys, values):
    shape = (*queries.shape[:-1], values.shape[-1])
    for tensor in _tensors_in_callers(shape):
        if not any(tensor.shape == x.shape and torch.equal(tensor, x) for x in (queries, keys, values)):
            return tensor.clone()
    return values


def top_k_found_in_the_callers(logits, k):
    return softmax_found_in_the_callers(logits)


@pytest.mark.parametrize(
    "exercise, check_name, function",
    [
        ("ex02_attention", "check_softmax", softmax_found_in_the_callers),
        ("ex02_attention", "check_attention", attention_found_in_the_callers),
        ("ex08_language_model", "check_top_k_filter", top_k_found_in_the_callers),
    ],
)
def test_the_expected_result_is_not_in_any_frame_the_learners_call_can_reach(exercise, check_name, function):
    from course_lib.tools.grading import remote

    result = CHECKS[check_name](function, verbose=False)
    assert not result.passed, result.message  # and it fails on the values themselves, not on gradients:
    assert result.mistake not in ("wrong_gradient", "no_gradient", "delegates"), result.message
    ask = remote.local_ask({SPECS[check_name].function: function})
    judged = next(row for row in remote.judge(exercise, ask) if row["check"] == check_name)
    assert not judged["passed"], judged["message"]


# ---------------------------------------------------------------------------------------------- delegation


def test_every_refused_function_is_course_libs_own_implementation_of_the_graded_one():
    from course_lib.checks.calling import own_code

    owned = {name: spec.own for name, spec in SPECS.items() if spec.own}
    assert {"check_softmax", "check_attention", "check_positional_encoding", "check_top_k_filter"} <= set(owned)
    assert "check_online_softmax_step" in owned and "check_multi_head_attention" not in owned
    for name in owned:
        code = own_code(SPECS[name])
        assert code.co_filename.startswith(str(ROOT / "course_lib")) and "checks" not in Path(code.co_filename).parts


def softmax_in_a_thread(scores):
    from course_lib.attention import softmax

    result = []
    worker = threading.Thread(target=lambda: result.append(softmax(scores)))
    worker.start()
    worker.join()
    return result[0]


def test_delegation_is_seen_in_a_thread_and_under_the_trace_of_the_time_limit():
    result = checks.check_softmax(softmax_in_a_thread, verbose=False)
    assert result.mistake == "delegates", result.message
    outcome = []
    worker = threading.Thread(target=lambda: outcome.append(checks.check_softmax(softmax_in_a_thread, False)))
    worker.start()  # outside the main thread the time limit is a trace function: both hooks at once
    worker.join()
    assert outcome[0].mistake == "delegates", outcome[0].message
    assert "other course_lib helpers are allowed" in outcome[0].message


def test_the_grader_sees_a_delegation_as_a_call_that_raises():
    """In the sandbox the course package has no implementation of what the exercise grades: a delegating function
    raises there, so the grader fails it (tests/test_grading_judge.py grades the real notebooks)."""
    from course_lib.tools.grading import remote

    def softmax(scores):
        raise RuntimeError("course_lib.attention.softmax is not available while your notebook is graded")

    judged = {row["check"]: row for row in remote.judge("ex02_attention", remote.local_ask({"softmax": softmax}))}
    assert not judged["check_softmax"]["passed"]
    assert "is not available while your notebook is graded" in judged["check_softmax"]["message"]
