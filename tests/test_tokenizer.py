"""The byte-level BPE tokenizer (course_lib/tokenizer.py): its formulas on small cases, the fast training against
the formulas run as written, and round trips over arbitrary Unicode (hypothesis), on text it saw and text it did not."""

import pydoc_data.topics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib._validate import CourseInputError
from course_lib.tokenizer import (
    decode,
    encode,
    merge_pair,
    merge_pair_in_chunks,
    most_frequent,
    pair_counts,
    pair_counts_in_chunks,
    train_bpe,
    vocabulary,
)

A = ord("a")


def slow_train(text: str, vocab_size: int) -> dict:
    """The module docstring's train, as written: recount every pair after every merge."""
    ids, merges = list(text.encode("utf-8")), {}
    while len(merges) < vocab_size - 256:
        counts = pair_counts(ids)
        if not counts or max(counts.values()) < 2:
            break
        pair = most_frequent(counts)
        merges[pair] = 256 + len(merges)
        ids = merge_pair(ids, pair, merges[pair])
    return merges


def slow_encode(text: str, merges: dict) -> list[int]:
    """Encode by rank as written: while some adjacent pair has a merge, merge the one with the lowest new id."""
    ids = list(text.encode("utf-8"))
    while True:
        present = [pair for pair in zip(ids, ids[1:]) if pair in merges]
        if not present:
            return ids
        pair = min(present, key=merges.get)
        ids = merge_pair(ids, pair, merges[pair])


def test_overlapping_pairs_are_counted_at_every_position_and_merged_once():
    assert pair_counts([A, A, A]) == {(A, A): 2}
    assert merge_pair([A, A, A], (A, A), 256) == [256, A]
    assert merge_pair([A, A, A, A], (A, A), 256) == [256, 256]
    assert merge_pair([1, 2, 3, 1, 2], (1, 2), 300) == [300, 3, 300]


def test_chunks_are_counted_and_merged_each_on_its_own():
    # "hi hi" as GPT-2 splits it: "hi", " hi". The pair (i, space) is adjacent in the text but spans two chunks.
    h, i, space = ord("h"), ord("i"), ord(" ")
    chunks = [[h, i], [space, h, i], [], [A], [A, A, A]]
    assert pair_counts_in_chunks(chunks) == {(h, i): 2, (space, h): 1, (A, A): 2}
    assert (i, space) not in pair_counts_in_chunks(chunks)
    assert pair_counts_in_chunks([]) == {} and pair_counts_in_chunks([[], [A]]) == {}
    assert merge_pair_in_chunks(chunks, (h, i), 256) == [[256], [space, 256], [], [A], [A, A, A]]
    assert merge_pair_in_chunks(chunks, (i, space), 256) == chunks  # never across two chunks
    assert merge_pair_in_chunks(chunks, (A, A), 257)[-1] == [257, A]  # left to right inside a chunk, as merge_pair
    assert merge_pair_in_chunks(chunks, (h, i), 256) is not chunks and chunks[0] == [h, i]  # the input is kept


def test_ties_go_to_the_smallest_pair():
    assert most_frequent({(5, 1): 3, (2, 9): 3, (2, 7): 3, (0, 0): 1}) == (2, 7)
    # in "abcdXabcd" (a, b), (b, c) and (c, d) all occur twice; the smallest is (a, b) = (97, 98)
    merges = train_bpe("abcdXabcd", 257)
    assert list(merges) == [(A, A + 1)]


def test_training_stops_when_no_pair_repeats():
    assert train_bpe("abc", 1000) == {}
    assert train_bpe("", 300) == {}


@pytest.mark.parametrize("length", [2000, 12000])
def test_fast_training_learns_the_same_merges_as_recounting(length):
    text = pydoc_data.topics.topics["if"][:length] + " naïve café 東京 🙂🙂 aaaa"
    assert train_bpe(text, 256 + 80) == slow_train(text, 256 + 80)


def test_fewer_merges_are_the_first_merges_of_more():
    text = pydoc_data.topics.topics["for"]
    small, large = train_bpe(text, 300), train_bpe(text, 400)
    assert list(large.items())[: len(small)] == list(small.items())


def test_long_and_short_encoding_agree_with_the_rank_rule():
    text = pydoc_data.topics.topics["while"] * 2
    merges = train_bpe(text, 256 + 60)
    assert encode(text, merges) == slow_encode(text, merges)  # the long path (linked list)
    for piece in ("while x:", "the else", "aaaa", "é"):
        assert encode(piece, merges) == slow_encode(piece, merges)  # the short path


def test_encode_uses_rank_not_the_frequency_in_the_new_text():
    # learned: (a, b) first, then (b, c). In "abcbc" the pair (b, c) is more frequent, but (a, b) has rank 0.
    merges = {(A, A + 1): 256, (A + 1, A + 2): 257}
    assert encode("abcbc", merges) == [256, A + 2, 257]  # by frequency it would be [a, 257, 257]


def test_decoding_joins_bytes_before_utf8():
    merges = train_bpe("é" * 3 + "xé", 258)  # é is two bytes, c3 a9: tokens may split or join them
    vocab = vocabulary(merges)
    assert all(len(v) >= 1 for v in vocab.values())
    ids = list("é".encode())  # two byte tokens, neither a character on its own
    assert decode(ids, merges) == "é"
    assert decode([0xC3], merges) == "\ufffd"  # half a character: replaced, never an exception


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=80), st.text(max_size=60))
def test_round_trip_on_seen_and_unseen_text(training_text, other_text):
    merges = train_bpe(training_text, 256 + 30)
    for text in (training_text, other_text, training_text + other_text):
        ids = encode(text, merges)
        assert decode(ids, merges) == text
        assert all(0 <= i < 256 + len(merges) for i in ids)
        assert len(ids) <= len(text.encode("utf-8"))


@settings(max_examples=40, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), min_size=70, max_size=300))
def test_round_trip_on_the_long_path(text):
    merges = train_bpe(text, 256 + 40)
    assert decode(encode(text, merges), merges) == text
    assert encode(text, merges) == slow_encode(text, merges)


def test_a_tokenizer_from_python_docs_reads_any_script():
    text = "\n".join(pydoc_data.topics.topics[k] for k in ("if", "for", "while", "try"))
    merges = train_bpe(text, 256 + 100)
    unseen = "Ελληνικά, русский, 中文, हिन्दी, عربى, emoji 🚀👩‍💻, and a NUL \x00."
    assert decode(encode(unseen, merges), merges) == unseen


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: train_bpe(b"bytes", 300), "text must be a str"),
        (lambda: train_bpe("text", 100), "vocab_size must be an int ≥ 256"),
        (lambda: encode("x", {(1, 2): 999}), "merges must map pairs"),
        (lambda: decode([5000], {}), "ids must be between 0 and 255"),
    ],
)
def test_bad_input_gets_a_sentence(call, words):
    with pytest.raises(CourseInputError, match=words):
        call()
