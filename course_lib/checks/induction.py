"""Checks for exercise 09: the repeated-sequence batch, the two head detectors, and a head ablation.

Learner signatures:

    repeated_batch(batch_size, half, vocab_size, seed) -> (batch, 2·half) int64
        first ← torch.randint(vocab_size, (batch_size, half), generator=torch.Generator().manual_seed(seed));
        the sequence is the first half, then the same tokens again
    previous_token_score(weights) -> (num_heads,)
        mean of weights[b, h, t, t − 1] over the batch and the queries t = 1 .. seq − 1
    prefix_matching_score(weights, half) -> (num_heads,)
        mean of weights[b, h, t, t − half + 1] over the batch and the repeated half t = half .. 2·half − 1
    ablated_repeat_loss(model, tokens, layer, head) -> () scalar
        the mean next-token loss over the repeated half (loss columns half .. 2·half − 2, i.e. predicting tokens
        half + 1 .. 2·half − 1) of the attention-only model with head ``head`` of layer ``layer`` writing zeros

References: ``course_lib.lab.tasks.repeated.repeated_tokens``, ``course_lib.attention_only.previous_token_score`` and
``prefix_matching_score``, and ``AttentionOnlyLM(tokens, ablate={(layer, head)})`` with ``per_token_loss``.
Every case draws its sizes from its own seed (batch, heads, half, vocabulary, widths), so no size is special.
"""

from __future__ import annotations

import math

import torch

from .._validate import CourseInputError
from ..attention import causal_mask
from ..attention_only import AttentionOnlyLM, per_token_loss
from ..attention_only import prefix_matching_score as reference_prefix
from ..attention_only import previous_token_score as reference_previous
from ..lab.tasks.repeated import repeated_tokens
from ..multihead import merge_heads
from .core import export_checks
from .spec import Case, CheckSpec, Mistake, TensorOut, generator, manual_seed, quiet_rng


def _draw(gen: torch.Generator, low: int, high: int) -> int:
    """One whole number from low .. high (both included)."""
    return int(torch.randint(low, high + 1, (), generator=gen))


def _batch_size(gen: torch.Generator, num_heads: int, one: bool) -> int:
    """1 for a case of one sequence (``one``), else 2 or 3 but never the number of heads: an average over the wrong
    axis then never has the right shape by chance, and a score taken from the first sequence only is wrong. The score
    cases also draw seq − 1 and half above the number of heads."""
    if one:
        return 1
    batch = _draw(gen, 2, 3)
    return 5 - batch if batch == num_heads else batch


ABOVE_DIAGONAL = (
    "your scores are all 0, which is what the entries above the diagonal hold: a key after its query, kept at 0 by "
    "the causal mask"
)

# ---------------------------------------------------------------------------------------------------------------
# repeated_batch
# ---------------------------------------------------------------------------------------------------------------


def _learner_generator(seed: int) -> torch.Generator:
    """The generator the exercise asks for: ``torch.Generator().manual_seed(seed)`` with the seed it is given."""
    return torch.Generator().manual_seed(seed)


def _batch_case(seed: int, one: bool = False, halves=(3, 9)):
    def build():
        gen = generator(seed)
        batch_size, half, vocab_size = 1 if one else _draw(gen, 2, 4), _draw(gen, *halves), _draw(gen, 4, 12)
        args = (batch_size, half, vocab_size, _draw(gen, 100, 99_999))  # the seed handed over: drawn too
        return args, repeated_tokens(batch_size, half, vocab_size, _learner_generator(args[-1]))

    return build


def _first(batch_size, half, vocab_size, seed, low=0, high=None):
    high = vocab_size if high is None else high
    return torch.randint(low, high, (batch_size, half), generator=_learner_generator(seed))


def batch_interleaved(batch_size, half, vocab_size, seed):
    return _first(batch_size, half, vocab_size, seed).repeat_interleave(2, dim=1)


def batch_two_draws(batch_size, half, vocab_size, seed):
    gen = _learner_generator(seed)
    first = torch.randint(vocab_size, (batch_size, half), generator=gen)
    return torch.cat([first, torch.randint(vocab_size, (batch_size, half), generator=gen)], dim=1)


def batch_second_half_other_seed(batch_size, half, vocab_size, seed):
    first = _first(batch_size, half, vocab_size, seed)
    return torch.cat([first, _first(batch_size, half, vocab_size, seed + 1)], dim=1)


def batch_on_batch_axis(batch_size, half, vocab_size, seed):
    first = _first(batch_size, half, vocab_size, seed)
    return torch.cat([first, first], dim=0)


def batch_half_is_length(batch_size, half, vocab_size, seed):
    first = torch.randint(vocab_size, (batch_size, half // 2), generator=_learner_generator(seed))
    return torch.cat([first, first], dim=1)


def batch_vocab_one_short(batch_size, half, vocab_size, seed):
    first = _first(batch_size, half, vocab_size, seed, high=vocab_size - 1)
    return torch.cat([first, first], dim=1)


def batch_vocab_from_one(batch_size, half, vocab_size, seed):
    first = _first(batch_size, half, vocab_size, seed, low=1)
    return torch.cat([first, first], dim=1)


def batch_drawn_transposed(batch_size, half, vocab_size, seed):
    # a valid batch, another draw
    first = torch.randint(vocab_size, (half, batch_size), generator=_learner_generator(seed)).T
    return torch.cat([first, first], dim=1)


def _half_length_probe(value, args) -> bool:
    """Each sequence is ``half`` tokens long in all (or one short of it): two copies of half // 2 tokens."""
    batch_size, half, _, _ = args
    if not (isinstance(value, torch.Tensor) and value.dim() == 2 and value.shape[0] == batch_size):
        return False
    length = value.shape[1]
    return length in (half, 2 * (half // 2)) and length != 2 * half


def _not_repeated_probe(value, args) -> bool:
    """The right shape, but the second half is not the first half again."""
    batch_size, half, _, _ = args
    return (
        isinstance(value, torch.Tensor)
        and tuple(value.shape) == (batch_size, 2 * half)
        and not torch.equal(value[:, :half], value[:, half:])
    )


def _other_draw_probe(value, args) -> bool:
    """A valid repeated batch of the right shape and range, whose first half is not the seeded draw."""
    batch_size, half, vocab_size, seed = args
    if not (isinstance(value, torch.Tensor) and tuple(value.shape) == (batch_size, 2 * half)):
        return False
    if value.is_floating_point() or value.is_complex() or value.dtype == torch.bool:
        return False
    first, second = value[:, :half], value[:, half:]
    in_range = bool(((first >= 0) & (first < vocab_size)).all())
    return in_range and torch.equal(first, second) and not torch.equal(first.long(), _first(*args))


BATCH_MISTAKES = [
    Mistake(
        "interleaved",
        "every token is doubled where it stands (a a b b ...) instead of the whole first half coming again",
        "The copy goes after the first half: join the first half and the same tensor again along the position "
        "axis, so token t of the repeat sits at position half + t.",
        batch_interleaved,
    ),
    Mistake(
        "second_half_not_a_copy",
        "the second half is not a copy of the first half",
        "Draw the random tokens once, for the first half only; the second half is the very same tensor again. "
        "A second draw gives a sequence with nothing to look back at.",
        batch_two_draws,
        variants=(batch_second_half_other_seed,),
        probe=_not_repeated_probe,
    ),
    Mistake(
        "copied_along_batch",
        "the copy is stacked along the batch axis: you get 2·batch sequences of half tokens",
        "Join along the positions (dim=1), not along the sequences (dim=0): each sequence must hold its first half "
        "and then the same tokens again.",
        batch_on_batch_axis,
    ),
    Mistake(
        "half_is_whole_length",
        "each sequence is about `half` tokens long in all: `half` is the length of one copy, so a sequence has "
        "2·half tokens",
        "Draw `half` tokens for the first half, then repeat all of them.",
        batch_half_is_length,
        probe=_half_length_probe,
    ),
    Mistake(
        "vocabulary_one_short",
        "the tokens come from a range that misses one id of 0 … vocab_size − 1",
        "torch.randint(high, size) draws from 0 … high − 1: its upper bound is already left out, and 0 is a token "
        "like any other here.",
        batch_vocab_one_short,
        variants=(batch_vocab_from_one,),
    ),
    Mistake(
        "other_draw",
        "your batch is a valid repeated batch, but its first half is not the draw the docstring asks for",
        "The check compares token by token, so draw exactly as the docstring says: one call for the whole first "
        "half, shaped (batch_size, half), from a torch.Generator seeded with `seed`.",
        batch_drawn_transposed,
        probe=_other_draw_probe,
    ),
]

BATCH_SPEC = CheckSpec(
    name="check_repeated_batch",
    function="repeated_batch",
    arg_names=("batch_size", "half", "vocab_size", "seed"),
    output=TensorOut("(batch, 2·half)"),
    cases=[Case("one sequence, random sizes, a short half", _batch_case(901, one=True, halves=(3, 5)))]
    + [Case(f"random sizes, draw {n + 1}", _batch_case(901 + 37 * n)) for n in range(1, 3)]
    + [Case("random sizes, a long half", _batch_case(1012, halves=(7, 9)))],  # no one half passes every case
    mistakes=BATCH_MISTAKES,
    success="A random first half, then the same again: the second half can only be predicted by looking back.",
    dtype_hint="Token ids are whole numbers: keep what torch.randint returns (int64), with no .float().",
)


# ---------------------------------------------------------------------------------------------------------------
# Attention weights for the detectors
# ---------------------------------------------------------------------------------------------------------------


def causal_weights(gen: torch.Generator, batch: int, num_heads: int, seq: int) -> torch.Tensor:
    """Random causal attention weights ``(batch, num_heads, seq, seq)``: each row sums to 1 over keys ≤ query."""
    scores = torch.randn(batch, num_heads, seq, seq, generator=gen) * 2.0
    return torch.softmax(scores.masked_fill(~causal_mask(seq), float("-inf")), dim=-1)


def _planted(weights: torch.Tensor, offset: int) -> torch.Tensor:
    """Head 0 puts most of its weight on key t − offset (where that key exists): a head with a clear pattern."""
    seq = weights.shape[-1]
    target = torch.zeros(seq, seq)
    for t in range(seq):
        target[t, t - offset if t - offset >= 0 else t] = 1.0
    planted = weights.clone()
    planted[:, 0] = 0.2 * weights[:, 0] + 0.8 * target
    return planted


# --- previous_token_score ---------------------------------------------------------------------------------------
def _previous_case(seed: int, plant: bool = False, one: bool = False, heads=(2, 4), seqs=(4, 9)):
    def build():
        gen = generator(seed)
        num_heads = _draw(gen, *heads)
        batch, seq = _batch_size(gen, num_heads, one), _draw(gen, max(seqs[0], num_heads + 2), seqs[1])
        weights = causal_weights(gen, batch, num_heads, seq)
        if plant:
            weights = _planted(weights, 1)
        return (weights,), reference_previous(weights)

    return build


def previous_own_token(weights):
    return weights.diagonal(offset=0, dim1=-2, dim2=-1).mean(dim=(0, -1))


def previous_above_diagonal(weights):
    return weights.diagonal(offset=1, dim1=-2, dim2=-1).mean(dim=(0, -1))


def previous_axes_swapped(weights):
    return weights.diagonal(offset=-1, dim1=-1, dim2=-2).mean(dim=(0, -1))


def previous_counts_query_zero(weights):
    return weights.diagonal(offset=-1, dim1=-2, dim2=-1).sum(dim=-1).mean(dim=0) / weights.shape[-1]


def previous_wrapped_index(weights):
    positions = torch.arange(weights.shape[-1])
    return weights[..., positions, positions - 1].mean(dim=(0, -1))  # query 0 reads key −1, the last key: 0


def previous_summed(weights):
    return weights.diagonal(offset=-1, dim1=-2, dim2=-1).sum(dim=-1).mean(dim=0)


def previous_mean_over_heads(weights):
    return weights.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(1, -1))


PREVIOUS_MISTAKES = [
    Mistake(
        "own_token",
        "you read the main diagonal: how much each token attends to itself, not to the token before it",
        "The previous token of query t is key t − 1: one step below the main diagonal (diagonal offset −1 over the "
        "last two axes).",
        previous_own_token,
    ),
    Mistake(
        "above_diagonal",
        ABOVE_DIAGONAL,
        "The weights are indexed [..., query, key], and the previous token of query t is key t − 1: below the "
        "diagonal. (torch's diagonal(offset, dim1, dim2) counts a negative offset below it when dim1 is the query "
        "axis, −2.)",
        previous_above_diagonal,
        variants=(previous_axes_swapped,),
    ),
    Mistake(
        "counts_query_zero",
        "the mean also counts query 0, which has no previous token (a sum over seq − 1 queries divided by seq)",
        "Only queries 1 … seq − 1 have a token before them: average over those seq − 1 entries.",
        previous_counts_query_zero,
        variants=(previous_wrapped_index,),
    ),
    Mistake(
        "summed_not_averaged",
        "the weights are summed over the queries instead of averaged",
        "A score of 1.0 should mean a perfect previous-token head, whatever the length: take the mean over the "
        "queries (and the batch), not the sum.",
        previous_summed,
    ),
    Mistake(
        "mean_over_heads",
        "the mean runs over the heads instead of over the batch: you get one score per sequence",
        "The score belongs to a head: average over the batch axis (0) and the queries, and keep the head axis (1).",
        previous_mean_over_heads,
    ),
]

_DETECTOR_GRADIENT_HINT = (
    "Compute the score from `weights` with torch operations only (indexing, diagonal, mean): then it stays "
    "differentiable and can sit inside a loss. Look for .item(), .tolist(), float(...) or a tensor rebuilt from a list of "
    "numbers: they give the right values with no gradient behind them."
)

PREVIOUS_SPEC = CheckSpec(
    name="check_previous_token_score",
    function="previous_token_score",
    own=("course_lib.attention_only", "previous_token_score"),
    arg_names=("weights",),
    output=TensorOut("(num_heads,)"),
    cases=[
        Case("one sequence, random sizes, random causal weights", _previous_case(911, one=True)),
        # 2 or 3 heads and 4-6 tokens here, 4 heads and 7-9 tokens below: no one size passes every case
        Case(
            "random sizes, head 0 mostly on the previous token",
            _previous_case(929, plant=True, heads=(2, 3), seqs=(4, 6)),
        ),
        Case("random sizes, 4 heads, random causal weights", _previous_case(947, heads=(4, 4), seqs=(7, 9))),
    ],
    mistakes=PREVIOUS_MISTAKES,
    success="One number per head; 1.0 would be a head that always looks one token back.",
    reference=reference_previous,
    gradient_hint=_DETECTOR_GRADIENT_HINT,
)


# --- prefix_matching_score --------------------------------------------------------------------------------------
def _prefix_case(seed: int, plant: bool = False, heads=(2, 4), one: bool = False, halves=(3, 7)):
    """Random sizes from ``seed``; ``heads`` and ``halves`` are the ranges the number of heads and half are drawn from."""

    def build():
        gen = generator(seed)
        num_heads = _draw(gen, *heads)
        batch, half = _batch_size(gen, num_heads, one), _draw(gen, max(halves[0], num_heads + 1), halves[1])
        weights = causal_weights(gen, batch, num_heads, 2 * half)
        if plant:
            weights = _planted(weights, half - 1)
        return (weights, half), reference_prefix(weights, half)

    return build


def _key_offset(weights, half, key_offset, first=None, last=None, divide_by=None):
    """Mean over the batch and queries first .. last (default the repeated half) of weights[..., t, t + key_offset]."""
    seq = weights.shape[-1]
    first = half if first is None else first
    last = seq - 1 if last is None else last
    queries = [t for t in range(first, last + 1) if 0 <= t + key_offset <= t]
    picked = torch.stack([weights[..., t, t + key_offset] for t in queries], dim=-1)  # (batch, num_heads, n)
    total = picked.sum(dim=-1).mean(dim=0)
    return total / (len(queries) if divide_by is None else divide_by)


def prefix_earlier_copy(weights, half):
    return _key_offset(weights, half, -half)


def prefix_copy_diagonal(weights, half):
    return weights.diagonal(offset=-half, dim1=-2, dim2=-1).mean(dim=(0, -1))


def prefix_two_after(weights, half):
    return _key_offset(weights, half, -half + 2)


def prefix_token_before_copy(weights, half):
    return _key_offset(weights, half, -half - 1)


def prefix_boundary_query(weights, half):
    return weights.diagonal(offset=-(half - 1), dim1=-2, dim2=-1).mean(dim=(0, -1))


def prefix_first_half_too(weights, half):
    return _key_offset(weights, half, -half + 1, divide_by=2 * half)


def prefix_first_half_loop(weights, half):
    return _key_offset(weights, half, -half + 1, first=0, divide_by=2 * half)


def prefix_starts_late(weights, half):
    return _key_offset(weights, half, -half + 1, first=half + 1)


def prefix_transposed(weights, half):
    positions = torch.arange(half, 2 * half)
    return weights[..., positions - half + 1, positions].mean(dim=(0, -1))


def prefix_mean_over_heads(weights, half):
    return weights.diagonal(offset=-(half - 1), dim1=-2, dim2=-1)[..., 1:].mean(dim=(1, -1))


PREFIX_MISTAKES = [
    Mistake(
        "earlier_copy_itself",
        "you read the weight on the earlier copy itself (key t − half), not on the token after it",
        "An induction head at the repeat of token A looks for the earlier A and attends to what came next, because "
        "that is the token to predict: key t − half + 1, one step to the right of the copy.",
        prefix_earlier_copy,
        variants=(prefix_copy_diagonal,),
    ),
    Mistake(
        "one_too_far",
        "the diagonal is one step too far to the right: key t − half + 2 instead of t − half + 1",
        "Query t is a copy of token t − half; the token after that copy is at t − half + 1.",
        prefix_two_after,
    ),
    Mistake(
        "token_before_copy",
        "you read the token before the earlier copy (key t − half − 1), not the token after it",
        "The copy of query t sits at t − half; the induction head reads one step after it, t − half + 1.",
        prefix_token_before_copy,
    ),
    Mistake(
        "boundary_query_counted",
        "the mean also counts query half − 1, the last token of the first half (its entry on this diagonal is key 0)",
        "Only the repeated half has earlier copies: queries half … 2·half − 1, which is half entries per head. "
        "The diagonal at this offset has one entry more, at its start.",
        prefix_boundary_query,
    ),
    Mistake(
        "first_half_averaged_too",
        "the mean runs over the first half too (you divide by 2·half), whose queries have no earlier copy",
        "Average over the repeated half only, t = half … 2·half − 1: half entries per head.",
        prefix_first_half_too,
        variants=(prefix_first_half_loop,),
    ),
    Mistake(
        "starts_one_late",
        "the repeated half starts one query too late: query half, the repeat's first token, is left out",
        "The repeat begins at position half (positions count from 0), and its first token already has an earlier "
        "copy, at position 0.",
        prefix_starts_late,
    ),
    Mistake(
        "above_diagonal",
        ABOVE_DIAGONAL,
        "The weights are indexed [..., query, key]: the query is the later position t, the key the earlier one, "
        "t − half + 1.",
        prefix_transposed,
    ),
    Mistake(
        "mean_over_heads",
        "the mean runs over the heads instead of over the batch: you get one score per sequence",
        "The score belongs to a head: average over the batch axis (0) and the queries, and keep the head axis (1).",
        prefix_mean_over_heads,
    ),
]

PREFIX_SPEC = CheckSpec(
    name="check_prefix_matching_score",
    function="prefix_matching_score",
    own=("course_lib.attention_only", "prefix_matching_score"),
    arg_names=("weights", "half"),
    output=TensorOut("(num_heads,)"),
    cases=[
        Case("one sequence, random sizes, random causal weights", _prefix_case(961, one=True)),
        Case("random sizes, head 0 mostly on the token after the earlier copy", _prefix_case(977, plant=True)),
        # 3-4 heads and half 6 or 7 here, 2 heads and half 3 or 4 below: no one half (the printed example's 5, say)
        # and no one number of heads passes every case
        Case("random sizes, random causal weights, a long half", _prefix_case(993, heads=(3, 4), halves=(6, 7))),
        Case("random sizes, 2 heads, a short half", _prefix_case(1009, heads=(2, 2), halves=(3, 4))),
    ],
    mistakes=PREFIX_MISTAKES,
    success="One number per head; 1.0 would be a perfect induction head on the repeated half.",
    reference=reference_prefix,
    gradient_hint=_DETECTOR_GRADIENT_HINT,
)


# ---------------------------------------------------------------------------------------------------------------
# ablated_repeat_loss
# ---------------------------------------------------------------------------------------------------------------


def seeded_model(seed: int, ranges: dict[str, tuple[int, int]] | None = None) -> AttentionOnlyLM:
    """An attention-only model of random sizes, with weights large enough that every head matters. ``ranges`` narrows
    where a size is drawn (``vocab_size``, ``num_heads``, ``d_head``, ``half``, ``spare``): two cases drawn from ranges
    apart never share it."""
    gen = generator(seed)
    ranges = {
        "vocab_size": (6, 12),
        "num_heads": (2, 3),
        "d_head": (3, 6),
        "half": (4, 7),
        "spare": (1, 6),
        **(ranges or {}),
    }
    vocab_size, num_heads = _draw(gen, *ranges["vocab_size"]), _draw(gen, *ranges["num_heads"])
    d_head, half = _draw(gen, *ranges["d_head"]), _draw(gen, *ranges["half"])
    n_layers = 2 + (seed % 7 > 3)  # a loop over range(2) fails
    spare = _draw(gen, *ranges["spare"])  # positions of the table beyond the tokens: model.max_len as length fails
    with quiet_rng():
        manual_seed(seed)
        model = AttentionOnlyLM(vocab_size, num_heads * d_head, num_heads, n_layers=n_layers, max_len=2 * half + spare)
        with torch.no_grad():
            model.token_embedding.weight.normal_(0.0, 1.0)
            model.position_embedding.weight.normal_(0.0, 1.0)
            for layer in model.layers:
                for projection in (layer.attention.w_q, layer.attention.w_k, layer.attention.w_o):
                    projection.weight.mul_(2.0)
            model.unembed.weight.normal_(0.0, 2.0 / math.sqrt(model.d_model))
    model.eval().requires_grad_(False)
    model._course_copy_per_call = True  # the check hands each call its own copy, and sees if it was changed
    model._course_half = half  # the length of the repeated half the cases use (the table holds more positions)
    return model


class PartsOnlyLM(AttentionOnlyLM):
    """The model ``ablated_repeat_loss`` is given: the same weights and parts, and the same plain forward pass, but its
    own switch ``model(tokens, ablate=...)`` is off: that switch is the answer, so a function that calls it has not
    done the exercise (the notebook uses it afterwards, on its own model, to compare)."""

    def forward(self, tokens: torch.Tensor, ablate=()):
        if tuple(ablate):
            raise CourseInputError(
                "ablated_repeat_loss switches the head off itself, with the model's parts: the check's model does not "
                "run model(tokens, ablate=...) (compare with it afterwards, outside your function)"
            )
        return super().forward(tokens)


SMALL = {"vocab_size": (6, 8), "num_heads": (2, 2), "d_head": (3, 4), "half": (4, 5), "spare": (1, 2)}  # max_len 9-12
LARGE = {"vocab_size": (10, 12), "num_heads": (3, 3), "d_head": (5, 6), "half": (6, 7), "spare": (3, 6)}  # 15-20


#: The loss with the head switched off differs from the whole model's by at least this much in every case (the head's
#: output weights are doubled, at most ABLATION_DOUBLINGS times, until it does): a function that switches off another
#: head, or none, is then told apart at every salt (without this, at 1-2% of salts one case's head hardly mattered).
ABLATION_EFFECT, ABLATION_DOUBLINGS = 0.05, 6


def _ablation_case(seed: int, layer: int, head: int, ranges: dict[str, tuple[int, int]] | None = None):
    def build():
        model = seeded_model(seed, ranges)
        batch = 2 + seed % 3
        tokens = repeated_tokens(batch, model._course_half, model.vocab_size, generator(seed + 1))
        head_index = min(head, model.num_heads - 1)
        repeat = slice(tokens.shape[1] // 2, None)
        w_o = model.layers[layer].attention.w_o.weight  # (d_model, d_model): head h writes through columns h·d_head…
        d_head = model.d_model // model.num_heads
        with torch.no_grad():
            for _ in range(ABLATION_DOUBLINGS):  # the head switched off must matter, whatever the salt drew
                whole = per_token_loss(model(tokens)[0], tokens)[:, repeat].mean()
                logits, _ = model(tokens, ablate={(layer, head_index)})
                expected = per_token_loss(logits, tokens)[:, repeat].mean()
                if abs(float(whole) - float(expected)) >= ABLATION_EFFECT:
                    break
                w_o[:, head_index * d_head : (head_index + 1) * d_head] *= 2.0
        model.__class__ = PartsOnlyLM  # computed above with the model's own switch; the learner's call goes without
        return (model, tokens, layer, head_index), expected

    return build


def _ablated(model, tokens, layer, head, how="right", loss_columns="repeat"):
    """The forward pass with one head switched off, with switches for each typical mistake."""
    seq = tokens.shape[1]
    half = seq // 2
    x = model.embed(tokens)  # (batch, seq, d_model)
    for index, block in enumerate(model.layers):
        queries, keys, values = block.project(x)  # each (batch, num_heads, seq, d_head)
        here = index == layer or how == "every_layer"
        keep = torch.ones(model.num_heads)
        if here and how != "nothing_off":
            keep[head] = 0.0
            if how == "whole_layer":
                keep[:] = 0.0
        scores = queries @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1])
        if here and how == "queries_zeroed":
            scores = (queries * keep[None, :, None, None]) @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1])
        scores = scores.masked_fill(~causal_mask(seq), float("-inf"))
        if here and how == "scores_zeroed":
            scores = torch.where(keep[None, :, None, None].bool() | ~causal_mask(seq), scores, 0.0)
        if here and how == "scores_minus_inf":
            scores = scores.masked_fill(~keep[None, :, None, None].bool(), float("-inf"))
        heads = torch.softmax(scores, dim=-1) @ values
        if how in ("right", "every_layer", "whole_layer"):
            heads = heads * keep[None, :, None, None]
        out = block.attention.w_o(merge_heads(heads))  # (batch, seq, d_model)
        if here and how == "after_w_o":
            d_head = model.d_model // model.num_heads
            features = torch.ones(model.d_model)
            features[head * d_head : (head + 1) * d_head] = 0.0
            out = out * features
        x = x + out
    logits = model.unembed(x)
    if loss_columns == "no_shift":
        losses = -torch.log_softmax(logits, dim=-1).gather(-1, tokens[..., None])[..., 0]  # (batch, seq)
        return losses[:, half:].mean()
    losses = per_token_loss(logits, tokens)  # (batch, seq − 1): column t predicts token t + 1
    columns = {
        "repeat": losses[:, half:],
        "everything": losses,
        "first_half": losses[:, : half - 1],
        "from_half_minus_one": losses[:, half - 1 :],
        "from_half_plus_one": losses[:, half + 1 :],
    }[loss_columns]
    return columns.mean()


def _ablation_variant(how: str = "right", loss_columns: str = "repeat"):
    def buggy(model, tokens, layer, head):
        return _ablated(model, tokens, layer, head, how, loss_columns)

    buggy.__name__ = f"ablation_{how}_{loss_columns}"
    return buggy


ablation_scores_zeroed = _ablation_variant("scores_zeroed")
ablation_queries_zeroed = _ablation_variant("queries_zeroed")
ablation_scores_minus_inf = _ablation_variant("scores_minus_inf")
ablation_after_w_o = _ablation_variant("after_w_o")
ablation_every_layer = _ablation_variant("every_layer")
ablation_whole_layer = _ablation_variant("whole_layer")
ablation_nothing_off = _ablation_variant("nothing_off")
ablation_loss_everything = _ablation_variant(loss_columns="everything")
ablation_loss_first_half = _ablation_variant(loss_columns="first_half")
ablation_loss_from_half_minus_one = _ablation_variant(loss_columns="from_half_minus_one")
ablation_loss_from_half_plus_one = _ablation_variant(loss_columns="from_half_plus_one")
ablation_loss_no_shift = _ablation_variant(loss_columns="no_shift")


ABLATION_MISTAKES = [
    Mistake(
        "scores_zeroed_before_softmax",
        "the head's scores are 0 before the softmax (zeroed scores, queries or keys): the head then attends evenly "
        "to every allowed key and still writes the average of their values",
        "A softmax never gives all zeros: scores of 0 become equal weights. Switch the head off where it writes, "
        "after the softmax: its output (weights · values) must be zero before W_O mixes the heads.",
        ablation_scores_zeroed,
        variants=(ablation_queries_zeroed,),
    ),
    Mistake(
        "scores_minus_inf",
        "the head's scores are all set to −inf before the softmax: every row of its weights is then 0 / 0 = NaN",
        "Leave the scores alone; make the head's output (weights · values) zero after the softmax, before W_O.",
        ablation_scores_minus_inf,
    ),
    Mistake(
        "zeroed_after_w_o",
        "you zeroed a slice of the layer's output after W_O: W_O has already mixed every head into every feature",
        "Heads are separate only before W_O, in the (batch, num_heads, seq, d_head) tensor of head outputs: zero "
        "the head there, then merge the heads and apply W_O.",
        ablation_after_w_o,
    ),
    Mistake(
        "every_layer",
        "head `head` is switched off in every layer, not only in layer `layer`",
        "Switch the head off in one layer only: compare the layer's index with `layer` inside your loop.",
        ablation_every_layer,
    ),
    Mistake(
        "whole_layer",
        "every head of layer `layer` is switched off, not only head `head`",
        "Zero one slice of the head axis (axis 1 of the head outputs), the one numbered `head`.",
        ablation_whole_layer,
    ),
    Mistake(
        "nothing_switched_off",
        "nothing is switched off: your loss is the whole model's",
        "In layer `layer`, multiply the output of head `head` by 0 (and leave the other heads as they are) before "
        "the heads are merged and W_O applied.",
        ablation_nothing_off,
    ),
    Mistake(
        "loss_over_everything",
        "the loss is averaged over every position, the first half too",
        "Only the repeated half can be predicted by looking back, so only it shows what the head does: keep the "
        "loss columns from half on.",
        ablation_loss_everything,
    ),
    Mistake(
        "loss_over_first_half",
        "the loss is measured on the first half, whose tokens are fresh random draws that no head can predict",
        "The induction head shows in the repeated half: keep the loss columns from half on.",
        ablation_loss_first_half,
    ),
    Mistake(
        "repeat_starts_one_early",
        "the loss also counts column half − 1, which predicts the repeat's first token from the end of the first half",
        "Column t predicts token t + 1. The repeat's first token (position half) is a fresh surprise: nothing before "
        "it says the sequence starts over. The repeated half's predictable columns start at half.",
        ablation_loss_from_half_minus_one,
    ),
    Mistake(
        "repeat_starts_one_late",
        "the loss leaves out column half, the prediction of token half + 1, the first one an induction head can make",
        "Column t predicts token t + 1; keep the columns from half on (predicting tokens half + 1 … 2·half − 1).",
        ablation_loss_from_half_plus_one,
    ),
    Mistake(
        "targets_not_shifted",
        "each position is scored on its own token instead of the next one",
        "The logits at position t predict token t + 1: pair logits[:, :-1] with tokens[:, 1:] (per_token_loss does "
        "this for you).",
        ablation_loss_no_shift,
    ),
]

ABLATION_SPEC = CheckSpec(
    name="check_ablated_repeat_loss",
    function="ablated_repeat_loss",
    arg_names=("model", "tokens", "layer", "head"),
    output=TensorOut("() scalar"),
    cases=[
        Case("a random two-layer model, a head of layer 1", _ablation_case(1101, layer=1, head=1)),
        # the second and third models are drawn apart: whatever the salt, no size is the same in every model
        Case("another random model, a head of layer 0", _ablation_case(1117, layer=0, head=0, ranges=SMALL)),
        Case("a third random model, the last head of layer 1", _ablation_case(1129, layer=1, head=2, ranges=LARGE)),
        Case("the first model again, a head of layer 0", _ablation_case(1101, layer=0, head=1)),
    ],
    mistakes=ABLATION_MISTAKES,
    success=(
        "The head writes zeros and the rest of the model runs as before: compare this loss with the whole model's "
        "to see what the head was doing."
    ),
    extra={"module_args": ("model",)},
)


__all__ = export_checks(globals())  # check_* functions, one per CheckSpec above
