"""Checks for exercise 01: the vanilla RNN step and the loop over time.

Learner signatures (weights stored like ``nn.Linear``: ``(out_features, in_features)``):

    rnn_step(x_t, h_prev, w_xh, w_hh, b) -> h_t                       h_t = tanh(x_t W_xhᵀ + h_prev W_hhᵀ + b)
    rnn_forward(x, h0, w_xh, w_hh, b) -> (hidden_states, h_last)

The reference is ``course_lib.VanillaRNN`` with these weights copied in (its second bias set to zero). Once the
values are right, the gradients of the inputs and weights are compared with the reference's too: backpropagation
through time is what exercise 01 is about, so a loop that detaches the state or runs under ``torch.no_grad()``
fails even though its forward values are right.
"""

from __future__ import annotations

import torch

from ..recurrent import VanillaRNN
from .core import export_checks
from .judging import same
from .spec import Case, CheckSpec, Mistake, TensorOut, TupleOut, generator, quiet_rng, randn

INPUT_SIZE, HIDDEN_SIZE = 3, 4


def _reference_rnn(w_xh: torch.Tensor, w_hh: torch.Tensor, b: torch.Tensor) -> VanillaRNN:
    with quiet_rng():
        rnn = VanillaRNN(w_xh.shape[1], w_xh.shape[0])
    with torch.no_grad():
        rnn.w_xh.weight.copy_(w_xh)
        rnn.w_xh.bias.copy_(b)
        rnn.w_hh.weight.copy_(w_hh)
        rnn.w_hh.bias.zero_()
    rnn.requires_grad_(False)
    return rnn


def _functional_rnn(w_xh: torch.Tensor, w_hh: torch.Tensor, b: torch.Tensor):
    """``VanillaRNN`` run with the given tensors as its parameters, so that gradients reach them."""
    with quiet_rng():
        rnn = VanillaRNN(w_xh.shape[1], w_xh.shape[0])
    parameters = {"w_xh.weight": w_xh, "w_xh.bias": b, "w_hh.weight": w_hh, "w_hh.bias": torch.zeros_like(b)}
    return rnn, parameters


class _Step(torch.nn.Module):
    """``VanillaRNN.step`` as a module's forward, for ``torch.func.functional_call``."""

    def __init__(self, rnn: VanillaRNN):
        super().__init__()
        self.rnn = rnn

    def forward(self, x_t: torch.Tensor, h_prev: torch.Tensor) -> torch.Tensor:
        return self.rnn.step(x_t, h_prev)


def reference_step(x_t, h_prev, w_xh, w_hh, b):
    """h_t from course_lib's VanillaRNN.step, differentiable in every argument."""
    rnn, parameters = _functional_rnn(w_xh, w_hh, b)
    parameters = {f"rnn.{name}": value for name, value in parameters.items()}
    return torch.func.functional_call(_Step(rnn), parameters, (x_t, h_prev))


def reference_forward(x, h0, w_xh, w_hh, b):
    """(hidden_states, h_last) from course_lib's VanillaRNN, differentiable in every argument."""
    rnn, parameters = _functional_rnn(w_xh, w_hh, b)
    return torch.func.functional_call(rnn, parameters, (x, h0))


def _weights(gen: torch.Generator, input_size: int, hidden_size: int):
    w_xh = randn(gen, hidden_size, input_size, scale=0.6)
    w_hh = randn(gen, hidden_size, hidden_size, scale=0.6)
    b = randn(gen, hidden_size, scale=0.5)
    return w_xh, w_hh, b


# --------------------------------------------------------------------------- rnn_step


def _step_case(seed: int, batch: int, scale: float, input_size: int = INPUT_SIZE, hidden_size: int = HIDDEN_SIZE):
    def build():
        gen = generator(seed)
        x_t = randn(gen, batch, input_size, scale=scale)
        h_prev = randn(gen, batch, hidden_size, scale=0.8)
        w_xh, w_hh, b = _weights(gen, input_size, hidden_size)
        expected = _reference_rnn(w_xh, w_hh, b).step(x_t, h_prev)
        return (x_t, h_prev, w_xh, w_hh, b), expected

    return build


def step_no_tanh(x_t, h_prev, w_xh, w_hh, b):
    return x_t @ w_xh.T + h_prev @ w_hh.T + b


def step_relu(x_t, h_prev, w_xh, w_hh, b):
    return torch.relu(x_t @ w_xh.T + h_prev @ w_hh.T + b)


def step_sigmoid(x_t, h_prev, w_xh, w_hh, b):
    return torch.sigmoid(x_t @ w_xh.T + h_prev @ w_hh.T + b)


def step_w_hh_not_transposed(x_t, h_prev, w_xh, w_hh, b):
    return torch.tanh(x_t @ w_xh.T + h_prev @ w_hh + b)


def step_no_previous_state(x_t, h_prev, w_xh, w_hh, b):
    return torch.tanh(x_t @ w_xh.T + b)


def step_no_bias(x_t, h_prev, w_xh, w_hh, b):
    return torch.tanh(x_t @ w_xh.T + h_prev @ w_hh.T)


def step_w_xh_not_transposed(x_t, h_prev, w_xh, w_hh, b):
    return torch.tanh(x_t @ w_xh + h_prev @ w_hh.T + b)


def _is_matmul_shape_error(exc: BaseException) -> bool:
    return isinstance(exc, RuntimeError) and "cannot be multiplied" in str(exc)


STEP_MISTAKES = [
    Mistake(
        "no_tanh",
        "the tanh is missing: your step returns the raw sum W_xh x_t + W_hh h_prev + b",
        "Wrap the whole sum in torch.tanh(...). Without the squashing, the hidden state can grow without bound "
        "from step to step (and the RNN is just a linear map).",
        step_no_tanh,
    ),
    Mistake(
        "other_nonlinearity",
        "you used another nonlinearity (ReLU or sigmoid) instead of tanh",
        "The vanilla RNN of this course uses tanh, which keeps every entry of h_t between -1 and 1 and is centred on 0.",
        step_relu,
        variants=(step_sigmoid,),
    ),
    Mistake(
        "w_hh_not_transposed",
        "W_hh is applied untransposed (h_prev @ w_hh)",
        "The weights are stored like nn.Linear, (out_features, in_features). For a batch of row vectors, W_hh h "
        "becomes h_prev @ w_hh.T. w_hh is square, so the untransposed product runs, but it mixes the wrong entries.",
        step_w_hh_not_transposed,
    ),
    Mistake(
        "no_previous_state",
        "h_prev is not used: each step only sees the current input",
        "The recurrence is what gives the RNN a memory: add the term h_prev @ w_hh.T inside the tanh.",
        step_no_previous_state,
    ),
    Mistake(
        "no_bias",
        "the bias b is missing",
        "Add b inside the tanh: tanh(x_t W_xhᵀ + h_prev W_hhᵀ + b). It broadcasts over the batch.",
        step_no_bias,
    ),
    Mistake(
        "w_xh_not_transposed",
        "W_xh is applied untransposed (x_t @ w_xh)",
        "w_xh has shape (hidden_size, input_size) and x_t has (batch, input_size): multiply x_t @ w_xh.T to get "
        "(batch, hidden_size).",
        step_w_xh_not_transposed,
        raises=_is_matmul_shape_error,
    ),
]


def _step_diagnose(value, expected, args) -> str | None:
    if isinstance(value, torch.Tensor) and value.shape == expected.shape and bool((value.abs() > 1).any()):
        return "tanh keeps every entry between -1 and 1, but some of yours are outside that range."
    return None


STEP_SPEC = CheckSpec(
    name="check_rnn_step",
    function="rnn_step",
    arg_names=("x_t", "h_prev", "w_xh", "w_hh", "b"),
    output=TensorOut("(batch, hidden_size)"),
    cases=[
        Case("a batch of 2", _step_case(101, batch=2, scale=1.0)),
        Case("a batch of 5 with larger inputs", _step_case(102, batch=5, scale=3.0)),
        Case("input_size 5, hidden_size 7", _step_case(103, batch=3, scale=1.0, input_size=5, hidden_size=7)),
    ],
    mistakes=STEP_MISTAKES,
    success="Your step computes h_t = tanh(W_xh x_t + W_hh h_{t-1} + b).",
    diagnose=_step_diagnose,
    reference=reference_step,
)


# --------------------------------------------------------------------------- rnn_forward


def _forward_case(seed: int, batch: int, seq: int, input_size: int = INPUT_SIZE, hidden_size: int = HIDDEN_SIZE):
    def build():
        gen = generator(seed)
        x = randn(gen, batch, seq, input_size)
        h0 = randn(gen, batch, hidden_size, scale=0.8)
        w_xh, w_hh, b = _weights(gen, input_size, hidden_size)
        expected = _reference_rnn(w_xh, w_hh, b)(x, h0)
        return (x, h0, w_xh, w_hh, b), expected

    return build


def _good_step(x_t, h_prev, w_xh, w_hh, b):
    return torch.tanh(x_t @ w_xh.T + h_prev @ w_hh.T + b)


def _loop(x, h0, w_xh, w_hh, b, step=_good_step, carry=True, start=None, stack_dim=1):
    h = h0 if start is None else start
    states = []
    for t in range(x.shape[1]):
        new = step(x[:, t], h, w_xh, w_hh, b)
        if carry:
            h = new
        states.append(new)
    return torch.stack(states, dim=stack_dim), states[-1]


def forward_h0_every_step(x, h0, w_xh, w_hh, b):
    return _loop(x, h0, w_xh, w_hh, b, carry=False)


def forward_ignores_h0(x, h0, w_xh, w_hh, b):
    return _loop(x, h0, w_xh, w_hh, b, start=torch.zeros_like(h0))


def forward_only_last_state(x, h0, w_xh, w_hh, b):
    _, h = _loop(x, h0, w_xh, w_hh, b)
    return h, h


def forward_wrong_stack_axis(x, h0, w_xh, w_hh, b):
    return _loop(x, h0, w_xh, w_hh, b, stack_dim=0)


def forward_cat_instead_of_stack(x, h0, w_xh, w_hh, b):
    hidden_states, h = _loop(x, h0, w_xh, w_hh, b)
    return torch.cat(list(hidden_states.unbind(1)), dim=0), h


def _cat_probe(value, args) -> bool:
    x, h0 = args[0], args[1]
    batch, seq, hidden = x.shape[0], x.shape[1], h0.shape[1]
    return (
        isinstance(value, (tuple, list))
        and len(value) == 2
        and isinstance(value[0], torch.Tensor)
        and tuple(value[0].shape) in {(seq * batch, hidden), (batch, seq * hidden)}
    )


def forward_h_last_is_first(x, h0, w_xh, w_hh, b):
    hidden_states, _ = _loop(x, h0, w_xh, w_hh, b)
    return hidden_states, hidden_states[:, 0]


def forward_h_last_is_h0(x, h0, w_xh, w_hh, b):
    hidden_states, _ = _loop(x, h0, w_xh, w_hh, b)
    return hidden_states, h0


def _h_last_probe(value, args) -> bool:
    expected_states, expected_last = _loop(*args)
    return (
        isinstance(value, (tuple, list))
        and len(value) == 2
        and same(value[0], expected_states)
        and not same(value[1], expected_last)
    )


STEP_BUGS = (step_no_tanh, step_relu, step_sigmoid, step_w_hh_not_transposed, step_no_previous_state, step_no_bias)


def forward_with_buggy_step(x, h0, w_xh, w_hh, b):
    return _loop(x, h0, w_xh, w_hh, b, step=step_no_tanh)


def _buggy_step_variants():
    return tuple(
        (lambda step: lambda x, h0, w_xh, w_hh, b: _loop(x, h0, w_xh, w_hh, b, step=step))(step)  # noqa: B023 (bound by the outer call)
        for step in STEP_BUGS[1:]
    )


def forward_loops_over_batch(x, h0, w_xh, w_hh, b):
    h = h0
    states = []
    for x_t in x:  # walks over the batch axis, not over time
        h = _good_step(x_t, h, w_xh, w_hh, b)
        states.append(h)
    return torch.stack(states, dim=1), h


def _loops_over_batch(exc: BaseException) -> bool:
    return isinstance(exc, RuntimeError) and ("cannot be multiplied" in str(exc) or "must match the size" in str(exc))


FORWARD_MISTAKES = [
    Mistake(
        "h0_every_step",
        "every step starts again from h0 instead of from the previous step's state",
        "Carry the state forward: inside the loop write h = rnn_step(x[:, t], h, ...), so that step t receives h_{t-1}. "
        "Only the very first step reads h0.",
        forward_h0_every_step,
    ),
    Mistake(
        "ignores_h0",
        "the loop starts from zeros instead of from the given h0",
        "Start the loop with h = h0: the caller may pass a state carried over from an earlier chunk of the sequence.",
        forward_ignores_h0,
    ),
    Mistake(
        "only_last_state",
        "hidden_states holds only the last state instead of one state per time step",
        "Append every h_t to a list inside the loop and stack the list after it: torch.stack(states, dim=1) gives "
        "(batch, seq, hidden_size).",
        forward_only_last_state,
    ),
    Mistake(
        "wrong_stack_axis",
        "the states are stacked along the wrong axis: (seq, batch, hidden_size)",
        "torch.stack(states) puts the new time axis first (dim=0). Stack along dim=1 so that the shape is "
        "(batch, seq, hidden_size), like the input x.",
        forward_wrong_stack_axis,
    ),
    Mistake(
        "cat_instead_of_stack",
        "the states are joined with torch.cat, which glues them along an existing axis",
        "torch.cat joins along an axis that already exists; torch.stack(states, dim=1) creates the new time axis.",
        forward_cat_instead_of_stack,
        probe=_cat_probe,
    ),
    Mistake(
        "h_last_wrong",
        "hidden_states is right but h_last is not the state after the last step",
        "h_last is the state after the final time step, the same as hidden_states[:, -1].",
        forward_h_last_is_first,
        variants=(forward_h_last_is_h0,),
        probe=_h_last_probe,
    ),
    Mistake(
        "buggy_step",
        "your loop is right but each step computes the wrong thing",
        "Make check_rnn_step pass first: rnn_forward should call your rnn_step (or repeat its formula) at every time step.",
        forward_with_buggy_step,
        variants=_buggy_step_variants(),
    ),
    Mistake(
        "loops_over_batch",
        "the loop walks over the wrong axis",
        "x is (batch, seq, input_size), so `for x_t in x` walks over the batch. The input at time t is x[:, t], "
        "for t in range(x.shape[1]).",
        forward_loops_over_batch,
        raises=_loops_over_batch,
    ),
]


def _through_time(mine: dict, theirs: dict, args) -> str | None:
    """Say from which time step back the gradient with respect to x stops matching the reference's."""
    a, b = mine.get("x"), theirs.get("x")
    if a is None or b is None or a.shape != b.shape or a.dim() != 3:
        return None
    seq = a.shape[1]
    scale = max(1.0, float(b.abs().max()))
    right = [bool(torch.allclose(a[:, t].double(), b[:, t].double(), atol=1e-4 * scale, rtol=1e-3)) for t in range(seq)]
    if all(right):
        return None
    last_wrong = max(t for t in range(seq) if not right[t])
    if all(right[last_wrong + 1 :]) and last_wrong < seq - 1:
        right_steps = seq - 1 - last_wrong
        return (
            f"The gradient reaching x is right for the last {right_steps} step{'s' if right_steps > 1 else ''} but "
            f"wrong from step {last_wrong} back: it does not flow back through time from one state to the one before."
        )
    return None


FORWARD_GRADIENT_HINT = (
    "Backpropagation through time needs every h_t to stay connected to h_{t-1}: no .detach() on the state, no loop "
    "under torch.no_grad(), no state rebuilt from numbers (torch.tensor(h.tolist())). Truncating the gradient is a "
    "choice for long sequences in training code, not part of the RNN itself."
)


FORWARD_SPEC = CheckSpec(
    name="check_rnn_forward",
    function="rnn_forward",
    arg_names=("x", "h0", "w_xh", "w_hh", "b"),
    output=TupleOut((("hidden_states", "(batch, seq, hidden_size)"), ("h_last", "(batch, hidden_size)"))),
    cases=[
        Case("5 time steps", _forward_case(111, batch=2, seq=5)),
        Case("7 time steps, a batch of 1", _forward_case(112, batch=1, seq=7)),
        Case(
            "4 time steps, input_size 5, hidden_size 7", _forward_case(113, batch=3, seq=4, input_size=5, hidden_size=7)
        ),
    ],
    mistakes=FORWARD_MISTAKES,
    success="Your loop carries h from step to step, returns every state, and the gradient flows back through time.",
    reference=reference_forward,
    gradient_hint=FORWARD_GRADIENT_HINT,
    gradient_diagnose=_through_time,
)


__all__ = export_checks(globals())  # check_* functions, one per CheckSpec above
