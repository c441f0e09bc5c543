"""Exercise 03: split_heads, merge_heads and multi_head_attention, as learners write them."""

import math

import torch

from course_lib import scaled_dot_product_attention

from . import right, wrong

SPLIT, MERGE, MHA = "check_split_heads", "check_merge_heads", "check_multi_head_attention"


def _split(x, num_heads):
    batch, seq, d_model = x.shape
    return x.reshape(batch, seq, num_heads, d_model // num_heads).transpose(1, 2)


def _merge(x):
    batch, num_heads, seq, d_head = x.shape
    return x.transpose(1, 2).reshape(batch, seq, num_heads * d_head)


def _attend(q, k, v):
    return scaled_dot_product_attention(q, k, v)[0]


# ----------------------------------------------------------------------------------------------- split_heads, wrong


@wrong(SPLIT, "reshape_without_transpose")
def split_reshape_only(x, num_heads):
    batch, seq, d_model = x.shape
    return x.reshape(batch, num_heads, seq, d_model // num_heads)  # right shape, numbers from the wrong places


@wrong(SPLIT, "strided_heads")
def split_heads_last_then_permute(x, num_heads):
    batch, seq, d_model = x.shape
    return x.reshape(batch, seq, d_model // num_heads, num_heads).permute(0, 3, 1, 2)  # strided features


@wrong(SPLIT, "wrong_shape")
def split_wrong_transpose(x, num_heads):
    batch, seq, d_model = x.shape
    return x.reshape(batch, seq, num_heads, d_model // num_heads).transpose(2, 3)


@wrong(SPLIT, None)
def split_d_head_written_in(x, num_heads):
    batch, seq, d_model = x.shape
    return x.reshape(batch, seq, -1, 4).transpose(1, 2)  # d_head = 4 in the printed example


@wrong(SPLIT, "wrong_shape")
def split_num_heads_as_d_head(x, num_heads):
    batch, seq, d_model = x.shape
    return x.reshape(batch, seq, d_model // num_heads, num_heads).transpose(1, 2)


@wrong(SPLIT, None)
def split_chunks_the_sequence(x, num_heads):
    return torch.stack(x.chunk(num_heads, dim=1), dim=1)


@wrong(SPLIT, "wrong_shape")
def split_permute_to_seq_first(x, num_heads):
    batch, seq, d_model = x.shape
    return x.reshape(batch, seq, num_heads, d_model // num_heads).permute(2, 0, 1, 3)  # (heads, batch, seq, d_head)


# ----------------------------------------------------------------------------------------------- split_heads, right


@right(SPLIT)
def split_chunk_features(x, num_heads):
    return torch.stack(x.chunk(num_heads, dim=-1), dim=1)


@right(SPLIT)
def split_unflatten_permute(x, num_heads):
    return x.unflatten(-1, (num_heads, -1)).permute(0, 2, 1, 3).contiguous()


@right(SPLIT)
def split_through_feature_major(x, num_heads):
    batch, seq, d_model = x.shape
    return (
        x.transpose(1, 2).reshape(batch, num_heads, d_model // num_heads, seq).transpose(-2, -1)
    )  # features first, cut, back


@right(SPLIT)
def split_slices_in_a_loop(x, num_heads):
    d_head = x.shape[-1] // num_heads
    return torch.stack([x[..., h * d_head : (h + 1) * d_head] for h in range(num_heads)], dim=1)


# ----------------------------------------------------------------------------------------------- merge_heads, wrong


@wrong(MERGE, "no_transpose_back")
def merge_reshape_only(x):
    batch, num_heads, seq, d_head = x.shape
    return x.reshape(batch, seq, num_heads * d_head)


@wrong(MERGE, "interleaved")
def merge_interleaved(x):
    batch, num_heads, seq, d_head = x.shape
    return x.permute(0, 2, 3, 1).reshape(batch, seq, num_heads * d_head)  # feature-major: heads interleaved


@wrong(MERGE, None)
def merge_view_of_transposed(x):
    batch, num_heads, seq, d_head = x.shape
    return x.transpose(1, 2).view(batch, seq, num_heads * d_head)  # view of a non-contiguous tensor


@wrong(MERGE, "averaged_heads")
def merge_mean_of_heads(x):
    return x.mean(dim=1)


@wrong(MERGE, "wrong_shape")
def merge_concatenates_positions(x):
    return torch.cat(x.unbind(dim=1), dim=1)  # heads one after the other along seq


@wrong(MERGE, "averaged_heads")
def merge_sum_of_heads(x):
    return x.sum(dim=1)


@wrong(MERGE, "wrong_values")
def merge_heads_reversed(x):
    return torch.cat(x.flip(1).unbind(dim=1), dim=-1)


# ----------------------------------------------------------------------------------------------- merge_heads, right


@right(MERGE)
def merge_cat_unbind(x):
    return torch.cat(x.unbind(dim=1), dim=-1)


@right(MERGE)
def merge_permute_flatten(x):
    return x.permute(0, 2, 1, 3).flatten(start_dim=2)


@right(MERGE)
def merge_einsum_into_zeros(x):
    batch, num_heads, seq, d_head = x.shape
    identity = torch.eye(num_heads * d_head, dtype=x.dtype).reshape(num_heads, d_head, num_heads * d_head)
    return torch.einsum("bhsd,hdf->bsf", x, identity)


# ----------------------------------------------------------------------------------------------- MHA, wrong


@wrong(MHA, "weights_transposed")
def mha_weights_transposed(x, w_q, w_k, w_v, w_o, num_heads):
    q, k, v = (_split(x @ w.T, num_heads) for w in (w_q, w_k, w_v))  # exercise 01's layout
    return _merge(_attend(q, k, v)) @ w_o.T


@wrong(MHA, "scale_by_d_model")
def mha_scaled_by_d_model(x, w_q, w_k, w_v, w_o, num_heads):
    q, k, v = (_split(x @ w, num_heads) for w in (w_q, w_k, w_v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(x.shape[-1])
    return _merge(scores.softmax(dim=-1) @ v) @ w_o


@wrong(MHA, "no_output_projection")
def mha_no_output_projection(x, w_q, w_k, w_v, w_o, num_heads):
    q, k, v = (_split(x @ w, num_heads) for w in (w_q, w_k, w_v))
    return _merge(_attend(q, k, v))


@wrong(MHA, "wrong_values")
def mha_keys_and_values_swapped(x, w_q, w_k, w_v, w_o, num_heads):
    q, k, v = (_split(x @ w, num_heads) for w in (w_q, w_v, w_k))
    return _merge(_attend(q, k, v)) @ w_o


@wrong(MHA, "split_without_transpose")
def mha_split_by_reshape_only(x, w_q, w_k, w_v, w_o, num_heads):
    batch, seq, d_model = x.shape
    q, k, v = (
        (x @ w).reshape(batch, num_heads, seq, d_model // num_heads) for w in (w_q, w_k, w_v)
    )  # the heads hold the wrong numbers
    return _merge(_attend(q, k, v)) @ w_o


@wrong(MHA, "single_head")
def mha_one_big_head(x, w_q, w_k, w_v, w_o, num_heads):
    return _attend(x @ w_q, x @ w_k, x @ w_v) @ w_o  # num_heads ignored


@wrong(MHA, "merge_without_transpose")
def mha_merge_without_transpose(x, w_q, w_k, w_v, w_o, num_heads):
    q, k, v = (_split(x @ w, num_heads) for w in (w_q, w_k, w_v))
    heads = _attend(q, k, v)
    return heads.reshape(x.shape) @ w_o


@wrong(MHA, None)
def mha_three_heads_written_in(x, w_q, w_k, w_v, w_o, num_heads):
    q, k, v = (_split(x @ w, 3) for w in (w_q, w_k, w_v))  # the printed example has 3 heads
    return _merge(_attend(q, k, v)) @ w_o


@wrong(MHA, "wrong_values")
def mha_attends_over_heads(x, w_q, w_k, w_v, w_o, num_heads):
    batch, seq, d_model = x.shape
    q, k, v = ((x @ w).reshape(batch, seq, num_heads, -1) for w in (w_q, w_k, w_v))  # no transpose: heads as seq
    return _attend(q, k, v).reshape(batch, seq, d_model) @ w_o


@wrong(MHA, "wrong_values")
def mha_softmax_over_queries(x, w_q, w_k, w_v, w_o, num_heads):
    q, k, v = (_split(x @ w, num_heads) for w in (w_q, w_k, w_v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    return _merge(scores.softmax(dim=-2) @ v) @ w_o


# ----------------------------------------------------------------------------------------------- MHA, right


@right(MHA)
def mha_loop_over_weight_columns(x, w_q, w_k, w_v, w_o, num_heads):
    d_head = x.shape[-1] // num_heads
    heads = []
    for h in range(num_heads):
        cols = slice(h * d_head, (h + 1) * d_head)
        heads.append(_attend(x @ w_q[:, cols], x @ w_k[:, cols], x @ w_v[:, cols]))
    return torch.cat(heads, dim=-1) @ w_o


@right(MHA)
def mha_einsum(x, w_q, w_k, w_v, w_o, num_heads):
    d_model = x.shape[-1]
    d_head = d_model // num_heads
    q, k, v = (torch.einsum("bsd,dhe->bhse", x, w.reshape(d_model, num_heads, d_head)) for w in (w_q, w_k, w_v))
    weights = torch.einsum("bhqe,bhke->bhqk", q, k).div(math.sqrt(d_head)).softmax(-1)
    heads = torch.einsum("bhqk,bhke->bhqe", weights, v)
    return torch.einsum("bhqe,hef->bqf", heads, w_o.reshape(num_heads, d_head, d_model))


@right(MHA)
def mha_fused_projection(x, w_q, w_k, w_v, w_o, num_heads):
    q, k, v = (x @ torch.cat([w_q, w_k, w_v], dim=1)).chunk(3, dim=-1)
    heads = _attend(_split(q, num_heads), _split(k, num_heads), _split(v, num_heads))
    return _merge(heads) @ w_o
