"""Exercise 09: repeated_batch, the two detectors and ablated_repeat_loss, as learners write them."""

import torch

from course_lib.attention import causal_mask, scaled_dot_product_attention
from course_lib.attention_only import per_token_loss
from course_lib.multihead import merge_heads

from . import right, wrong

BATCH, PREVIOUS, PREFIX, ABLATION = (
    "check_repeated_batch",
    "check_previous_token_score",
    "check_prefix_matching_score",
    "check_ablated_repeat_loss",
)


def _first_half(batch_size, half, vocab_size, seed):
    return torch.randint(vocab_size, (batch_size, half), generator=torch.Generator().manual_seed(seed))


# ----------------------------------------------------------------------------------------------- repeated_batch, wrong


@wrong(BATCH, "second_half_not_a_copy")
def batch_two_independent_halves(batch_size, half, vocab_size, seed):
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(vocab_size, (batch_size, 2 * half), generator=gen)  # nothing repeats


@wrong(BATCH, "interleaved")
def batch_each_token_doubled(batch_size, half, vocab_size, seed):
    return _first_half(batch_size, half, vocab_size, seed).repeat_interleave(2, dim=1)  # 7 7 2 2 9 9 ...


@wrong(BATCH, "vocabulary_one_short")
def batch_vocab_off_by_one(batch_size, half, vocab_size, seed):
    first = torch.randint(vocab_size - 1, (batch_size, half), generator=torch.Generator().manual_seed(seed))
    return torch.cat([first, first], dim=1)


@wrong(BATCH, "vocabulary_one_short")
def batch_ids_from_one(batch_size, half, vocab_size, seed):
    first = torch.randint(1, vocab_size, (batch_size, half), generator=torch.Generator().manual_seed(seed))
    return torch.cat([first, first], dim=1)


@wrong(BATCH, "half_is_whole_length")
def batch_half_only(batch_size, half, vocab_size, seed):
    return _first_half(batch_size, half, vocab_size, seed)


@wrong(BATCH, "wrong_dtype")
def batch_int32(batch_size, half, vocab_size, seed):
    first = _first_half(batch_size, half, vocab_size, seed).int()
    return torch.cat([first, first], dim=1)


@wrong(BATCH, "copied_along_batch")
def batch_repeated_along_the_batch(batch_size, half, vocab_size, seed):
    return _first_half(batch_size, half, vocab_size, seed).repeat(2, 1)


@wrong(BATCH, "second_half_not_a_copy")
def batch_second_half_reversed(batch_size, half, vocab_size, seed):
    first = _first_half(batch_size, half, vocab_size, seed)
    return torch.cat([first, first.flip(1)], dim=1)


_GENERATOR = torch.Generator().manual_seed(0)


@wrong(BATCH, "other_draw")
def batch_generator_made_once(batch_size, half, vocab_size, seed):
    if not getattr(batch_generator_made_once, "seeded", False):  # seeded on the first call only
        _GENERATOR.manual_seed(seed)
        batch_generator_made_once.seeded = True
    first = torch.randint(vocab_size, (batch_size, half), generator=_GENERATOR)
    return torch.cat([first, first], dim=1)


@wrong(BATCH, "other_draw")
def batch_seed_ignored(batch_size, half, vocab_size, seed):
    first = _first_half(batch_size, half, vocab_size, 0)
    return torch.cat([first, first], dim=1)


@wrong(BATCH, "other_draw")
def batch_rows_and_columns_swapped(batch_size, half, vocab_size, seed):
    first = torch.randint(vocab_size, (half, batch_size), generator=torch.Generator().manual_seed(seed)).T
    return torch.cat([first, first], dim=1)


# ----------------------------------------------------------------------------------------------- repeated_batch, right


@right(BATCH)
def batch_repeat_columns(batch_size, half, vocab_size, seed):
    return _first_half(batch_size, half, vocab_size, seed).repeat(1, 2)


@right(BATCH)
def batch_tile(batch_size, half, vocab_size, seed):
    gen = torch.Generator()
    gen.manual_seed(seed)
    return torch.tile(torch.randint(0, vocab_size, (batch_size, half), generator=gen, dtype=torch.long), (1, 2))


@right(BATCH)
def batch_filled_slices(batch_size, half, vocab_size, seed):
    out = torch.empty(batch_size, 2 * half, dtype=torch.int64)
    out[:, :half] = _first_half(batch_size, half, vocab_size, seed)
    out[:, half:] = out[:, :half]
    return out


# ----------------------------------------------------------------------------------------------- previous, wrong


@wrong(PREVIOUS, "above_diagonal")
def previous_diagonal_above(weights):
    return weights.diagonal(offset=1, dim1=-2, dim2=-1).mean(dim=(0, 2))


@wrong(PREVIOUS, "own_token")
def previous_main_diagonal(weights):
    return weights.diagonal(dim1=-2, dim2=-1).mean(dim=(0, 2))


@wrong(PREVIOUS, "counts_query_zero")
def previous_divided_by_seq(weights):
    seq = weights.shape[-1]
    return weights.diagonal(offset=-1, dim1=-2, dim2=-1).sum(dim=(0, 2)) / (weights.shape[0] * seq)


@wrong(PREVIOUS, "wrong_shape")
def previous_mean_over_batch_and_heads(weights):
    return weights.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(0, 1))


@wrong(PREVIOUS, "wrong_shape")
def previous_mean_over_batch_only(weights):
    return weights.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=0)


@wrong(PREVIOUS, "above_diagonal")
def previous_query_and_key_swapped(weights):
    seq = weights.shape[-1]
    t = torch.arange(1, seq)
    return weights[..., t - 1, t].mean(dim=(0, 2))


@wrong(PREVIOUS, "wrong_values")
def previous_summed(weights):
    return weights.diagonal(offset=-1, dim1=-2, dim2=-1).sum(dim=(0, 2))


@wrong(PREVIOUS, "no_gradient")
def previous_python_floats(weights):
    scores = []
    for h in range(weights.shape[1]):
        scores.append(weights[:, h].diagonal(offset=-1, dim1=-2, dim2=-1).mean().item())
    return torch.tensor(scores)  # the graph ends at .item()


@wrong(PREVIOUS, "wrong_values")
def previous_mean_of_the_block_below(weights):
    return weights[..., 1:, :-1].mean(dim=(0, 2, 3))  # the slice is right, but not its diagonal


@wrong(PREVIOUS, "wrong_values")
def previous_first_example_only(weights):
    return weights[0].diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=-1)


# ----------------------------------------------------------------------------------------------- previous, right


@right(PREVIOUS)
def previous_shifted_identity(weights):
    seq = weights.shape[-1]
    picks = torch.diag(torch.ones(seq - 1), diagonal=-1).to(weights.dtype)
    return torch.einsum("bhqk,qk->h", weights, picks) / (weights.shape[0] * (seq - 1))


@right(PREVIOUS)
def previous_sliced_diagonal(weights):
    return weights[..., 1:, :-1].diagonal(dim1=-2, dim2=-1).mean(dim=-1).mean(dim=0)


@right(PREVIOUS)
def previous_loop_of_tensors(weights):
    total = 0
    for t in range(1, weights.shape[-1]):
        total = total + weights[:, :, t, t - 1].mean(dim=0)
    return total / (weights.shape[-1] - 1)


# ----------------------------------------------------------------------------------------------- prefix, wrong


def _prefix(weights, half, shift=1, queries=None):
    queries = torch.arange(half, 2 * half) if queries is None else queries
    return weights[..., queries, queries - half + shift].mean(dim=(0, 2))


@wrong(PREFIX, "earlier_copy_itself")
def prefix_the_copy_itself(weights, half):
    return _prefix(weights, half, shift=0)


@wrong(PREFIX, "wrong_values")
def prefix_token_before_the_copy(weights, half):
    return _prefix(weights, half, shift=-1)


@wrong(PREFIX, "wrong_values")
def prefix_queries_start_one_early(weights, half):
    return _prefix(weights, half, queries=torch.arange(half - 1, 2 * half - 1))


@wrong(PREFIX, "first_half_averaged_too")
def prefix_divided_by_seq(weights, half):
    queries = torch.arange(half, 2 * half)
    return weights[..., queries, queries - half + 1].sum(dim=(0, 2)) / (weights.shape[0] * 2 * half)


@wrong(PREFIX, "wrong_values")
def prefix_drops_the_last_query(weights, half):
    return _prefix(weights, half, queries=torch.arange(half, 2 * half - 1))


@wrong(PREFIX, "boundary_query_counted")
def prefix_whole_diagonal(weights, half):
    return weights.diagonal(offset=-(half - 1), dim1=-2, dim2=-1).mean(dim=(0, 2))  # half + 1 queries


@wrong(PREFIX, "wrong_shape")
def prefix_mean_over_heads_too(weights, half):
    queries = torch.arange(half, 2 * half)
    return weights[..., queries, queries - half + 1].mean(dim=(0, 1))


@wrong(PREFIX, ("wrong_values", None))  # half > 5: wrong values; half < 5: an index past the sequence raises
def prefix_half_written_in(weights, half):
    return _prefix(weights, 5)  # the printed example: half = 5


@wrong(PREFIX, "wrong_values")
def prefix_previous_token_score(weights, half):
    return weights.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(0, 2))  # the other detector pasted


@wrong(PREFIX, "above_diagonal")
def prefix_key_and_query_swapped(weights, half):
    queries = torch.arange(half, 2 * half)
    return weights[..., queries - half + 1, queries].mean(dim=(0, 2))


# ----------------------------------------------------------------------------------------------- prefix, right


@right(PREFIX)
def prefix_trimmed_diagonal(weights, half):
    return weights.diagonal(offset=-(half - 1), dim1=-2, dim2=-1)[..., 1:].mean(dim=(0, 2))


@right(PREFIX)
def prefix_half_from_the_shape(weights, half):
    half = weights.shape[-1] // 2
    block = weights[..., half:, 1 : half + 1]  # queries of the repeat against keys 1 .. half
    return block.diagonal(dim1=-2, dim2=-1).mean(dim=-1).mean(dim=0)


@right(PREFIX)
def prefix_loop(weights, half):
    picks = [weights[:, :, t, t - half + 1] for t in range(half, 2 * half)]
    return torch.stack(picks, dim=-1).mean(dim=-1).mean(dim=0)


# ----------------------------------------------------------------------------------------------- ablation, wrong


def _forward(model, tokens, zero=lambda index, heads: heads, residual=True):
    seq = tokens.shape[1]
    x = model.embed(tokens)
    for index, block in enumerate(model.layers):
        queries, keys, values = block.project(x)
        heads, _ = scaled_dot_product_attention(queries, keys, values, causal_mask(seq))
        heads = zero(index, heads)
        out = block.attention.w_o(merge_heads(heads))
        x = x + out if residual else out
    return model.unembed(x)


def _zero_head(layer, head):
    def zero(index, heads):
        if index != layer:
            return heads
        keep = torch.ones(heads.shape[1])
        keep[head] = 0.0
        return heads * keep[:, None, None]

    return zero


def _repeat_loss(logits, tokens):
    return per_token_loss(logits, tokens)[:, tokens.shape[1] // 2 :].mean()


@wrong(ABLATION, "every_layer")
def ablation_head_in_every_layer(model, tokens, layer, head):
    def zero(index, heads):
        return _zero_head(index, head)(index, heads)

    return _repeat_loss(_forward(model, tokens, zero), tokens)


@wrong(ABLATION, "whole_layer")
def ablation_whole_layer(model, tokens, layer, head):
    def zero(index, heads):
        return heads * 0 if index == layer else heads

    return _repeat_loss(_forward(model, tokens, zero), tokens)


@wrong(ABLATION, "mutates_input")
def ablation_weights_zeroed_in_the_model(model, tokens, layer, head):
    d_head = model.d_model // model.num_heads
    with torch.no_grad():  # switch the head off for good: its slice of W_O
        model.layers[layer].attention.w_o.weight[:, head * d_head : (head + 1) * d_head] = 0
    return _repeat_loss(_forward(model, tokens), tokens)


@wrong(ABLATION, "loss_over_everything")
def ablation_loss_over_every_position(model, tokens, layer, head):
    return per_token_loss(_forward(model, tokens, _zero_head(layer, head)), tokens).mean()


@wrong(ABLATION, "repeat_starts_one_early")
def ablation_columns_from_half_minus_one(model, tokens, layer, head):
    half = tokens.shape[1] // 2
    return per_token_loss(_forward(model, tokens, _zero_head(layer, head)), tokens)[:, half - 1 :].mean()


@wrong(ABLATION, "wrong_values")
def ablation_slice_not_scaled_by_d_head(model, tokens, layer, head):
    def zero(index, heads):
        if index != layer:
            return heads
        merged_zeroed = heads.clone()
        merged_zeroed[:, :, :, head] = 0  # zeroes one feature of every head
        return merged_zeroed

    return _repeat_loss(_forward(model, tokens, zero), tokens)


@wrong(ABLATION, "wrong_values")
def ablation_layer_off_by_one(model, tokens, layer, head):
    return _repeat_loss(_forward(model, tokens, _zero_head((layer + 1) % model.n_layers, head)), tokens)


@wrong(ABLATION, "wrong_values")
def ablation_without_residual(model, tokens, layer, head):
    return _repeat_loss(_forward(model, tokens, _zero_head(layer, head), residual=False), tokens)


@wrong(ABLATION, "scores_zeroed_before_softmax")
def ablation_queries_zeroed(model, tokens, layer, head):
    seq = tokens.shape[1]
    x = model.embed(tokens)
    for index, block in enumerate(model.layers):
        queries, keys, values = block.project(x)
        if index == layer:
            queries = queries.clone()
            queries[:, head] = 0  # uniform attention, not a silent head
        heads, _ = scaled_dot_product_attention(queries, keys, values, causal_mask(seq))
        x = x + block.attention.w_o(merge_heads(heads))
    return _repeat_loss(model.unembed(x), tokens)


@wrong(ABLATION, "wrong_values")
def ablation_no_causal_mask(model, tokens, layer, head):
    x = model.embed(tokens)
    for index, block in enumerate(model.layers):
        heads, _ = scaled_dot_product_attention(*block.project(x))
        x = x + block.attention.w_o(merge_heads(_zero_head(layer, head)(index, heads)))
    return _repeat_loss(model.unembed(x), tokens)


@wrong(ABLATION, "wrong_values")
def ablation_head_index_from_the_end(model, tokens, layer, head):
    return _repeat_loss(_forward(model, tokens, _zero_head(layer, model.num_heads - 1 - head)), tokens)


# ----------------------------------------------------------------------------------------------- ablation, right


@right(ABLATION)
def ablation_w_o_columns_dropped(model, tokens, layer, head):
    d_head = model.d_model // model.num_heads
    seq = tokens.shape[1]
    x = model.embed(tokens)
    for index, block in enumerate(model.layers):
        heads, _ = scaled_dot_product_attention(*block.project(x), causal_mask(seq))
        merged = merge_heads(heads)
        weight = block.attention.w_o.weight
        if index == layer:
            keep = torch.ones(weight.shape[1])
            keep[head * d_head : (head + 1) * d_head] = 0
            weight = weight * keep  # a copy: the model's own weights stay as they are
        x = x + merged @ weight.T
    return _repeat_loss(model.unembed(x), tokens)


@right(ABLATION)
def ablation_heads_dropped_from_the_sum(model, tokens, layer, head):
    d_head = model.d_model // model.num_heads
    seq = tokens.shape[1]
    x = model.embed(tokens)
    for index, block in enumerate(model.layers):
        heads, _ = scaled_dot_product_attention(*block.project(x), causal_mask(seq))
        w_o = block.attention.w_o.weight.T  # (d_model in, d_model out)
        for h in range(model.num_heads):
            if index == layer and h == head:
                continue
            x = x + heads[:, h] @ w_o[h * d_head : (h + 1) * d_head]
    half = seq // 2
    log_probs = model.unembed(x)[:, :-1].log_softmax(-1)
    losses = -log_probs.gather(-1, tokens[:, 1:, None]).squeeze(-1)
    return losses[:, half:].mean()


@right(BATCH)
def batch_global_seed(batch_size, half, vocab_size, seed):
    torch.manual_seed(seed)  # the default generator, seeded the same way, draws the same tokens
    first = torch.randint(vocab_size, (batch_size, half))
    return torch.cat([first, first], dim=1)


@right(PREVIOUS)
def previous_diagonal_of_rows_after_the_first(weights):
    return weights[..., 1:, :].diagonal(dim1=-2, dim2=-1).mean(dim=(0, 2))


@right(ABLATION)
def ablation_under_no_grad(model, tokens, layer, head):
    # a measurement of the model, not a layer: the check has no reference, so no gradient rule applies (docs/exercises.md)
    with torch.no_grad():
        return _repeat_loss(_forward(model, tokens, _zero_head(layer, head)), tokens)


@wrong(ABLATION, None)  # the check's model refuses its own switch: an error that says so
def ablation_delegates_to_the_model(model, tokens, layer, head):
    logits, _ = model(tokens, ablate={(layer, head)})  # course_lib's own ablation: not the exercise
    return _repeat_loss(logits, tokens)


@wrong(PREFIX, None)
def prefix_four_heads_written_in(weights, half):
    queries = torch.arange(half, 2 * half)
    return torch.stack([weights[:, h, queries, queries - half + 1].mean() for h in range(4)])
