"""Checks for exercise 08: the language model's loss, top-k and top-p filtering, and one step with a KV cache.

Learner signatures:

    next_token_loss(logits, tokens) -> () scalar
        mean over batch and t of −log softmax(logits[:, t])[tokens[:, t + 1]]         (targets shifted by one)
    top_k_filter(logits, k) -> (..., vocab)          the k largest logits kept, the others −inf
    top_p_filter(logits, p) -> (..., vocab)          the smallest set of most likely tokens with mass ≥ p kept
    kv_cache_step(lm, cache_keys, cache_values, new_tokens) -> (logits, keys, values)
        new tokens at positions n_cached .. n_cached + n_new − 1; their queries see every cached key and the new
        keys up to their own position; the returned keys and values are the cache extended by the new positions

References: ``course_lib.decoder.next_token_loss``, ``course_lib.sampling.top_k_filter`` / ``top_p_filter``, and
for the cache step a one-block, one-head ``course_lib.DecoderLM`` run on the whole sequence without a cache (so the
check asserts "cached = uncached"). Filters are judged on logits: a removed token must be ``-inf``.
"""

from __future__ import annotations

import math
import types

import torch
import torch.nn.functional as F

from .._standins import CachedLM
from ..attention import causal_mask, scaled_dot_product_attention
from ..decoder import DecoderLM
from ..decoder import next_token_loss as reference_loss
from ..sampling import top_k_filter as reference_top_k
from ..sampling import top_p_filter as reference_top_p
from .core import export_checks
from .judging import same
from .spec import Case, CheckSpec, Mistake, TensorOut, TupleOut, generator, quiet_rng, randn

NEG_INF = float("-inf")

# ---------------------------------------------------------------------------------------------------------------
# next_token_loss
# ---------------------------------------------------------------------------------------------------------------


def _loss_case(seed: int, batch: int, seq: int, vocab: int, scale: float = 2.0):
    def build():
        gen = generator(seed)
        logits = randn(gen, batch, seq, vocab, scale=scale)  # scale 100: exp overflows without the max subtracted
        tokens = torch.randint(0, vocab, (batch, seq), generator=gen)
        tokens[0, -1] = 0  # token 0 is predicted somewhere: a loss that skips it as padding differs
        return (logits, tokens), reference_loss(logits, tokens)

    return build


def _cross_entropy(predictions, targets, reduction="mean"):
    """Cross-entropy of (batch, n, vocab) predictions against (batch, n) targets, flattened the right way."""
    return F.cross_entropy(predictions.reshape(-1, predictions.shape[-1]), targets.reshape(-1), reduction=reduction)


def loss_no_shift(logits, tokens):
    return _cross_entropy(logits, tokens)


def loss_no_shift_trimmed(logits, tokens):
    return _cross_entropy(logits[:, :-1], tokens[:, :-1])


def loss_no_shift_from_one(logits, tokens):
    return _cross_entropy(logits[:, 1:], tokens[:, 1:])


def loss_shift_backwards(logits, tokens):
    return _cross_entropy(logits[:, 1:], tokens[:, :-1])


def loss_shift_by_two(logits, tokens):
    return _cross_entropy(logits[:, :-2], tokens[:, 2:])


def loss_summed(logits, tokens):
    return _cross_entropy(logits[:, :-1], tokens[:, 1:], reduction="sum")


def loss_summed_over_positions(logits, tokens):
    return _cross_entropy(logits[:, :-1], tokens[:, 1:], reduction="sum") / logits.shape[0]


def loss_softmax_first(logits, tokens):
    return _cross_entropy(torch.softmax(logits[:, :-1], dim=-1), tokens[:, 1:])


def loss_log_softmax_wrong_axis(logits, tokens):
    log_probs = torch.log_softmax(logits, dim=1)[:, :-1]  # over the positions, not the vocabulary
    return F.nll_loss(log_probs.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))


def loss_classes_on_last_axis(logits, tokens):
    return F.cross_entropy(logits[:, :-1], tokens[:, 1:])  # cross_entropy reads axis 1 as the classes


LOSS_MISTAKES = [
    Mistake(
        "no_shift",
        "the targets are not shifted: each position is scored on its own token instead of the next one",
        "The logits at position t are the model's guess for the token at t + 1. Pair the predictions of positions "
        "0 .. seq − 2 with the tokens of positions 1 .. seq − 1 (one prediction fewer than there are tokens).",
        loss_no_shift,
        variants=(loss_no_shift_trimmed, loss_no_shift_from_one),
    ),
    Mistake(
        "shift_backwards",
        "the shift goes the wrong way: position t is scored on the token before it",
        "Predictions come from the earlier position and targets from the later one: drop the last position of the "
        "logits and the first token of the targets, not the other way round.",
        loss_shift_backwards,
    ),
    Mistake(
        "shift_by_two",
        "the targets are shifted by two positions instead of one",
        "Each position predicts the very next token: the slices of the logits and of the tokens differ by one.",
        loss_shift_by_two,
    ),
    Mistake(
        "summed_not_averaged",
        "the losses are summed instead of averaged over every prediction",
        "The loss is the mean over all batch × (seq − 1) predictions, in nats per token, so that its size does not "
        "grow with the batch or the sequence length.",
        loss_summed,
        variants=(loss_summed_over_positions,),
    ),
    Mistake(
        "softmax_before_cross_entropy",
        "the logits go through a softmax before the cross-entropy",
        "F.cross_entropy takes raw logits and applies log-softmax itself; giving it probabilities applies the "
        "softmax twice.",
        loss_softmax_first,
    ),
    Mistake(
        "log_softmax_wrong_axis",
        "the log-softmax is taken over the positions instead of the vocabulary",
        "The probabilities of one prediction are spread over the vocabulary: normalise over the last axis.",
        loss_log_softmax_wrong_axis,
    ),
    Mistake(
        "classes_on_last_axis",
        "F.cross_entropy got (batch, seq, vocab) logits, but it reads axis 1 as the classes",
        "Either flatten the predictions to (batch · (seq − 1), vocab) and the targets to (batch · (seq − 1),), or "
        "move the vocabulary axis to position 1.",
        loss_classes_on_last_axis,
        raises=lambda exc: "Expected target size" in str(exc) or "expected target size" in str(exc).lower(),
    ),
]


LOSS_SPEC = CheckSpec(
    name="check_next_token_loss",
    function="next_token_loss",
    own=("course_lib.decoder", "next_token_loss"),
    arg_names=("logits", "tokens"),
    output=TensorOut("()"),
    cases=[
        Case("batch of 2, 6 tokens", _loss_case(701, batch=2, seq=6, vocab=7)),
        Case("one sequence", _loss_case(702, batch=1, seq=5, vocab=3)),
        Case("sequences of 2 tokens: one prediction each", _loss_case(703, batch=3, seq=2, vocab=9)),
        Case("logits in the hundreds", _loss_case(704, batch=2, seq=4, vocab=6, scale=100.0)),
    ],
    mistakes=LOSS_MISTAKES,
    success="Position t predicts token t + 1, averaged over every prediction: nats per token.",
    reference=reference_loss,
    dtype_hint="Keep the loss in the logits' dtype (float32).",
)


# ---------------------------------------------------------------------------------------------------------------
# Shared by the two filters
# ---------------------------------------------------------------------------------------------------------------


def _apart(function):
    """``function`` with a code object of its own. The buggy versions below are built on course_lib's filter, and a
    learner's function that calls that filter is refused (``CheckSpec.own``); these are the catalogue's, not a
    learner's, so they call the same computation under another code object."""
    return types.FunctionType(
        function.__code__.replace(), function.__globals__, function.__name__, function.__defaults__
    )


def _filter_variants(reference, name: str):
    """Buggy versions that both filters share, built on the filter's reference (``reference(logits, setting)``)."""

    def probs_renormalised(logits, setting):
        probs = torch.softmax(logits, dim=-1).masked_fill(torch.isinf(reference(logits, setting)), 0.0)
        return probs / probs.sum(dim=-1, keepdim=True)

    def probs_not_renormalised(logits, setting):
        return torch.softmax(logits, dim=-1).masked_fill(torch.isinf(reference(logits, setting)), 0.0)

    def log_probs(logits, setting):
        return probs_renormalised(logits, setting).log()

    def fill_zero(logits, setting):
        return logits.masked_fill(torch.isinf(reference(logits, setting)), 0.0)

    def finite_fill(logits, setting):
        return reference(logits, setting).clamp_min(-1e9)

    variants = (probs_renormalised, probs_not_renormalised, log_probs, fill_zero, finite_fill)
    for buggy in variants:
        buggy.__name__ = buggy.__qualname__ = f"{name}_{buggy.__name__}"
    return variants


def _finite_fill_probe(reference):
    def probe(value, args):
        logits, setting = args
        expected = reference(logits, setting)
        if not isinstance(value, torch.Tensor) or value.shape != expected.shape:
            return False
        removed = torch.isinf(expected)
        return (
            bool(removed.any())
            and bool(torch.isfinite(value[removed]).all())
            and bool((value[removed] < -1e3).all())
            and same(value[~removed], expected[~removed])
        )

    return probe


def _filter_mistakes(reference, variants, extra: list[Mistake]) -> list[Mistake]:
    probs_renormalised, probs_not_renormalised, log_probs, fill_zero, finite_fill = variants
    return [
        Mistake(
            "filtered_after_softmax",
            "the filter is applied to probabilities (after the softmax) instead of to the logits",
            "Filter the logits themselves and return logits: the tokens you drop get -inf, the others keep their "
            "logit unchanged. The softmax that comes later turns -inf into probability 0 and renormalises the rest "
            "by itself (and a temperature can still divide logits, not probabilities).",
            probs_renormalised,
            variants=(probs_not_renormalised, log_probs),
        ),
        Mistake(
            "fill_zero",
            "the dropped tokens get a logit of 0 instead of -inf",
            "A logit of 0 is an ordinary score (e⁰ = 1): the token keeps a good chance of being drawn. Only -inf "
            "gives it probability exactly 0.",
            fill_zero,
        ),
        *extra,
        Mistake(
            "finite_fill",
            "the dropped tokens get a large negative number instead of -inf",
            "Use float('-inf'): a finite stand-in can come back to life when the logits are rescaled or shifted, and "
            "the course's filters (and this check) mark a dropped token with -inf.",
            finite_fill,
            probe=_finite_fill_probe(reference),
        ),
    ]


# ---------------------------------------------------------------------------------------------------------------
# top_k_filter
# ---------------------------------------------------------------------------------------------------------------


def _filter_case(seed: int, shape: tuple[int, ...], setting, scale: float = 1.5, reference=None):
    def build():
        logits = randn(generator(seed), *shape, scale=scale)
        return (logits, setting), reference(logits, setting)

    return build


def _keep_top(logits, k, largest=True, dim=-1):
    k = max(0, min(k, logits.shape[dim]))
    keep = torch.zeros_like(logits, dtype=torch.bool)
    if k:
        keep = keep.scatter(dim, logits.topk(k, dim=dim, largest=largest).indices, True)
    return logits.masked_fill(~keep, NEG_INF)


def top_k_one_more(logits, k):
    return _keep_top(logits, k + 1)


def top_k_one_fewer(logits, k):
    return _keep_top(logits, k - 1)


def top_k_smallest(logits, k):
    return _keep_top(logits, k, largest=False)


def top_k_first_axis(logits, k):
    return _keep_top(logits, k, dim=0)


def top_k_values_only(logits, k):
    return logits.topk(k, dim=-1).values


def _values_only_probe(value, args) -> bool:
    logits, k = args
    return (
        isinstance(value, torch.Tensor)
        and value.shape[-1:] == (k,)
        and same(value.sort(dim=-1, descending=True).values, logits.topk(k, dim=-1).values)
    )


top_k_probs_renormalised, top_k_probs_not_renormalised, top_k_log_probs, top_k_fill_zero, top_k_finite_fill = (
    _filter_variants(_apart(reference_top_k), "top_k")
)
TOP_K_MISTAKES = _filter_mistakes(
    reference_top_k,
    (top_k_probs_renormalised, top_k_probs_not_renormalised, top_k_log_probs, top_k_fill_zero, top_k_finite_fill),
    [
        Mistake(
            "k_off_by_one",
            "one token too many or one too few is kept",
            "Exactly k logits survive in every row. Count what your comparison keeps: is the k-th largest logit "
            "itself kept (>=) or dropped (>)?",
            top_k_one_more,
            variants=(top_k_one_fewer,),
        ),
        Mistake(
            "keeps_smallest",
            "the k smallest logits are kept instead of the k largest",
            "torch.topk returns the largest entries by default; a sort must be in decreasing order to put the most "
            "likely tokens first.",
            top_k_smallest,
        ),
        Mistake(
            "wrong_axis",
            "the k best are chosen along the wrong axis (over the rows instead of over the vocabulary)",
            "Each row (one sequence's next-token scores) keeps its own k best: work along the last axis, dim=-1.",
            top_k_first_axis,
        ),
        Mistake(
            "values_only",
            "you return the k largest logits themselves instead of the whole vocabulary with the rest set to -inf",
            "The result has the shape of the logits: one entry per token of the vocabulary, so that the token ids "
            "(the positions) stay where they were.",
            top_k_values_only,
            probe=_values_only_probe,
        ),
    ],
)


def _k_case(seed, shape, k):
    return _filter_case(seed, shape, k, reference=reference_top_k)


TOP_K_SPEC = CheckSpec(
    name="check_top_k_filter",
    function="top_k_filter",
    own=("course_lib.sampling", "top_k_filter"),
    arg_names=("logits", "k"),
    output=TensorOut("(..., vocab)"),
    cases=[
        Case("one row of 10 logits, k = 3", _k_case(711, (10,), 3)),
        Case("a batch of 4 rows, k = 2", _k_case(712, (4, 8), 2)),
        Case("(batch, seq, vocab) logits, k = 4", _k_case(713, (2, 3, 6), 4)),
        Case("k = 1: greedy", _k_case(714, (3, 5), 1)),
        Case("k = vocab: nothing dropped", _k_case(715, (2, 5), 5)),
    ],
    mistakes=TOP_K_MISTAKES,
    success="Exactly the k largest logits of every row survive; the rest are -inf.",
    reference=reference_top_k,
    trains=False,  # sampling never backpropagates: torch.no_grad() or NumPy inside is fine
)


# ---------------------------------------------------------------------------------------------------------------
# top_p_filter
# ---------------------------------------------------------------------------------------------------------------


def _nucleus(logits, p, rule="before", descending=True):
    """Top-p with switches: which cumulative mass is compared with p, and in which order the tokens are taken."""
    probs = torch.softmax(logits, dim=-1)
    if rule == "unsorted":
        sorted_probs, order = probs, torch.arange(logits.shape[-1]).expand_as(logits)
    else:
        sorted_probs, order = probs.sort(dim=-1, descending=descending)
    mass_through = sorted_probs.cumsum(dim=-1)  # mass of the tokens up to and including this one
    mass_before = mass_through - sorted_probs
    if rule == "through":  # drops the token that crosses p
        keep_sorted = mass_through <= p
    elif rule == "one_more":  # keeps the token after the one that crosses p as well
        keep_sorted = torch.cat([mass_before.new_zeros(mass_before.shape[:-1] + (1,)), mass_before[..., :-1]], -1) < p
    else:
        keep_sorted = mass_before < p
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
    return logits.masked_fill(~keep, NEG_INF)


def top_p_one_fewer(logits, p):
    return _nucleus(logits, p, rule="through")


def top_p_one_more(logits, p):
    return _nucleus(logits, p, rule="one_more")


def top_p_unsorted(logits, p):
    return _nucleus(logits, p, rule="unsorted")


def top_p_least_likely_first(logits, p):
    return _nucleus(logits, p, descending=False)


def top_p_not_scattered_back(logits, p):
    """Decides in sorted order, then applies the sorted decisions to the logits in vocabulary order."""
    probs = torch.softmax(logits, dim=-1).sort(dim=-1, descending=True).values
    return logits.masked_fill(probs.cumsum(dim=-1) - probs >= p, NEG_INF)


def top_p_gathered_back(logits, p):
    """Carries the sorted decisions back with gather(order), the inverse of the permutation scatter applies."""
    probs, order = torch.softmax(logits, dim=-1).sort(dim=-1, descending=True)
    return logits.masked_fill(~(probs.cumsum(dim=-1) - probs < p).gather(-1, order), NEG_INF)


def top_p_left_sorted(logits, p):
    """Filters right, but returns the kept logits in sorted order instead of at their tokens' positions."""
    sorted_logits = logits.sort(dim=-1, descending=True).values
    return _apart(reference_top_p)(sorted_logits, p)


top_p_probs_renormalised, top_p_probs_not_renormalised, top_p_log_probs, top_p_fill_zero, top_p_finite_fill = (
    _filter_variants(_apart(reference_top_p), "top_p")
)
TOP_P_MISTAKES = _filter_mistakes(
    reference_top_p,
    (top_p_probs_renormalised, top_p_probs_not_renormalised, top_p_log_probs, top_p_fill_zero, top_p_finite_fill),
    [
        Mistake(
            "one_too_few",
            "one token too few is kept: the token that brings the total to p is dropped",
            "The nucleus is the smallest set whose probabilities add up to at least p, so it includes the token that "
            "crosses p. Decide for each token from the mass of the tokens *before* it in the sorted order (the most "
            "likely token is then always kept).",
            top_p_one_fewer,
        ),
        Mistake(
            "one_too_many",
            "one token too many is kept: the set goes one past the token that brings the total to p",
            "Stop at the token that first brings the sum to p: keep a token while the mass of the tokens before it is "
            "still below p. Check that your shift of the cumulative sum is by one place, not two.",
            top_p_one_more,
        ),
        Mistake(
            "not_sorted",
            "the cumulative sum runs over the tokens in vocabulary order instead of from the most likely down",
            "Sort the probabilities in decreasing order first, take the cumulative sum in that order, and map the "
            "decision back to the tokens' own positions.",
            top_p_unsorted,
        ),
        Mistake(
            "least_likely_first",
            "the tokens are sorted from the least likely up, so the unlikely tail is kept",
            "The nucleus collects the most likely tokens: sort in decreasing order (descending=True).",
            top_p_least_likely_first,
        ),
        Mistake(
            "left_in_sorted_order",
            "the kept logits are returned in sorted order, not at their tokens' positions",
            "After deciding in sorted order, put each decision back at its token's id (the indices that the sort "
            "returned, e.g. with scatter), so that entry v of the result still belongs to token v.",
            top_p_left_sorted,
        ),
        Mistake(
            "not_scattered_back",
            "the decisions made in sorted order are applied to the logits in vocabulary order, never carried back",
            "Entry i of your sorted decisions belongs to token order[i], the i-th most likely, not to token i. Put "
            "each decision back at its token's id (scatter with the indices the sort returned, on a tensor of False) "
            "before you mask the logits.",
            top_p_not_scattered_back,
        ),
        Mistake(
            "gathered_back",
            "the sorted decisions are carried back with gather(order), which moves them the wrong way",
            "gather with the sort's indices reads entry order[i] into place i; you need the opposite, entry i "
            "written to place order[i], which is what scatter does (on a tensor of False).",
            top_p_gathered_back,
        ),
    ],
)


def _p_case(seed, shape, p, scale=1.5, dominant=False):
    """Logits drawn until no cumulative mass lies within 1e-3 of p (one token more or less is then a clear
    difference on every CPU) and, when ``dominant``, the most likely token of every row alone holds more than p."""

    def build():
        gen = generator(seed)
        while True:
            logits = randn(gen, *shape, scale=scale)
            probs = torch.softmax(logits.double(), dim=-1).sort(dim=-1, descending=True).values
            clear = float((probs.cumsum(dim=-1) - p).abs().min()) > 1e-3
            if clear and (not dominant or bool((probs[..., 0] > p).all())):
                return (logits, p), reference_top_p(logits, p)

    return build


TOP_P_SPEC = CheckSpec(
    name="check_top_p_filter",
    function="top_p_filter",
    own=("course_lib.sampling", "top_p_filter"),
    arg_names=("logits", "p"),
    output=TensorOut("(..., vocab)"),
    cases=[
        Case("one row of 10 logits, p = 0.5", _p_case(721, (10,), 0.5)),
        Case("a batch of 4 rows, p = 0.9", _p_case(722, (4, 16), 0.9)),  # wide: a sharper nucleus drops several
        Case("(batch, seq, vocab) logits, p = 0.3", _p_case(723, (2, 3, 6), 0.3)),
        Case("one very likely token, p = 0.6", _p_case(724, (2, 6), 0.6, scale=4.0, dominant=True)),
        Case("logits in the hundreds, p = 0.8", _p_case(725, (3, 5), 0.8, scale=60.0)),
    ],
    mistakes=TOP_P_MISTAKES,
    success="Each row keeps the smallest set of most likely tokens whose probabilities reach p.",
    reference=reference_top_p,
    trains=False,  # sampling never backpropagates: torch.no_grad() or NumPy inside is fine
)


# ---------------------------------------------------------------------------------------------------------------
# kv_cache_step
# ---------------------------------------------------------------------------------------------------------------

VOCAB, D_MODEL, MAX_LEN = 11, 8, 128


def seeded_lm(seed: int = 730, vocab: int = VOCAB, d_model: int = D_MODEL, max_len: int = MAX_LEN) -> CachedLM:
    """A one-block, one-head DecoderLM with weights big enough that every mistake changes the logits clearly."""
    with quiet_rng():
        torch.manual_seed(seed)
        model = DecoderLM(vocab, d_model, num_heads=1, n_blocks=1, d_ff=2 * d_model, max_len=max_len)
        with torch.no_grad():
            model.embed.weight.normal_(0.0, 1.0)
            model.positions.weight.normal_(0.0, 1.0)
    return CachedLM(model.eval().requires_grad_(False))


_SHARED_LM: dict[int, CachedLM] = {}
#: The two models the cases share: the notebook's sizes, and other ones (a step written for d_model 8 fails).
LM_SIZES = {0: {"seed": 730, "vocab": VOCAB, "d_model": D_MODEL, "max_len": MAX_LEN},
            1: {"seed": 740, "vocab": 13, "d_model": 12, "max_len": 40}}  # fmt: skip


def shared_lm(which: int = 0) -> CachedLM:
    """A model several cases of the check pass in turn: a step that keeps state on ``lm`` between calls (a cache
    stored on the model instead of the arguments) meets its own leftovers in the next case, as while generating."""
    if which not in _SHARED_LM:
        _SHARED_LM[which] = seeded_lm(**LM_SIZES[which])
    return _SHARED_LM[which]


def _step_case(seed: int, n_cached: int, n_new: int, batch: int = 2, which: int = 0):
    """A sequence of n_cached + n_new tokens (the first ones of seed's sequence of 8), its first n_cached cached."""

    def build():
        lm = shared_lm(which)
        tokens = torch.randint(0, lm.vocab_size, (batch, 8), generator=generator(seed))[:, : n_cached + n_new]
        with torch.no_grad():
            x = lm.embed(tokens, torch.arange(n_cached + n_new))
            _, keys, values = lm.project(x)
            logits = lm.model(tokens)  # the whole sequence without a cache: what the cached step must equal
        cache_keys, cache_values = keys[:, :n_cached].clone(), values[:, :n_cached].clone()
        return (lm, cache_keys, cache_values, tokens[:, n_cached:]), (logits[:, n_cached:], keys, values)

    return build


def _step(lm, cache_keys, cache_values, new_tokens, how="right"):
    """One cached step with switches to reproduce each typical mistake."""
    n_cached, n_new = cache_keys.shape[1], new_tokens.shape[1]
    first = 0 if how == "offset_not_advanced" else n_cached
    x = lm.embed(new_tokens, torch.arange(first, first + n_new))
    queries, keys, values = lm.project(x)
    if how == "new_before_cached":
        all_keys, all_values = torch.cat([keys, cache_keys], 1), torch.cat([values, cache_values], 1)
    elif how == "cache_ignored":
        all_keys, all_values = keys, values
    else:
        all_keys, all_values = torch.cat([cache_keys, keys], 1), torch.cat([cache_values, values], 1)
    n_total = all_keys.shape[1]
    allowed = causal_mask(n_total)[n_total - n_new :]  # new query i sees keys 0 .. n_cached + i
    if how == "mask_top_left":
        allowed = causal_mask(n_total)[:n_new]
    elif how == "prefix_blocked":
        allowed = torch.cat([torch.zeros(n_new, n_total - n_new, dtype=torch.bool), causal_mask(n_new)], dim=1)
    elif how == "no_mask":
        allowed = torch.ones(n_new, n_total, dtype=torch.bool)
    if how == "no_scaling":
        queries = queries * math.sqrt(queries.shape[-1])
    attended, _ = scaled_dot_product_attention(queries, all_keys, all_values, allowed)
    logits = lm.readout(x, attended)
    if how == "returns_only_new":
        return logits, keys, values
    return logits, all_keys, all_values


def _step_variant(how: str):
    def buggy(lm, cache_keys, cache_values, new_tokens):
        return _step(lm, cache_keys, cache_values, new_tokens, how)

    buggy.__name__ = f"step_{how}"
    return buggy


step_offset_not_advanced = _step_variant("offset_not_advanced")
step_mask_top_left = _step_variant("mask_top_left")
step_prefix_blocked = _step_variant("prefix_blocked")
step_no_mask = _step_variant("no_mask")
step_cache_ignored = _step_variant("cache_ignored")
step_returns_only_new = _step_variant("returns_only_new")
step_new_before_cached = _step_variant("new_before_cached")
step_no_scaling = _step_variant("no_scaling")


def step_is_causal_flag(lm, cache_keys, cache_values, new_tokens):
    """torch's own attention with is_causal=True: its mask is aligned to the top-left, wrong once there is a cache."""
    n_cached, n_new = cache_keys.shape[1], new_tokens.shape[1]
    x = lm.embed(new_tokens, torch.arange(n_cached, n_cached + n_new))
    queries, keys, values = lm.project(x)
    keys, values = torch.cat([cache_keys, keys], 1), torch.cat([cache_values, values], 1)
    attended = F.scaled_dot_product_attention(queries, keys, values, is_causal=True)
    return lm.readout(x, attended), keys, values


_KEPT: dict = {}


def step_cache_kept_between_prompts(lm, cache_keys, cache_values, new_tokens):
    """Keeps its own cache in a global that a new prompt never empties (it ignores the cache it is given)."""
    if "keys" not in _KEPT or _KEPT["keys"].shape[1] > 48:  # (bounded, so that the tests can call it many times)
        _KEPT["keys"], _KEPT["values"] = cache_keys, cache_values
    logits, keys, values = _step(lm, _KEPT["keys"], _KEPT["values"], new_tokens)
    _KEPT["keys"], _KEPT["values"] = keys, values
    return logits, keys, values


def step_appended_twice(lm, cache_keys, cache_values, new_tokens):
    """Attends correctly, but the returned cache holds the new positions twice (appended once more on return)."""
    logits, keys, values = _step(lm, cache_keys, cache_values, new_tokens)
    n_new = new_tokens.shape[1]
    return logits, torch.cat([keys, keys[:, -n_new:]], 1), torch.cat([values, values[:, -n_new:]], 1)


def step_appended_twice_and_read(lm, cache_keys, cache_values, new_tokens):
    """Appends the new keys and values twice, and attends over that doubled cache with the last rows of its mask."""
    n_cached, n_new = cache_keys.shape[1], new_tokens.shape[1]
    x = lm.embed(new_tokens, torch.arange(n_cached, n_cached + n_new))
    queries, keys, values = lm.project(x)
    keys, values = torch.cat([cache_keys, keys, keys], 1), torch.cat([cache_values, values, values], 1)
    n_total = keys.shape[1]
    attended, _ = scaled_dot_product_attention(queries, keys, values, causal_mask(n_total)[n_total - n_new :])
    return lm.readout(x, attended), keys, values


def step_returns_old_cache(lm, cache_keys, cache_values, new_tokens):
    """Attends correctly, but returns the cache it was given."""
    logits, _, _ = _step(lm, cache_keys, cache_values, new_tokens)
    return logits, cache_keys, cache_values


def _appended_twice(keys: torch.Tensor, n_new: int) -> bool:
    """Do the last n_new positions of ``keys`` repeat the n_new before them?"""
    return keys.shape[1] >= 2 * n_new and torch.equal(keys[:, -n_new:], keys[:, -2 * n_new : -n_new])


def _kept_probe(value, args) -> bool:
    """The returned cache is longer than the one given plus the new tokens, and not because the new positions were
    appended twice: keys survived from an earlier call."""
    _, cache_keys, _, new_tokens = args
    expected = cache_keys.shape[1] + new_tokens.shape[1]
    if not (isinstance(value, (tuple, list)) and len(value) == 3):
        return False
    keys = value[1]
    if not (isinstance(keys, torch.Tensor) and keys.dim() == 3 and keys.shape[1] > expected):
        return False
    return not _appended_twice(keys, new_tokens.shape[1])


def _kept_cache_no_longer_fits(exc: BaseException, args) -> bool:
    """A cache kept from an earlier call cannot be joined with a batch of another size: torch.cat refuses."""
    return isinstance(exc, RuntimeError) and "Sizes of tensors must match" in str(exc)


STEP_MISTAKES = [
    Mistake(
        "appended_twice",
        "the new keys and values are added to the cache twice in one call: the returned cache has n_cached + 2 · n_new "
        "positions",
        "Join the cache and the new keys (and values) once, use that for the attention, and return that same joined "
        "tensor: no second torch.cat when you return it.",
        step_appended_twice,
        variants=(step_appended_twice_and_read,),
    ),
    Mistake(
        "cache_kept_between_prompts",
        "your cache still holds keys and values from an earlier call: it has more positions than the cache you were "
        "given plus the new tokens",
        "A cache belongs to one sequence. Extend exactly the cache you are given, and keep nothing between calls "
        "(no global or default-argument cache): a new prompt arrives with an empty cache, which is what "
        "KVCache.reset() gives you in notebook 08.",
        step_cache_kept_between_prompts,
        probe=_kept_probe,
        later_raise=_kept_cache_no_longer_fits,
    ),
    Mistake(
        "offset_not_advanced",
        "the position offset does not advance: the new tokens get the position embeddings of positions 0, 1, ... "
        "instead of the positions after the cached ones",
        "The new tokens come after the n_cached tokens already in the cache, so their positions start at n_cached "
        "(the cache's length), not at 0.",
        step_offset_not_advanced,
    ),
    Mistake(
        "mask_top_left",
        "the causal mask is aligned to the top-left: a new query sees only as many keys as its index among the new "
        "tokens, so most of the cached prefix is hidden",
        "With a cache the queries are the *last* n_new rows of the full causal mask over n_cached + n_new "
        "positions: new token i sits at position n_cached + i and may see every key up to there. (torch's "
        "is_causal=True builds the top-left mask, which is only right without a cache.)",
        step_mask_top_left,
        variants=(step_is_causal_flag,),
    ),
    Mistake(
        "prefix_blocked",
        "the new tokens attend only to each other: the mask blocks the cached prefix",
        "The cached positions are all in the past of every new token: the mask must let every new query see all of "
        "them, and be causal only among the new tokens.",
        step_prefix_blocked,
    ),
    Mistake(
        "no_mask",
        "there is no causal mask: when several new tokens arrive at once (a prompt), earlier ones see later ones",
        "A single new token may see everything in the cache, but a prompt of several tokens needs the causal mask "
        "among them, or the logits at one position read the token they should predict.",
        step_no_mask,
    ),
    Mistake(
        "cache_ignored",
        "the cache is never read: the new tokens attend only to their own keys and values",
        "Attention runs over the cached keys and values followed by the new ones: join them along the position axis "
        "before computing the scores, and return the joined tensors as the new cache.",
        step_cache_ignored,
    ),
    Mistake(
        "returns_only_new",
        "the attention is right, but the returned cache holds only the new positions",
        "Return the whole cache, extended by the new positions (n_cached + n_new of them), so that the next step "
        "can attend to everything before it.",
        step_returns_only_new,
    ),
    Mistake(
        "returns_old_cache",
        "the logits are right, but the returned cache is the one you were given: the new positions are not in it",
        "Return the cache extended by the new keys and values (the joined tensors your attention used), so that the "
        "next step can attend to these positions too.",
        step_returns_old_cache,
    ),
    Mistake(
        "new_before_cached",
        "the new keys and values are put before the cached ones",
        "Positions stay in order: the cached ones (0 .. n_cached − 1) first, then the new ones.",
        step_new_before_cached,
    ),
    Mistake(
        "no_scaling",
        "the scores are not divided by √d",
        "Scaled dot-product attention divides the scores by the square root of the key size, as in notebook 02.",
        step_no_scaling,
    ),
]


def _step_diagnose(value, expected, args) -> str | None:
    if not (isinstance(value, tuple) and len(value) == 3):
        return None
    logits, keys, values = value
    _, expected_keys, expected_values = expected
    if isinstance(keys, torch.Tensor) and keys.shape == expected_keys.shape and not same(keys, expected_keys):
        return "Your returned keys differ from the cache extended by the new tokens' keys: compare them position by position."
    return None


STEP_SPEC = CheckSpec(
    name="check_kv_cache_step",
    function="kv_cache_step",
    arg_names=("lm", "cache_keys", "cache_values", "new_tokens"),
    output=TupleOut(
        (
            ("logits", "(batch, n_new, vocab)"),
            ("keys", "(batch, n_total, d_model)"),
            ("values", "(batch, n_total, d_model)"),
        )
    ),
    cases=[
        Case("a new prompt of 5 tokens, empty cache", _step_case(731, n_cached=0, n_new=5)),
        Case("one new token after 5 cached", _step_case(731, n_cached=5, n_new=1)),
        Case("3 new tokens after 4 cached", _step_case(732, n_cached=4, n_new=3)),
        Case("d_model 12: a batch of 3, 2 new tokens after 3 cached", _step_case(734, 3, 2, batch=3, which=1)),
        Case("d_model 12: another prompt of 4 tokens, empty cache", _step_case(733, n_cached=0, n_new=4, which=1)),
    ],
    mistakes=STEP_MISTAKES,
    success="Your cached step gives the logits of the whole sequence run without a cache.",
    diagnose=_step_diagnose,
)


__all__ = export_checks(globals())  # check_* functions, one per CheckSpec above
