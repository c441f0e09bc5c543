"""Exercise 06: feed_forward and encoder_block, as learners write them."""

import numpy as np
import torch
import torch.nn.functional as F

from . import right, wrong

FFN, BLOCK = "check_feed_forward", "check_encoder_block"


def _ffn(x, w_1, b_1, w_2, b_2):
    return torch.relu(x @ w_1 + b_1) @ w_2 + b_2


# ----------------------------------------------------------------------------------------------- feed_forward, wrong


@wrong(FFN, "other_activation")
def ffn_gelu(x, w_1, b_1, w_2, b_2):
    return F.gelu(x @ w_1 + b_1) @ w_2 + b_2  # "modern models use GELU"


@wrong(FFN, "wrong_values")
def ffn_relu6(x, w_1, b_1, w_2, b_2):
    return F.relu6(x @ w_1 + b_1) @ w_2 + b_2


@wrong(FFN, "no_activation")
def ffn_no_activation(x, w_1, b_1, w_2, b_2):
    return (x @ w_1 + b_1) @ w_2 + b_2


@wrong(FFN, "activation_on_output")
def ffn_relu_after_both_layers(x, w_1, b_1, w_2, b_2):
    return torch.relu(torch.relu(x @ w_1 + b_1) @ w_2 + b_2)


@wrong(FFN, "missing_bias")
def ffn_no_first_bias(x, w_1, b_1, w_2, b_2):
    return torch.relu(x @ w_1) @ w_2 + b_2


@wrong(FFN, "missing_bias")
def ffn_no_second_bias(x, w_1, b_1, w_2, b_2):
    return torch.relu(x @ w_1 + b_1) @ w_2


@wrong(FFN, None)
def ffn_weights_transposed(x, w_1, b_1, w_2, b_2):
    return torch.relu(x @ w_1.T + b_1) @ w_2.T + b_2  # nn.Linear's layout


@wrong(FFN, "other_activation")
def ffn_sigmoid(x, w_1, b_1, w_2, b_2):
    return torch.sigmoid(x @ w_1 + b_1) @ w_2 + b_2


@wrong(FFN, "wrong_values")
def ffn_leaky_relu(x, w_1, b_1, w_2, b_2):
    return F.leaky_relu(x @ w_1 + b_1, 0.1) @ w_2 + b_2


@wrong(FFN, "no_gradient")
def ffn_through_numpy(x, w_1, b_1, w_2, b_2):
    a = [t.detach().numpy() for t in (x, w_1, b_1, w_2, b_2)]
    hidden = np.maximum(a[0] @ a[1] + a[2], 0)
    return torch.from_numpy(hidden @ a[3] + a[4])


@wrong(FFN, "activation_on_input")
def ffn_relu_on_the_input(x, w_1, b_1, w_2, b_2):
    return (torch.relu(x) @ w_1 + b_1) @ w_2 + b_2


@wrong(FFN, "activation_before_bias")
def ffn_bias_before_relu_swapped(x, w_1, b_1, w_2, b_2):
    return (torch.relu(x @ w_1) + b_1) @ w_2 + b_2  # bias added after the ReLU


@wrong(FFN, "wrong_values")
def ffn_abs(x, w_1, b_1, w_2, b_2):
    return (x @ w_1 + b_1).abs() @ w_2 + b_2


@wrong(FFN, "mutates_input")
def ffn_bias_unsqueezed_in_place(x, w_1, b_1, w_2, b_2):
    b_1.unsqueeze_(0)  # "so that it broadcasts over the tokens", in place by accident
    return torch.relu(x @ w_1 + b_1) @ w_2 + b_2


# ----------------------------------------------------------------------------------------------- feed_forward, right


@right(FFN)
def ffn_linear(x, w_1, b_1, w_2, b_2):
    return F.linear(F.relu(F.linear(x, w_1.T, b_1)), w_2.T, b_2)


@right(FFN)
def ffn_where_and_addmm(x, w_1, b_1, w_2, b_2):
    rows = x.reshape(-1, x.shape[-1])
    hidden = torch.addmm(b_1, rows, w_1)
    hidden = torch.where(hidden > 0, hidden, torch.zeros_like(hidden))
    return torch.addmm(b_2, hidden, w_2).reshape(*x.shape[:-1], w_2.shape[-1])


@right(FFN)
def ffn_half_of_x_plus_abs(x, w_1, b_1, w_2, b_2):
    hidden = x @ w_1 + b_1
    return ((hidden + hidden.abs()) / 2) @ w_2 + b_2


@right(FFN)
def ffn_in_place_relu_on_a_fresh_tensor(x, w_1, b_1, w_2, b_2):
    hidden = x @ w_1
    hidden += b_1
    hidden.relu_()
    return hidden @ w_2 + b_2


# ----------------------------------------------------------------------------------------------- encoder_block, wrong


@wrong(BLOCK, "wrong_values")
def block_norm1_twice(x, self_attention, norm1, norm2, w_1, b_1, w_2, b_2, norm_first=False):
    if norm_first:
        h = x + self_attention(norm1(x))
        return h + _ffn(norm1(h), w_1, b_1, w_2, b_2)
    h = norm1(x + self_attention(x))
    return norm1(h + _ffn(h, w_1, b_1, w_2, b_2))


@wrong(BLOCK, "wrong_values")
def block_pre_ln_ffn_unnormalised(x, self_attention, norm1, norm2, w_1, b_1, w_2, b_2, norm_first=False):
    if norm_first:
        h = x + self_attention(norm1(x))
        return h + _ffn(h, w_1, b_1, w_2, b_2)
    h = norm1(x + self_attention(x))
    return norm2(h + _ffn(h, w_1, b_1, w_2, b_2))


@wrong(BLOCK, "residual_outside_norm")
def block_post_ln_residual_outside(x, self_attention, norm1, norm2, w_1, b_1, w_2, b_2, norm_first=False):
    if norm_first:
        h = x + self_attention(norm1(x))
        return h + _ffn(norm2(h), w_1, b_1, w_2, b_2)
    h = x + norm1(self_attention(x))
    return h + norm2(_ffn(h, w_1, b_1, w_2, b_2))


@wrong(BLOCK, "ffn_reads_input")
def block_parallel_sublayers(x, self_attention, norm1, norm2, w_1, b_1, w_2, b_2, norm_first=False):
    if norm_first:
        return x + self_attention(norm1(x)) + _ffn(norm2(x), w_1, b_1, w_2, b_2)
    h = norm1(x + self_attention(x))
    return norm2(h + _ffn(x, w_1, b_1, w_2, b_2))  # the feed-forward reads x, not h


@wrong(BLOCK, "ignores_norm_first")
def block_norm_first_ignored(x, self_attention, norm1, norm2, w_1, b_1, w_2, b_2, norm_first=False):
    h = norm1(x + self_attention(x))
    return norm2(h + _ffn(h, w_1, b_1, w_2, b_2))


@wrong(BLOCK, "ignores_norm_first")
def block_branches_swapped(x, self_attention, norm1, norm2, w_1, b_1, w_2, b_2, norm_first=False):
    if not norm_first:  # the flag read the wrong way round
        h = x + self_attention(norm1(x))
        return h + _ffn(norm2(h), w_1, b_1, w_2, b_2)
    h = norm1(x + self_attention(x))
    return norm2(h + _ffn(h, w_1, b_1, w_2, b_2))


@wrong(BLOCK, "final_norm")
def block_pre_ln_final_norm(x, self_attention, norm1, norm2, w_1, b_1, w_2, b_2, norm_first=False):
    if norm_first:
        h = x + self_attention(norm1(x))
        h = h + _ffn(norm2(h), w_1, b_1, w_2, b_2)
        return norm2(h)  # "GPT-2 ends with a norm"
    h = norm1(x + self_attention(x))
    return norm2(h + _ffn(h, w_1, b_1, w_2, b_2))


@wrong(BLOCK, "norms_swapped")
def block_norms_swapped(x, self_attention, norm1, norm2, w_1, b_1, w_2, b_2, norm_first=False):
    if norm_first:
        h = x + self_attention(norm2(x))
        return h + _ffn(norm1(h), w_1, b_1, w_2, b_2)
    h = norm2(x + self_attention(x))
    return norm1(h + _ffn(h, w_1, b_1, w_2, b_2))


@wrong(BLOCK, "missing_residual")
def block_no_ffn_residual(x, self_attention, norm1, norm2, w_1, b_1, w_2, b_2, norm_first=False):
    if norm_first:
        h = x + self_attention(norm1(x))
        return _ffn(norm2(h), w_1, b_1, w_2, b_2)
    h = norm1(x + self_attention(x))
    return norm2(_ffn(h, w_1, b_1, w_2, b_2))


@wrong(BLOCK, "second_skip_from_input")
def block_residual_from_x_twice(x, self_attention, norm1, norm2, w_1, b_1, w_2, b_2, norm_first=False):
    if norm_first:
        h = x + self_attention(norm1(x))
        return x + _ffn(norm2(h), w_1, b_1, w_2, b_2)  # the second skip adds x, not h
    h = norm1(x + self_attention(x))
    return norm2(x + _ffn(h, w_1, b_1, w_2, b_2))


@wrong(BLOCK, "wrong_values")
def block_ffn_first(x, self_attention, norm1, norm2, w_1, b_1, w_2, b_2, norm_first=False):
    if norm_first:
        h = x + _ffn(norm1(x), w_1, b_1, w_2, b_2)
        return h + self_attention(norm2(h))
    h = norm1(x + _ffn(x, w_1, b_1, w_2, b_2))
    return norm2(h + self_attention(h))


@wrong(BLOCK, "wrong_values")
def block_gelu_ffn(x, self_attention, norm1, norm2, w_1, b_1, w_2, b_2, norm_first=False):
    def ffn(h):
        return F.gelu(h @ w_1 + b_1) @ w_2 + b_2

    if norm_first:
        h = x + self_attention(norm1(x))
        return h + ffn(norm2(h))
    h = norm1(x + self_attention(x))
    return norm2(h + ffn(h))


# ----------------------------------------------------------------------------------------------- encoder_block, right


def _connection(x, sublayer, norm, norm_first):
    return x + sublayer(norm(x)) if norm_first else norm(x + sublayer(x))


@right(BLOCK)
def block_with_a_connection_helper(x, self_attention, norm1, norm2, w_1, b_1, w_2, b_2, norm_first=False):
    h = _connection(x, self_attention, norm1, norm_first)
    return _connection(h, lambda t: _ffn(t, w_1, b_1, w_2, b_2), norm2, norm_first)


@right(BLOCK)
def block_loop_over_sublayers(x, self_attention, norm1, norm2, w_1, b_1, w_2, b_2, norm_first=False):
    def ffn(t):
        return F.linear(torch.relu(F.linear(t, w_1.T, b_1)), w_2.T, b_2)

    for sublayer, norm in ((self_attention, norm1), (ffn, norm2)):
        x = x + sublayer(norm(x)) if norm_first else norm(x + sublayer(x))
    return x


@wrong(FFN, "wrong_values")
def ffn_threshold_not_zero(x, w_1, b_1, w_2, b_2):
    return F.threshold(x @ w_1 + b_1, 0.1, 0.0) @ w_2 + b_2  # units below 0.1 switched off too


@wrong(FFN, "wrong_values")
def ffn_with_dropout(x, w_1, b_1, w_2, b_2):
    return F.dropout(torch.relu(x @ w_1 + b_1), p=0.1) @ w_2 + b_2  # "the paper has dropout": training=True


@right(FFN)
def ffn_mask_multiplied(x, w_1, b_1, w_2, b_2):
    hidden = x @ w_1 + b_1
    return (hidden * (hidden > 0)) @ w_2 + b_2


@wrong(BLOCK, None)
def block_tokens_flattened_as_printed(x, self_attention, norm1, norm2, w_1, b_1, w_2, b_2, norm_first=False):
    def ffn(h):
        rows = h.reshape(10, 8)  # the printed example: 2 sequences of 5 tokens, d_model 8
        return (torch.relu(rows @ w_1 + b_1) @ w_2 + b_2).reshape(2, 5, 8)

    if norm_first:
        h = x + self_attention(norm1(x))
        return h + ffn(norm2(h))
    h = norm1(x + self_attention(x))
    return norm2(h + ffn(h))
