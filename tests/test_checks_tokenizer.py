"""Exercise 11's checks name the classic tokenizer mistakes of issue 45 at every salt, and the inputs hold what makes
them visible: runs of one id, chunks (words) with a pair across two of them, empty and one-id chunks, multi-byte
characters split over tokens, merges whose order matters. Notebook 11's own count_pairs and merge (on one list of
ids) do not pass the exercise, which gives them chunks.

The adversarial suite grades each learner solution once, at a fresh salt; here the classic ones (written as learners
write them, in tests/adversarial/ex11_tokenizer.py) are graded at twenty fixed salts each.
"""

from __future__ import annotations

import pytest
from adversarial import ex11_tokenizer as learners

from course_lib.checks import CHECKS, SPECS
from course_lib.checks.spec import salt_scope
from course_lib.tokenizer import merge_pair, pair_counts

SALTS = range(20)

CLASSIC = [
    ("check_pair_counts", learners.pair_counts_pasted_from_the_lesson, "chunks_as_ids"),
    ("check_pair_counts", learners.pairs_lesson_after_joining, "counted_across_chunks"),
    ("check_pair_counts", learners.pairs_dict_update, "counts_replaced"),
    ("check_pair_counts", learners.pairs_a_run_holds_one_pair, "overlaps_counted_once"),
    ("check_pair_counts", learners.pairs_in_steps_of_two, "every_other_pair"),
    ("check_pair_counts", learners.pairs_range_stops_early, "last_pair_missed"),
    ("check_merge_pair", learners.merge_pair_pasted_from_the_lesson, "chunks_as_ids"),
    ("check_merge_pair", learners.merge_lesson_after_joining, "chunks_joined"),
    ("check_merge_pair", learners.merge_one_stream_with_chunk_numbers, "merged_across_chunks"),
    ("check_merge_pair", learners.merge_skips_empty_chunks, "empty_chunks_dropped"),
    ("check_merge_pair", learners.merge_every_position, "overlaps_merged"),
    ("check_merge_pair", learners.merge_steps_one, "second_token_kept"),
    ("check_merge_pair", learners.merge_loop_to_the_last_pair, "last_token_dropped"),
    ("check_most_frequent", learners.frequent_max_on_count_and_pair, "ties_to_largest"),
    ("check_most_frequent", learners.frequent_max_by_get, "ties_to_first_seen"),
    ("check_most_frequent", learners.frequent_most_common, "ties_to_first_seen"),
    ("check_most_frequent", learners.frequent_b_then_a, "ties_b_first"),
    ("check_most_frequent", learners.frequent_the_count, "count_not_pair"),
    ("check_most_frequent", learners.frequent_min_by_get, "least_frequent"),
    ("check_most_frequent", learners.frequent_max_of_the_dict, "max_of_pairs"),
    ("check_bpe_encode", learners.encode_most_frequent_first, "by_frequency"),
    ("check_bpe_encode", learners.encode_sorted_merges, "sorted_by_pair"),
    ("check_bpe_encode", learners.encode_characters, "code_points"),
    ("check_bpe_decode", learners.decode_each_token_replace, "token_by_token"),
    ("check_bpe_decode", learners.decode_each_token_strict, "token_by_token"),
    ("check_bpe_decode", learners.decode_whole_strict, "strict_utf8"),
]


@pytest.mark.parametrize(("check", "function", "key"), CLASSIC, ids=[f"{c}:{f.__name__}" for c, f, _ in CLASSIC])
def test_a_classic_mistake_is_named_at_every_salt(check, function, key):
    title = next(m.title for m in SPECS[check].mistakes if m.key == key)
    for salt in SALTS:
        with salt_scope(salt):
            result = CHECKS[check](function, verbose=False)
        assert not result.passed and result.mistake == key, (salt, result.message)
        assert title in result.message


def test_every_decode_case_that_is_utf8_splits_a_character_over_tokens():
    """Decoding token by token differs from decoding once on every case, at every salt: a character is split."""
    from course_lib.checks.tokenizer import decode_token_by_token

    for salt in SALTS:
        with salt_scope(salt):
            for case in SPECS["check_bpe_decode"].cases:
                args, expected = case.build()
                assert decode_token_by_token(*args) != expected, (salt, case.label)


def test_the_cases_hold_runs_pairs_in_both_orders_and_pairs_across_chunks_only():
    for salt in SALTS:
        with salt_scope(salt):
            for case in SPECS["check_pair_counts"].cases:
                (chunks,), counts = case.build()
                label = (salt, case.label)
                assert max(counts.values()) >= 2, label  # a pair occurs twice: counts are not 0/1
                assert any(a == b and counts[(a, b)] >= 2 for a, b in counts), label  # a run: a, a, a
                assert any(a > b for a, b in counts), label  # (a, b) with a > b: the order matters
                assert [] in chunks and any(len(chunk) == 1 for chunk in chunks), label
                across = {(c[-1], d[0]) for c, d in zip(chunks, chunks[1:]) if c and d}
                assert across - set(counts), label  # a pair adjacent only across two chunks
                assert any(sum(pair in pair_counts(c) for c in chunks) >= 2 for pair in counts), label  # in two chunks
            for case in SPECS["check_merge_pair"].cases:
                (chunks, pair, new_id), merged = case.build()
                label = (salt, case.label)
                assert new_id > max(i for chunk in chunks for i in chunk), label  # a new id above all, as in training
                assert [] in chunks and any(len(chunk) == 1 for chunk in chunks), label
                assert any(c and d and (c[-1], d[0]) == pair for c, d in zip(chunks, chunks[1:])), label  # across
                assert merged != chunks, label  # the pair is merged somewhere inside a chunk
            (chunks, pair, new_id), _ = SPECS["check_merge_pair"].cases[0].build()
            assert pair[0] == pair[1], salt  # a run of the pair's id


#: Notebook 11's two functions, exactly as the lesson writes them (on one list of ids), renamed to the graded names.
LESSON_COUNT_PAIRS = """
def pair_counts(ids):
    counts = {}
    for t in range(len(ids) - 1):
        pair = (ids[t], ids[t + 1])
        counts[pair] = counts.get(pair, 0) + 1
    return counts
"""
LESSON_MERGE = """
def merge_pair(ids, pair, new_id):
    out, t = [], 0
    while t < len(ids):
        if t + 1 < len(ids) and (ids[t], ids[t + 1]) == pair:
            out.append(new_id)
            t += 2
        else:
            out.append(ids[t])
            t += 1
    return out
"""


@pytest.mark.parametrize(
    ("check", "source", "name"),
    [("check_pair_counts", LESSON_COUNT_PAIRS, "pair_counts"), ("check_merge_pair", LESSON_MERGE, "merge_pair")],
)
def test_the_lessons_own_functions_do_not_pass_the_exercise(check, source, name):
    """The lesson counts and merges one list of ids; the exercise gives chunks. Pasted as they are, the lesson's
    functions fail (at every salt) and are told that chunks are not ids; they are right on one list of ids."""
    namespace: dict = {}
    exec(compile(source, f"<lesson {name}>", "exec"), namespace)
    function = namespace[name]
    ids = [97, 97, 97, 98, 97, 97]
    if name == "pair_counts":  # the lesson's code is right on what the lesson gives it: one list of ids
        assert dict(function(ids)) == pair_counts(ids)
    else:
        assert function(ids, (97, 97), 256) == merge_pair(ids, (97, 97), 256)
    for salt in SALTS:
        with salt_scope(salt):
            result = CHECKS[check](function, verbose=False)
        assert not result.passed and result.mistake == "chunks_as_ids", (salt, result.message)
        assert "chunks is a list of chunks" in result.message


def test_every_most_frequent_case_has_a_tie_at_the_top_decided_by_a_and_one_by_b():
    """Four pairs share the top count in every case, at every salt; in one case the smallest two of them have the
    same first id (b decides), in the others their first ids differ (a decides)."""
    for salt in SALTS:
        with salt_scope(salt):
            deciders = []
            for case in SPECS["check_most_frequent"].cases:
                (counts,), expected = case.build()
                top = max(counts.values())
                tied = sorted(pair for pair, count in counts.items() if count == top)
                assert len(tied) == 4 and expected == tied[0], (salt, case.label, tied, expected)
                deciders.append("b" if tied[0][0] == tied[1][0] else "a")
            assert sorted(deciders) == ["a", "a", "b"], (salt, deciders)
