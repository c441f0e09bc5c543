"""Exercise 11's checks name the classic tokenizer mistakes of issue 45 at every salt, and the inputs hold what makes
them visible: runs of one id, multi-byte characters split over tokens, merges whose order matters.

The adversarial suite grades each learner solution once, at a fresh salt; here the classic ones (written as learners
write them, in tests/adversarial/ex11_tokenizer.py) are graded at twenty fixed salts each.
"""

from __future__ import annotations

import pytest
from adversarial import ex11_tokenizer as learners

from course_lib.checks import CHECKS, SPECS
from course_lib.checks.spec import salt_scope

SALTS = range(20)

CLASSIC = [
    ("check_pair_counts", learners.pairs_a_run_holds_one_pair, "overlaps_counted_once"),
    ("check_pair_counts", learners.pairs_in_steps_of_two, "every_other_pair"),
    ("check_pair_counts", learners.pairs_range_stops_early, "last_pair_missed"),
    ("check_merge_pair", learners.merge_every_position, "overlaps_merged"),
    ("check_merge_pair", learners.merge_steps_one, "second_token_kept"),
    ("check_merge_pair", learners.merge_loop_to_the_last_pair, "last_token_dropped"),
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


def test_the_cases_hold_runs_and_pairs_in_both_orders():
    for salt in SALTS:
        with salt_scope(salt):
            for case in SPECS["check_pair_counts"].cases:
                (ids,), counts = case.build()
                assert max(counts.values()) >= 2, (salt, case.label)  # a pair occurs twice: counts are not 0/1
                assert any(a == b and counts[(a, b)] >= 2 for a, b in counts), (salt, case.label)  # a run: a, a, a
                assert any(a > b for a, b in counts), (salt, case.label)  # (a, b) with a > b: the order matters
            (ids, pair, new_id), merged = SPECS["check_merge_pair"].cases[0].build()
            assert pair[0] == pair[1] and new_id > max(ids), salt  # a run of the pair's id, a new id above all
