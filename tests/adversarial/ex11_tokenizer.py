"""Exercise 11: pair_counts and merge_pair on pre-split chunks, most_frequent (the tie rule), encode and decode
(byte-level BPE), as learners write them; notebook 11's own count_pairs and merge (on one list of ids) pasted as they are, or after joining the chunks."""

import codecs
import itertools
from collections import Counter, defaultdict

from . import right, wrong

PAIRS, MERGE, ENCODE, DECODE = "check_pair_counts", "check_merge_pair", "check_bpe_encode", "check_bpe_decode"
FREQUENT = "check_most_frequent"


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


@wrong(PAIRS, "chunks_as_ids")
def pair_counts_pasted_from_the_lesson(ids):  # notebook 11's count_pairs, renamed, given the chunks
    counts = {}
    for t in range(len(ids) - 1):
        pair = (ids[t], ids[t + 1])
        counts[pair] = counts.get(pair, 0) + 1
    return counts


def _count_pairs(ids):  # notebook 11's count_pairs, as a helper
    counts = {}
    for t in range(len(ids) - 1):
        pair = (ids[t], ids[t + 1])
        counts[pair] = counts.get(pair, 0) + 1
    return counts


@wrong(PAIRS, "counted_across_chunks")
def pairs_lesson_after_joining(chunks):
    ids = []
    for chunk in chunks:  # one list of ids, as in the lesson
        ids += chunk
    return _count_pairs(ids)


@wrong(PAIRS, "counted_across_chunks")
def pairs_chain_then_zip(chunks):
    ids = list(itertools.chain.from_iterable(chunks))
    return Counter(zip(ids, ids[1:]))


@wrong(PAIRS, "counts_replaced")
def pairs_dict_update(chunks):
    counts = {}
    for chunk in chunks:
        counts.update(_count_pairs(chunk))  # update adds the new pairs... and overwrites the old counts
    return counts


@wrong(PAIRS, "one_chunk_only")
def pairs_return_in_the_loop(chunks):
    for chunk in chunks:
        counts = Counter()
        for pair in zip(chunk, chunk[1:]):
            counts[pair] += 1
        return counts
    return {}


@wrong(PAIRS, "one_chunk_only")
def pairs_counts_reset_per_chunk(chunks):
    for chunk in chunks:
        counts = {}
        for pair in zip(chunk, chunk[1:]):
            counts[pair] = counts.get(pair, 0) + 1
    return counts


@wrong(PAIRS, "every_other_pair")
def pairs_in_steps_of_two(chunks):
    counts = {}
    for chunk in chunks:
        for i in range(0, len(chunk) - 1, 2):  # each pair takes two tokens, so jump by two
            pair = (chunk[i], chunk[i + 1])
            counts[pair] = counts.get(pair, 0) + 1
    return counts


@wrong(PAIRS, "overlaps_counted_once")
def pairs_a_run_holds_one_pair(chunks):
    counts = {}
    for ids in chunks:
        i = 0
        while i < len(ids) - 1:
            pair = (ids[i], ids[i + 1])
            counts[pair] = counts.get(pair, 0) + 1
            i += 2 if ids[i] == ids[i + 1] else 1  # "aaa" is one (a, a) and a leftover a
    return counts


@wrong(PAIRS, "last_pair_missed")
def pairs_range_stops_early(chunks):
    counts = {}
    for ids in chunks:
        for i in range(len(ids) - 2):
            counts[(ids[i], ids[i + 1])] = counts.get((ids[i], ids[i + 1]), 0) + 1
    return counts


@wrong(PAIRS, "presence_not_count")
def pairs_assigned_not_added(chunks):
    counts = {}
    for chunk in chunks:
        for a, b in zip(chunk, chunk[1:]):
            counts[(a, b)] = 1
    return counts


@wrong(PAIRS, "wrapped_around")
def pairs_last_with_first(chunks):
    counts = Counter()
    for ids in chunks:
        counts.update(zip(ids, ids[1:] + ids[:1]))
    return counts


@wrong(PAIRS, "order_ignored")
def pairs_sorted_keys(chunks):
    return Counter(tuple(sorted(pair)) for chunk in chunks for pair in zip(chunk, chunk[1:]))


@wrong(PAIRS, None)
def pairs_as_bytes_keys(chunks):
    return Counter(bytes(pair) for chunk in chunks for pair in zip(chunk, chunk[1:]))  # fails on ids of 256 and up


@wrong(PAIRS, None)
def pairs_listed_not_counted(chunks):
    return [pair for chunk in chunks for pair in zip(chunk, chunk[1:])]


@wrong(PAIRS, None)
def pairs_string_keys(chunks):
    return Counter(f"{a},{b}" for chunk in chunks for a, b in zip(chunk, chunk[1:]))


@wrong(PAIRS, "mutates_input")
def pairs_popping_the_chunks(chunks):
    counts = Counter()
    for ids in chunks:
        while len(ids) > 1:
            first = ids.pop(0)
            counts[(first, ids[0])] += 1
    return counts


@wrong(PAIRS, "delegates")
def pairs_from_course_lib(chunks):
    from course_lib.tokenizer import pair_counts as counts

    total = Counter()
    for chunk in chunks:
        total += counts(chunk)
    return total


@wrong(PAIRS, "delegates")
def pairs_from_course_lib_chunks(chunks):
    from course_lib import tokenizer

    return tokenizer.pair_counts_in_chunks(chunks)


# ----------------------------------------------------------------------------------------------- pair_counts, right


@right(PAIRS)
def pairs_counter_of_zip(chunks):
    return Counter(pair for chunk in chunks for pair in zip(chunk, chunk[1:]))


@right(PAIRS)
def pairs_pairwise_defaultdict(chunks):
    counts = defaultdict(int)
    for chunk in chunks:
        for pair in itertools.pairwise(chunk):
            counts[pair] += 1
    return counts


@right(PAIRS)
def pairs_sum_of_counters(chunks):
    return sum((Counter(zip(c, c[1:])) for c in chunks), Counter())


@right(PAIRS)
def pairs_joined_with_a_separator(chunks):
    ids = []
    for chunk in chunks:
        ids += [*chunk, None]  # a marker between chunks: no pair holds it
    return Counter(pair for pair in zip(ids, ids[1:]) if None not in pair)


@right(PAIRS)
def pairs_lesson_per_chunk_added(chunks):
    counts = {}
    for chunk in chunks:
        for pair, n in _count_pairs(chunk).items():
            counts[pair] = counts.get(pair, 0) + n
    return counts


# ----------------------------------------------------------------------------------------------- merge_pair, wrong


@wrong(MERGE, "chunks_as_ids")
def merge_pair_pasted_from_the_lesson(ids, pair, new_id):  # notebook 11's merge, renamed, given the chunks
    out, t = [], 0
    while t < len(ids):
        if t + 1 < len(ids) and (ids[t], ids[t + 1]) == pair:
            out.append(new_id)
            t += 2
        else:
            out.append(ids[t])
            t += 1
    return out


@wrong(MERGE, "chunks_joined")
def merge_lesson_after_joining(chunks, pair, new_id):
    ids = []
    for chunk in chunks:
        ids += chunk
    return _merge(ids, pair, new_id)


@wrong(MERGE, "chunks_joined")
def merge_joined_in_one_chunk(chunks, pair, new_id):
    ids = [i for chunk in chunks for i in chunk]
    return [_merge(ids, pair, new_id)]


@wrong(MERGE, "chunks_joined")
def merge_each_chunk_extended(chunks, pair, new_id):
    out = []
    for chunk in chunks:
        out.extend(_merge(chunk, pair, new_id))  # extend, not append
    return out


@wrong(MERGE, "merged_across_chunks")
def merge_one_stream_with_chunk_numbers(chunks, pair, new_id):
    stream = [(k, i) for k, chunk in enumerate(chunks) for i in chunk]
    out = [[] for _ in chunks]
    t = 0
    while t < len(stream):
        k, i = stream[t]
        if t + 1 < len(stream) and (i, stream[t + 1][1]) == pair:
            out[k].append(new_id)
            t += 2
        else:
            out[k].append(i)
            t += 1
    return out


@wrong(MERGE, "empty_chunks_dropped")
def merge_skips_empty_chunks(chunks, pair, new_id):
    out = []
    for chunk in chunks:
        if not chunk:
            continue
        out.append(_merge(chunk, pair, new_id))
    return out


@wrong(MERGE, "empty_chunks_dropped")
def merge_skips_chunks_without_a_pair(chunks, pair, new_id):
    out = []
    for chunk in chunks:
        if len(chunk) < 2:
            continue  # nothing to merge there
        out.append(_merge(chunk, pair, new_id))
    return out


@wrong(MERGE, "second_token_kept")
def merge_steps_one(chunks, pair, new_id):
    result = []
    for ids in chunks:
        out, i = [], 0
        while i < len(ids):
            if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
                out.append(new_id)
            else:
                out.append(ids[i])
            i += 1
        result.append(out)
    return result


@wrong(MERGE, "overlaps_merged")
def merge_every_position(chunks, pair, new_id):
    result = []
    for ids in chunks:
        out = []
        for i in range(len(ids)):
            if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
                out.append(new_id)
            elif i > 0 and (ids[i - 1], ids[i]) == pair:
                continue  # the second half of a merged pair
            else:
                out.append(ids[i])
        result.append(out)
    return result


@wrong(MERGE, "last_token_dropped")
def merge_loop_to_the_last_pair(chunks, pair, new_id):
    result = []
    for ids in chunks:
        out, i = [], 0
        while i < len(ids) - 1:
            if (ids[i], ids[i + 1]) == pair:
                out.append(new_id)
                i += 2
            else:
                out.append(ids[i])
                i += 1
        result.append(out)
    return result


@wrong(MERGE, "end_pair_missed")
def merge_bound_off_by_one(chunks, pair, new_id):
    result = []
    for ids in chunks:
        out, i = [], 0
        while i < len(ids):
            if i < len(ids) - 2 and (ids[i], ids[i + 1]) == pair:
                out.append(new_id)
                i += 2
            else:
                out.append(ids[i])
                i += 1
        result.append(out)
    return result


@wrong(MERGE, "right_to_left")
def merge_from_the_end(chunks, pair, new_id):
    result = []
    for ids in chunks:
        out, i = [], len(ids) - 1
        while i >= 0:
            if i > 0 and (ids[i - 1], ids[i]) == pair:
                out.append(new_id)
                i -= 2
            else:
                out.append(ids[i])
                i -= 1
        result.append(out[::-1])
    return result


@wrong(MERGE, "first_only")
def merge_first_occurrence(chunks, pair, new_id):
    def one(ids):
        for i in range(len(ids) - 1):
            if (ids[i], ids[i + 1]) == pair:
                return ids[:i] + [new_id] + ids[i + 2 :]
        return list(ids)

    return [one(chunk) for chunk in chunks]


@wrong(MERGE, "mutates_input")
def merge_slice_assignment(chunks, pair, new_id):
    for ids in chunks:
        i = 0
        while i < len(ids) - 1:
            if (ids[i], ids[i + 1]) == pair:
                ids[i : i + 2] = [new_id]
            i += 1
    return chunks


@wrong(MERGE, "wrong_values")
def merge_through_a_string(chunks, pair, new_id):
    out = []
    for ids in chunks:
        text = " ".join(str(i) for i in ids)
        text = text.replace(f"{pair[0]} {pair[1]}", str(new_id))
        out.append([int(part) for part in text.split()])
    return out


@wrong(MERGE, "wrong_values")
def merge_return_in_the_loop(chunks, pair, new_id):
    out = []
    for chunk in chunks:
        out.append(_merge(chunk, pair, new_id))
        return out  # indented one level too far
    return out


@wrong(MERGE, "delegates")
def merge_from_course_lib(chunks, pair, new_id):
    import course_lib.tokenizer

    return [course_lib.tokenizer.merge_pair(chunk, pair, new_id) for chunk in chunks]


@wrong(MERGE, "delegates")
def merge_from_course_lib_chunks(chunks, pair, new_id):
    from course_lib.tokenizer import merge_pair_in_chunks

    return merge_pair_in_chunks(chunks, pair, new_id)


# ----------------------------------------------------------------------------------------------- merge_pair, right


@right(MERGE)
def merge_with_a_skip_flag(chunks, pair, new_id):
    result = []
    for ids in chunks:
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
        result.append(out)
    return result


@right(MERGE)
def merge_returns_tuples(chunks, pair, new_id):
    return tuple(tuple(_merge(chunk, pair, new_id)) for chunk in chunks)


def _merge_recursive(ids, pair, new_id):
    if len(ids) < 2:
        return list(ids)
    if (ids[0], ids[1]) == pair:
        return [new_id] + _merge_recursive(ids[2:], pair, new_id)
    return [ids[0]] + _merge_recursive(ids[1:], pair, new_id)


@right(MERGE)
def merge_recursive(chunks, pair, new_id):
    return [_merge_recursive(chunk, pair, new_id) for chunk in chunks]


@right(MERGE)
def merge_lesson_per_chunk(chunks, pair, new_id):
    return list(map(lambda chunk: _merge(chunk, pair, new_id), chunks))


# -------------------------------------------------------------------------------------------- most_frequent, wrong


@wrong(FREQUENT, "ties_to_largest")
def frequent_max_on_count_and_pair(counts):
    return max(counts, key=lambda pair: (counts[pair], pair))  # the tie goes to the larger pair


@wrong(FREQUENT, "ties_to_largest")
def frequent_sorted_descending(counts):
    return sorted(counts.items(), key=lambda item: (item[1], item[0]), reverse=True)[0][0]


@wrong(FREQUENT, "ties_to_first_seen")
def frequent_max_by_get(counts):
    return max(counts, key=counts.get)


@wrong(FREQUENT, "ties_to_first_seen")
def frequent_most_common(counts):
    return Counter(counts).most_common(1)[0][0]


@wrong(FREQUENT, "ties_to_first_seen")
def frequent_loop_strictly_greater(counts):
    best, best_count = None, -1
    for pair, count in counts.items():
        if count > best_count:  # a tied pair met later never wins
            best, best_count = pair, count
    return best


@wrong(FREQUENT, "ties_b_first")
def frequent_b_then_a(counts):
    return max(counts, key=lambda pair: (counts[pair], -pair[1], -pair[0]))


@wrong(FREQUENT, "ties_b_first")
def frequent_reversed_pairs(counts):
    top = max(counts.values())
    a_b = min((b, a) for (a, b), count in counts.items() if count == top)
    return (a_b[1], a_b[0])


@wrong(FREQUENT, "count_not_pair")
def frequent_the_count(counts):
    return max(counts.values())


@wrong(FREQUENT, "least_frequent")
def frequent_min_by_get(counts):
    return min(counts, key=lambda pair: (counts[pair], pair))


@wrong(FREQUENT, "max_of_pairs")
def frequent_max_of_the_dict(counts):
    return max(counts)


@wrong(FREQUENT, "wrong_values")
def frequent_smallest_pair_overall(counts):
    return min(counts)  # the counts are never looked at


@wrong(FREQUENT, None)
def frequent_item_not_pair(counts):
    return max(counts.items(), key=lambda item: (item[1], -item[0][0], -item[0][1]))  # (pair, count), not the pair


@wrong(FREQUENT, "delegates")
def frequent_from_course_lib(counts):
    from course_lib.tokenizer import most_frequent as pick

    return pick(counts)


# -------------------------------------------------------------------------------------------- most_frequent, right


@right(FREQUENT)
def frequent_sorted_with_a_key(counts):
    return sorted(counts, key=lambda pair: (-counts[pair], pair[0], pair[1]))[0]


@right(FREQUENT)
def frequent_loop_with_comparisons(counts):
    best = None
    for pair in counts:
        if best is None:
            best = pair
        elif counts[pair] > counts[best]:
            best = pair
        elif counts[pair] == counts[best]:
            if pair[0] < best[0] or (pair[0] == best[0] and pair[1] < best[1]):
                best = pair
    return best


@right(FREQUENT)
def frequent_min_with_negated_counts(counts):
    return min(counts, key=lambda pair: (-counts[pair], pair))


@right(FREQUENT)
def frequent_top_then_smallest(counts):
    top = max(counts.values())
    return min(pair for pair, count in counts.items() if count == top)


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
