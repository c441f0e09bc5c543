"""Subject–verb agreement across a relative clause: a tiny synthetic grammar (notebook 03).

Every sentence follows one template (parts in brackets are optional)::

    the (adj) (adj) N_subj [near the (adj) N_pp] , which V_past the (adj) (adj) N_clause , [V]

e.g. ``the big dog near the cats , which chased the squirrel , [V]``. The last token ``[V]`` stands for the
main verb ("barks" or "bark"); a model reads the sentence and, at ``[V]``, answers a question about it:

- ``target="subject"``: is the subject singular (0) or plural (1)? That is the verb's agreement.
- ``target="both"`` (default): ``2 * subject_plural + clause_plural``, four classes. The model needs two
  facts at ``[V]``: the number of the subject *and* the number of the noun inside the relative clause.

Nouns carry their number in their form (dog / dogs, mouse / mice). Everything else is number-neutral by
design: the clause verb is in the past tense ("chased"), so the subject noun is the only token that tells
the subject's number. The PP noun and the clause noun get independent random numbers, so they are
*attractors* (Linzen et al., 2016): nouns closer to ``[V]`` that may have the opposite number.
``clause_verb="progressive"`` instead writes "which was chasing" / "which were chasing"; the auxiliary then
agrees with the subject and gives a model a shortcut (a pitfall notebook 03 explains).

Sentences have different lengths and are **left-padded** with ``<pad>`` to ``MAX_LEN`` so that ``[V]`` is
always the last position (read it with ``readout="last"``). The mask marks real tokens ``True``, in the
``(batch, 1, seq)`` shape of ``course_lib.padding_mask``, but with the real tokens at the *end*.

``agreement_batch`` draws random sentences (``agreement_batches`` wraps it for ``train_classifier``),
``encode`` turns hand-written sentences into the same batch format, ``decode`` / ``sentence`` turn ids back
into words for plots.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from ..._validate import CourseInputError
from ...attention import padding_mask

PAD = "<pad>"
FUNCTION_WORDS = ["the", "near", ",", "which", "[V]", "was", "were"]
ADJECTIVES = ["big", "old", "brown", "quick", "noisy", "hungry"]
NOUNS = [
    ("dog", "dogs"),
    ("cat", "cats"),
    ("squirrel", "squirrels"),
    ("bird", "birds"),
    ("fox", "foxes"),
    ("horse", "horses"),
    ("mouse", "mice"),
    ("child", "children"),
]
VERBS_PAST = ["chased", "saw", "followed", "watched", "heard", "found"]
VERBS_ING = ["chasing", "seeing", "following", "watching", "hearing", "finding"]

VOCAB = [PAD] + FUNCTION_WORDS + ADJECTIVES + [form for pair in NOUNS for form in pair] + VERBS_PAST + VERBS_ING
WORD_TO_ID = {word: i for i, word in enumerate(VOCAB)}
VOCAB_SIZE = len(VOCAB)
PAD_ID = WORD_TO_ID[PAD]
VERB_ID = WORD_TO_ID["[V]"]
_ADJ0 = WORD_TO_ID[ADJECTIVES[0]]
_NOUN0 = WORD_TO_ID[NOUNS[0][0]]  # noun k singular is _NOUN0 + 2k, plural _NOUN0 + 2k + 1
_NOUN_FORMS = {form for pair in NOUNS for form in pair}
_PAST0 = WORD_TO_ID[VERBS_PAST[0]]
_ING0 = WORD_TO_ID[VERBS_ING[0]]

MAX_LEN = 18  # the longest sentence: "the adj adj N" 4 + PP 4 + ", which" 2 + "was chasing" 2 + 4 + ", [V]" 2
NUM_CLASSES = {"subject": 2, "both": 4}
CLASS_NAMES = {
    "subject": ["subject singular", "subject plural"],
    "both": ["subj sg · clause sg", "subj sg · clause pl", "subj pl · clause sg", "subj pl · clause pl"],
}


class AgreementBatch(NamedTuple):
    """One batch of sentences. The first three fields are what ``train_classifier`` reads.

    tokens:          ``(batch, MAX_LEN)`` int64 word ids, left-padded with ``PAD_ID``; ``[V]`` is the last token
    targets:         ``(batch,)`` int64 class (see the module docstring)
    mask:            ``(batch, 1, MAX_LEN)`` bool, ``True`` = a real token that may be attended to
    subject_pos:     ``(batch,)`` position of the subject noun in ``tokens``
    clause_pos:      ``(batch,)`` position of the noun inside the relative clause (the object of "chased")
    pp_pos:          ``(batch,)`` position of the noun after "near", ``-1`` if the sentence has no PP
    subject_plural, clause_plural, pp_plural: ``(batch,)`` int64 0/1 (``pp_plural`` is ``-1`` without a PP)
    lengths:         ``(batch,)`` number of real tokens
    num_attractors:  ``(batch,)`` how many nouns between the subject and ``[V]`` have the opposite number (0–2)
    """

    tokens: torch.Tensor
    targets: torch.Tensor
    mask: torch.Tensor
    subject_pos: torch.Tensor
    clause_pos: torch.Tensor
    pp_pos: torch.Tensor
    subject_plural: torch.Tensor
    clause_plural: torch.Tensor
    pp_plural: torch.Tensor
    lengths: torch.Tensor
    num_attractors: torch.Tensor


def left_padding_mask(lengths: torch.Tensor, seq_len: int) -> torch.Tensor:
    """``(batch, 1, seq_len)`` bool, ``True`` for the last ``lengths[b]`` positions (the real tokens).

    ``course_lib.padding_mask`` marks the *first* ``lengths[b]`` positions (padding at the end); with the
    padding at the start the same mask is simply mirrored along the sequence axis.
    """
    return padding_mask(lengths, seq_len).flip(-1)


def agreement_batch(
    batch_size: int,
    generator: torch.Generator,
    target: str = "both",
    pp_prob: float = 0.5,
    clause_verb: str = "past",
) -> AgreementBatch:
    """Draw ``batch_size`` fresh sentences from the seeded ``generator``.

    target:      ``"both"`` (4 classes: subject number × clause-noun number) or ``"subject"`` (2 classes)
    pp_prob:     probability that the subject gets a "near the (adj) N" phrase (a second attractor)
    clause_verb: ``"past"`` (number-neutral, "chased") or ``"progressive"`` ("was/were chasing", the pitfall)
    """
    if target not in NUM_CLASSES:
        raise CourseInputError(f"target must be 'both' or 'subject', got {target!r}")
    if clause_verb not in ("past", "progressive"):
        raise CourseInputError(f"clause_verb must be 'past' or 'progressive', got {clause_verb!r}")
    if not 0.0 <= pp_prob <= 1.0:
        raise CourseInputError(f"pp_prob must lie between 0 and 1, got {pp_prob}")
    b = batch_size

    def rand_int(high):
        return torch.randint(0, high, (b,), generator=generator)

    nouns = torch.rand(b, len(NOUNS), generator=generator).argsort(dim=1)[:, :3]  # three distinct nouns
    adjectives = torch.rand(b, len(ADJECTIVES), generator=generator).argsort(dim=1)[:, :5]  # five distinct adjectives
    plural = torch.randint(0, 2, (b, 3), generator=generator)  # subject, pp noun, clause noun
    n_adj_subject, n_adj_clause = rand_int(3), rand_int(3)
    has_pp = torch.rand(b, generator=generator) < pp_prob
    has_pp_adj = torch.rand(b, generator=generator) < 0.5
    verb = rand_int(len(VERBS_PAST))
    progressive = clause_verb == "progressive"

    def noun_id(k):
        return _NOUN0 + 2 * nouns[:, k] + plural[:, k]

    def word(w):
        return torch.full((b,), WORD_TO_ID[w])

    yes = torch.ones(b, dtype=torch.bool)
    # The sentence template: one slot per possible word, with a flag for "this sentence uses the slot".
    slots = [
        (word("the"), yes),
        (_ADJ0 + adjectives[:, 0], n_adj_subject >= 1),
        (_ADJ0 + adjectives[:, 1], n_adj_subject >= 2),
        (noun_id(0), yes),  # 3: subject
        (word("near"), has_pp),
        (word("the"), has_pp),
        (_ADJ0 + adjectives[:, 2], has_pp & has_pp_adj),
        (noun_id(1), has_pp),  # 7: pp noun
        (word(","), yes),
        (word("which"), yes),
        (torch.where(plural[:, 0] == 1, WORD_TO_ID["were"], WORD_TO_ID["was"]), yes & progressive),
        ((_ING0 if progressive else _PAST0) + verb, yes),
        (word("the"), yes),
        (_ADJ0 + adjectives[:, 3], n_adj_clause >= 1),
        (_ADJ0 + adjectives[:, 4], n_adj_clause >= 2),
        (noun_id(2), yes),  # 15: clause noun
        (word(","), yes),
        (word("[V]"), yes),
    ]
    assert len(slots) == MAX_LEN
    slot_ids = torch.stack([ids for ids, _ in slots], dim=1)  # (batch, MAX_LEN)
    used = torch.stack([flag for _, flag in slots], dim=1)  # (batch, MAX_LEN)
    # Left-pad: a used slot goes to position MAX_LEN - (number of used slots from it to the end).
    used_from_here = used.flip(1).cumsum(1).flip(1)  # (batch, MAX_LEN)
    position = MAX_LEN - used_from_here  # where each used slot lands
    tokens = torch.full((b, MAX_LEN), PAD_ID, dtype=torch.long)
    rows = torch.arange(b)[:, None].expand(b, MAX_LEN)
    tokens[rows[used], position[used]] = slot_ids[used]
    lengths = used.sum(1)

    subject_plural, pp_plural, clause_plural = plural[:, 0], torch.where(has_pp, plural[:, 1], -1), plural[:, 2]
    opposite_pp = has_pp & (pp_plural != subject_plural)
    num_attractors = opposite_pp.long() + (clause_plural != subject_plural).long()
    targets = 2 * subject_plural + clause_plural if target == "both" else subject_plural.clone()
    return AgreementBatch(
        tokens=tokens,
        targets=targets,
        mask=left_padding_mask(lengths, MAX_LEN),
        subject_pos=position[:, 3],
        clause_pos=position[:, 15],
        pp_pos=torch.where(has_pp, position[:, 7], -1),
        subject_plural=subject_plural,
        clause_plural=clause_plural,
        pp_plural=pp_plural,
        lengths=lengths,
        num_attractors=num_attractors,
    )


def agreement_batches(target: str = "both", pp_prob: float = 0.5, clause_verb: str = "past"):
    """A ``make_batch(batch_size, generator)`` for ``course_lib.lab.training.train_classifier``."""

    def make_batch(batch_size: int, generator: torch.Generator) -> AgreementBatch:
        return agreement_batch(batch_size, generator, target=target, pp_prob=pp_prob, clause_verb=clause_verb)

    return make_batch


def encode(sentences, target: str = "both") -> AgreementBatch:
    """Hand-written sentences → an ``AgreementBatch`` (left-padded, masked), e.g. to plot attention on them.

    ``sentences`` is one string or a list of strings following the template, words separated by spaces:
    ``encode("the dog near the cats , which chased the squirrels , [V]")``. The subject is the first noun,
    the PP noun the one after "near", the clause noun the last one.
    """
    if isinstance(sentences, str):
        sentences = [sentences]
    if target not in NUM_CLASSES:
        raise CourseInputError(f"target must be 'both' or 'subject', got {target!r}")
    tokens = torch.full((len(sentences), MAX_LEN), PAD_ID, dtype=torch.long)
    names = ("subject_pos", "clause_pos", "pp_pos", "subject_plural", "clause_plural", "pp_plural", "lengths")
    columns = {name: [] for name in names}
    for row, text in enumerate(sentences):
        words = text.split()
        unknown = [w for w in words if w not in WORD_TO_ID or w == PAD]
        if unknown:
            raise CourseInputError(f"unknown words {unknown}; the vocabulary is agreement.VOCAB")
        if len(words) > MAX_LEN or words[-1] != "[V]":
            raise CourseInputError(f"a sentence must end with '[V]' and have at most {MAX_LEN} words: {text!r}")
        offset = MAX_LEN - len(words)  # left padding
        tokens[row, offset:] = torch.tensor([WORD_TO_ID[w] for w in words])
        # (position in the padded row, 0 singular / 1 plural) of every noun, in sentence order
        nouns = [(offset + i, (WORD_TO_ID[w] - _NOUN0) % 2) for i, w in enumerate(words) if w in _NOUN_FORMS]
        if len(nouns) < 2:
            raise CourseInputError(f"a sentence needs a subject and a clause noun: {text!r}")
        near = offset + words.index("near") if "near" in words else MAX_LEN
        pp = next((noun for noun in nouns[1:-1] if noun[0] > near), (-1, -1))
        for role, (position, plural) in (("subject", nouns[0]), ("clause", nouns[-1]), ("pp", pp)):
            columns[f"{role}_pos"].append(position)
            columns[f"{role}_plural"].append(plural)
        columns["lengths"].append(len(words))
    c = {name: torch.tensor(values) for name, values in columns.items()}
    s, p = c["subject_plural"], c["pp_plural"]
    num_attractors = ((p >= 0) & (p != s)).long() + (c["clause_plural"] != s).long()
    return AgreementBatch(
        tokens=tokens,
        targets=2 * s + c["clause_plural"] if target == "both" else s.clone(),
        mask=left_padding_mask(c["lengths"], MAX_LEN),
        num_attractors=num_attractors,
        **c,
    )


def decode(ids, keep_padding: bool = False) -> list[str]:
    """Word ids ``(seq,)`` → words, e.g. for the axes of an attention plot. Padding is dropped unless asked."""
    words = [VOCAB[int(i)] for i in torch.as_tensor(ids).flatten()]
    return words if keep_padding else [w for w in words if w != PAD]


def sentence(ids) -> str:
    """Word ids ``(seq,)`` → one readable string without padding."""
    return " ".join(decode(ids))
