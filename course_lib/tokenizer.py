"""From text to tokens: a byte-level byte-pair encoding (BPE) tokenizer (taught in notebook 11).

Text becomes bytes first (UTF-8), so the 256 byte values are tokens 0–255 and no text is ever "unknown". BPE then
learns merges: each one replaces the most frequent adjacent pair of tokens by a new token.

    pairs:   count(a, b) = #{t : ids[t] = a and ids[t + 1] = b}      every adjacent position, overlapping ones too:
                                                                     "aaa" holds the pair (a, a) twice
    merge:   scan left to right; where ids[t], ids[t + 1] = (a, b), write the new id and skip both: "aaa" → [X, a]
    chunks:  GPT-2 first splits a text into words ("hi", " hi", ...) and never merges across two of them:
             count(a, b) = Σ_c count_c(a, b) over the chunks c, and a merge is done in each chunk on its own
    train:   for r = 0, 1, ...: the most frequent pair (a, b) → new id 256 + r; ties go to the smallest pair,
             comparing (a, b) as numbers, first a then b; stop when no pair occurs twice
    encode:  UTF-8 bytes, then the merges in the order they were learned (rank r = new id − 256): the pair with
             the lowest rank first, never the most frequent one in the text being encoded
    decode:  join every token's bytes, then decode the whole byte string as UTF-8 (errors="replace"): a character
             of several bytes may be split over two tokens, so decoding token by token would break it

``merges`` is a dict ``{(a, b): new_id}`` in rank order (new ids 256, 257, ...); ``vocabulary(merges)`` gives each
id's bytes. ``train_bpe`` keeps the pair counts up to date after each merge instead of recounting the whole text, so
512 merges on the 466,000 bytes of ``pydoc_data.topics`` take about two seconds.
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from collections.abc import Sequence

from ._validate import CourseInputError

__all__ = [
    "pair_counts",
    "merge_pair",
    "pair_counts_in_chunks",
    "merge_pair_in_chunks",
    "most_frequent",
    "train_bpe",
    "encode",
    "decode",
    "vocabulary",
]

Pair = tuple[int, int]


def _check_text(text) -> None:
    if not isinstance(text, str):
        raise CourseInputError(f"text must be a str, got {type(text).__name__}")


def _check_merges(merges) -> None:
    if not isinstance(merges, dict):
        raise CourseInputError(f"merges must be a dict {{(a, b): new_id}} from train_bpe, got {type(merges).__name__}")
    for rank, (pair, new_id) in enumerate(merges.items()):
        if new_id != 256 + rank or not (
            isinstance(pair, tuple) and len(pair) == 2 and all(0 <= i < new_id for i in pair)
        ):
            raise CourseInputError(
                f"merges must map pairs of earlier ids to 256, 257, ... in order; entry {rank} is {pair!r}: {new_id!r}"
            )


def pair_counts(ids: Sequence[int]) -> Counter[Pair]:
    """``count(a, b)`` for every adjacent pair of ``ids`` (length n → n − 1 pairs, overlapping ones included)."""
    return Counter(zip(ids, ids[1:]))


def merge_pair(ids: Sequence[int], pair: Pair, new_id: int) -> list[int]:
    """``ids`` with every occurrence of ``pair`` replaced by ``new_id``, left to right, never overlapping."""
    out, t = [], 0
    while t < len(ids):
        if t + 1 < len(ids) and (ids[t], ids[t + 1]) == pair:
            out.append(new_id)
            t += 2  # both tokens of the pair are used up: in "aaa" the second (a, a) is not merged
        else:
            out.append(ids[t])
            t += 1
    return out


def pair_counts_in_chunks(chunks: Sequence[Sequence[int]]) -> Counter[Pair]:
    """``count(a, b) = Σ_c count_c(a, b)``: the adjacent pairs inside each chunk (a word's ids), summed over the chunks.

    chunks: a list of lists of ids, e.g. ``[[104, 105], [32, 104, 105]]`` for "hi hi"; no pair spans two chunks.
    """
    counts: Counter[Pair] = Counter()
    for chunk in chunks:
        counts.update(pair_counts(chunk))
    return counts


def merge_pair_in_chunks(chunks: Sequence[Sequence[int]], pair: Pair, new_id: int) -> list[list[int]]:
    """``[merge_pair(c, pair, new_id) for c in chunks]``: each chunk merged on its own, never across two chunks.

    Returns as many chunks as it was given (an empty chunk stays empty).
    """
    return [merge_pair(chunk, pair, new_id) for chunk in chunks]


def most_frequent(counts: Counter[Pair] | dict[Pair, int]) -> Pair:
    """The pair with the highest count; ties go to the smallest pair (a, b)."""
    return max(counts, key=lambda pair: (counts[pair], -pair[0], -pair[1]))


class _Sequence:
    """The text as a doubly linked list of tokens, with the positions of every pair, so that a merge touches only
    the places where the pair occurs (and their neighbours) instead of the whole text."""

    def __init__(self, ids: Sequence[int]):
        n = len(ids)
        self.token = list(ids)
        self.prev = list(range(-1, n - 1))
        self.next = list(range(1, n + 1))
        self.next[-1:] = [-1] * min(n, 1)
        self.where: dict[Pair, set[int]] = defaultdict(set)  # pair → positions t of its first token
        for t in range(n - 1):
            self.where[(ids[t], ids[t + 1])].add(t)
        self.changed: set[Pair] = set()  # pairs whose count changed since the caller last looked

    def merge(self, pair: Pair, new_id: int) -> None:
        """Replace every occurrence of ``pair``, left to right, updating the pair positions around each one."""
        a, b = pair
        token, prev, nxt, where, changed = self.token, self.prev, self.next, self.where, self.changed
        for t in sorted(where.pop(pair, ())):
            u = nxt[t]
            if token[t] != a or u < 0 or token[u] != b:  # used up by the previous merge (overlap: "aaa")
                continue
            before, after = prev[t], nxt[u]
            token[t], token[u] = new_id, -1
            nxt[t] = after
            if before >= 0:  # (x, a) at before becomes (x, new_id)
                left, right = (token[before], a), (token[before], new_id)
                where[left].discard(before)
                where[right].add(before)
                changed.add(left)
                changed.add(right)
            if after >= 0:  # (b, y) at u becomes (new_id, y) at t
                prev[after] = t
                left, right = (b, token[after]), (new_id, token[after])
                where[left].discard(u)
                where[right].add(t)
                changed.add(left)
                changed.add(right)
        changed.discard(pair)

    def ids(self) -> list[int]:
        return [token for token in self.token if token >= 0]


def train_bpe(text: str, vocab_size: int) -> dict[Pair, int]:
    """Learn ``vocab_size − 256`` merges on ``text``: ``{(a, b): new_id}`` in the order they were learned.

    Each step merges the most frequent pair (ties: the smallest pair) into the next id. Training stops early when
    no pair occurs twice, since a merge would then shorten the text by one token at most. The counts are updated
    where a merge changed the text, not recounted, which gives the same merges as recounting after every step.
    """
    _check_text(text)
    if not isinstance(vocab_size, int) or isinstance(vocab_size, bool) or vocab_size < 256:
        raise CourseInputError(f"vocab_size must be an int ≥ 256 (the 256 byte values come first), got {vocab_size!r}")
    sequence = _Sequence(list(text.encode("utf-8")))
    heap = [(-len(places), pair) for pair, places in sequence.where.items()]  # the largest count on top
    heapq.heapify(heap)
    merges: dict[Pair, int] = {}
    while len(merges) < vocab_size - 256 and heap:
        negative_count, pair = heapq.heappop(heap)
        if -negative_count != len(sequence.where.get(pair, ())):
            continue  # an old count: the pair's current count is in the heap too
        if -negative_count < 2:
            break
        merges[pair] = 256 + len(merges)
        sequence.merge(pair, merges[pair])
        for changed in sequence.changed:
            if sequence.where.get(changed):
                heapq.heappush(heap, (-len(sequence.where[changed]), changed))
        sequence.changed.clear()
    return merges


def encode(text: str, merges: dict[Pair, int]) -> list[int]:
    """``text`` → token ids: its UTF-8 bytes, then every merge in rank order (the lowest new id first)."""
    _check_text(text)
    _check_merges(merges)
    ids = list(text.encode("utf-8"))
    if len(ids) < 64:  # short texts: the two formulas above, as written
        for pair, new_id in merges.items():
            if pair in set(zip(ids, ids[1:])):
                ids = merge_pair(ids, pair, new_id)
        return ids
    sequence = _Sequence(ids)
    for pair, new_id in merges.items():
        if sequence.where.get(pair):
            sequence.merge(pair, new_id)
    return sequence.ids()


def vocabulary(merges: dict[Pair, int]) -> dict[int, bytes]:
    """Every id's bytes: ids 0–255 are the single bytes, a merged id is its pair's bytes joined."""
    _check_merges(merges)
    vocab = {i: bytes([i]) for i in range(256)}
    for (a, b), new_id in merges.items():
        vocab[new_id] = vocab[a] + vocab[b]
    return vocab


def decode(ids: Sequence[int], merges: dict[Pair, int]) -> str:
    """Token ids → text: join the tokens' bytes, then decode UTF-8 once (bytes that are not UTF-8 become "�")."""
    vocab = vocabulary(merges)
    unknown = [i for i in ids if i not in vocab]
    if unknown:
        raise CourseInputError(f"ids must be between 0 and {len(vocab) - 1}; got {unknown[0]!r}")
    return b"".join(vocab[i] for i in ids).decode("utf-8", errors="replace")
