"""Exercise 10: apply_rope, rope_attention and online_softmax_step, as learners write them."""

import math

import torch
import torch.nn.functional as F

from . import right, wrong

ROPE, ROPE_ATTENTION, ONLINE = "check_rope", "check_rope_attention", "check_online_softmax_step"


def _angles(seq, d_head, base=10000.0, start=0, exponent=2):
    positions = torch.arange(start, start + seq, dtype=torch.float32)[:, None]
    i = torch.arange(d_head // 2, dtype=torch.float32)
    return positions * base ** (-exponent * i / d_head)


def _turn(x, angles, sign=1.0):
    cos, sin = torch.cos(angles), sign * torch.sin(angles)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)


def _rope(x):
    return _turn(x, _angles(x.shape[-2], x.shape[-1]))


def _rope_attention(q, k, v, rope=_rope):
    scores = rope(q) @ rope(k).transpose(-2, -1) / math.sqrt(q.shape[-1])
    return scores.softmax(dim=-1) @ v


# ----------------------------------------------------------------------------------------------- apply_rope, wrong


@wrong(ROPE, "pairing_halves")
def rope_halves_not_pairs(x):
    half = x.shape[-1] // 2
    a, b = x[..., :half], x[..., half:]  # the GPT-NeoX layout, not the interleaved one asked for
    angles = _angles(x.shape[-2], x.shape[-1])
    return torch.cat([a * angles.cos() - b * angles.sin(), a * angles.sin() + b * angles.cos()], dim=-1)


@wrong(ROPE, "negative_angle")
def rope_turned_the_other_way(x):
    return _turn(x, _angles(x.shape[-2], x.shape[-1]), sign=-1.0)


@wrong(ROPE, "exponent_pair_index")
def rope_exponent_i_not_2i(x):
    return _turn(x, _angles(x.shape[-2], x.shape[-1], exponent=1))


@wrong(ROPE, "positions_from_one")
def rope_positions_from_one(x):
    return _turn(x, _angles(x.shape[-2], x.shape[-1], start=1))


@wrong(ROPE, "wrong_values")
def rope_pairs_not_put_back(x):
    angles = _angles(x.shape[-2], x.shape[-1])
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.cat([a * angles.cos() - b * angles.sin(), a * angles.sin() + b * angles.cos()], dim=-1)


@wrong(ROPE, "wrong_values")
def rope_base_written_wrong(x):
    return _turn(x, _angles(x.shape[-2], x.shape[-1], base=1000.0))


@wrong(ROPE, "wrong_values")
def rope_rates_reversed(x):
    return _turn(x, _angles(x.shape[-2], x.shape[-1]).flip(-1))


@wrong(ROPE, "mutates_input")
def rope_in_place(x):
    angles = _angles(x.shape[-2], x.shape[-1])
    a, b = x[..., 0::2].clone(), x[..., 1::2].clone()
    with torch.no_grad():
        x[..., 0::2] = a * angles.cos() - b * angles.sin()
        x[..., 1::2] = a * angles.sin() + b * angles.cos()
    return x


@wrong(ROPE, "wrong_values")
def rope_position_of_the_batch(x):
    positions = torch.arange(x.shape[0], dtype=torch.float32)[:, None, None]  # counts examples, not tokens
    i = torch.arange(x.shape[-1] // 2, dtype=torch.float32)
    return _turn(x, positions * 10000.0 ** (-2 * i / x.shape[-1]))


@wrong(ROPE, None)
def rope_table_of_eight_positions(x):
    # the angles computed once for the 8 positions the notebook's examples use, then cut to the sequence's length
    table = (
        10000.0 ** (-2 * torch.arange(x.shape[-1] // 2, dtype=torch.float32) / x.shape[-1]) * torch.arange(8.0)[:, None]
    )
    angles = table[: x.shape[-2]]
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * angles.cos() - b * angles.sin(), a * angles.sin() + b * angles.cos()], dim=-1).flatten(-2)


@wrong(ROPE, "sin_cos_swapped")
def rope_cos_and_sin_swapped(x):
    angles = _angles(x.shape[-2], x.shape[-1])
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * angles.sin() - b * angles.cos(), a * angles.cos() + b * angles.sin()], dim=-1).flatten(-2)


# ----------------------------------------------------------------------------------------------- apply_rope, right


@right(ROPE)
def rope_complex_numbers(x):
    pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2).contiguous())
    turns = torch.polar(torch.ones_like(_angles(x.shape[-2], x.shape[-1])), _angles(x.shape[-2], x.shape[-1]))
    return torch.view_as_real(pairs * turns).flatten(-2).to(x.dtype)


@right(ROPE)
def rope_rotation_matrices(x):
    angles = _angles(x.shape[-2], x.shape[-1])
    c, s = angles.cos(), angles.sin()
    rotation = torch.stack([torch.stack([c, -s], -1), torch.stack([s, c], -1)], -2)  # (seq, pairs, 2, 2)
    pairs = x.reshape(*x.shape[:-1], -1, 2)
    return torch.einsum("spij,bspj->bspi", rotation, pairs).reshape(x.shape)


@right(ROPE)
def rope_float64_and_rotate_half(x):
    d = x.double()
    angles = _angles(x.shape[-2], x.shape[-1]).double().repeat_interleave(2, dim=-1)
    rotated = torch.stack([-d[..., 1::2], d[..., 0::2]], dim=-1).flatten(-2)  # (-b, a) in each pair
    return (d * angles.cos() + rotated * angles.sin()).to(x.dtype)


# ----------------------------------------------------------------------------------------------- rope_attention, wrong


@wrong(ROPE_ATTENTION, "values_rotated")
def rope_attention_values_turned_too(queries, keys, values):
    return _rope_attention(queries, keys, _rope(values))


@wrong(ROPE_ATTENTION, "keys_not_rotated")
def rope_attention_queries_only(queries, keys, values):
    scores = _rope(queries) @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1])
    return scores.softmax(dim=-1) @ values


@wrong(ROPE_ATTENTION, "no_scaling")
def rope_attention_not_scaled(queries, keys, values):
    return (_rope(queries) @ _rope(keys).transpose(-2, -1)).softmax(dim=-1) @ values


@wrong(ROPE_ATTENTION, "wrong_values")
def rope_attention_with_causal_mask(queries, keys, values):
    return F.scaled_dot_product_attention(_rope(queries), _rope(keys), values, is_causal=True)


@wrong(ROPE_ATTENTION, "softmax_over_queries")
def rope_attention_softmax_over_queries(queries, keys, values):
    scores = _rope(queries) @ _rope(keys).transpose(-2, -1) / math.sqrt(queries.shape[-1])
    return scores.softmax(dim=-2) @ values


@wrong(ROPE_ATTENTION, "no_rotation")
def rope_attention_without_rope(queries, keys, values):
    return F.scaled_dot_product_attention(queries, keys, values)


@wrong(ROPE_ATTENTION, "wrong_values")
def rope_attention_halves_layout(queries, keys, values):
    def rope(x):
        half = x.shape[-1] // 2
        a, b = x[..., :half], x[..., half:]
        angles = _angles(x.shape[-2], x.shape[-1])
        return torch.cat([a * angles.cos() - b * angles.sin(), a * angles.sin() + b * angles.cos()], dim=-1)

    return _rope_attention(queries, keys, values, rope)


@wrong(ROPE_ATTENTION, "wrong_values")
def rope_attention_keys_turned_backwards(queries, keys, values):
    def backwards(x):
        return _turn(x, _angles(x.shape[-2], x.shape[-1]), sign=-1.0)

    scores = _rope(queries) @ backwards(keys).transpose(-2, -1) / math.sqrt(queries.shape[-1])
    return scores.softmax(dim=-1) @ values


# ----------------------------------------------------------------------------------------------- rope_attention, right


@right(ROPE_ATTENTION)
def rope_attention_builtin(queries, keys, values):
    return F.scaled_dot_product_attention(rope_complex_numbers(queries), rope_complex_numbers(keys), values)


@right(ROPE_ATTENTION)
def rope_attention_einsum(queries, keys, values):
    q, k = rope_rotation_matrices(queries), rope_rotation_matrices(keys)
    weights = torch.einsum("bqd,bkd->bqk", q * queries.shape[-1] ** -0.5, k).softmax(-1)
    return torch.einsum("bqk,bkd->bqd", weights, values)


# ----------------------------------------------------------------------------------------------- online step, wrong


def _step(m, l, o, scores, values):
    new_max = torch.maximum(m, scores.amax(dim=-1))
    rescale = torch.exp(m - new_max)
    weights = torch.exp(scores - new_max[:, None])
    return new_max, rescale * l + weights.sum(-1), rescale[:, None] * o + weights @ values


@wrong(ONLINE, "nothing_rescaled")
def online_no_rescale(running_max, running_sum, output, scores, values):
    new_max = torch.maximum(running_max, scores.amax(dim=-1))
    weights = torch.exp(scores - new_max[:, None])
    return new_max, running_sum + weights.sum(-1), output + weights @ values


@wrong(ONLINE, "inverted_factor")
def online_rescale_sign_flipped(running_max, running_sum, output, scores, values):
    new_max = torch.maximum(running_max, scores.amax(dim=-1))
    rescale = torch.exp(new_max - running_max)
    weights = torch.exp(scores - new_max[:, None])
    return new_max, rescale * running_sum + weights.sum(-1), rescale[:, None] * output + weights @ values


@wrong(ONLINE, "wrong_values")
def online_max_of_the_block_only(running_max, running_sum, output, scores, values):
    new_max = scores.amax(dim=-1)
    rescale = torch.exp(running_max - new_max)
    weights = torch.exp(scores - new_max[:, None])
    return new_max, rescale * running_sum + weights.sum(-1), rescale[:, None] * output + weights @ values


@wrong(ONLINE, "output_not_rescaled")
def online_output_not_rescaled(running_max, running_sum, output, scores, values):
    new_max = torch.maximum(running_max, scores.amax(dim=-1))
    rescale = torch.exp(running_max - new_max)
    weights = torch.exp(scores - new_max[:, None])
    return new_max, rescale * running_sum + weights.sum(-1), output + weights @ values


@wrong(ONLINE, "output_normalised")
def online_output_normalised(running_max, running_sum, output, scores, values):
    m, l, o = _step(running_max, running_sum, output, scores, values)
    return m, l, o / l[:, None]  # the final division done at every step


@wrong(ONLINE, "weights_old_max")
def online_weights_with_the_old_max(running_max, running_sum, output, scores, values):
    new_max = torch.maximum(running_max, scores.amax(dim=-1))
    rescale = torch.exp(running_max - new_max)
    old = torch.where(torch.isinf(running_max), new_max, running_max)
    weights = torch.exp(scores - old[:, None])
    return new_max, rescale * running_sum + weights.sum(-1), rescale[:, None] * output + weights @ values


@wrong(ONLINE, "wrong_values")
def online_block_sum_over_everything(running_max, running_sum, output, scores, values):
    new_max = torch.maximum(running_max, scores.amax(dim=-1))
    rescale = torch.exp(running_max - new_max)
    weights = torch.exp(scores - new_max[:, None])
    return new_max, rescale * running_sum + weights.sum(), rescale[:, None] * output + weights @ values


@wrong(ONLINE, "wrong_values")
def online_sum_without_the_new_block(running_max, running_sum, output, scores, values):
    new_max = torch.maximum(running_max, scores.amax(dim=-1))
    rescale = torch.exp(running_max - new_max)
    weights = torch.exp(scores - new_max[:, None])
    return new_max, rescale * running_sum, rescale[:, None] * output + weights @ values


@wrong(ONLINE, "wrong_values")
def online_sum_rescaled_twice(running_max, running_sum, output, scores, values):
    new_max = torch.maximum(running_max, scores.amax(dim=-1))
    rescale = torch.exp(running_max - new_max)
    weights = torch.exp(scores - new_max[:, None])
    return new_max, rescale * (rescale * running_sum + weights.sum(-1)), rescale[:, None] * output + weights @ values


@wrong(ONLINE, "mutates_input")
def online_output_updated_in_place(running_max, running_sum, output, scores, values):
    new_max = torch.maximum(running_max, scores.amax(dim=-1))
    rescale = torch.exp(running_max - new_max)
    weights = torch.exp(scores - new_max[:, None])
    output.mul_(rescale[:, None]).add_(weights @ values)
    return new_max, rescale * running_sum + weights.sum(-1), output


@wrong(ONLINE, "not_finite")
def online_exponentials_not_shifted(running_max, running_sum, output, scores, values):
    new_max = torch.maximum(running_max, scores.amax(dim=-1))
    rescale = torch.exp(running_max) / torch.exp(new_max)  # nan on the first block: exp(-inf) / exp(m)... and overflow
    weights = torch.exp(scores) / torch.exp(new_max)[:, None]
    return new_max, rescale * running_sum + weights.sum(-1), rescale[:, None] * output + weights @ values


@wrong(ONLINE, "wrong_values")
def online_max_not_carried(running_max, running_sum, output, scores, values):
    _, new_sum, new_output = _step(running_max, running_sum, output, scores, values)
    return running_max, new_sum, new_output  # the state keeps the old max


@wrong(ONLINE, "wrong_values")
def online_first_block_guard_wrong(running_max, running_sum, output, scores, values):
    if torch.isinf(running_max).all():  # "the first block": start from zero instead of -inf
        running_max = torch.zeros_like(running_max)
    return _step(running_max, running_sum, output, scores, values)


# ----------------------------------------------------------------------------------------------- online step, right


@right(ONLINE)
def online_log_space(running_max, running_sum, output, scores, values):
    block_max = scores.amax(dim=-1)
    new_max = torch.maximum(running_max, block_max)
    log_old = torch.where(
        running_sum > 0, running_max + running_sum.clamp_min(1e-38).log(), torch.full_like(new_max, -math.inf)
    )
    log_new = torch.logsumexp(torch.stack([log_old, torch.logsumexp(scores, dim=-1)]), dim=0)
    weights = torch.exp(scores - new_max[:, None])
    rescale = torch.exp(running_max - new_max)
    return new_max, torch.exp(log_new - new_max), rescale[:, None] * output + weights @ values


@right(ONLINE)
def online_first_block_with_where(running_max, running_sum, output, scores, values):
    new_max = torch.maximum(running_max, scores.amax(dim=-1))
    first = torch.isinf(running_max)
    rescale = torch.where(first, torch.zeros_like(new_max), torch.exp(running_max - new_max))
    weights = torch.exp(scores - new_max.unsqueeze(-1))
    new_sum = torch.addcmul(weights.sum(-1), rescale, running_sum)
    return new_max, new_sum, rescale.unsqueeze(-1) * output + torch.einsum("rt,td->rd", weights, values)


@right(ONLINE)
def online_float64_inside(running_max, running_sum, output, scores, values):
    m, l, o = _step(running_max.double(), running_sum.double(), output.double(), scores.double(), values.double())
    return m.to(running_max.dtype), l.to(running_sum.dtype), o.to(output.dtype)


@wrong(ROPE, "wrong_dtype")
def rope_float64(x):
    d = x.double()
    return _turn(d, _angles(x.shape[-2], x.shape[-1]).double())


@wrong(ONLINE, None)
def online_values_times_weights_transposed(running_max, running_sum, output, scores, values):
    new_max = torch.maximum(running_max, scores.amax(dim=-1))
    rescale = torch.exp(running_max - new_max)
    weights = torch.exp(scores - new_max[:, None])
    return new_max, rescale * running_sum + weights.sum(-1), rescale[:, None] * output + (values.T @ weights.T).T.T


@wrong(ONLINE, "delegates")
def online_delegates_to_course_lib(running_max, running_sum, output, scores, values):
    from course_lib.tiled_attention import online_softmax_step

    return online_softmax_step(running_max, running_sum, output, scores, values)


@wrong(ONLINE, "wrong_values")
def online_returns_sum_before_max(running_max, running_sum, output, scores, values):
    new_max, new_sum, new_output = _step(running_max, running_sum, output, scores, values)
    return new_sum, new_max, new_output  # the order of the formula's lines, not of the docstring
