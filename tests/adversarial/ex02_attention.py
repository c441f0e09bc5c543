"""Exercise 02: softmax, attention and causal_attention, as learners write them."""

import math

import numpy as np
import torch
import torch.nn.functional as F

from . import right, wrong

SOFTMAX, ATTENTION, CAUSAL = "check_softmax", "check_attention", "check_causal_attention"


def _softmax(scores):
    shifted = scores - scores.amax(dim=-1, keepdim=True)
    e = shifted.exp()
    return e / e.sum(dim=-1, keepdim=True)


def _scores(queries, keys):
    return queries @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1])


def _tril(n):
    return torch.tril(torch.ones(n, n, dtype=torch.bool))


# ----------------------------------------------------------------------------------------------- softmax, wrong


@wrong(SOFTMAX, "no_max_subtraction")
def softmax_not_shifted(scores):
    e = scores.exp()
    return e / e.sum(dim=-1, keepdim=True)


@wrong(SOFTMAX, "global_max")
def softmax_global_max(scores):
    e = (scores - scores.max()).exp()  # one maximum for the whole tensor
    return e / e.sum(dim=-1, keepdim=True)


@wrong(SOFTMAX, "wrong_values")
def softmax_over_axis_1(scores):
    e = (scores - scores.amax(dim=1, keepdim=True)).exp()
    return e / e.sum(dim=1, keepdim=True)


@wrong(SOFTMAX, "wrong_axis")
def softmax_over_axis_0(scores):
    e = (scores - scores.amax(dim=0, keepdim=True)).exp()
    return e / e.sum(dim=0, keepdim=True)


@wrong(SOFTMAX, "no_keepdim")
def softmax_sum_without_keepdim(scores):
    e = (scores - scores.amax(dim=-1, keepdim=True)).exp()
    return e / e.sum(dim=-1)


@wrong(SOFTMAX, "no_keepdim")
def softmax_max_without_keepdim(scores):
    e = (scores - scores.max(dim=-1).values).exp()
    return e / e.sum(dim=-1, keepdim=True)


@wrong(SOFTMAX, "sum_over_everything")
def softmax_whole_tensor_sum(scores):
    e = (scores - scores.amax(dim=-1, keepdim=True)).exp()
    return e / e.sum()


@wrong(SOFTMAX, "wrong_values")
def softmax_inf_replaced_by_zero(scores):
    scores = torch.nan_to_num(scores, neginf=0.0)  # "to avoid NaN"
    e = (scores - scores.amax(dim=-1, keepdim=True)).exp()
    return e / e.sum(dim=-1, keepdim=True)


@wrong(SOFTMAX, "wrong_values")
def softmax_log(scores):
    return scores - torch.logsumexp(scores, dim=-1, keepdim=True)  # log_softmax: the log of the weights


@wrong(SOFTMAX, "mutates_input")
def softmax_shift_in_place(scores):
    scores -= scores.amax(dim=-1, keepdim=True).detach()
    e = scores.exp()
    return e / e.sum(dim=-1, keepdim=True)


@wrong(SOFTMAX, "wrong_values")
def softmax_clamped(scores):
    e = scores.clamp(-30, 30).exp()  # "clamping is enough to stop the overflow"
    return e / e.sum(dim=-1, keepdim=True)


@wrong(SOFTMAX, "no_gradient")
def softmax_through_numpy(scores):
    s = scores.detach().numpy()
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return torch.from_numpy(e / e.sum(axis=-1, keepdims=True))


@wrong(SOFTMAX, "not_normalised")
def softmax_divides_by_max(scores):
    e = (scores - scores.amax(dim=-1, keepdim=True)).exp()
    return e / e.amax(dim=-1, keepdim=True)  # normalised by the largest, not the total


# ----------------------------------------------------------------------------------------------- softmax, right


@right(SOFTMAX)
def softmax_logsumexp(scores):
    return torch.exp(scores - torch.logsumexp(scores, dim=-1, keepdim=True))


@right(SOFTMAX)
def softmax_float64_inside(scores):
    s = scores.double()
    e = (s - s.max(dim=-1, keepdim=True).values).exp()
    return (e * e.sum(dim=-1, keepdim=True).reciprocal()).to(scores.dtype)


@right(SOFTMAX)
def softmax_flattened_rows(scores):
    rows = scores.reshape(-1, scores.shape[-1])
    e = torch.exp(rows - rows.max(dim=1, keepdim=True)[0])
    return (e / e.sum(dim=1, keepdim=True)).reshape(scores.shape)


# ----------------------------------------------------------------------------------------------- attention, wrong


@wrong(ATTENTION, "no_scaling")
def attention_not_scaled(queries, keys, values):
    return _softmax(queries @ keys.transpose(-2, -1)) @ values


@wrong(ATTENTION, "divide_by_d_k")
def attention_divided_by_d_k(queries, keys, values):
    return _softmax(queries @ keys.transpose(-2, -1) / queries.shape[-1]) @ values


@wrong(ATTENTION, "scale_by_wrong_size")
def attention_sqrt_of_d_v(queries, keys, values):
    return _softmax(queries @ keys.transpose(-2, -1) / math.sqrt(values.shape[-1])) @ values


@wrong(ATTENTION, "scale_by_wrong_size")
def attention_sqrt_of_seq_k(queries, keys, values):
    return _softmax(queries @ keys.transpose(-2, -1) / math.sqrt(keys.shape[-2])) @ values


@wrong(ATTENTION, "softmax_wrong_axis")
def attention_softmax_over_queries(queries, keys, values):
    scores = _scores(queries, keys)
    e = (scores - scores.amax(dim=-2, keepdim=True)).exp()
    return (e / e.sum(dim=-2, keepdim=True)) @ values


@wrong(ATTENTION, "matmul_shapes")
def attention_transposes_batch_axis(queries, keys, values):
    return _softmax(queries @ keys.transpose(0, 1) / math.sqrt(queries.shape[-1])) @ values


@wrong(ATTENTION, "scaled_after_softmax")
def attention_scaled_after_softmax(queries, keys, values):
    weights = _softmax(queries @ keys.transpose(-2, -1))
    return weights / math.sqrt(queries.shape[-1]) @ values


@wrong(ATTENTION, "wrong_values")
def attention_sqrt_written_in(queries, keys, values):
    return _softmax(queries @ keys.transpose(-2, -1) / 2.0) @ values  # d_k = 4 in the printed example


@wrong(ATTENTION, "returns_weights")
def attention_returns_weights(queries, keys, values):
    return _softmax(_scores(queries, keys))


@wrong(ATTENTION, "wrong_values")
def attention_multiplies_by_sqrt(queries, keys, values):
    return _softmax(queries @ keys.transpose(-2, -1) * math.sqrt(queries.shape[-1])) @ values


@wrong(ATTENTION, "softmax_wrong_axis")
def attention_keys_times_queries(queries, keys, values):
    scores = keys @ queries.transpose(-2, -1) / math.sqrt(queries.shape[-1])  # (batch, seq_k, seq_q)
    return _softmax(scores).transpose(-2, -1) @ values


# ----------------------------------------------------------------------------------------------- attention, right


@right(ATTENTION)
def attention_einsum(queries, keys, values):
    scores = torch.einsum("bqd,bkd->bqk", queries, keys) / queries.shape[-1] ** 0.5
    return torch.einsum("bqk,bkv->bqv", scores.softmax(dim=-1), values)


@right(ATTENTION)
def attention_queries_scaled_first(queries, keys, values):
    queries = queries * queries.shape[-1] ** -0.5
    return torch.bmm(_softmax(torch.bmm(queries, keys.mT)), values)


@right(ATTENTION)
def attention_torch_builtin(queries, keys, values):
    return F.scaled_dot_product_attention(queries, keys, values)


# ----------------------------------------------------------------------------------------------- causal, wrong


@wrong(CAUSAL, "mask_inverted")
def causal_upper_triangle(queries, keys, values):
    scores = _scores(queries, keys)
    allowed = torch.triu(torch.ones(scores.shape[-1], scores.shape[-1], dtype=torch.bool))
    return _softmax(scores.masked_fill(~allowed, float("-inf"))) @ values


@wrong(CAUSAL, "diagonal_blocked")
def causal_strictly_below(queries, keys, values):
    scores = _scores(queries, keys)
    allowed = torch.tril(torch.ones(scores.shape[-1], scores.shape[-1], dtype=torch.bool), diagonal=-1)
    return _softmax(scores.masked_fill(~allowed, float("-inf"))) @ values


@wrong(CAUSAL, "fill_zero")
def causal_filled_with_zero(queries, keys, values):
    scores = _scores(queries, keys)
    return _softmax(scores.masked_fill(~_tril(scores.shape[-1]), 0.0)) @ values


@wrong(CAUSAL, "mask_after_softmax")
def causal_mask_after_softmax(queries, keys, values):
    weights = _softmax(_scores(queries, keys))
    return (weights * _tril(weights.shape[-1])) @ values  # rows no longer sum to 1


@wrong(CAUSAL, "mask_inverted")
def causal_mask_not_negated(queries, keys, values):
    scores = _scores(queries, keys)
    return _softmax(scores.masked_fill(_tril(scores.shape[-1]), float("-inf"))) @ values


@wrong(CAUSAL, "no_scaling")
def causal_not_scaled(queries, keys, values):
    scores = queries @ keys.transpose(-2, -1)
    return _softmax(scores.masked_fill(~_tril(scores.shape[-1]), float("-inf"))) @ values


@wrong(CAUSAL, "wrong_values")
def causal_mask_of_four_written_in(queries, keys, values):
    scores = _scores(queries, keys)
    n = scores.shape[-1]
    allowed = torch.ones(n, n, dtype=torch.bool)
    allowed[:4, :4] = _tril(4)[:n, :n]  # the printed example has 4 positions
    return _softmax(scores.masked_fill(~allowed, float("-inf"))) @ values


@wrong(CAUSAL, "fill_zero")
def causal_int_mask_multiplied(queries, keys, values):
    scores = _scores(queries, keys)
    return _softmax(scores * torch.tril(torch.ones_like(scores))) @ values  # blocked scores become 0, not -inf


@wrong(CAUSAL, "no_mask")
def causal_no_mask(queries, keys, values):
    return _softmax(_scores(queries, keys)) @ values


@wrong(CAUSAL, "no_scaling")
def causal_masked_fill_in_place(queries, keys, values):
    scores = queries @ keys.transpose(-2, -1)
    scores.masked_fill_(~_tril(scores.shape[-1]), float("-inf"))
    return _softmax(scores) @ values  # the scaling forgotten once the mask took the attention


# ----------------------------------------------------------------------------------------------- causal, right


@right(CAUSAL)
def causal_large_negative(queries, keys, values):
    scores = _scores(queries, keys)
    return _softmax(scores.masked_fill(~_tril(scores.shape[-1]), -1e9)) @ values


@right(CAUSAL)
def causal_renormalised_after_softmax(queries, keys, values):
    scores = _scores(queries, keys)
    e = (scores - scores.amax(dim=-1, keepdim=True)).exp() * _tril(scores.shape[-1])
    return e / e.sum(dim=-1, keepdim=True) @ values


@right(CAUSAL)
def causal_torch_where_and_arange(queries, keys, values):
    scores = _scores(queries, keys)
    positions = torch.arange(scores.shape[-1])
    allowed = positions[None, :] <= positions[:, None]
    return torch.where(allowed, scores, torch.tensor(float("-inf"))).softmax(dim=-1) @ values


@right(CAUSAL)
def causal_one_query_at_a_time(queries, keys, values):
    rows = []
    for i in range(queries.shape[1]):
        s = queries[:, i : i + 1] @ keys[:, : i + 1].transpose(-2, -1) / math.sqrt(queries.shape[-1])
        rows.append(_softmax(s) @ values[:, : i + 1])
    return torch.cat(rows, dim=1)


@wrong(SOFTMAX, "wrong_dtype")
def softmax_returns_float64(scores):
    s = scores.double()  # "more precise", and never cast back
    e = (s - s.amax(dim=-1, keepdim=True)).exp()
    return e / e.sum(dim=-1, keepdim=True)


_MASK = []


@wrong(CAUSAL, None)
def causal_mask_built_once(queries, keys, values):
    scores = _scores(queries, keys)
    if not _MASK:  # "build the mask once": the size of the first call is kept for every later one
        _MASK.append(_tril(scores.shape[-1]))
    return _softmax(scores.masked_fill(~_MASK[0], float("-inf"))) @ values


@right(CAUSAL)
def causal_float_mask_compared_with_zero(queries, keys, values):
    scores = _scores(queries, keys)
    mask = torch.tril(torch.ones(scores.shape[-1], scores.shape[-1]))
    return torch.softmax(scores.masked_fill(mask == 0, float("-inf")), dim=-1) @ values


# ----------------------------------------------------------------------------------------------- delegation


@wrong(SOFTMAX, "delegates")
def softmax_delegates_to_course_lib(scores):
    from course_lib.attention import softmax

    return softmax(scores)


@wrong(SOFTMAX, "delegates")
def softmax_delegates_under_another_name(scores):
    from course_lib.attention import softmax as stable_softmax  # an alias is still course_lib's softmax

    return stable_softmax(scores)


@wrong(SOFTMAX, "delegates")
def softmax_delegates_through_the_module(scores):
    import course_lib.attention

    return course_lib.attention.softmax(scores)


def _normalise(scores):
    import course_lib

    return course_lib.softmax(scores, dim=-1)


@wrong(SOFTMAX, "delegates")
def softmax_delegates_inside_a_helper(scores):
    return _normalise(scores)  # the helper calls course_lib's softmax


@wrong(ATTENTION, "delegates")
def attention_delegates_to_course_lib(queries, keys, values):
    from course_lib.attention import scaled_dot_product_attention

    return scaled_dot_product_attention(queries, keys, values)[0]


@right(ATTENTION)
def attention_with_course_lib_softmax(queries, keys, values):
    from course_lib.attention import softmax  # another course_lib helper: allowed

    return softmax(_scores(queries, keys)) @ values


@right(CAUSAL)
def causal_with_course_lib_mask_and_softmax(queries, keys, values):
    from course_lib.attention import causal_mask, softmax

    scores = _scores(queries, keys).masked_fill(~causal_mask(keys.shape[-2]), float("-inf"))
    return softmax(scores) @ values
