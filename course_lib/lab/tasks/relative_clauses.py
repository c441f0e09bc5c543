"""A corpus of sentences whose main verb agrees with a subject far behind it (notebook 08's language model).

The sentences come from a small grammar (parts in brackets are optional, ``|`` separates choices)::

    sentence = the [adj] SUBJECT [clause] VERB [adverb] .
    clause   = , which CLAUSE_VERB the [adj] NOUN [pp] [pp] ,        a subject relative: "which chased the owls"
             | , which the [adj] NOUN [pp] CLAUSE_VERB ,             an object relative: "which the owls chased"
    pp       = PREPOSITION the [adj] PLACE                           "near the barns"

e.g. ``the young fox , which chased the owls beside the fences , hides quietly .`` The main verb is in the
present tense and agrees with the subject (``hides`` / ``hide``); the clause verb is in the past tense, so it
carries no number. The subject noun is therefore the *only* word that tells which form comes; between it and the
verb sit up to 15 tokens of clause, whose nouns (*attractors*) may have the other number. The word just before the
verb is always the closing comma, so a bigram model, which sees one word back, cannot tell the forms apart. The
animals inside a clause (owls, ponies, hens, mice) never head a sentence, so "the first animal" is the subject.

``Vocabulary`` maps words to ids (``<pad>`` is 0, ``<bos>`` starts every sentence). ``RelativeClauseCorpus``
draws sentences with a seeded ``random.Random`` and splits them into train and validation (no validation sentence occurs
in train). ``agreement_items`` yields the test: a prefix up to the verb, the agreeing and the non-agreeing form.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from typing import NamedTuple

import torch

from ..._validate import CourseInputError

PAD, BOS = "<pad>", "<bos>"
FUNCTION_WORDS = ["the", ",", "which", "."]
ADJECTIVES = ["small", "grey", "young", "clever", "tired"]
SUBJECTS = [("dog", "dogs"), ("fox", "foxes"), ("goose", "geese"), ("wolf", "wolves"), ("rabbit", "rabbits")]
CLAUSE_ANIMALS = [("owl", "owls"), ("pony", "ponies"), ("hen", "hens"), ("mouse", "mice")]  # never subjects
PLACES = [("barn", "barns"), ("tree", "trees"), ("river", "rivers"), ("fence", "fences")]
PREPOSITIONS = ["near", "behind", "beside", "under"]
CLAUSE_VERBS = ["chased", "watched", "followed", "scared", "found"]  # past tense: no number
VERBS = [("barks", "bark"), ("sleeps", "sleep"), ("runs", "run"), ("waits", "wait"), ("hides", "hide")]  # (sg, pl)
ADVERBS = ["loudly", "quietly", "again", "today"]

ANIMALS = SUBJECTS + CLAUSE_ANIMALS


class Vocabulary:
    """Words ↔ ids. ``encode("the dog barks")`` → ids; ``decode(ids)`` → the words joined by spaces."""

    def __init__(self, words: Sequence[str]):
        if len(set(words)) != len(words):
            raise CourseInputError("a vocabulary lists every word once")
        self.words = list(words)
        self.ids = {word: i for i, word in enumerate(self.words)}

    def __len__(self) -> int:
        return len(self.words)

    def __getitem__(self, word: str) -> int:
        return self.id(word)

    def id(self, word: str) -> int:
        if word not in self.ids:
            raise CourseInputError(f"{word!r} is not in the vocabulary; known words include {self.words[2:12]}")
        return self.ids[word]

    def encode(self, text: str | Sequence[str]) -> list[int]:
        """A sentence (a string split at spaces, or a list of words) → a list of ids."""
        return [self.id(word) for word in (text.split() if isinstance(text, str) else text)]

    def decode(self, ids) -> str:
        """ids (a list or a 1-D tensor) → the words, joined by spaces; padding is left out."""
        ids = ids.tolist() if isinstance(ids, torch.Tensor) else list(ids)
        return " ".join(self.words[i] for i in ids if i != self.pad_id)

    @property
    def pad_id(self) -> int:
        return self.ids[PAD]

    @property
    def bos_id(self) -> int:
        return self.ids[BOS]


def _forms(pairs) -> list[str]:
    return [form for pair in pairs for form in pair]


VOCAB = Vocabulary(
    [PAD, BOS]
    + FUNCTION_WORDS
    + ADJECTIVES
    + _forms(ANIMALS)
    + _forms(PLACES)
    + PREPOSITIONS
    + CLAUSE_VERBS
    + _forms(VERBS)
    + ADVERBS
)
MAX_LEN = 24  # the longest sentence has 23 tokens with <bos>


class Sentence(NamedTuple):
    """One generated sentence: its words (``<bos>`` first), where the subject and the main verb stand, the verb's
    pair of forms (singular, plural), whether the subject is plural, and the number of every clause noun."""

    words: list[str]
    subject_index: int
    verb_index: int
    verb_pair: tuple[str, str]
    plural: bool
    clause_plurals: list[bool]


def _choice(options, rng: random.Random):
    return options[rng.randrange(len(options))]


def _coin(p: float, rng: random.Random) -> bool:
    return rng.random() < p


def _noun_phrase(pairs, plural: bool, rng: random.Random) -> list[str]:
    adjective = [_choice(ADJECTIVES, rng)] if _coin(0.3, rng) else []
    return ["the", *adjective, _choice(pairs, rng)[int(plural)]]


def random_sentence(
    rng: random.Random,
    clause_probability: float = 0.8,
    attractor_plural: bool | None = None,
    plural: bool | None = None,
    min_pps: int = 0,
) -> Sentence:
    """Draw one sentence from the grammar with ``rng = random.Random(seed)`` (fast, and the same on every machine).

    ``plural`` fixes the subject's number (default: a fair coin). ``attractor_plural`` fixes the number of every
    noun in the clause (default: a coin for each). ``min_pps`` forces at least that many prepositional phrases
    into the clause (0-2), which makes the clause longer.
    """
    plural = _coin(0.5, rng) if plural is None else plural
    words = [BOS, *_noun_phrase(SUBJECTS, plural, rng)]
    subject_index = len(words) - 1
    clause_plurals: list[bool] = []

    def noun_number() -> bool:
        number = _coin(0.5, rng) if attractor_plural is None else attractor_plural
        clause_plurals.append(number)
        return number

    if min_pps > 0 or _coin(clause_probability, rng):
        n_pps = min_pps + rng.randrange(3 - min_pps)
        words += [",", "which"]
        if _coin(0.5, rng):  # subject relative: which chased the owls (near the barns)
            words += [_choice(CLAUSE_VERBS, rng), *_noun_phrase(CLAUSE_ANIMALS, noun_number(), rng)]
            for _ in range(n_pps):
                words += [_choice(PREPOSITIONS, rng), *_noun_phrase(PLACES, noun_number(), rng)]
        else:  # object relative: which the owls (near the barns) chased
            words += _noun_phrase(CLAUSE_ANIMALS, noun_number(), rng)
            for _ in range(min(n_pps, 1)):
                words += [_choice(PREPOSITIONS, rng), *_noun_phrase(PLACES, noun_number(), rng)]
            words += [_choice(CLAUSE_VERBS, rng)]
        words += [","]
    verb_pair = _choice(VERBS, rng)
    verb_index = len(words)
    words += [verb_pair[int(plural)]]
    if _coin(0.5, rng):
        words += [_choice(ADVERBS, rng)]
    words += ["."]
    return Sentence(words, subject_index, verb_index, verb_pair, plural, clause_plurals)


def pad_batch(sequences: Sequence[Sequence[int]], length: int | None = None, pad_id: int = 0) -> torch.Tensor:
    """Lists of ids → ``(batch, length)`` long tensor, right-padded with ``pad_id`` (default: the longest)."""
    length = max(len(s) for s in sequences) if length is None else length
    batch = torch.full((len(sequences), length), pad_id, dtype=torch.long)
    for row, sequence in enumerate(sequences):
        batch[row, : len(sequence)] = torch.as_tensor(sequence, dtype=torch.long)
    return batch


class RelativeClauseCorpus:
    """``n_sentences`` sentences drawn with ``random.Random(seed)``, split into train and validation.

    ``train`` and ``validation`` are lists of id lists (``<bos>`` first, ``.`` last); a validation sentence that
    also occurs in train is dropped, so validation measures generalisation, not memory. ``batch(batch_size,
    generator)`` draws a random ``(batch, MAX_LEN)`` training batch, right-padded with ``<pad>`` (id 0).
    """

    def __init__(self, n_sentences: int = 6000, seed: int = 0, validation_fraction: float = 0.1):
        if not 0 < validation_fraction < 1:
            raise CourseInputError(f"validation_fraction must lie in (0, 1), got {validation_fraction}")
        self.vocab = VOCAB
        rng = random.Random(seed)
        sentences = [random_sentence(rng) for _ in range(n_sentences)]
        n_validation = max(1, round(validation_fraction * n_sentences))
        self.train = [VOCAB.encode(s.words) for s in sentences[n_validation:]]
        seen = {tuple(ids) for ids in self.train}
        self.validation = [
            VOCAB.encode(s.words) for s in sentences[:n_validation] if tuple(VOCAB.encode(s.words)) not in seen
        ]

    def batch(self, batch_size: int, generator: torch.Generator) -> torch.Tensor:
        rows = torch.randint(len(self.train), (batch_size,), generator=generator).tolist()
        return pad_batch([self.train[row] for row in rows], MAX_LEN, VOCAB.pad_id)

    def validation_batch(self) -> torch.Tensor:
        """Every validation sentence, ``(n_validation, MAX_LEN)``."""
        return pad_batch(self.validation, MAX_LEN, VOCAB.pad_id)

    def text(self, split: str = "train", n: int = 5) -> list[str]:
        """The first ``n`` sentences of a split, as text."""
        return [VOCAB.decode(ids[1:]) for ids in getattr(self, split)[:n]]


class AgreementItem(NamedTuple):
    """A test of agreement: ``prefix`` ids up to (not including) the verb, the ids of the ``agreeing`` and the
    ``wrong`` verb form, and where the subject stands in the prefix."""

    prefix: list[int]
    agreeing: int
    wrong: int
    subject_index: int


def agreement_items(n: int, seed: int = 1, attractors: bool = True, min_pps: int = 0) -> Iterator[AgreementItem]:
    """Yield ``n`` agreement tests, each with a relative clause between the subject and the verb.

    With ``attractors`` every noun in the clause has the number opposite to the subject's, so the nearest noun
    points to the wrong form. Half the subjects are singular. ``min_pps`` makes the clauses longer.
    """
    rng = random.Random(f"agreement-{seed}")  # a stream of its own: never the corpus's sentences in the same order
    for i in range(n):
        plural = bool(i % 2)
        s = random_sentence(
            rng, plural=plural, attractor_plural=(not plural) if attractors else None, min_pps=max(min_pps, 0)
        )
        while "which" not in s.words:  # only sentences with a clause test long-range agreement
            s = random_sentence(rng, plural=plural, attractor_plural=(not plural) if attractors else None)
        singular, plural_form = s.verb_pair
        agreeing, wrong = (plural_form, singular) if plural else (singular, plural_form)
        yield AgreementItem(VOCAB.encode(s.words[: s.verb_index]), VOCAB[agreeing], VOCAB[wrong], s.subject_index)


def agreement_batch(items: Sequence[AgreementItem]) -> dict[str, torch.Tensor]:
    """Items → tensors: ``tokens`` ``(n, longest prefix)`` right-padded, ``last`` (index of each prefix's last
    token), ``agreeing``, ``wrong`` and ``subject`` ``(n,)``."""
    return {
        "tokens": pad_batch([item.prefix for item in items], pad_id=VOCAB.pad_id),
        "last": torch.tensor([len(item.prefix) - 1 for item in items]),
        "agreeing": torch.tensor([item.agreeing for item in items]),
        "wrong": torch.tensor([item.wrong for item in items]),
        "subject": torch.tensor([item.subject_index for item in items]),
    }


@torch.no_grad()
def agreement_accuracy(model, items: Sequence[AgreementItem]) -> float:
    """The share of items where ``model(tokens)`` (logits ``(batch, seq, vocab)``) scores the agreeing form above
    the wrong one at the last prefix position. Chance is 0.5."""
    batch = agreement_batch(items)
    logits = model(batch["tokens"])  # (n, seq, vocab); right padding never reaches earlier positions
    last = logits[torch.arange(len(items)), batch["last"]]  # (n, vocab)
    rows = torch.arange(len(items))
    return (last[rows, batch["agreeing"]] > last[rows, batch["wrong"]]).float().mean().item()
