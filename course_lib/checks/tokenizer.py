"""Checks for exercise 11: a byte-level BPE tokenizer's pair count, one merge, the pair to merge next, encode and
decode.

Learner signatures (token ids are Python ints; ``merges`` is ``{(a, b): new_id}`` in the order it was learned, new
ids 256, 257, ...; ``chunks`` is a text split into words first, as GPT-2 does, each word a list of ids, e.g.
``[[104, 105], [32, 104, 105]]`` for "hi hi"):

    pair_counts(chunks) -> {(a, b): count}
        count(a, b) = Σ_c #{t : c[t] = a and c[t + 1] = b} over the chunks c, at every adjacent position inside a
        chunk, overlapping ones too; never a pair across two chunks
    merge_pair(chunks, pair, new_id) -> list of chunks
        each chunk on its own, left to right; where (c[t], c[t + 1]) = pair write new_id and skip both:
        (a, a, a) → [new_id, a]; never across two chunks; as many chunks come back as were given
    most_frequent(counts) -> (a, b)
        the pair with the highest count; ties go to the smallest pair (a, b), compared as numbers, a first then b
    encode(text, merges) -> list of ids
        the UTF-8 bytes of text, then every merge in rank order (the lowest new id first)
    decode(ids, merges) -> str
        every id's bytes joined, then one UTF-8 decoding with errors="replace"

References: ``course_lib.tokenizer`` (``pair_counts_in_chunks``, ``merge_pair_in_chunks``, ``most_frequent``,
``encode``, ``decode``; ``train_bpe`` learns the merges a case uses). Every case draws its lengths from its own range, so no length is
special; the texts hold accents, emoji and CJK characters, whose UTF-8 bytes a tokenizer may split over two tokens.
The chunks of every case hold an empty chunk, a chunk of one id, and a pair that occurs only across two chunks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import torch

from ..tokenizer import decode as reference_decode
from ..tokenizer import encode as reference_encode
from ..tokenizer import merge_pair as reference_merge
from ..tokenizer import merge_pair_in_chunks as reference_merge_chunks
from ..tokenizer import most_frequent as reference_most_frequent
from ..tokenizer import pair_counts_in_chunks as reference_counts
from ..tokenizer import train_bpe, vocabulary
from .calling import _describe, _shorten
from .core import export_checks
from .spec import Case, CheckSpec, Mistake, ValueOut, generator

#: Words the texts are made of: ASCII, runs of one letter (overlapping pairs), and accented letters (two bytes).
LATIN = ("the", "a", "an", "aaa", "aaaa", "banana", "data", "token", "abab", "café", "naïve", "über", "où", "señor")
#: Characters a training text never holds: three or four UTF-8 bytes whose first byte no merge knows, so a text
#: that holds one has it split over several tokens.
RARE = ("東京", "中文", "🙂", "🚀", "日本語", "€", "👩‍💻", "한국어", "🎉", "ελλάδα", "мир")


def _draw(gen: torch.Generator, low: int, high: int) -> int:
    """One whole number from low .. high (both included)."""
    return int(torch.randint(low, high + 1, (), generator=gen))


def _pick(gen: torch.Generator, items):
    return items[_draw(gen, 0, len(items) - 1)]


def _words(gen: torch.Generator, count: int, pool=LATIN) -> list[str]:
    return [_pick(gen, pool) for _ in range(count)]


# ---------------------------------------------------------------------------------------------------------------
# The forms of the results
# ---------------------------------------------------------------------------------------------------------------


def _ids_form(value):
    """A list (or tuple) of whole numbers, as a list."""
    if isinstance(value, (bytes, bytearray)):
        return None, (
            f"your function returned {_describe(value)}, expected a list of token ids (ints).",
            "Bytes are not token ids once a merge made ids of 256 and more: keep the ids in a list, e.g. "
            "list(text.encode('utf-8')) to start with.",
        )
    if isinstance(value, (list, tuple)) and all(type(item) is int for item in value):
        return list(value), None
    if isinstance(value, (list, tuple)):
        odd = next(item for item in value if type(item) is not int)
        return None, (
            f"your function returned a {type(value).__name__} holding {_describe(odd)}, expected token ids (ints).",
            "Every token id is a Python int (a byte value 0–255, or a merged id 256 and up).",
        )
    return None, (
        f"your function returned {_describe(value)}, expected a list of token ids (ints).",
        "Did you forget the `return` statement, or return something else than the list of ids?"
        if value is None
        else "Build the ids in a list and return the list.",
    )


def _counts_form(value):
    """A mapping {(a, b): count} of pairs of ints to ints, as a dict."""
    if not isinstance(value, Mapping):
        hint = (
            "Count each pair: a dict {(a, b): count}, or collections.Counter over the pairs."
            if isinstance(value, (list, tuple, set))
            else "Did you forget the `return` statement?"
            if value is None
            else "Return a dict {(a, b): count}."
        )
        return None, (f"your function returned {_describe(value)}, expected a dict {{(a, b): count}}.", hint)
    plain = {}
    for key, count in value.items():
        if not (isinstance(key, tuple) and len(key) == 2 and all(type(i) is int for i in key)):
            return None, (
                f"a key of your dict is {_describe(key)}, expected a pair (a, b) of token ids.",
                "Use the pair itself as the key: the tuple (chunk[t], chunk[t + 1]).",
            )
        if type(count) is not int:
            return None, (
                f"the count of {key} is {_describe(count)}, expected a whole number (an int).",
                "A count is how many positions hold the pair: add 1 for each.",
            )
        if count:  # a Counter may keep a pair at 0: it is not there
            plain[key] = count
    return plain, None


def _text_form(value):
    if isinstance(value, str):
        return str(value), None
    if isinstance(value, (bytes, bytearray)):
        return None, (
            f"your function returned {_describe(value)}, expected the text (a str).",
            "The joined bytes still have to be decoded as UTF-8 into a str.",
        )
    return None, (f"your function returned {_describe(value)}, expected the text (a str).", "Return a str.")


IDS = ValueOut("a list of token ids", _ids_form)
COUNTS = ValueOut("a dict of pair counts", _counts_form)
TEXT = ValueOut("a str", _text_form)


def _first_difference(got: list, expected: list) -> int:
    return next((t for t, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected)))


def _ids_diagnose(got, expected, args) -> str:
    """Where a list of ids goes wrong, without the right ids."""
    if not isinstance(got, list):
        return ""
    first = _first_difference(got, list(expected))
    size = f"Your list has {len(got)} ids, the right one {len(expected)}. " if len(got) != len(expected) else ""
    return f"{size}The first id that differs is at position {first}."


def _counts_diagnose(got, expected, args) -> str:
    if not isinstance(got, dict):
        return ""
    extra = sorted(set(got) - set(expected))
    missing = len(set(expected) - set(got))
    wrong = sorted(pair for pair in set(got) & set(expected) if got[pair] != expected[pair])
    parts = []
    if extra:
        parts.append(f"{len(extra)} of your pairs are not adjacent inside any chunk, e.g. {extra[0]}")
    if missing:
        parts.append(f"{missing} adjacent pair(s) are missing from your dict")
    if wrong:
        pair = wrong[0]
        parts.append(
            f"{len(wrong)} pair(s) have a wrong count, e.g. {pair}, counted {got[pair]} "
            f"time{'s' if got[pair] != 1 else ''} ({'too many' if got[pair] > expected[pair] else 'too few'})"
        )
    return "; ".join(parts) + "." if parts else ""


def _text_diagnose(got, expected, args) -> str:
    if not isinstance(got, str):
        return ""
    first = _first_difference(list(got), list(expected))
    size = f"Your text has {len(got)} characters, the right one {len(expected)}. " if len(got) != len(expected) else ""
    return f"{size}The first character that differs is character {first}: {_shorten(repr(got[first : first + 3]), 20)}."


def _chunks_form(value):
    """A list (or tuple) of chunks, each a list (or tuple) of whole numbers, as a list of lists."""
    if isinstance(value, (list, tuple)) and all(
        isinstance(chunk, (list, tuple)) and all(type(item) is int for item in chunk) for chunk in value
    ):
        return [list(chunk) for chunk in value], None
    if isinstance(value, (list, tuple)) and value and all(type(item) is int for item in value):
        return None, (
            "your function returned one flat list of ids, expected a list of chunks (a list of ids per chunk).",
            "Keep the chunks apart: merge each chunk on its own and collect the merged chunks in a list, one for "
            "every chunk you were given.",
        )
    return None, (
        f"your function returned {_describe(value)}, expected a list of chunks (a list of ids per chunk).",
        "Did you forget the `return` statement?"
        if value is None
        else "Return a list with one list of ids for every chunk you were given, in the same order.",
    )


CHUNKS = ValueOut("a list of chunks", _chunks_form)


def _chunks_diagnose(got, expected, args) -> str:
    """Which chunk goes wrong first, and where in it, without the right ids."""
    if not isinstance(got, list):
        return ""
    if len(got) != len(expected):
        return (
            f"Your result has {len(got)} chunks, the right one {len(expected)}: one merged chunk for every chunk "
            "given, an empty one included."
        )
    k = next(k for k, (a, b) in enumerate(zip(got, expected)) if a != b)
    return f"Chunk {k} is the first that differs. " + _ids_diagnose(got[k], expected[k], args)


def _flat(chunks) -> list:
    return [i for chunk in chunks for i in chunk]


# ---------------------------------------------------------------------------------------------------------------
# pair_counts
# ---------------------------------------------------------------------------------------------------------------


def _chunks_case(seed: int, low: int, high: int, merged: bool):
    """``chunks``: low .. high words split as GPT-2 splits a text (each word with the space before it: "the",
    " data", ...), each the list of its bytes (``merged``: some ids replaced by merged ones, 256 .. 300, as after a
    few merges). Always among them, at random places: a chunk with a run of one id (3 to 6 long: overlapping pairs),
    two chunks (a, b) with a > b (the order matters; the pair is in two chunks), an empty chunk, a chunk of one id,
    and a pair that occurs only across two chunks (a chunk ends with an id of 301 .. 340 that no other chunk holds,
    and the next one starts with a space)."""

    def build():
        g = generator(seed)
        words = _words(g, _draw(g, low, high))
        chunks = [list((word if k == 0 else " " + word).encode("utf-8")) for k, word in enumerate(words)]
        if merged:
            for chunk in chunks:
                for t in range(0, len(chunk), 3):
                    if _draw(g, 0, 1):
                        chunk[t] = _draw(g, 256, 300)
        run = [_pick(g, (_draw(g, 97, 122), _draw(g, 256, 300)))] * _draw(g, 3, 6)
        big, small = _draw(g, 120, 300), _draw(g, 32, 110)
        for special in ([32, *run], [big, small], [big, small], [], [_draw(g, 33, 126)]):
            chunks.insert(_draw(g, 0, len(chunks)), special)
        k = _draw(g, 0, len(chunks))
        before, after = _words(g, 2)
        chunks[k:k] = [[*before.encode("utf-8"), _draw(g, 301, 340)], list((" " + after).encode("utf-8"))]
        return (chunks,), reference_counts(chunks)

    return build


def _chunkwise_counts(count):
    """``count`` (a pair count of one list of ids) run on every chunk, the counts summed."""

    def pair_counts(chunks):
        total: Counter = Counter()
        for chunk in chunks:
            total.update(count(list(chunk)))
        return total

    pair_counts.__name__ = f"chunkwise_{count.__name__}"
    return pair_counts


def lesson_count_pairs(ids):
    """Notebook 11's count of one list of ids, given the chunks: a pair of two chunks is a key that cannot be hashed."""
    counts: dict = {}
    for t in range(len(ids) - 1):
        pair = (ids[t], ids[t + 1])
        counts[pair] = counts.get(pair, 0) + 1
    return counts


def counts_joined(chunks):
    """The chunks joined into one list first: a pair across two chunks is counted."""
    joined = _flat(chunks)
    return Counter(zip(joined, joined[1:]))


def counts_first_chunk(chunks):
    """A return inside the loop over the chunks: only the first chunk is counted."""
    for chunk in chunks:
        return Counter(zip(chunk, chunk[1:]))
    return Counter()


def counts_last_chunk(chunks):
    """The counts start again inside the loop over the chunks: only the last chunk is counted."""
    counts: Counter = Counter()
    for chunk in chunks:
        counts = Counter(zip(chunk, chunk[1:]))
    return counts


def counts_every_other(ids):
    """Pairs (ids[0], ids[1]), (ids[2], ids[3]), ...: half of the positions."""
    return Counter(zip(ids[0::2], ids[1::2]))


def counts_no_overlap(ids):
    """Like str.count: once a pair is counted, its second token is not the start of another pair."""
    counts: Counter = Counter()
    t = 0
    while t < len(ids) - 1:
        counts[(ids[t], ids[t + 1])] += 1
        t += 2 if ids[t] == ids[t + 1] else 1
    return counts


def counts_last_missed(ids):
    return Counter(zip(ids[:-2], ids[1:-1]))


def counts_presence(ids):
    return dict.fromkeys(zip(ids, ids[1:]), 1)


def counts_replaced(chunks):
    """dict.update with each chunk's counts: a pair's count is replaced by its count in a later chunk, not added."""
    counts: dict = {}
    for chunk in chunks:
        counts.update(Counter(zip(chunk, chunk[1:])))
    return counts


def counts_presence_overall(chunks):
    """Every pair set to 1, once over all the chunks."""
    return dict.fromkeys((pair for chunk in chunks for pair in zip(chunk, chunk[1:])), 1)


def counts_wrapped(ids):
    return Counter(zip(ids, ids[1:] + ids[:1]))


def counts_unordered(ids):
    return Counter(tuple(sorted(pair)) for pair in zip(ids, ids[1:]))


def _unhashable_chunks(exc: BaseException, args) -> bool:
    """A TypeError for a list used as a dict key, on chunks that are lists: the chunks were taken for ids."""
    chunks = args[0] if args else None
    return (
        isinstance(exc, TypeError)
        and "unhashable" in str(exc)
        and isinstance(chunks, list)
        and any(isinstance(chunk, list) for chunk in chunks)
    )


PAIRS_MISTAKES = [
    Mistake(
        "chunks_as_ids",
        "the chunks are taken for the ids: two neighbouring chunks (lists) become a pair, and a list cannot be a key "
        "of a dict",
        "chunks is a list of chunks, each a list of ids (one word). Go through the chunks one at a time, count the "
        "adjacent pairs inside each, and add them all to one dict.",
        lesson_count_pairs,
        raises_on=_unhashable_chunks,
    ),
    Mistake(
        "counted_across_chunks",
        "the chunks are joined first, so a pair of the last id of one chunk and the first id of the next is counted",
        "The chunks are words, and no merge ever joins two words: a pair that spans two chunks is never merged, so it "
        "is not counted. Count the pairs inside each chunk on its own, then add up the counts.",
        counts_joined,
    ),
    Mistake(
        "one_chunk_only",
        "only one chunk is counted (the counts start again, or the function returns, inside the loop over chunks)",
        "Make the dict once, before the loop over the chunks, add every chunk's pairs to it, and return it after "
        "the loop.",
        counts_first_chunk,
        variants=(counts_last_chunk,),
    ),
    Mistake(
        "counts_replaced",
        "a pair's count is its count in one chunk: a later chunk's count replaces it instead of adding to it",
        "dict.update (or counts[pair] = ...) writes over a count that is there: add each chunk's counts to the "
        "total, counts[pair] = counts.get(pair, 0) + n, or Counter.update, which adds.",
        counts_replaced,
    ),
    Mistake(
        "overlaps_counted_once",
        "a run of one token is counted without its overlapping pairs (a, a, a holds (a, a) once in your count)",
        "Every position t from 0 to len(chunk) − 2 starts a pair, whatever the pair before it was: in a, a, a the "
        "pair (a, a) starts at 0 and at 1, so it occurs twice. Counting is not merging: nothing is used up.",
        _chunkwise_counts(counts_no_overlap),
    ),
    Mistake(
        "every_other_pair",
        "only every other position starts a pair (the loop moves by two)",
        "The pairs overlap: (chunk[0], chunk[1]), then (chunk[1], chunk[2]), ... — move by one position, so a chunk "
        "of n ids has n − 1 pairs.",
        _chunkwise_counts(counts_every_other),
    ),
    Mistake(
        "last_pair_missed",
        "the last pair of a chunk, (chunk[-2], chunk[-1]), is not counted",
        "A chunk of n ids has n − 1 pairs, starting at t = 0 .. n − 2: range(len(chunk) − 1), or zip(chunk, "
        "chunk[1:]), reaches the last one.",
        _chunkwise_counts(counts_last_missed),
    ),
    Mistake(
        "presence_not_count",
        "a pair's count is not how often it occurs (it is set to 1, or counts the chunks that hold it)",
        "Add 1 to a pair's count each time it occurs (counts.get(pair, 0) + 1, or a Counter) instead of setting it.",
        counts_presence_overall,
        variants=(_chunkwise_counts(counts_presence),),
    ),
    Mistake(
        "wrapped_around",
        "the last id of a chunk is paired with its first one, as if the chunk were a circle",
        "The last id of a chunk has no right neighbour: it ends a pair but starts none.",
        _chunkwise_counts(counts_wrapped),
    ),
    Mistake(
        "order_ignored",
        "(a, b) and (b, a) are counted as one pair",
        "A pair is ordered: (a, b) means a, then b. Keep the two ids in the order they stand in the chunk.",
        _chunkwise_counts(counts_unordered),
    ),
]

PAIRS_SPEC = CheckSpec(
    name="check_pair_counts",
    function="pair_counts",
    own=("course_lib.tokenizer", "pair_counts"),
    arg_names=("chunks",),
    output=COUNTS,
    cases=[
        Case("a short text's words", _chunks_case(11_000, 3, 6, merged=False)),
        Case("words after some merges (ids 256 and up)", _chunks_case(11_017, 9, 14, merged=True)),
        Case("a longer text's words", _chunks_case(11_031, 20, 30, merged=False)),
    ],
    mistakes=PAIRS_MISTAKES,
    success="Every adjacent pair inside every chunk counted, and none across two: the first step of BPE training.",
    diagnose=_counts_diagnose,
    trains=False,
)


# ---------------------------------------------------------------------------------------------------------------
# merge_pair
# ---------------------------------------------------------------------------------------------------------------


def _merge_case(seed: int, low: int, high: int, kind: str):
    """``chunks`` (low .. high of them, besides the special ones), a pair and a new id.

    Every chunk but the special ones is a space and 1 to 5 other ids (never the pair's). Always among the chunks, at
    random places: an empty chunk, a chunk of one id, and the pair across two chunks only (one chunk ends with its
    first id, the next starts with its second: never merged).
    ``run``: the pair is (a, a), one chunk holds a run of three a (odd), another ends with a run of four;
    ``ends``: the pair (a, b), a ≠ b, is the first two ids of a chunk and its last two;
    ``merged``: merged ids among the ids, the pair (a, b) with a ≥ 256 occurs three times in a chunk that ends with it,
    and a chunk ends with a and an id whose decimal digits start with b's (a merge done on the digits of a string
    mistakes it for the pair).
    The new id is above every id, as in training: 256 .. 420, 421 .. 600 or 700 .. 900 by ``kind``.
    """

    def build():
        g = generator(seed)
        count = _draw(g, low, high)
        new_id = {"run": _draw(g, 256, 420), "ends": _draw(g, 421, 600), "merged": _draw(g, 700, 900)}[kind]
        if kind == "run":
            a = b = _draw(g, 97, 122)
        elif kind == "ends":
            a, b = _draw(g, 97, 122), _draw(g, 33, 64)
        else:
            a, b = _draw(g, 256, 299), _draw(g, 33, 64)

        def filler(low_: int = 1, high_: int = 5) -> list[int]:
            ids = [_draw(g, 33, 126) for _ in range(_draw(g, low_, high_))]
            if kind == "merged":
                ids = [_draw(g, 256, 299) if _draw(g, 0, 2) == 0 else i for i in ids]
            return [i + 1 if i in (a, b) else i for i in ids]  # a + 1 is never b: b ≤ 64 < a, or b = a

        chunks = [[32, *filler()] for _ in range(count)]
        if kind == "run":
            specials = [[32, *filler(1, 2), a, a, a, *filler(1, 2)], [32, *filler(1, 3), a, a, a, a]]
        elif kind == "ends":
            specials = [[a, b, *filler(), a, b]]
        else:
            specials = [[32, a, b, *filler(), a, b, a, b], [32, *filler(), a, 10 * b + _draw(g, 0, 9)]]
        for special in [*specials, [], [_pick(g, (a, b))]]:
            chunks.insert(_draw(g, 0, len(chunks)), special)
        k = _draw(g, 0, len(chunks))
        chunks[k:k] = [[32, *filler(), a], [b, *filler()]]  # the pair across two chunks only
        return (chunks, (a, b), new_id), reference_merge_chunks(chunks, (a, b), new_id)

    return build


def merge_overlapping(ids, pair, new_id):
    """Every position that starts the pair becomes new_id, and a position that ends one disappears: a, a, a → X, X."""
    out = []
    for t in range(len(ids)):
        if t + 1 < len(ids) and (ids[t], ids[t + 1]) == pair:
            out.append(new_id)
        elif t > 0 and (ids[t - 1], ids[t]) == pair:
            continue
        else:
            out.append(ids[t])
    return out


def merge_keeps_second(ids, pair, new_id):
    """new_id written, then the scan moves by one: the pair's second id stays."""
    out = []
    for t in range(len(ids)):
        out.append(new_id if t + 1 < len(ids) and (ids[t], ids[t + 1]) == pair else ids[t])
    return out


def merge_drops_last(ids, pair, new_id):
    out, t = [], 0
    while t < len(ids) - 1:
        if (ids[t], ids[t + 1]) == pair:
            out.append(new_id)
            t += 2
        else:
            out.append(ids[t])
            t += 1
    return out


def _left_to_right(ids, pair, new_id, last: int):
    """The merge, with pairs looked for only where they start before position ``last``."""
    out, t = [], 0
    while t < len(ids):
        if t + 1 < last and (ids[t], ids[t + 1]) == pair:
            out.append(new_id)
            t += 2
        else:
            out.append(ids[t])
            t += 1
    return out


def merge_misses_end(ids, pair, new_id):
    return _left_to_right(ids, pair, new_id, len(ids) - 1)


def merge_right_to_left(ids, pair, new_id):
    return _left_to_right(ids[::-1], pair[::-1], new_id, len(ids))[::-1]


def merge_first_only(ids, pair, new_id):
    for t in range(len(ids) - 1):
        if (ids[t], ids[t + 1]) == pair:
            return list(ids[:t]) + [new_id] + list(ids[t + 2 :])
    return list(ids)


def _chunkwise(merge):
    """``merge`` (a merge of one list of ids) run on every chunk."""

    def merge_pair(chunks, pair, new_id):
        return [merge(list(chunk), pair, new_id) for chunk in chunks]

    merge_pair.__name__ = f"chunkwise_{merge.__name__}"
    return merge_pair


def lesson_merge(ids, pair, new_id):
    """Notebook 11's merge of one list of ids, given the chunks: a whole chunk is never equal to an id of the pair,
    so nothing is merged and the chunks come back as they were."""
    out, t = [], 0
    while t < len(ids):
        if t + 1 < len(ids) and (ids[t], ids[t + 1]) == pair:
            out.append(new_id)
            t += 2
        else:
            out.append(ids[t])
            t += 1
    return out


def _merged_as_stream(chunks, pair, new_id, later: bool):
    """The chunks read as one stream of ids, each id remembering its chunk: a pair across two chunks is merged too,
    its new id put in the chunk of the pair's first id (``later``: of its second)."""
    stream = [(k, i) for k, chunk in enumerate(chunks) for i in chunk]
    out: list[list[int]] = [[] for _ in chunks]
    t = 0
    while t < len(stream):
        k, i = stream[t]
        if t + 1 < len(stream) and (i, stream[t + 1][1]) == pair:
            out[stream[t + 1][0] if later else k].append(new_id)
            t += 2
        else:
            out[k].append(i)
            t += 1
    return out


def merge_across_chunks(chunks, pair, new_id):
    return _merged_as_stream(chunks, pair, new_id, later=False)


def merge_across_chunks_into_the_later(chunks, pair, new_id):
    return _merged_as_stream(chunks, pair, new_id, later=True)


def merge_joined(chunks, pair, new_id):
    """The chunks joined into one list, then merged: one flat list of ids comes back."""
    return lesson_merge(_flat(chunks), pair, new_id)


def _chunks_joined(value, args) -> bool:
    """The learner returned one list of ids (or a list holding one) where the chunks were: the chunks' merged ids
    joined, or the joined chunks merged."""
    chunks, pair, new_id = args
    if isinstance(value, (list, tuple)) and len(value) == 1 and isinstance(value[0], (list, tuple)) and len(chunks) > 1:
        value = value[0]
    if not (isinstance(value, (list, tuple)) and all(type(i) is int for i in value)):
        return False
    joined = [_flat(reference_merge_chunks(chunks, pair, new_id)), reference_merge(_flat(chunks), pair, new_id)]
    return list(value) in joined


def merge_drops_empty(chunks, pair, new_id):
    return [merged for merged in (lesson_merge(list(chunk), pair, new_id) for chunk in chunks) if merged]


def merge_drops_short(chunks, pair, new_id):
    """A chunk too short to hold a pair is skipped (continue) before its merged copy is kept."""
    return [lesson_merge(list(chunk), pair, new_id) for chunk in chunks if len(chunk) >= 2]


def merge_first_only_overall(chunks, pair, new_id):
    """The merge stops after the first occurrence in any chunk."""
    out, done = [], False
    for chunk in chunks:
        merged = merge_first_only(list(chunk), pair, new_id) if not done else list(chunk)
        done = done or merged != list(chunk)
        out.append(merged)
    return out


MERGE_MISTAKES = [
    Mistake(
        "chunks_as_ids",
        "each chunk is compared with the pair as if it were one id, so nothing is merged (the chunks come back as "
        "they were)",
        "chunks is a list of chunks, each a list of ids. Take one chunk at a time, scan its ids for the pair and "
        "build its merged copy; return the list of merged chunks.",
        lesson_merge,
    ),
    Mistake(
        "merged_across_chunks",
        "a pair of the last id of one chunk and the first id of the next is merged",
        "The chunks are words, and BPE never merges across two words (GPT-2 splits the text first for this reason): "
        "merge inside each chunk on its own, so a chunk's last id never meets the next chunk's first.",
        merge_across_chunks,
        variants=(merge_across_chunks_into_the_later,),
    ),
    Mistake(
        "chunks_joined",
        "the chunks are joined into one list of ids (your result is not one merged chunk for every chunk given)",
        "Return as many chunks as you were given, in their order: a list whose k-th item is the k-th chunk merged.",
        merge_joined,
        probe=_chunks_joined,
    ),
    Mistake(
        "empty_chunks_dropped",
        "chunks too short to hold the pair (empty, or of one id) are left out of the result",
        "Every chunk comes back, merged or not, an empty one as an empty list: the k-th chunk of the result must be "
        "the k-th chunk given.",
        merge_drops_empty,
        variants=(merge_drops_short,),
    ),
    Mistake(
        "overlaps_merged",
        "overlapping occurrences are both merged (a, a, a becomes two new ids)",
        "Once a pair is merged, both of its ids are used up: scan left to right and, after writing new_id, jump "
        "past the pair's second id. In a, a, a only the first (a, a) is merged and the last a stays.",
        _chunkwise(merge_overlapping),
    ),
    Mistake(
        "second_token_kept",
        "the pair's second id stays in the chunk after new_id",
        "new_id replaces both ids of the pair: when the pair starts at t, write new_id and continue at t + 2, not "
        "t + 1.",
        _chunkwise(merge_keeps_second),
    ),
    Mistake(
        "last_token_dropped",
        "the last id of a chunk is lost when it is not part of a merged pair",
        "A loop that stops at len(chunk) − 1, to look at chunk[t + 1] safely, never reaches the last id on its own: "
        "copy it when it is left over, or loop over every t and test t + 1 < len(chunk) before reading chunk[t + 1].",
        _chunkwise(merge_drops_last),
    ),
    Mistake(
        "end_pair_missed",
        "a pair that ends a chunk is not merged",
        "The last pair of a chunk starts at t = len(chunk) − 2: the test before reading chunk[t + 1] is "
        "t + 1 < len(chunk).",
        _chunkwise(merge_misses_end),
    ),
    Mistake(
        "right_to_left",
        "the chunk is scanned from the right (a, a, a becomes a, new_id)",
        "Scan from the left: where occurrences overlap, the leftmost one is merged, as training counted them.",
        _chunkwise(merge_right_to_left),
    ),
    Mistake(
        "first_only",
        "only the first occurrence of the pair is merged (in each chunk, or in all of them)",
        "Every occurrence of the pair, in every chunk, is merged in one call: keep scanning after the first one.",
        _chunkwise(merge_first_only),
        variants=(merge_first_only_overall,),
    ),
]

MERGE_SPEC = CheckSpec(
    name="check_merge_pair",
    function="merge_pair",
    own=("course_lib.tokenizer", "merge_pair"),
    arg_names=("chunks", "pair", "new_id"),
    output=CHUNKS,
    cases=[
        Case("runs of one id (a, a, a and a, a, a, a), pair (a, a)", _merge_case(12_000, 3, 6, "run")),
        Case("the pair at the start and at the end of a chunk", _merge_case(12_017, 8, 12, "ends")),
        Case("merged ids, the pair several times", _merge_case(12_031, 15, 24, "merged")),
    ],
    mistakes=MERGE_MISTAKES,
    success="Left to right, never overlapping, never across two chunks: one merge, as training applies it.",
    diagnose=_chunks_diagnose,
    trains=False,
)


# ---------------------------------------------------------------------------------------------------------------
# most_frequent
# ---------------------------------------------------------------------------------------------------------------


def _pair_form(value):
    """A pair (a, b) of whole numbers (a tuple, or a list of two), as a tuple."""
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(type(item) is int for item in value):
        return tuple(value), None
    if type(value) is int:
        return None, (
            f"your function returned {_describe(value)}, expected a pair (a, b) of token ids.",
            "A whole number is a count: return the pair that has it, the key of counts, not its value.",
        )
    return None, (
        f"your function returned {_describe(value)}, expected a pair (a, b) of token ids.",
        "Did you forget the `return` statement?" if value is None else "Return one key of counts: a tuple (a, b).",
    )


PAIR = ValueOut("a pair (a, b)", _pair_form)


def _tied_case(seed: int, low: int, high: int, decided_by: str):
    """``counts``: low .. high pairs besides four that share the top count T (drawn 5 .. 40), ids 0 .. 700.

    The four tied pairs are, with a0 < a1 < a2 < a3 and lo < mid < hi: the smallest W, the first of the four in the
    dict's order F, P with the smallest b, and the largest L. ``decided_by="a"``: W = (a0, hi), F = (a1, mid);
    ``"b"``: W = (a0, mid), F = (a0, hi) (same a: b decides). P = (a2, lo), L = (a3, mid). So ties to the largest,
    to the first in the dict's order and by b before a each give another pair. The other pairs: one smaller than W
    and one larger than L (the min and max of the pairs ignoring counts), both T - 1 times; (a2, hi) once, the one
    least frequent pair; the rest 2 .. T - 1 times. They stand anywhere in the dict; the tied pairs come after F, in
    a random order."""

    def build():
        g = generator(seed)
        a0, a1, a2, a3 = sorted(int(i) + 2 for i in torch.randperm(600, generator=g)[:4])
        lo, mid, hi = sorted(int(i) + 1 for i in torch.randperm(600, generator=g)[:3])
        top = _draw(g, 5, 40)
        if decided_by == "a":
            winner, first = (a0, hi), (a1, mid)
        else:
            winner, first = (a0, mid), (a0, hi)
        tied = [winner, (a2, lo), (a3, mid)]
        others = {(_draw(g, 0, a0 - 1), _draw(g, 0, 700)): top - 1, (_draw(g, a3 + 1, 702), _draw(g, 0, 700)): top - 1}
        others[(a2, hi)] = 1  # the one least frequent pair, neither the smallest nor the largest
        size = _draw(g, low, high) + 3
        while len(others) < size:
            pair = (_draw(g, 0, 700), _draw(g, 0, 700))
            if pair not in tied and pair != first:
                others.setdefault(pair, _draw(g, 2, top - 1))
        items = [list(others.items())[int(i)] for i in torch.randperm(len(others), generator=g)]
        k = _draw(g, 0, len(items))
        after = items[k:]
        for pair in [tied[int(i)] for i in torch.randperm(3, generator=g)]:
            after.insert(_draw(g, 0, len(after)), (pair, top))
        counts = dict(items[:k] + [(first, top)] + after)
        return (counts,), reference_most_frequent(counts)

    return build


def ties_to_largest(counts):
    return max(counts, key=lambda pair: (counts[pair], pair))


def ties_to_first_seen(counts):
    """max with the count as the key keeps the first of the tied pairs in the dict's order (so does most_common)."""
    return max(counts, key=counts.get)


def ties_b_first(counts):
    return max(counts, key=lambda pair: (counts[pair], -pair[1], -pair[0]))


def count_not_pair(counts):
    return max(counts.values())


def least_frequent(counts):
    return min(counts, key=lambda pair: (counts[pair], pair))


def largest_pair(counts):
    return max(counts)


def _pair_diagnose(got, expected, args) -> str:
    """How the learner's pair ranks, without the right pair."""
    counts = args[0]
    if not isinstance(got, tuple) or got not in counts:
        return "Your pair differs from every pair in counts: return one of its keys." if isinstance(got, tuple) else ""
    top = max(counts.values())
    if counts[got] != top:
        return f"Your pair occurs {counts[got]} times; the right pair differs from it: some pair occurs more often."
    tied = sum(1 for count in counts.values() if count == top)
    return f"Your pair has the highest count, but {tied} pairs share it, and the one the tie rule picks differs from yours."


MOST_FREQUENT_MISTAKES = [
    Mistake(
        "count_not_pair",
        "the highest count is returned instead of the pair that has it",
        "The result is a key of counts, a pair (a, b), not a value: look for the pair whose count is the highest.",
        count_not_pair,
        probe=lambda value, args: type(value) is int and bool(args[0]) and value == max(args[0].values()),
    ),
    Mistake(
        "least_frequent",
        "the least frequent pair is returned (min instead of max over the counts)",
        "The pair to merge is the one that occurs most often: the highest count, not the lowest.",
        least_frequent,
    ),
    Mistake(
        "max_of_pairs",
        "the largest pair is returned whatever its count (max over the pairs themselves, not their counts)",
        "max(counts) compares the keys, the pairs, and never looks at the counts: compare the pairs by their count "
        "first.",
        largest_pair,
    ),
    Mistake(
        "ties_to_largest",
        "a tie at the top count goes to the largest of the tied pairs",
        "When several pairs share the highest count, the rule picks the smallest of them (a first, then b). With "
        "max, a larger pair must rank lower: turn the ids around in the key, or compare the smaller pair as the "
        "winner.",
        ties_to_largest,
    ),
    Mistake(
        "ties_to_first_seen",
        "a tie at the top count goes to the tied pair that comes first in the dict (max or most_common with the "
        "count alone as the key)",
        "The dict's order is the order the pairs were met in the text, which the rule does not use: among the pairs "
        "that share the highest count, pick the smallest (a, b), whatever their order in the dict.",
        ties_to_first_seen,
    ),
    Mistake(
        "ties_b_first",
        "a tie is decided by the second id b before the first id a",
        "Pairs compare as tuples do, a first: b decides only between tied pairs with the same a.",
        ties_b_first,
    ),
]

MOST_FREQUENT_SPEC = CheckSpec(
    name="check_most_frequent",
    function="most_frequent",
    own=("course_lib.tokenizer", "most_frequent"),
    arg_names=("counts",),
    output=PAIR,
    cases=[
        Case("four pairs share the top count, the first ids decide", _tied_case(12_500, 4, 7, "a")),
        Case("two of the tied pairs have the same first id", _tied_case(12_517, 11, 18, "b")),
        Case("more pairs, four tied at the top", _tied_case(12_531, 28, 40, "a")),
    ],
    mistakes=MOST_FREQUENT_MISTAKES,
    success="The highest count, ties to the smallest pair: the pair training merges next, the same on every run.",
    diagnose=_pair_diagnose,
    trains=False,
)


# ---------------------------------------------------------------------------------------------------------------
# encode
# ---------------------------------------------------------------------------------------------------------------


def _letters(g: torch.Generator, count: int) -> list[int]:
    """``count`` different lowercase letters' byte values, in a random order."""
    return [97 + int(i) for i in torch.randperm(26, generator=g)[:count]]


def _order_case(seed: int):
    """Merges whose order matters, on a text that shows it.

    Letters x > y, z, w, u < v, t, q (all different): merges (x, y) → 256, (y, z) → 257, (v, t) → 258, (u, v) → 259,
    (256, w) → 260, (q, q) → 261. In "x y z y z y z" and "x y w" the pair (y, z) is more frequent (3 against 2) but
    (x, y) comes first (and sorted pairs put (y, z) first); "u v t" and "v t": (v, t) comes first, and sorted pairs
    put (u, v) first; "x y w"
    needs (256, w) after (x, y); "u v t" has (v, t) first although (u, v) is the longer match from the left; "q q q"
    merges once; an accented letter and an emoji are more than one byte. The pieces come in a random order, each
    text ends with ". " (so that no piece is cut short at the end), once or twice.
    """

    def build():
        g = generator(seed)
        x, y, z, w, u, v, t, q = _letters(g, 8)
        x, y = max(x, y), min(x, y)
        u, v = min(u, v), max(u, v)
        merges = {(x, y): 256, (y, z): 257, (v, t): 258, (u, v): 259, (256, w): 260, (q, q): 261}
        pieces = [bytes([x, y, z, y, z, y, z]), bytes([x, y, w]), bytes([u, v, t]), bytes([v, t]), bytes([q] * 3)]
        pieces += [_pick(g, ("é", "ñ", "ü")).encode(), _pick(g, ("🙂", "東")).encode()]
        order = torch.randperm(len(pieces), generator=g).tolist()
        text = (" ".join(pieces[i].decode() for i in order) + ". ") * _draw(g, 1, 2)
        return (text, merges), reference_encode(text, merges)

    return build


def _trained_case(seed: int, merges_low: int, merges_high: int, words: int, same_text: bool):
    """Merges learned on a text of Latin words, then a text encoded: the same one, or new words with rare characters."""

    def build():
        g = generator(seed)
        training = " ".join(_words(g, 3 * words))
        merges = train_bpe(training, 256 + _draw(g, merges_low, merges_high))
        if same_text:
            text = training[: 6 * words]
        else:
            text = " ".join(_words(g, words) + _words(g, 2, RARE))
        return (text, merges), reference_encode(text, merges)

    return build


def encode_by_frequency(text, merges):
    """Each step merges the pair with a merge that is most frequent in this text (ties: the lower rank)."""
    ids = list(text.encode("utf-8"))
    while True:
        counts = Counter(pair for pair in zip(ids, ids[1:]) if pair in merges)
        if not counts:
            return ids
        pair = max(counts, key=lambda p: (counts[p], -merges[p]))
        ids = reference_merge(ids, pair, merges[pair])


def encode_by_frequency_first_seen(text, merges):
    """The same, ties to the pair seen first in the text (max over a Counter)."""
    ids = list(text.encode("utf-8"))
    while True:
        counts = Counter(pair for pair in zip(ids, ids[1:]) if pair in merges)
        if not counts:
            return ids
        pair = max(counts, key=counts.get)
        ids = reference_merge(ids, pair, merges[pair])


def encode_reversed(text, merges):
    ids = list(text.encode("utf-8"))
    for pair, new_id in reversed(list(merges.items())):
        ids = reference_merge(ids, pair, new_id)
    return ids


def encode_counted_once(text, merges):
    ids = list(text.encode("utf-8"))
    present = set(zip(ids, ids[1:]))
    for pair, new_id in merges.items():
        if pair in present:
            ids = reference_merge(ids, pair, new_id)
    return ids


def encode_code_points(text, merges):
    ids = [ord(ch) for ch in text]
    for pair, new_id in merges.items():
        ids = reference_merge(ids, pair, new_id)
    return ids


def encode_one_merge(text, merges):
    ids = list(text.encode("utf-8"))
    present = [pair for pair in zip(ids, ids[1:]) if pair in merges]
    if present:
        pair = min(present, key=merges.get)
        ids = reference_merge(ids, pair, merges[pair])
    return ids


def encode_longest_match(text, merges):
    """WordPiece's greedy cut: at each position the longest token of the vocabulary that the bytes start with."""
    vocab = vocabulary(merges)
    by_bytes = {token: i for i, token in vocab.items()}
    data, ids, t = text.encode("utf-8"), [], 0
    while t < len(data):
        size = max(n for n in range(1, len(data) - t + 1) if data[t : t + n] in by_bytes)
        ids.append(by_bytes[data[t : t + size]])
        t += size
    return ids


def _encode_with(merge):
    def encode(text, merges):
        ids = list(text.encode("utf-8"))
        for pair, new_id in merges.items():
            ids = merge(ids, pair, new_id)
        return ids

    encode.__name__ = f"encode_with_{merge.__name__}"
    return encode


def encode_sorted_pairs(text, merges):
    ids = list(text.encode("utf-8"))
    for pair in sorted(merges):
        ids = reference_merge(ids, pair, merges[pair])
    return ids


ENCODE_MISTAKES = [
    Mistake(
        "by_frequency",
        "the merges are applied by how often their pair occurs in this text, not in the order they were learned",
        "Frequency decided the merges during training only. To encode, apply them by rank: the merge learned first "
        "(the lowest new id) before any later one, whatever this text holds most.",
        encode_by_frequency,
        variants=(encode_by_frequency_first_seen,),
    ),
    Mistake(
        "reverse_rank",
        "the merges are applied from the last learned to the first",
        "Apply the merges in the order they were learned (the dict keeps it: new ids 256, 257, ...): a later merge "
        "may build on an earlier one's id.",
        encode_reversed,
    ),
    Mistake(
        "sorted_by_pair",
        "the merges are applied in the order of their pairs' ids instead of the order they were learned",
        "sorted(merges) orders the pairs by their ids, not by rank: go through merges in its own order (or sort by "
        "the new id).",
        encode_sorted_pairs,
    ),
    Mistake(
        "pairs_not_recounted",
        "the pairs are looked up once, before any merge, so a merge that builds on a new id never happens",
        "A merge creates pairs that were not there before, e.g. (256, w) once (x, y) became 256: look for each "
        "merge's pair in the ids as they are at that step.",
        encode_counted_once,
    ),
    Mistake(
        "one_merge",
        "only one merge is applied",
        "Encoding applies every merge whose pair occurs, one after the other in rank order, until none is left.",
        encode_one_merge,
    ),
    Mistake(
        "code_points",
        "the text becomes its characters' code points (ord) instead of its UTF-8 bytes",
        "A byte-level tokenizer starts from text.encode('utf-8'): é is two bytes, an emoji four, and a code point "
        "above 255 would collide with the merged ids.",
        encode_code_points,
    ),
    Mistake(
        "longest_match",
        "the text is cut into the longest tokens of the vocabulary, left to right, instead of applying the merges",
        "BPE does not look for the longest token: it replays the merges in the order they were learned. In u, v, t "
        "with (v, t) learned before (u, v), the merge (v, t) happens first, although u, v is the longer match from "
        "the left.",
        encode_longest_match,
    ),
    Mistake(
        "merge_pair_wrong",
        "each merge is done the way a wrong merge_pair does it (an overlap merged twice, an id dropped or kept)",
        "Encoding is right only if each merge is: run check_merge_pair on the merge your encode uses, fix it, then "
        "come back.",
        _encode_with(merge_overlapping),
        variants=tuple(
            _encode_with(m) for m in (merge_keeps_second, merge_drops_last, merge_right_to_left, merge_first_only)
        ),
    ),
]

ENCODE_SPEC = CheckSpec(
    name="check_bpe_encode",
    function="encode",
    own=("course_lib.tokenizer", "encode"),
    arg_names=("text", "merges"),
    output=IDS,
    cases=[
        Case("six merges whose order matters", _order_case(13_000)),
        Case("merges learned on Latin words, new words with emoji and CJK", _trained_case(13_017, 20, 40, 12, False)),
        Case("the text the merges were learned on", _trained_case(13_031, 50, 80, 20, True)),
    ],
    mistakes=ENCODE_MISTAKES,
    success="Bytes first, then the merges by rank: the ids the tokenizer gives every text, seen or not.",
    diagnose=_ids_diagnose,
    trains=False,
)


# ---------------------------------------------------------------------------------------------------------------
# decode
# ---------------------------------------------------------------------------------------------------------------


def _decode_case(seed: int, merges_low: int, merges_high: int, words: int, cut: bool = False):
    """Merges learned on Latin words; ids that encode new words with rare characters (each split over tokens: no
    merge knows their first byte). ``cut``: the last rare character loses its last byte, as a model that samples ids
    one at a time may leave it (the text ends in "�")."""

    def build():
        g = generator(seed)
        training = " ".join(_words(g, 3 * words) + ["the", "token", "the"])
        merges = train_bpe(training, 256 + _draw(g, merges_low, merges_high))
        text = " ".join(_words(g, words) + ["the"] + _words(g, 2, RARE))
        ids = reference_encode(text, merges)
        if cut:
            ids = reference_encode(text + _pick(g, ("🙂", "東")), merges)[:-1]
        return (ids, merges), reference_decode(ids, merges)

    return build


def _joined(ids, merges) -> bytes:
    vocab = vocabulary(merges)
    return b"".join(vocab[i] for i in ids)


def _valid_utf8(ids, merges) -> bool:
    try:
        _joined(ids, merges).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _unicode_error(exc: BaseException) -> bool:
    return type(exc).__name__ == "UnicodeDecodeError"


def decode_token_by_token(ids, merges):
    vocab = vocabulary(merges)
    return "".join(vocab[i].decode("utf-8", errors="replace") for i in ids)


def decode_token_by_token_strict(ids, merges):
    vocab = vocabulary(merges)
    return "".join(vocab[i].decode("utf-8") for i in ids)


def decode_strict(ids, merges):
    return _joined(ids, merges).decode("utf-8")


def decode_ignore(ids, merges):
    return _joined(ids, merges).decode("utf-8", errors="ignore")


def decode_latin1(ids, merges):
    return _joined(ids, merges).decode("latin-1")


def decode_swapped(ids, merges):
    vocab = {i: bytes([i]) for i in range(256)}
    for (a, b), new_id in merges.items():
        vocab[new_id] = vocab[b] + vocab[a]
    return b"".join(vocab[i] for i in ids).decode("utf-8", errors="replace")


DECODE_MISTAKES = [
    Mistake(
        "token_by_token",
        "each token is decoded to a string on its own, which breaks a character whose bytes are split over tokens",
        "A token may hold part of a character (an emoji is four bytes, and no merge may join them): join the bytes "
        "of all the tokens first, then decode the whole byte string once.",
        decode_token_by_token,
        variants=(decode_token_by_token_strict,),
        raises_on=lambda exc, args: _unicode_error(exc) and _valid_utf8(*args),
    ),
    Mistake(
        "strict_utf8",
        "bytes that are not valid UTF-8 raise an error instead of becoming \ufffd",
        "A model can sample ids that cut a character in two, and decode must still return a text: decode the "
        "joined bytes with errors='replace', which writes \ufffd for what is not UTF-8.",
        decode_strict,
        raises_on=lambda exc, args: _unicode_error(exc) and not _valid_utf8(*args),
    ),
    Mistake(
        "errors_ignored",
        "bytes that are not valid UTF-8 are dropped instead of becoming \ufffd",
        "errors='ignore' hides a cut character without a trace; errors='replace' shows it as \ufffd, so the text "
        "keeps a mark where something was lost.",
        decode_ignore,
    ),
    Mistake(
        "latin1",
        "every byte becomes one character (Latin-1 or chr), so é reads as two characters",
        "UTF-8 gives a character one to four bytes: decode the joined bytes with .decode('utf-8', errors='replace'), "
        "not byte by byte.",
        decode_latin1,
    ),
    Mistake(
        "bytes_swapped",
        "a merged token's bytes are joined in the wrong order",
        "The merge (a, b) → new_id stands for a's bytes followed by b's bytes: vocab[new_id] = vocab[a] + vocab[b].",
        decode_swapped,
    ),
]

DECODE_SPEC = CheckSpec(
    name="check_bpe_decode",
    function="decode",
    own=("course_lib.tokenizer", "decode"),
    arg_names=("ids", "merges"),
    output=TEXT,
    cases=[
        Case("emoji and CJK characters split over tokens", _decode_case(14_000, 10, 25, 5)),
        Case("a longer text, more merges", _decode_case(14_017, 40, 70, 16)),
        Case("ids that cut the last character in two", _decode_case(14_031, 28, 36, 9, cut=True)),
    ],
    mistakes=DECODE_MISTAKES,
    success="Bytes joined first, decoded once: every text comes back exactly, and a cut character shows as \ufffd.",
    diagnose=_text_diagnose,
    trains=False,
)


__all__ = export_checks(globals())  # check_* functions, one per CheckSpec above
