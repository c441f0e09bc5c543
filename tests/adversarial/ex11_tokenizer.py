"""Exercise 11: pair_counts, merge_pair, encode and decode (byte-level BPE), as learners write them."""

import codecs
import itertools
from collections import Counter, defaultdict

from . import right, wrong

PAIRS, MERGE, ENCODE, DECODE = "check_pair_counts", "check_merge_pair", "check_bpe_encode", "check_bpe_decode"


def _merge(ids, pair, new_id):
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and ids[i] == pair[0] and ids[i + 1] == pair[1]:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


def _vocab(merges):
    vocab = {i: bytes([i]) for i in range(256)}
    for (a, b), new_id in merges.items():
        vocab[new_id] = vocab[a] + vocab[b]
    return vocab


# ----------------------------------------------------------------------------------------------- pair_counts, wrong


@wrong(PAIRS, "every_other_pair")
def pairs_in_steps_of_two(ids):
    counts = {}
    for i in range(0, len(ids) - 1, 2):  # each pair takes two tokens, so jump by two
        pair = (ids[i], ids[i + 1])
        counts[pair] = counts.get(pair, 0) + 1
    return counts


@wrong(PAIRS, "overlaps_counted_once")
def pairs_a_run_holds_one_pair(ids):
    counts, i = {}, 0
    while i < len(ids) - 1:
        pair = (ids[i], ids[i + 1])
        counts[pair] = counts.get(pair, 0) + 1
        i += 2 if ids[i] == ids[i + 1] else 1  # "aaa" is one (a, a) and a leftover a
    return counts


@wrong(PAIRS, "last_pair_missed")
def pairs_range_stops_early(ids):
    counts = {}
    for i in range(len(ids) - 2):
        counts[(ids[i], ids[i + 1])] = counts.get((ids[i], ids[i + 1]), 0) + 1
    return counts


@wrong(PAIRS, "presence_not_count")
def pairs_assigned_not_added(ids):
    counts = {}
    for a, b in zip(ids, ids[1:]):
        counts[(a, b)] = 1
    return counts


@wrong(PAIRS, "wrapped_around")
def pairs_last_with_first(ids):
    return Counter(zip(ids, ids[1:] + ids[:1]))


@wrong(PAIRS, "order_ignored")
def pairs_sorted_keys(ids):
    return Counter(tuple(sorted(pair)) for pair in zip(ids, ids[1:]))


@wrong(PAIRS, None)
def pairs_as_bytes_keys(ids):
    return Counter(bytes(pair) for pair in zip(ids, ids[1:]))  # fails on merged ids (256 and up)


@wrong(PAIRS, None)
def pairs_listed_not_counted(ids):
    return list(zip(ids, ids[1:]))


@wrong(PAIRS, None)
def pairs_string_keys(ids):
    return Counter(f"{a},{b}" for a, b in zip(ids, ids[1:]))


@wrong(PAIRS, "mutates_input")
def pairs_popping_the_list(ids):
    counts = Counter()
    while len(ids) > 1:
        first = ids.pop(0)
        counts[(first, ids[0])] += 1
    return counts


@wrong(PAIRS, "delegates")
def pairs_from_course_lib(ids):
    from course_lib.tokenizer import pair_counts as counts

    return dict(counts(ids))


# ----------------------------------------------------------------------------------------------- pair_counts, right


@right(PAIRS)
def pairs_counter_of_zip(ids):
    return Counter(zip(ids, ids[1:]))


@right(PAIRS)
def pairs_pairwise_defaultdict(ids):
    counts = defaultdict(int)
    for pair in itertools.pairwise(ids):
        counts[pair] += 1
    return counts


@right(PAIRS)
def pairs_by_list_count(ids):
    pairs = [(ids[i], ids[i + 1]) for i in range(len(ids) - 1)]
    return {pair: pairs.count(pair) for pair in set(pairs)}


# ----------------------------------------------------------------------------------------------- merge_pair, wrong


@wrong(MERGE, "second_token_kept")
def merge_steps_one(ids, pair, new_id):
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
            out.append(new_id)
        else:
            out.append(ids[i])
        i += 1
    return out


@wrong(MERGE, "overlaps_merged")
def merge_every_position(ids, pair, new_id):
    out = []
    for i in range(len(ids)):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
            out.append(new_id)
        elif i > 0 and (ids[i - 1], ids[i]) == pair:
            continue  # the second half of a merged pair
        else:
            out.append(ids[i])
    return out


@wrong(MERGE, "last_token_dropped")
def merge_loop_to_the_last_pair(ids, pair, new_id):
    out, i = [], 0
    while i < len(ids) - 1:
        if (ids[i], ids[i + 1]) == pair:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


@wrong(MERGE, "end_pair_missed")
def merge_bound_off_by_one(ids, pair, new_id):
    out, i = [], 0
    while i < len(ids):
        if i < len(ids) - 2 and (ids[i], ids[i + 1]) == pair:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


@wrong(MERGE, "right_to_left")
def merge_from_the_end(ids, pair, new_id):
    out, i = [], len(ids) - 1
    while i >= 0:
        if i > 0 and (ids[i - 1], ids[i]) == pair:
            out.append(new_id)
            i -= 2
        else:
            out.append(ids[i])
            i -= 1
    return out[::-1]


@wrong(MERGE, "first_only")
def merge_first_occurrence(ids, pair, new_id):
    for i in range(len(ids) - 1):
        if (ids[i], ids[i + 1]) == pair:
            return ids[:i] + [new_id] + ids[i + 2 :]
    return list(ids)


@wrong(MERGE, "mutates_input")
def merge_slice_assignment(ids, pair, new_id):
    i = 0
    while i < len(ids) - 1:
        if (ids[i], ids[i + 1]) == pair:
            ids[i : i + 2] = [new_id]
        i += 1
    return ids


@wrong(MERGE, "wrong_values")
def merge_through_a_string(ids, pair, new_id):
    text = " ".join(str(i) for i in ids)
    text = text.replace(f"{pair[0]} {pair[1]}", str(new_id))
    return [int(part) for part in text.split()]


@wrong(MERGE, "delegates")
def merge_from_course_lib(ids, pair, new_id):
    import course_lib.tokenizer

    return course_lib.tokenizer.merge_pair(ids, pair, new_id)


# ----------------------------------------------------------------------------------------------- merge_pair, right


@right(MERGE)
def merge_with_a_skip_flag(ids, pair, new_id):
    out, skip = [], False
    for i, token in enumerate(ids):
        if skip:
            skip = False
            continue
        if i + 1 < len(ids) and token == pair[0] and ids[i + 1] == pair[1]:
            out.append(new_id)
            skip = True
        else:
            out.append(token)
    return out


@right(MERGE)
def merge_returns_a_tuple(ids, pair, new_id):
    return tuple(_merge(ids, pair, new_id))


@right(MERGE)
def merge_recursive(ids, pair, new_id):
    if len(ids) < 2:
        return list(ids)
    if (ids[0], ids[1]) == pair:
        return [new_id] + merge_recursive(ids[2:], pair, new_id)
    return [ids[0]] + merge_recursive(ids[1:], pair, new_id)


# ----------------------------------------------------------------------------------------------- encode, wrong


@wrong(ENCODE, "by_frequency")
def encode_most_frequent_first(text, merges):
    ids = list(text.encode("utf-8"))
    while len(ids) > 1:
        counts = Counter(p for p in zip(ids, ids[1:]) if p in merges)
        if not counts:
            break
        pair = max(counts, key=counts.get)  # as in training: the most frequent pair
        ids = _merge(ids, pair, merges[pair])
    return ids


@wrong(ENCODE, "reverse_rank")
def encode_last_merge_first(text, merges):
    ids = list(text.encode("utf-8"))
    for pair, new_id in reversed(list(merges.items())):
        ids = _merge(ids, pair, new_id)
    return ids


@wrong(ENCODE, "pairs_not_recounted")
def encode_pairs_looked_up_once(text, merges):
    ids = list(text.encode("utf-8"))
    present = set(zip(ids, ids[1:]))
    for pair, new_id in merges.items():
        if pair in present:
            ids = _merge(ids, pair, new_id)
    return ids


@wrong(ENCODE, "code_points")
def encode_characters(text, merges):
    ids = [ord(ch) for ch in text]
    for pair, new_id in merges.items():
        ids = _merge(ids, pair, new_id)
    return ids


@wrong(ENCODE, "one_merge")
def encode_best_pair_once(text, merges):
    ids = list(text.encode("utf-8"))
    present = [p for p in zip(ids, ids[1:]) if p in merges]
    if present:
        pair = min(present, key=merges.get)
        ids = _merge(ids, pair, merges[pair])
    return ids


@wrong(ENCODE, "merge_pair_wrong")
def encode_with_an_overlapping_merge(text, merges):
    ids = list(text.encode("utf-8"))
    for pair, new_id in merges.items():
        out = []
        for i in range(len(ids)):
            if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
                out.append(new_id)
            elif i > 0 and (ids[i - 1], ids[i]) == pair:
                continue
            else:
                out.append(ids[i])
        ids = out
    return ids


@wrong(ENCODE, "sorted_by_pair")
def encode_sorted_merges(text, merges):
    ids = list(text.encode("utf-8"))
    for pair in sorted(merges):
        ids = _merge(ids, pair, merges[pair])
    return ids


@wrong(ENCODE, "wrong_values")
def encode_ascii_only(text, merges):
    ids = list(text.encode("ascii", errors="ignore"))
    for pair, new_id in merges.items():
        ids = _merge(ids, pair, new_id)
    return ids


@wrong(ENCODE, "longest_match")
def encode_longest_token_first(text, merges):
    vocab = _vocab(merges)
    by_bytes = {v: k for k, v in vocab.items()}
    data, ids, i = text.encode("utf-8"), [], 0
    longest = max(len(v) for v in vocab.values())
    while i < len(data):
        for size in range(min(longest, len(data) - i), 0, -1):  # WordPiece's greedy longest match, not BPE
            if data[i : i + size] in by_bytes:
                ids.append(by_bytes[data[i : i + size]])
                i += size
                break
    return ids


@wrong(ENCODE, None)
def encode_latin1(text, merges):
    ids = list(text.encode("latin-1"))
    for pair, new_id in merges.items():
        ids = _merge(ids, pair, new_id)
    return ids


@wrong(ENCODE, "delegates")
def encode_from_course_lib(text, merges):
    from course_lib import tokenizer

    return tokenizer.encode(text, merges)


# ----------------------------------------------------------------------------------------------- encode, right


@right(ENCODE)
def encode_lowest_rank_until_none(text, merges):
    ids = list(text.encode("utf-8"))
    while len(ids) >= 2:
        pair = min(zip(ids, ids[1:]), key=lambda p: merges.get(p, float("inf")))
        if pair not in merges:
            break
        ids = _merge(ids, pair, merges[pair])
    return ids


@right(ENCODE)
def encode_items_sorted_by_new_id(text, merges):
    ids = list(bytearray(text, "utf-8"))
    for pair, new_id in sorted(merges.items(), key=lambda item: item[1]):
        ids = _merge(ids, pair, new_id)
    return ids


@right(ENCODE)
def encode_rank_table(text, merges):
    rank = {pair: r for r, pair in enumerate(merges)}
    ids = [b for b in text.encode()]
    while True:
        ranked = [(rank[p], i) for i, p in enumerate(zip(ids, ids[1:])) if p in rank]
        if not ranked:
            return ids
        best = min(ranked)[0]
        pair = list(merges)[best]
        ids = _merge(ids, pair, merges[pair])


# ----------------------------------------------------------------------------------------------- decode, wrong


@wrong(DECODE, "token_by_token")
def decode_each_token_replace(ids, merges):
    vocab = _vocab(merges)
    return "".join(vocab[i].decode("utf-8", errors="replace") for i in ids)


@wrong(DECODE, "token_by_token")
def decode_each_token_strict(ids, merges):
    vocab = _vocab(merges)
    return "".join(vocab[i].decode("utf-8") for i in ids)


@wrong(DECODE, "strict_utf8")
def decode_whole_strict(ids, merges):
    vocab = _vocab(merges)
    return b"".join(vocab[i] for i in ids).decode("utf-8")


@wrong(DECODE, "errors_ignored")
def decode_ignore(ids, merges):
    vocab = _vocab(merges)
    return b"".join(vocab[i] for i in ids).decode("utf-8", errors="ignore")


@wrong(DECODE, "latin1")
def decode_chr_of_each_byte(ids, merges):
    vocab = _vocab(merges)
    return "".join(chr(b) for i in ids for b in vocab[i])


@wrong(DECODE, "bytes_swapped")
def decode_vocab_joined_backwards(ids, merges):
    vocab = {i: bytes([i]) for i in range(256)}
    for (a, b), new_id in merges.items():
        vocab[new_id] = vocab[b] + vocab[a]
    return b"".join(vocab[i] for i in ids).decode("utf-8", errors="replace")


@wrong(DECODE, None)
def decode_vocab_one_level(ids, merges):
    vocab = {i: bytes([i]) for i in range(256)}
    for (a, b), new_id in merges.items():
        vocab[new_id] = bytes([a, b])  # fails once a merge uses a merged id
    return b"".join(vocab[i] for i in ids).decode("utf-8", errors="replace")


@wrong(DECODE, None)
def decode_bytes_of_ids(ids, merges):
    return bytes(ids).decode("utf-8", errors="replace")


@wrong(DECODE, "delegates")
def decode_from_course_lib(ids, merges):
    from course_lib.tokenizer import decode

    return decode(ids, merges)


# ----------------------------------------------------------------------------------------------- decode, right


@right(DECODE)
def decode_recursive_expansion(ids, merges):
    parts = {new_id: pair for pair, new_id in merges.items()}

    def expand(i):
        return [i] if i < 256 else expand(parts[i][0]) + expand(parts[i][1])

    return bytes(b for i in ids for b in expand(i)).decode("utf-8", errors="replace")


@right(DECODE)
def decode_incremental_decoder(ids, merges):
    vocab = _vocab(merges)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    return "".join(decoder.decode(vocab[i]) for i in ids) + decoder.decode(b"", final=True)


@right(DECODE)
def decode_bytearray(ids, merges):
    vocab = _vocab(merges)
    data = bytearray()
    for i in ids:
        data += vocab[i]
    return data.decode(errors="replace")
