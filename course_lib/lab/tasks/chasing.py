"""Who did the chasing? A task that only word order can solve (notebook 04).

Every sentence has the same five words, read after a ``[CLS]`` token::

    [CLS] the A V the B          e.g.  [CLS] the cat chased the dog      target: cat

``A`` and ``B`` are two different animals (``NUM_ANIMALS`` = 8), ``V`` one of ``NUM_VERBS`` = 4 verbs, and the answer
is the animal that did it, ``A`` (the subject, before the verb), as a class ``0 .. NUM_ANIMALS - 1``. A model reads its
answer from the ``[CLS]`` position (``TransformerClassifier(..., readout="first")``).

Swap the animals and the answer flips, but the sentence holds the same words: "the cat chased the dog" and "the dog
chased the cat" are the same *set* of tokens. Every ordered pair ``(A, B)`` is drawn as often as ``(B, A)``, so a model
that cannot see word order gives both the same answer and is right for at most one of them: its accuracy cannot
exceed 0.5 (guessing among all 8 animals would give ``CHANCE`` = 1/8).

``chasing_batch`` draws random sentences (``chasing_batches`` wraps it for ``train_classifier``), ``all_sentences``
lists every one of the 8 · 7 · 4 = 224 sentences once, ``encode`` turns hand-written sentences into token ids and
``decode`` / ``sentence`` turn ids back into words.
"""

from __future__ import annotations

import torch

from ..._validate import CourseInputError, check_positive_int

CLS = "[CLS]"
ANIMALS = ["cat", "dog", "mouse", "fox", "bird", "horse", "owl", "goat"]
VERBS = ["chased", "saw", "bit", "followed"]
VOCAB = [CLS, "the"] + ANIMALS + VERBS
WORD_TO_ID = {word: i for i, word in enumerate(VOCAB)}
VOCAB_SIZE = len(VOCAB)
NUM_ANIMALS = len(ANIMALS)
NUM_VERBS = len(VERBS)
NUM_CLASSES = NUM_ANIMALS  # the answer is one of the animals
SEQ_LEN = 6  # [CLS] the A V the B
CHANCE = 1.0 / NUM_ANIMALS  # guessing among all animals
ORDER_BLIND_CEILING = 0.5  # the best a model that ignores word order can do
SUBJECT_POS, VERB_POS, OBJECT_POS = 2, 3, 5  # where A, V and B stand in the token sequence
CLS_ID = WORD_TO_ID[CLS]
THE_ID = WORD_TO_ID["the"]
_ANIMAL0 = WORD_TO_ID[ANIMALS[0]]  # animal k has id _ANIMAL0 + k
_VERB0 = WORD_TO_ID[VERBS[0]]  # verb k has id _VERB0 + k


def _sentences(subject: torch.Tensor, verb: torch.Tensor, obj: torch.Tensor) -> torch.Tensor:
    """Animal and verb indices ``(batch,)`` each → token ids ``(batch, SEQ_LEN)``."""
    tokens = torch.empty(len(subject), SEQ_LEN, dtype=torch.long)
    tokens[:, 0] = CLS_ID
    tokens[:, 1] = THE_ID
    tokens[:, SUBJECT_POS] = _ANIMAL0 + subject
    tokens[:, VERB_POS] = _VERB0 + verb
    tokens[:, 4] = THE_ID
    tokens[:, OBJECT_POS] = _ANIMAL0 + obj
    return tokens


def chasing_batch(batch_size: int, generator: torch.Generator, return_roles: bool = False):
    """Draw ``batch_size`` random sentences "[CLS] the A V the B" from the seeded ``generator``.

    Returns ``(tokens, targets)``: tokens ``(batch, SEQ_LEN)`` int64 word ids; targets ``(batch,)`` int64, the index
    in ``ANIMALS`` of the subject ``A``. With ``return_roles`` also ``objects`` ``(batch,)``, the index of ``B``
    (always different from ``A``). The ordered pair ``(A, B)`` is uniform over all 8 · 7 pairs, so ``(A, B)`` and
    ``(B, A)`` are equally likely. The same ``generator`` state gives the same batch.
    """
    check_positive_int("batch_size", batch_size)
    if not isinstance(generator, torch.Generator):
        raise CourseInputError(
            f"generator must be a torch.Generator, e.g. torch.Generator().manual_seed(0), got {type(generator).__name__}"
        )
    subject = torch.randint(0, NUM_ANIMALS, (batch_size,), generator=generator)
    # a different animal: shift by 1 .. NUM_ANIMALS - 1 places around the circle of animals
    obj = (subject + torch.randint(1, NUM_ANIMALS, (batch_size,), generator=generator)) % NUM_ANIMALS
    verb = torch.randint(0, NUM_VERBS, (batch_size,), generator=generator)
    tokens = _sentences(subject, verb, obj)  # (batch, SEQ_LEN)
    if return_roles:
        return tokens, subject, obj
    return tokens, subject


def chasing_batches():
    """A ``make_batch(batch_size, generator)`` for ``course_lib.lab.training.train_classifier``: fresh sentences per call."""

    def make_batch(batch_size: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        return chasing_batch(batch_size, generator)

    return make_batch


def all_sentences() -> tuple[torch.Tensor, torch.Tensor]:
    """Every sentence exactly once: ``(tokens, targets)``, tokens ``(224, SEQ_LEN)``, targets ``(224,)``.

    Row ``r`` and row ``swapped_rows()[r]`` hold the same animals and verb in the opposite roles, so the set is
    perfectly balanced: each sentence's mirror image is in it too.
    """
    subject, obj, verb = _all_roles()
    return _sentences(subject, verb, obj), subject.clone()


def _all_roles() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    grid = torch.cartesian_prod(torch.arange(NUM_ANIMALS), torch.arange(NUM_ANIMALS), torch.arange(NUM_VERBS))
    grid = grid[grid[:, 0] != grid[:, 1]]  # (224, 3): subject, object, verb with subject ≠ object
    return grid[:, 0], grid[:, 1], grid[:, 2]


def swapped_rows() -> torch.Tensor:
    """``(224,)``: for each row of ``all_sentences()``, the row of the same sentence with the animals swapped."""
    subject, obj, verb = _all_roles()
    index = {(s, o, v): row for row, (s, o, v) in enumerate(zip(subject.tolist(), obj.tolist(), verb.tolist()))}
    return torch.tensor([index[(o, s, v)] for s, o, v in zip(subject.tolist(), obj.tolist(), verb.tolist())])


def encode(sentences) -> tuple[torch.Tensor, torch.Tensor]:
    """Hand-written sentences → ``(tokens, targets)``, tokens ``(n, SEQ_LEN)`` and targets ``(n,)``.

    ``sentences`` is one string or a list of strings "the A V the B" (the ``[CLS]`` token is added for you), e.g.
    ``encode(["the cat chased the dog", "the dog chased the cat"])``.
    """
    if isinstance(sentences, str):
        sentences = [sentences]
    if not isinstance(sentences, (list, tuple)) or not all(isinstance(s, str) for s in sentences):
        raise CourseInputError(f"sentences must be a string or a list of strings, got {type(sentences).__name__}")
    rows, targets = [], []
    for text in sentences:
        words = text.lower().split()
        if words[:1] == [CLS.lower()]:
            words = words[1:]
        ok = (
            len(words) == 5
            and words[0] == words[3] == "the"
            and words[1] in ANIMALS
            and words[2] in VERBS
            and words[4] in ANIMALS
            and words[1] != words[4]
        )
        if not ok:
            raise CourseInputError(
                f"a sentence must read 'the A V the B' with two different animals from {ANIMALS} and a verb from "
                f"{VERBS}, got {text!r}"
            )
        rows.append([CLS_ID] + [WORD_TO_ID[w] for w in words])
        targets.append(ANIMALS.index(words[1]))
    return torch.tensor(rows), torch.tensor(targets)


def decode(ids) -> list[str]:
    """Word ids ``(seq,)`` → words, e.g. for the axes of a plot."""
    return [VOCAB[int(i)] for i in torch.as_tensor(ids).flatten()]


def sentence(ids) -> str:
    """Word ids ``(seq,)`` → one readable string without the ``[CLS]`` token."""
    return " ".join(w for w in decode(ids) if w != CLS)
