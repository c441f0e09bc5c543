"""Exercise 08: next_token_loss, top_k_filter, top_p_filter and kv_cache_step, as learners write them."""

import math

import numpy as np
import torch
import torch.nn.functional as F

from course_lib import causal_mask, scaled_dot_product_attention

from . import right, wrong

LOSS, TOP_K, TOP_P, STEP = "check_next_token_loss", "check_top_k_filter", "check_top_p_filter", "check_kv_cache_step"
NEG_INF = float("-inf")


# ----------------------------------------------------------------------------------------------- loss, wrong


@wrong(LOSS, "no_shift")
def loss_no_shift_at_all(logits, tokens):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens.reshape(-1))


@wrong(LOSS, "shift_backwards")
def loss_shifted_the_wrong_way(logits, tokens):
    return F.cross_entropy(logits[:, 1:].reshape(-1, logits.shape[-1]), tokens[:, :-1].reshape(-1))


@wrong(LOSS, "summed_not_averaged")
def loss_summed(logits, tokens):
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1), reduction="sum")


@wrong(LOSS, "softmax_before_cross_entropy")
def loss_softmax_before_cross_entropy(logits, tokens):
    probs = logits[:, :-1].softmax(dim=-1)
    return F.cross_entropy(probs.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))


@wrong(LOSS, "classes_on_last_axis")
def loss_classes_axis_confused(logits, tokens):
    return F.cross_entropy(logits[:, :-1], tokens[:, 1:])  # (N, C, d) wanted: the vocabulary is not axis 1 here


@wrong(LOSS, "summed_not_averaged")
def loss_sum_over_time_mean_over_batch(logits, tokens):
    per_token = F.cross_entropy(logits[:, :-1].transpose(1, 2), tokens[:, 1:], reduction="none")
    return per_token.sum(dim=1).mean()


@wrong(LOSS, "wrong_values")
def loss_nll_on_raw_logits(logits, tokens):
    return F.nll_loss(logits[:, :-1].reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))


@wrong(LOSS, "no_gradient")
def loss_through_numpy(logits, tokens):
    lg, tk = logits.detach().numpy()[:, :-1], tokens.numpy()[:, 1:]
    log_probs = lg - np.log(np.exp(lg - lg.max(-1, keepdims=True)).sum(-1, keepdims=True)) - lg.max(-1, keepdims=True)
    picked = np.take_along_axis(log_probs, tk[..., None], axis=-1)
    return torch.tensor(-picked.mean())


@wrong(LOSS, "wrong_values")
def loss_in_bits(logits, tokens):
    nats = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))
    return nats / math.log(2)


@wrong(LOSS, "wrong_values")
def loss_divided_by_seq_not_seq_minus_one(logits, tokens):
    total = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1), reduction="sum")
    return total / tokens.numel()


@wrong(LOSS, None)
def loss_vocab_written_in(logits, tokens):
    return F.cross_entropy(logits[:, :-1].reshape(-1, 10), tokens[:, 1:].reshape(-1))  # the printed vocab of 10


@wrong(LOSS, "wrong_values")
def loss_first_sequence_only(logits, tokens):
    return F.cross_entropy(logits[0, :-1], tokens[0, 1:])


@wrong(LOSS, "wrong_values")
def loss_probability_not_log(logits, tokens):
    probs = logits[:, :-1].softmax(dim=-1)
    picked = probs.gather(-1, tokens[:, 1:, None])
    return (1 - picked).mean()


# ----------------------------------------------------------------------------------------------- loss, right


@right(LOSS)
def loss_log_softmax_and_gather(logits, tokens):
    log_probs = logits[:, :-1].log_softmax(dim=-1)
    return -log_probs.gather(-1, tokens[:, 1:].unsqueeze(-1)).mean()


@right(LOSS)
def loss_logsumexp(logits, tokens):
    predictions, targets = logits[:, :-1], tokens[:, 1:]
    picked = predictions.gather(-1, targets[..., None]).squeeze(-1)
    return (torch.logsumexp(predictions, dim=-1) - picked).mean()


@right(LOSS)
def loss_classes_on_axis_1(logits, tokens):
    return F.cross_entropy(logits[:, :-1].transpose(1, 2), tokens[:, 1:])


@right(LOSS)
def loss_float64_loop(logits, tokens):
    total = logits.new_zeros((), dtype=torch.float64)
    count = 0
    for b in range(tokens.shape[0]):
        for t in range(tokens.shape[1] - 1):
            total = total - logits[b, t].double().log_softmax(-1)[tokens[b, t + 1]]
            count += 1
    return (total / count).to(logits.dtype)


# ----------------------------------------------------------------------------------------------- top_k, wrong


@wrong(TOP_K, "k_off_by_one")
def top_k_keeps_one_more(logits, k):
    threshold = logits.topk(k + 1 if k < logits.shape[-1] else k, dim=-1).values[..., -1:]
    return logits.masked_fill(logits < threshold, NEG_INF)


@wrong(TOP_K, "wrong_values")
def top_k_comparison_reversed(logits, k):
    threshold = logits.topk(k, dim=-1).values[..., -1:]
    return logits.masked_fill(logits > threshold, NEG_INF)


@wrong(TOP_K, "fill_zero")
def top_k_fills_zero(logits, k):
    threshold = logits.topk(k, dim=-1).values[..., -1:]
    return logits.masked_fill(logits < threshold, 0.0)


@wrong(TOP_K, "values_only")
def top_k_returns_the_values(logits, k):
    return logits.topk(k, dim=-1).values


@wrong(TOP_K, "wrong_values")
def top_k_kth_from_ascending_sort(logits, k):
    threshold = logits.sort(dim=-1).values[..., k - 1 : k]  # the k-th smallest
    return logits.masked_fill(logits < threshold, NEG_INF)


@wrong(TOP_K, "wrong_axis")
def top_k_over_axis_0(logits, k):
    k0 = min(k, logits.shape[0])
    threshold = logits.topk(k0, dim=0).values[-1:]
    return logits.masked_fill(logits < threshold, NEG_INF)


@wrong(TOP_K, "finite_fill")
def top_k_large_negative(logits, k):
    threshold = logits.topk(k, dim=-1).values[..., -1:]
    return logits.masked_fill(logits < threshold, -1e9)  # "-inf causes NaN"


@wrong(TOP_K, "mutates_input")
def top_k_in_place(logits, k):
    threshold = logits.topk(k, dim=-1).values[..., -1:]
    return logits.masked_fill_(logits < threshold, NEG_INF)


@wrong(TOP_K, "wrong_values")
def top_k_over_the_whole_batch(logits, k):
    threshold = logits.flatten().topk(k).values[-1]
    return logits.masked_fill(logits < threshold, NEG_INF)


@wrong(TOP_K, "filtered_after_softmax")
def top_k_returns_probabilities(logits, k):
    threshold = logits.topk(k, dim=-1).values[..., -1:]
    return logits.masked_fill(logits < threshold, NEG_INF).softmax(dim=-1)


@wrong(TOP_K, "wrong_values")
def top_k_three_written_in(logits, k):
    threshold = logits.topk(min(3, logits.shape[-1]), dim=-1).values[..., -1:]
    return logits.masked_fill(logits < threshold, NEG_INF)


@wrong(TOP_K, "wrong_values")
def top_k_positions_not_scattered_back(logits, k):
    values = logits.sort(dim=-1, descending=True).values
    keep = torch.arange(logits.shape[-1]) < k
    return values.masked_fill(~keep, NEG_INF)  # sorted order, not the vocabulary's


@wrong(TOP_K, "wrong_values")
def top_k_drops_the_largest(logits, k):
    ranked = logits.topk(k + 1 if k < logits.shape[-1] else k, dim=-1).values
    low, high = ranked[..., -1:], ranked[..., :1]
    return logits.masked_fill((logits < low) | (logits >= high), NEG_INF)  # off by one at the top


# ----------------------------------------------------------------------------------------------- top_k, right


@right(TOP_K)
def top_k_scatter(logits, k):
    top = logits.topk(k, dim=-1)
    return torch.full_like(logits, NEG_INF).scatter(-1, top.indices, top.values)


@right(TOP_K)
def top_k_without_grad(logits, k):
    with torch.no_grad():  # sampling never backpropagates
        kth = logits.topk(k, dim=-1).values[..., -1:]
        return torch.where(logits >= kth, logits, torch.full_like(logits, NEG_INF))


@right(TOP_K)
def top_k_plus_log_mask(logits, k):
    kth = logits.topk(k, dim=-1).values[..., -1:]
    return logits + torch.log((logits >= kth).to(logits.dtype))


@right(TOP_K)
def top_k_numpy(logits, k):
    a = logits.detach().numpy()
    kth = np.sort(a, axis=-1)[..., -k][..., None]
    return torch.from_numpy(np.where(a >= kth, a, -np.inf).astype(a.dtype))


# ----------------------------------------------------------------------------------------------- top_p, wrong


def _sorted_probs(logits):
    return torch.softmax(logits, dim=-1).sort(dim=-1, descending=True)


def _scatter_back(keep_sorted, order, logits):
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
    return logits.masked_fill(~keep, NEG_INF)


@wrong(TOP_P, "one_too_few")
def top_p_own_mass_included(logits, p):
    probs, order = _sorted_probs(logits)
    return _scatter_back(probs.cumsum(-1) < p, order, logits)  # drops the token that crosses p


@wrong(TOP_P, "wrong_values")
def top_p_cumsum_of_logits(logits, p):
    values, order = logits.sort(dim=-1, descending=True)
    return _scatter_back(values.cumsum(-1) - values < p, order, logits)


@wrong(TOP_P, "wrong_values")
def top_p_each_token_above_p(logits, p):
    return logits.masked_fill(torch.softmax(logits, -1) < p, NEG_INF)


@wrong(TOP_P, "not_sorted")
def top_p_not_sorted(logits, p):
    probs = torch.softmax(logits, -1)
    return logits.masked_fill(~(probs.cumsum(-1) - probs < p), NEG_INF)  # vocabulary order, not likelihood


@wrong(TOP_P, "least_likely_first")
def top_p_ascending(logits, p):
    probs, order = torch.softmax(logits, dim=-1).sort(dim=-1)
    return _scatter_back(probs.cumsum(-1) - probs < p, order, logits)


@wrong(TOP_P, "left_in_sorted_order")
def top_p_left_in_sorted_order(logits, p):
    probs, order = _sorted_probs(logits)
    keep = probs.cumsum(-1) - probs < p
    return logits.sort(dim=-1, descending=True).values.masked_fill(~keep, NEG_INF)


@wrong(TOP_P, "gathered_back")  # named since the catalogue learned it
def top_p_gathers_instead_of_scattering(logits, p):
    probs, order = _sorted_probs(logits)
    keep_sorted = probs.cumsum(-1) - probs < p
    keep = keep_sorted.gather(-1, order)  # the inverse permutation is needed, not the permutation
    return logits.masked_fill(~keep, NEG_INF)


@wrong(TOP_P, "wrong_values")
def top_p_softmax_over_axis_0(logits, p):
    probs, order = torch.softmax(logits, dim=0).sort(dim=-1, descending=True)
    return _scatter_back(probs.cumsum(-1) - probs < p, order, logits)


@wrong(TOP_P, "fill_zero")
def top_p_fills_zero(logits, p):
    probs, order = _sorted_probs(logits)
    keep = torch.zeros_like(probs, dtype=torch.bool).scatter(-1, order, probs.cumsum(-1) - probs < p)
    return logits.masked_fill(~keep, 0.0)


@wrong(TOP_P, "wrong_values")
def top_p_p_written_in(logits, p):
    probs, order = _sorted_probs(logits)
    return _scatter_back(probs.cumsum(-1) - probs < 0.9, order, logits)


@wrong(TOP_P, "filtered_after_softmax")
def top_p_returns_probabilities(logits, p):
    probs, order = _sorted_probs(logits)
    kept = _scatter_back(probs.cumsum(-1) - probs < p, order, logits)
    return kept.softmax(dim=-1)


@wrong(TOP_P, "one_too_many")
def top_p_keeps_one_more(logits, p):
    probs, order = _sorted_probs(logits)
    before = probs.cumsum(-1) - probs
    keep = torch.cat([torch.ones_like(before[..., :1], dtype=torch.bool), (before < p)[..., :-1]], dim=-1)
    return _scatter_back(keep, order, logits)


# ----------------------------------------------------------------------------------------------- top_p, right


@right(TOP_P)
def top_p_row_by_row(logits, p):
    rows = logits.reshape(-1, logits.shape[-1])
    out = torch.full_like(rows, NEG_INF)
    for r, row in enumerate(rows):
        mass = 0.0
        for index in torch.softmax(row.double(), -1).argsort(descending=True).tolist():
            if mass >= p:
                break
            out[r, index] = row[index]
            mass += float(torch.softmax(row.double(), -1)[index])
    return out.reshape(logits.shape)


@right(TOP_P)
def top_p_count_with_searchsorted(logits, p):
    probs, order = _sorted_probs(logits)
    mass = probs.cumsum(-1)
    count = torch.searchsorted(mass.contiguous(), torch.full_like(mass[..., :1], p)) + 1  # tokens up to crossing p
    keep_sorted = torch.arange(logits.shape[-1]) < count.clamp(max=logits.shape[-1])
    return _scatter_back(keep_sorted, order, logits)


@right(TOP_P)
def top_p_without_grad_and_where(logits, p):
    with torch.no_grad():
        probs, order = _sorted_probs(logits)
        keep_sorted = (probs.cumsum(-1) - probs) < p
        keep = torch.empty_like(keep_sorted).scatter_(-1, order, keep_sorted)
        return torch.where(keep, logits, torch.tensor(NEG_INF))


# ----------------------------------------------------------------------------------------------- kv step, wrong


def _attend(lm, x, cache_keys, cache_values, mask_rows=None):
    n_cached, n_new = cache_keys.shape[1], x.shape[1]
    queries, new_keys, new_values = lm.project(x)
    keys = torch.cat([cache_keys, new_keys], dim=1)
    values = torch.cat([cache_values, new_values], dim=1)
    mask = causal_mask(n_cached + n_new)[n_cached:] if mask_rows is None else mask_rows
    attended, _ = scaled_dot_product_attention(queries, keys, values, mask)
    return lm.readout(x, attended), keys, values


def _positions(cache_keys, new_tokens):
    n_cached = cache_keys.shape[1]
    return torch.arange(n_cached, n_cached + new_tokens.shape[1])


@wrong(STEP, "offset_not_advanced")
def step_positions_restart_at_zero(lm, cache_keys, cache_values, new_tokens):
    x = lm.embed(new_tokens, torch.arange(new_tokens.shape[1]))
    return _attend(lm, x, cache_keys, cache_values)


@wrong(STEP, "returns_old_cache")
def step_returns_the_old_cache(lm, cache_keys, cache_values, new_tokens):
    logits, _, _ = _attend(lm, lm.embed(new_tokens, _positions(cache_keys, new_tokens)), cache_keys, cache_values)
    return logits, cache_keys, cache_values


@wrong(STEP, "no_mask")
def step_without_mask(lm, cache_keys, cache_values, new_tokens):
    x = lm.embed(new_tokens, _positions(cache_keys, new_tokens))
    total = cache_keys.shape[1] + new_tokens.shape[1]
    return _attend(lm, x, cache_keys, cache_values, torch.ones(new_tokens.shape[1], total, dtype=torch.bool))


@wrong(STEP, None)
def step_mask_of_the_new_tokens_only(lm, cache_keys, cache_values, new_tokens):
    x = lm.embed(new_tokens, _positions(cache_keys, new_tokens))
    return _attend(lm, x, cache_keys, cache_values, causal_mask(new_tokens.shape[1]))


@wrong(STEP, "new_before_cached")
def step_new_keys_before_the_cache(lm, cache_keys, cache_values, new_tokens):
    x = lm.embed(new_tokens, _positions(cache_keys, new_tokens))
    queries, new_keys, new_values = lm.project(x)
    keys = torch.cat([new_keys, cache_keys], dim=1)
    values = torch.cat([new_values, cache_values], dim=1)
    mask = causal_mask(keys.shape[1])[cache_keys.shape[1] :]
    attended, _ = scaled_dot_product_attention(queries, keys, values, mask)
    return lm.readout(x, attended), keys, values


@wrong(STEP, "prefix_blocked")
def step_ignores_the_cache(lm, cache_keys, cache_values, new_tokens):
    x = lm.embed(new_tokens, _positions(cache_keys, new_tokens))
    queries, new_keys, new_values = lm.project(x)
    attended, _ = scaled_dot_product_attention(queries, new_keys, new_values, causal_mask(new_tokens.shape[1]))
    return (
        lm.readout(x, attended),
        torch.cat([cache_keys, new_keys], dim=1),
        torch.cat([cache_values, new_values], dim=1),
    )


@wrong(STEP, "cache_kept_between_prompts")
def step_cache_kept_on_the_model(lm, cache_keys, cache_values, new_tokens):
    stored = getattr(lm, "_my_cache", None)  # "the model remembers what it has seen"
    if stored is not None and stored[0].shape[0] == cache_keys.shape[0]:
        cache_keys, cache_values = stored
    x = lm.embed(new_tokens, torch.arange(cache_keys.shape[1], cache_keys.shape[1] + new_tokens.shape[1]))
    logits, keys, values = _attend(lm, x, cache_keys, cache_values)
    lm._my_cache = (keys.detach(), values.detach())
    return logits, keys, values


@wrong(STEP, "mask_top_left")
def step_first_rows_of_the_mask(lm, cache_keys, cache_values, new_tokens):
    x = lm.embed(new_tokens, _positions(cache_keys, new_tokens))
    total = cache_keys.shape[1] + new_tokens.shape[1]
    return _attend(lm, x, cache_keys, cache_values, causal_mask(total)[: new_tokens.shape[1]])


@wrong(STEP, "wrong_shape")
def step_returns_logits_of_the_last_token_only(lm, cache_keys, cache_values, new_tokens):
    logits, keys, values = _attend(
        lm, lm.embed(new_tokens, _positions(cache_keys, new_tokens)), cache_keys, cache_values
    )
    return logits[:, -1:], keys, values


@wrong(STEP, "wrong_values")
def step_appends_values_to_keys(lm, cache_keys, cache_values, new_tokens):
    logits, keys, values = _attend(
        lm, lm.embed(new_tokens, _positions(cache_keys, new_tokens)), cache_keys, cache_values
    )
    return logits, keys, torch.cat([cache_values, keys[:, cache_keys.shape[1] :]], dim=1)  # copy-paste slip


@wrong(STEP, None)
def step_cache_along_batch(lm, cache_keys, cache_values, new_tokens):
    x = lm.embed(new_tokens, _positions(cache_keys, new_tokens))
    queries, new_keys, new_values = lm.project(x)
    keys = torch.cat([cache_keys, new_keys], dim=0)
    values = torch.cat([cache_values, new_values], dim=0)
    attended, _ = scaled_dot_product_attention(queries, new_keys, new_values, causal_mask(new_tokens.shape[1]))
    return lm.readout(x, attended), keys, values


# ----------------------------------------------------------------------------------------------- kv step, right


@right(STEP)
def step_one_token_at_a_time(lm, cache_keys, cache_values, new_tokens):
    keys, values, all_logits = cache_keys, cache_values, []
    for i in range(new_tokens.shape[1]):
        n = keys.shape[1]
        x = lm.embed(new_tokens[:, i : i + 1], torch.arange(n, n + 1))
        queries, k, v = lm.project(x)
        keys, values = torch.cat([keys, k], dim=1), torch.cat([values, v], dim=1)
        attended, _ = scaled_dot_product_attention(queries, keys, values)  # one query sees every key so far
        all_logits.append(lm.readout(x, attended))
    return torch.cat(all_logits, dim=1), keys, values


@right(STEP)
def step_mask_from_arange(lm, cache_keys, cache_values, new_tokens):
    n_cached, n_new = cache_keys.shape[1], new_tokens.shape[1]
    query_positions = torch.arange(n_cached, n_cached + n_new)[:, None]
    key_positions = torch.arange(n_cached + n_new)[None, :]
    x = lm.embed(new_tokens, query_positions[:, 0])
    return _attend(lm, x, cache_keys, cache_values, key_positions <= query_positions)


@right(STEP)
def step_tril_with_offset(lm, cache_keys, cache_values, new_tokens):
    n_cached, n_new = cache_keys.shape[1], new_tokens.shape[1]
    mask = torch.ones(n_new, n_cached + n_new, dtype=torch.bool).tril(diagonal=n_cached)
    x = lm.embed(new_tokens, _positions(cache_keys, new_tokens))
    return _attend(lm, x, cache_keys, cache_values, mask)


@wrong(LOSS, "wrong_values")
def loss_label_smoothing(logits, tokens):
    return F.cross_entropy(logits[:, :-1].transpose(1, 2), tokens[:, 1:], label_smoothing=0.1)


@wrong(LOSS, "wrong_values")
def loss_token_zero_as_padding(logits, tokens):
    return F.cross_entropy(logits[:, :-1].transpose(1, 2), tokens[:, 1:], ignore_index=0)  # "0 is padding"


@wrong(LOSS, "wrong_dtype")
def loss_float64(logits, tokens):
    return F.cross_entropy(logits[:, :-1].double().transpose(1, 2), tokens[:, 1:])


@wrong(TOP_P, "wrong_values")
def top_p_with_a_temperature(logits, p):
    probs, order = torch.softmax(logits / 0.7, dim=-1).sort(dim=-1, descending=True)  # sampling's temperature
    return _scatter_back(probs.cumsum(-1) - probs < p, order, logits)


@right(TOP_P)
def top_p_rolled_mask(logits, p):
    probs, order = _sorted_probs(logits)
    keep = torch.roll(probs.cumsum(-1) < p, 1, dims=-1)  # shift right: the mass *before* each token
    keep[..., 0] = True
    return _scatter_back(keep, order, logits)


@right(TOP_K)
def top_k_min_of_the_top(logits, k):
    smallest_kept = logits.topk(k, dim=-1).values.min(dim=-1, keepdim=True).values
    return torch.where(logits < smallest_kept, torch.full_like(logits, NEG_INF), logits)


@right(STEP)
def step_cache_detached(lm, cache_keys, cache_values, new_tokens):
    # generation never backpropagates: the check has no reference, so no gradient rule applies (docs/exercises.md)
    logits, keys, values = _attend(
        lm, lm.embed(new_tokens, _positions(cache_keys, new_tokens)), cache_keys, cache_values
    )
    return logits, keys.detach(), values.detach()


@wrong(TOP_K, "delegates")
def top_k_delegates_to_course_lib(logits, k):
    from course_lib.sampling import top_k_filter

    return top_k_filter(logits, k)


@wrong(STEP, None)
def step_cache_shaped_as_printed(lm, cache_keys, cache_values, new_tokens):
    x = lm.embed(new_tokens, _positions(cache_keys, new_tokens))
    queries, new_keys, new_values = lm.project(x)
    keys = torch.cat([cache_keys.reshape(2, -1, 8), new_keys], dim=1)  # batch 2, d_model 8 as printed
    values = torch.cat([cache_values.reshape(2, -1, 8), new_values], dim=1)
    mask = causal_mask(keys.shape[1])[cache_keys.shape[1] :]
    attended, _ = scaled_dot_product_attention(queries, keys, values, mask)
    return lm.readout(x, attended), keys, values


@right(LOSS)
def loss_mean_of_sequence_means(logits, tokens):
    per_token = F.cross_entropy(logits[:, :-1].transpose(1, 2), tokens[:, 1:], reduction="none")  # (batch, seq - 1)
    return per_token.mean(dim=1).mean()  # every sequence has seq - 1 predictions, so this is the overall mean
