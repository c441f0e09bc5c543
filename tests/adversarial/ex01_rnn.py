"""Exercise 01: rnn_step and rnn_forward, as learners write them."""

import numpy as np
import torch

from . import right, wrong

STEP, FORWARD = "check_rnn_step", "check_rnn_forward"


def _step(x_t, h_prev, w_xh, w_hh, b):
    return torch.tanh(x_t @ w_xh.T + h_prev @ w_hh.T + b)


# ----------------------------------------------------------------------------------------------- rnn_step, wrong


@wrong(STEP, "w_xh_not_transposed")
def step_weights_not_transposed(x_t, h_prev, w_xh, w_hh, b):
    return torch.tanh(x_t @ w_xh + h_prev @ w_hh + b)  # the column-vector formula copied onto rows


@wrong(STEP, "w_hh_not_transposed")
def step_recurrent_not_transposed(x_t, h_prev, w_xh, w_hh, b):
    return torch.tanh(x_t @ w_xh.T + h_prev @ w_hh + b)  # w_hh is square, so no shape error warns


@wrong(STEP, "other_nonlinearity")
def step_sigmoid(x_t, h_prev, w_xh, w_hh, b):
    return torch.sigmoid(x_t @ w_xh.T + h_prev @ w_hh.T + b)


@wrong(STEP, "no_tanh")
def step_no_tanh(x_t, h_prev, w_xh, w_hh, b):
    return x_t @ w_xh.T + h_prev @ w_hh.T + b


@wrong(STEP, "other_nonlinearity")
def step_relu(x_t, h_prev, w_xh, w_hh, b):
    return torch.relu(x_t @ w_xh.T + h_prev @ w_hh.T + b)


@wrong(STEP, "no_bias")
def step_no_bias(x_t, h_prev, w_xh, w_hh, b):
    return torch.tanh(x_t @ w_xh.T + h_prev @ w_hh.T)


@wrong(STEP, "wrong_values")
def step_bias_after_tanh(x_t, h_prev, w_xh, w_hh, b):
    return torch.tanh(x_t @ w_xh.T + h_prev @ w_hh.T) + b


@wrong(STEP, "wrong_values")
def step_tanh_on_input_only(x_t, h_prev, w_xh, w_hh, b):
    return torch.tanh(x_t @ w_xh.T + b) + h_prev @ w_hh.T


@wrong(STEP, "wrong_shape")
def step_batch_of_two_written_in(x_t, h_prev, w_xh, w_hh, b):
    return torch.tanh(x_t[:2] @ w_xh.T + h_prev[:2] @ w_hh.T + b)  # the notebook's example has a batch of 2


@wrong(STEP, "no_gradient")
def step_through_numpy(x_t, h_prev, w_xh, w_hh, b):
    arrays = [t.detach().numpy() for t in (x_t, h_prev, w_xh, w_hh, b)]
    x, h, wx, wh, bias = arrays
    return torch.from_numpy(np.tanh(x @ wx.T + h @ wh.T + bias))


@wrong(STEP, "mutates_input")
def step_into_h_prev(x_t, h_prev, w_xh, w_hh, b):
    with torch.no_grad():  # "saves memory": writes the new state over the old one
        h_prev.copy_(torch.tanh(x_t @ w_xh.T + h_prev @ w_hh.T + b))
    return h_prev


@wrong(STEP, "wrong_values")
def step_product_of_terms(x_t, h_prev, w_xh, w_hh, b):
    return torch.tanh((x_t @ w_xh.T) * (h_prev @ w_hh.T) + b)


# ----------------------------------------------------------------------------------------------- rnn_step, right


@right(STEP)
def step_einsum(x_t, h_prev, w_xh, w_hh, b):
    return torch.tanh(torch.einsum("bi,hi->bh", x_t, w_xh) + torch.einsum("bj,hj->bh", h_prev, w_hh) + b)


@right(STEP)
def step_linear_in_float64(x_t, h_prev, w_xh, w_hh, b):
    pre = torch.nn.functional.linear(x_t.double(), w_xh.double(), b.double())
    pre = pre + torch.nn.functional.linear(h_prev.double(), w_hh.double())
    return torch.tanh(pre).to(x_t.dtype)


@right(STEP)
def step_concatenated_weights(x_t, h_prev, w_xh, w_hh, b):
    both = torch.cat([x_t, h_prev], dim=-1)  # one matrix [W_xh | W_hh] applied to [x | h]
    return torch.tanh(both @ torch.cat([w_xh, w_hh], dim=1).T + b)


# ----------------------------------------------------------------------------------------------- rnn_forward, wrong


@wrong(FORWARD, "wrong_stack_axis")
def forward_stacked_on_axis_0(x, h0, w_xh, w_hh, b):
    h, states = h0, []
    for t in range(x.shape[1]):
        h = _step(x[:, t], h, w_xh, w_hh, b)
        states.append(h)
    return torch.stack(states), h  # (seq, batch, hidden)


@wrong(FORWARD, "h_last_wrong")
def forward_first_state_as_last(x, h0, w_xh, w_hh, b):
    h, states = h0, []
    for t in range(x.shape[1]):
        h = _step(x[:, t], h, w_xh, w_hh, b)
        states.append(h)
    return torch.stack(states, dim=1), states[0]


@wrong(FORWARD, "h0_every_step")
def forward_state_never_updated(x, h0, w_xh, w_hh, b):
    states = []
    for t in range(x.shape[1]):
        h_new = _step(x[:, t], h0, w_xh, w_hh, b)  # always from h0
        states.append(h_new)
    return torch.stack(states, dim=1), states[-1]


@wrong(FORWARD, "loops_over_batch")
def forward_loops_over_batch(x, h0, w_xh, w_hh, b):
    h, states = h0, []
    for x_t in x:  # iterates over the first axis, the batch
        h = _step(x_t, h, w_xh, w_hh, b)
        states.append(h)
    return torch.stack(states, dim=1), h


@wrong(FORWARD, "wrong_values")
def forward_keeps_h0_drops_last(x, h0, w_xh, w_hh, b):
    h, states = h0, [h0]
    for t in range(x.shape[1]):
        h = _step(x[:, t], h, w_xh, w_hh, b)
        states.append(h)
    return torch.stack(states[:-1], dim=1), h


@wrong(FORWARD, "wrong_values")
def forward_one_step_short(x, h0, w_xh, w_hh, b):
    h, states = h0, [h0]
    for t in range(x.shape[1] - 1):
        h = _step(x[:, t], h, w_xh, w_hh, b)
        states.append(h)
    return torch.stack(states, dim=1), h


@wrong(FORWARD, "wrong_values")
def forward_backwards_in_time(x, h0, w_xh, w_hh, b):
    h, states = h0, []
    for t in reversed(range(x.shape[1])):
        h = _step(x[:, t], h, w_xh, w_hh, b)
        states.append(h)
    return torch.stack(states, dim=1), h


@wrong(FORWARD, "h_last_wrong")
def forward_last_indexes_batch(x, h0, w_xh, w_hh, b):
    h, states = h0, []
    for t in range(x.shape[1]):
        h = _step(x[:, t], h, w_xh, w_hh, b)
        states.append(h)
    hidden = torch.stack(states, dim=1)
    return hidden, hidden[-1]  # the last example, not the last step


@wrong(FORWARD, "ignores_h0")
def forward_from_zeros(x, h0, w_xh, w_hh, b):
    h, states = torch.zeros_like(h0), []  # notebook 01 starts from zeros
    for t in range(x.shape[1]):
        h = _step(x[:, t], h, w_xh, w_hh, b)
        states.append(h)
    return torch.stack(states, dim=1), h


@wrong(FORWARD, "wrong_gradient")
def forward_truncated_backprop(x, h0, w_xh, w_hh, b):
    h, states = h0, []
    for t in range(x.shape[1]):
        h = _step(x[:, t], h.detach(), w_xh, w_hh, b)  # "to stop the gradient from exploding"
        states.append(h)
    return torch.stack(states, dim=1), h


@wrong(FORWARD, "wrong_shape")
def forward_five_steps_written_in(x, h0, w_xh, w_hh, b):
    h, states = h0, []
    for t in range(5):  # the notebook's example has 5 steps
        h = _step(x[:, min(t, x.shape[1] - 1)], h, w_xh, w_hh, b)
        states.append(h)
    return torch.stack(states, dim=1), h


# ----------------------------------------------------------------------------------------------- rnn_forward, right


@right(FORWARD)
def forward_preallocated(x, h0, w_xh, w_hh, b):
    batch, seq, _ = x.shape
    hidden = x.new_zeros(batch, seq, h0.shape[-1])
    inputs = x @ w_xh.T + b  # every input term at once, outside the loop
    h = h0
    for t in range(seq):
        h = torch.tanh(inputs[:, t] + h @ w_hh.T)
        hidden[:, t] = h
    return hidden, h


@right(FORWARD)
def forward_recursive(x, h0, w_xh, w_hh, b):
    if x.shape[1] == 0:
        return x.new_zeros(x.shape[0], 0, h0.shape[-1]), h0
    h = _step(x[:, 0], h0, w_xh, w_hh, b)
    rest, last = forward_recursive(x[:, 1:], h, w_xh, w_hh, b)
    return torch.cat([h[:, None], rest], dim=1), last


@right(FORWARD)
def forward_unbind(x, h0, w_xh, w_hh, b):
    states = []
    for x_t in x.unbind(dim=1):
        states.append(_step(x_t, states[-1] if states else h0, w_xh, w_hh, b))
    hidden = torch.stack(states, dim=1)
    return hidden, hidden[:, -1]


@wrong(STEP, "wrong_dtype")
def step_returns_float64(x_t, h_prev, w_xh, w_hh, b):
    return torch.tanh(x_t.double() @ w_xh.double().T + h_prev.double() @ w_hh.double().T + b.double())


@wrong(STEP, None)
def step_bias_reshaped_to_the_printed_size(x_t, h_prev, w_xh, w_hh, b):
    return torch.tanh(x_t @ w_xh.T + h_prev @ w_hh.T + b.view(1, 4))  # hidden_size 4, as printed


@wrong(FORWARD, None)
def forward_states_preallocated_at_the_printed_size(x, h0, w_xh, w_hh, b):
    hidden = torch.zeros(x.shape[0], x.shape[1], 4)  # hidden_size 4, as printed
    h = h0
    for t in range(x.shape[1]):
        h = _step(x[:, t], h, w_xh, w_hh, b)
        hidden[:, t] = h
    return hidden, h
