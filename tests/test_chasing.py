"""The "who did the chasing?" task of notebook 04: sentences, labels, balance of the two word orders, seeding, errors."""

import pytest
import torch

from course_lib._validate import CourseInputError
from course_lib.lab.tasks import chasing
from course_lib.lab.tasks.chasing import (
    ANIMALS,
    NUM_ANIMALS,
    NUM_VERBS,
    OBJECT_POS,
    SEQ_LEN,
    SUBJECT_POS,
    VERB_POS,
    VERBS,
    VOCAB_SIZE,
    all_sentences,
    chasing_batch,
    chasing_batches,
    decode,
    encode,
    sentence,
    swapped_rows,
)
from course_lib.lab.training import evaluate_accuracy


def animal_index(ids: torch.Tensor) -> torch.Tensor:
    return ids - chasing.WORD_TO_ID[ANIMALS[0]]


def test_shapes_dtypes_and_the_sentence_template():
    tokens, targets = chasing_batch(300, torch.Generator().manual_seed(0))
    assert tokens.shape == (300, SEQ_LEN) and targets.shape == (300,)
    assert tokens.dtype == torch.long and targets.dtype == torch.long
    assert tokens.min() >= 0 and tokens.max() < VOCAB_SIZE
    assert torch.equal(targets, animal_index(tokens[:, SUBJECT_POS])), "the answer is the animal before the verb"
    for row in tokens:
        words = decode(row)
        assert words[0] == chasing.CLS and words[1] == words[4] == "the"
        assert words[SUBJECT_POS] in ANIMALS and words[OBJECT_POS] in ANIMALS and words[VERB_POS] in VERBS
        assert words[SUBJECT_POS] != words[OBJECT_POS], "the two animals must differ"


def test_the_label_is_the_animal_before_the_verb():
    tokens, targets, objects = chasing_batch(500, torch.Generator().manual_seed(1), return_roles=True)
    assert torch.equal(targets, animal_index(tokens[:, SUBJECT_POS]))
    assert torch.equal(objects, animal_index(tokens[:, OBJECT_POS]))
    assert (targets != objects).all()
    assert targets.min() >= 0 and targets.max() < NUM_ANIMALS


def test_hand_written_sentences_get_the_subject_as_label():
    tokens, targets = encode(["the cat chased the dog", "the dog chased the cat", "[CLS] the owl saw the goat"])
    assert targets.tolist() == [ANIMALS.index("cat"), ANIMALS.index("dog"), ANIMALS.index("owl")]
    assert sentence(tokens[0]) == "the cat chased the dog"
    assert sentence(tokens[2]) == "the owl saw the goat"
    assert torch.equal(tokens[1], tokens[0][[0, 1, 5, 3, 4, 2]]), "swapping the animals permutes the tokens"


def test_both_orders_of_a_pair_are_equally_likely():
    tokens, subjects, objects = chasing_batch(56_000, torch.Generator().manual_seed(2), return_roles=True)
    counts = torch.zeros(NUM_ANIMALS, NUM_ANIMALS)
    counts.index_put_((subjects, objects), torch.ones(len(subjects)), accumulate=True)
    assert counts.diagonal().sum() == 0
    off_diagonal = counts[~torch.eye(NUM_ANIMALS, dtype=torch.bool)]
    # each of the 56 ordered pairs: expected 1000 draws, binomial sd ≈ 31; allow 5 sd
    assert (off_diagonal - 1000).abs().max() < 160, off_diagonal
    # (A, B) against (B, A): the difference of two such counts has sd ≈ 44
    assert (counts - counts.T).abs().max() < 220
    subject_first = (subjects < objects).float().mean().item()
    assert abs(subject_first - 0.5) < 0.01, "the lower-numbered animal is the subject half of the time"
    verbs = tokens[:, VERB_POS] - chasing.WORD_TO_ID[VERBS[0]]
    assert (torch.bincount(verbs, minlength=NUM_VERBS).float() / len(verbs) - 1 / NUM_VERBS).abs().max() < 0.01


def test_all_sentences_are_every_sentence_once_with_its_mirror():
    tokens, targets = all_sentences()
    assert tokens.shape == (NUM_ANIMALS * (NUM_ANIMALS - 1) * NUM_VERBS, SEQ_LEN) == (224, 6)
    assert len({tuple(row) for row in tokens.tolist()}) == 224, "no sentence twice"
    assert torch.equal(targets, animal_index(tokens[:, SUBJECT_POS]))
    mirror = swapped_rows()
    assert sorted(mirror.tolist()) == list(range(224)) and (mirror != torch.arange(224)).all()
    assert torch.equal(mirror[mirror], torch.arange(224)), "the mirror of the mirror is the sentence itself"
    assert torch.equal(tokens[mirror], tokens[:, [0, 1, 5, 3, 4, 2]]), "the mirror swaps the two animals"


def test_seeded_batches_are_reproducible_and_fresh():
    first = chasing_batch(64, torch.Generator().manual_seed(7))
    again = chasing_batch(64, torch.Generator().manual_seed(7))
    assert all(torch.equal(a, b) for a, b in zip(first, again))
    generator = torch.Generator().manual_seed(7)
    make_batch = chasing_batches()
    one, two = make_batch(64, generator), make_batch(64, generator)
    assert torch.equal(one[0], first[0]), "make_batch draws from the generator it is given"
    assert not torch.equal(one[0], two[0]), "each call draws a fresh batch"


def test_an_order_blind_answer_scores_exactly_one_half_on_the_balanced_set():
    """Any rule that sees only the set of words gives a sentence and its mirror the same answer: at best 0.5."""

    class SetOfWords(torch.nn.Module):
        # answers with the animal of the lower id in the sentence, whatever the order
        def forward(self, tokens):
            animals = tokens[:, [SUBJECT_POS, OBJECT_POS]].sort(dim=1).values[:, 0]
            return torch.nn.functional.one_hot(animal_index(animals), NUM_ANIMALS).float()

    model = SetOfWords()
    model.dummy = torch.nn.Parameter(torch.zeros(1))  # evaluate_accuracy reads the device from a parameter
    assert evaluate_accuracy(model, all_sentences()) == 0.5


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: chasing_batch(0, torch.Generator()), "batch_size must be a positive whole number"),
        (lambda: chasing_batch(2.5, torch.Generator()), "batch_size must be a positive whole number"),
        (lambda: chasing_batch(4, 0), "generator must be a torch.Generator"),
        (lambda: encode("the cat chased the cat"), "two different animals"),
        (lambda: encode("the cat chased"), "'the A V the B'"),
        (lambda: encode("the unicorn chased the dog"), "'the A V the B'"),
        (lambda: encode(42), "sentences must be a string or a list of strings"),
    ],
)
def test_bad_input_gets_a_friendly_error(call, message):
    with pytest.raises(CourseInputError, match=message):
        call()
