"""A tiny video database for the analogy of notebook 02: attention as a soft search.

Searching a video site for "cats jumping" has the three parts of attention:

- the **query** is what you typed;
- the **keys** are the titles and tags of the videos, the text your query is matched against;
- the **values** are the videos themselves, what you get back.

To turn text into vectors we use a small hand-made vocabulary of ``CONCEPTS``: each concept owns a few word forms
(``"cats"``, ``"kitten"`` → ``cat``). A text becomes a multi-hot vector with a 1 for every concept it mentions, so
``query · key`` counts how many concepts of the query the video's title and tags mention.

A video's value is *what it shows*: the share of its screen time spent on each of the ``CONTENT`` channels (each
row sums to 1). Keys and values are deliberately different things: "Baking a cat-shaped cake" is tagged ``cat``
(its key matches a cat query) but shows a cake, not a cat (its value has no cat content).

    >>> encode_query("Cats jumping!")
    tensor([1., 0., 1., 0., 0., 0., 0., 0., 0., 0.])
    >>> key_vectors().shape, value_vectors().shape
    (torch.Size([12, 10]), torch.Size([12, 6]))
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

import torch

from ..._validate import CourseInputError


class Video(NamedTuple):
    title: str
    tags: tuple[str, ...]
    content: dict[str, float]  # share of screen time per CONTENT channel (missing channels are 0)


# The axes of queries and keys: each concept and the word forms that mention it.
CONCEPTS: dict[str, tuple[str, ...]] = {
    "cat": ("cat", "cats", "kitten", "kittens", "kitty"),
    "dog": ("dog", "dogs", "puppy", "puppies"),
    "jump": ("jump", "jumps", "jumping", "jumped", "leap", "leaps", "leaping"),
    "sleep": ("sleep", "sleeps", "sleeping", "sleepy", "nap"),
    "food": ("food", "cooking", "cook", "baking", "bake", "cake", "pasta", "recipe"),
    "music": ("music", "guitar", "chords", "beats", "song", "songs"),
    "sport": ("sport", "sports", "skateboard", "skateboarding", "trampoline", "athletics"),
    "funny": ("funny", "fail", "fails", "misses", "lol"),
    "water": ("water", "swim", "swimming", "lake", "pool"),
    "study": ("study", "studying", "relax", "focus", "learn"),
}
CONCEPT_NAMES: tuple[str, ...] = tuple(CONCEPTS)
WORD_TO_CONCEPT: dict[str, str] = {word: concept for concept, words in CONCEPTS.items() for word in words}

# The axes of values: what a video shows.
CONTENT: tuple[str, ...] = ("cats", "dogs", "jumping", "food", "music", "other")

VIDEOS: tuple[Video, ...] = (
    Video("Cat jumps for the shelf and misses", ("cat", "jumping", "funny"), {"cats": 0.5, "jumping": 0.5}),
    Video("Sleepy cat on a warm laptop", ("cat", "sleeping", "cozy"), {"cats": 0.8, "other": 0.2}),
    Video("Kitten meets the neighbour's dog", ("kitten", "dog", "friends"), {"cats": 0.5, "dogs": 0.5}),
    Video("Dog jumps into the lake", ("dog", "jumping", "swimming"), {"dogs": 0.5, "jumping": 0.3, "other": 0.2}),
    Video("Trampoline tricks for beginners", ("trampoline", "jumping", "sport"), {"jumping": 0.7, "other": 0.3}),
    Video("Dog learns to skateboard", ("dog", "skateboard", "sport"), {"dogs": 0.6, "other": 0.4}),
    Video("Pasta in ten minutes", ("cooking", "food", "easy"), {"food": 1.0}),
    Video("Three guitar chords for beginners", ("music", "guitar"), {"music": 1.0}),
    Video("Calm beats to study to", ("music", "study", "relax"), {"music": 0.8, "other": 0.2}),
    Video("Baking a cat-shaped cake", ("baking", "cake", "cat"), {"food": 0.9, "other": 0.1}),
    Video("Funny cats compilation", ("cats", "funny", "pets"), {"cats": 1.0}),
    Video("Long jump world record", ("athletics", "jump", "sport"), {"jumping": 0.6, "other": 0.4}),
)
TITLES: tuple[str, ...] = tuple(video.title for video in VIDEOS)

# Queries the notebook's widget offers in its drop-down (any text works).
EXAMPLE_QUERIES: tuple[str, ...] = (
    "cats jumping",
    "dog",
    "sleepy kitten",
    "funny dog fails",
    "cooking",
    "music to study",
    "rockets in space",
)


def words(text: str) -> list[str]:
    """Lower-case words of ``text``: ``"Cat-shaped cake!"`` → ``["cat", "shaped", "cake"]``."""
    return re.findall(r"[a-z]+", text.lower())


def concepts_in(text: str) -> list[str]:
    """The concepts ``text`` mentions, in vocabulary order, each once."""
    found = {WORD_TO_CONCEPT[word] for word in words(text) if word in WORD_TO_CONCEPT}
    return [concept for concept in CONCEPT_NAMES if concept in found]


def unknown_words(text: str) -> list[str]:
    """Words of ``text`` that belong to no concept (the search simply cannot see them)."""
    return [word for word in words(text) if word not in WORD_TO_CONCEPT]


def encode_text(text: str) -> torch.Tensor:
    """Multi-hot vector ``(d_k,)``, float32: 1 for every concept ``text`` mentions, else 0."""
    found = set(concepts_in(text))
    return torch.tensor([1.0 if concept in found else 0.0 for concept in CONCEPT_NAMES])


def encode_query(query: str) -> torch.Tensor:
    """The query vector ``(d_k,)`` of a search text, with ``d_k = len(CONCEPT_NAMES)``."""
    return encode_text(query)


def key_vectors(videos: Sequence[Video] = VIDEOS) -> torch.Tensor:
    """One key per video ``(num_videos, d_k)``: the concepts its title and tags mention."""
    return torch.stack([encode_text(" ".join((video.title,) + tuple(video.tags))) for video in videos])


def value_vectors(videos: Sequence[Video] = VIDEOS) -> torch.Tensor:
    """One value per video ``(num_videos, d_v)``, ``d_v = len(CONTENT)``: its share of screen time per channel."""
    for video in videos:
        unknown = set(video.content) - set(CONTENT)
        if unknown:
            raise CourseInputError(f"{video.title!r}: unknown content channels {sorted(unknown)}; use {CONTENT}")
    return torch.tensor([[video.content.get(channel, 0.0) for channel in CONTENT] for video in videos])


def playlist(weights, scores=None, titles: Sequence[str] = TITLES, top: int | None = None) -> str:
    """A ranked playlist as text: videos sorted by weight (ties keep database order).

    weights: ``(num_videos,)``; scores (optional): ``(num_videos,)``, printed next to the weights.
    """
    weights = torch.as_tensor(weights, dtype=torch.float64).flatten()
    if weights.numel() != len(titles):
        raise CourseInputError(f"weights must have one entry per video ({len(titles)}), got {weights.numel()}")
    order = torch.sort(weights, descending=True, stable=True).indices.tolist()
    scores_list = None if scores is None else torch.as_tensor(scores).flatten().tolist()
    lines = [f"rank  weight  {'score  ' if scores_list is not None else ''}title"]
    for rank, i in enumerate(order[:top] if top else order, start=1):
        score = f"{scores_list[i]:5.1f}  " if scores_list is not None else ""
        lines.append(f"{rank:>4}  {weights[i].item():6.3f}  {score}{titles[i]}")
    return "\n".join(lines)
