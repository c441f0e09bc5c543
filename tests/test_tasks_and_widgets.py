"""The small tasks of notebooks 02, 03 and 06 (video search, agreement, first token) and the video-search widget."""

import pytest
import torch

from course_lib._validate import CourseInputError
from course_lib.lab.tasks import agreement, first_token, video_search
from course_lib.lab.widgets import VideoSearchWidget, describe, search

# --------------------------------------------------------------------------- first token (notebook 06)


def test_first_token_puts_the_answer_at_position_zero_and_distractors_after():
    tokens, targets = first_token.first_token(64, 20, torch.Generator().manual_seed(0))
    assert tokens.shape == (64, 21) and targets.shape == (64,)
    assert torch.equal(tokens[:, 0], targets)
    assert (tokens[:, 0] < first_token.NUM_CLASSES).all()
    assert (tokens[:, 1:] >= first_token.NUM_CLASSES).all() and (tokens[:, 1:] < first_token.VOCAB_SIZE).all()
    assert len(set(targets.tolist())) > 4, "the classes vary across the batch"


def test_first_token_is_seeded_and_batches_cycle_through_lengths():
    a = first_token.first_token(8, 5, torch.Generator().manual_seed(3))
    b = first_token.first_token(8, 5, torch.Generator().manual_seed(3))
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    make_batch = first_token.first_token_batches((3, 7))
    generator = torch.Generator().manual_seed(0)
    assert [make_batch(4, generator)[0].shape[1] for _ in range(4)] == [4, 8, 4, 8]
    assert first_token.token_names(torch.tensor([2, first_token.NUM_CLASSES + 5])) == ["C2", "d5"]


@pytest.mark.parametrize(
    "call",
    [
        lambda: first_token.first_token(0, 5, torch.Generator()),
        lambda: first_token.first_token(4, 5, generator=0),
        lambda: first_token.first_token_batches(()),
    ],
)
def test_first_token_bad_input_is_explained(call):
    with pytest.raises(CourseInputError):
        call()


# --------------------------------------------------------------------------- agreement (notebook 03)


def test_agreement_targets_follow_the_subject_and_the_clause_noun():
    batch = agreement.agreement_batch(256, torch.Generator().manual_seed(0), target="both")
    assert batch.tokens.shape == (256, agreement.MAX_LEN) and batch.mask.shape == (256, 1, agreement.MAX_LEN)
    rows = torch.arange(256)
    assert (batch.tokens[:, -1] == agreement.VERB_ID).all(), "every sentence ends with the verb slot"
    assert torch.equal(batch.mask[:, 0].sum(-1), batch.lengths)
    assert (batch.tokens[~batch.mask[:, 0]] == agreement.PAD_ID).all(), "the padding is masked out"
    assert torch.equal(batch.targets, 2 * batch.subject_plural + batch.clause_plural)
    subject_words = agreement.decode(batch.tokens[rows, batch.subject_pos])
    for word, plural in zip(subject_words, batch.subject_plural.tolist()):
        singular_form, plural_form = next(pair for pair in agreement.NOUNS if word in pair)
        assert word == (plural_form if plural else singular_form)
    assert set(batch.num_attractors.tolist()) <= {0, 1, 2} and len(set(batch.targets.tolist())) == 4


def test_agreement_encode_decode_round_trip_and_bad_target():
    batch = agreement.agreement_batch(4, torch.Generator().manual_seed(1), target="subject")
    assert set(batch.targets.tolist()) <= {0, 1}
    text = agreement.sentence(batch.tokens[0])
    assert "<pad>" not in text and text.endswith("[V]")
    with pytest.raises(CourseInputError, match="target"):
        agreement.agreement_batch(4, torch.Generator(), target="verb")


# --------------------------------------------------------------------------- video search (notebook 02)


def test_video_database_keys_count_matching_concepts_and_values_are_screen_time():
    keys, values = video_search.key_vectors(), video_search.value_vectors()
    assert keys.shape[0] == values.shape[0] == len(video_search.VIDEOS)
    assert torch.allclose(values.sum(-1), torch.ones(len(video_search.VIDEOS)))
    query = video_search.encode_query("Cats jumping!")
    assert query.sum() == 2 and video_search.unknown_words("cats jumping in space") == ["in", "space"]
    scores = keys @ query
    best = video_search.TITLES[int(scores.argmax())]
    assert scores.max() == 2 and "cat" in best.lower() and "jump" in best.lower()


def test_search_blends_values_and_temperature_moves_between_hard_and_uniform():
    sharp, soft = search("cats jumping", temperature=0.01), search("cats jumping", temperature=100.0)
    assert torch.allclose(sharp["weights"], sharp["hard"], atol=1e-3), "T → 0 gives the hard lookup back"
    uniform = torch.full_like(soft["weights"], 1 / len(video_search.VIDEOS))
    assert torch.allclose(soft["weights"], uniform, atol=1e-2), "T → ∞ gives a uniform average"
    assert torch.allclose(sharp["output"], sharp["weights"] @ video_search.value_vectors())
    assert describe(sharp).strip(), "the playlist reads as text"
    with pytest.raises(CourseInputError, match="temperature"):
        search("cats", temperature=0)


def test_video_widget_updates_when_the_controls_change():
    widget = VideoSearchWidget()
    first = widget.result["weights"].clone()
    assert [output["output_type"] for output in widget.output.outputs] == ["display_data", "stream"]
    widget.temperature.value = 0.05
    assert not torch.allclose(widget.result["weights"], first), "moving the slider re-runs the search"
    widget.examples.value = "cooking"
    assert widget.query_box.value == "cooking" and "food" in widget.result["concepts"]
    assert "Pasta" in widget.text.splitlines()[1], "the playlist shows the best match first"
    widget.query_box.value = "rockets"
    assert widget.examples.value != "rockets" and "in Jupyter" in repr(widget)
