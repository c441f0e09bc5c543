"""Notebook 11's sweeps: the decoder on the docs' BPE 512 tokens against the count models, seed by seed, and the
same decoder on every cut of the text (characters, bytes, BPE 512, BPE 1024), which the notebook cannot afford."""

from __future__ import annotations

import contextlib
import io

import torch

from course_lib.decoder import DecoderLM
from course_lib.lab import text as corpus
from course_lib.lab.lm_baselines import BigramLM, UnigramLM, train_lm
from course_lib.tokenizer import encode, train_bpe, vocabulary

from .common import Table, lesson_code, progress, span

LESSON = lesson_code("11", "SIZE", "TRAINING", "SNAPSHOTS", "WINDOW")


def cuts(names=("characters", "bytes", "BPE 512", "BPE 1024")) -> dict:
    """The notebook's cuts of the docs: name → (training ids, held-out ids, bytes per token)."""
    train_text, held_out = corpus.split(corpus.python_docs(), 0.9)
    merges = train_bpe(train_text, 1024)
    pieces = vocabulary(merges)
    characters = sorted(set(train_text))
    char_id = {c: i for i, c in enumerate(characters)}
    out = {}
    for name in names:
        if name == "characters":
            out[name] = (
                [char_id[c] for c in train_text],
                [char_id[c] for c in held_out],
                [len(c.encode()) for c in characters],
            )
        elif name == "bytes":
            out[name] = (list(train_text.encode()), list(held_out.encode()), [1] * 256)
        else:
            size = int(name.split()[1])
            chosen = dict(list(merges.items())[: size - 256])
            out[name] = (encode(train_text, chosen), encode(held_out, chosen), [len(pieces[i]) for i in range(size)])
    return out


def _kept(steps: int) -> list[int]:
    """The lesson's snapshot steps up to ``steps``, and ``steps`` itself."""
    return sorted({step for step in LESSON.SNAPSHOTS if step <= steps} | {steps})


def _decoder(train_ids, held_ids, token_bytes, seed: int, steps: int) -> dict[int, float]:
    """Train the notebook's decoder from ``seed``; held-out bits per byte at each of the lesson's snapshots ≤ steps."""
    torch.manual_seed(seed)
    model = DecoderLM(len(token_bytes), **LESSON.SIZE, max_len=LESSON.WINDOW)
    keep = _kept(steps)
    with contextlib.redirect_stdout(io.StringIO()):
        history = train_lm(
            model, corpus.window_batches(train_ids, LESSON.WINDOW), steps, **LESSON.TRAINING, seed=seed, snapshots=keep
        )
    levels = {}
    for step, weights in history["snapshots"].items():
        model.load_state_dict(weights)
        levels[step] = corpus.bits_per_byte(model, held_ids, token_bytes, LESSON.WINDOW)
    return levels


def ladder(seeds, *, steps: int = 800) -> Table:
    """Section 5: the decoder on BPE 512, its held-out bits per byte at each snapshot, against the bigram's."""
    train_ids, held_ids, token_bytes = cuts(("BPE 512",))["BPE 512"]
    bigram = corpus.bits_per_byte(BigramLM([train_ids], 512), held_ids, token_bytes, LESSON.WINDOW)
    unigram = corpus.bits_per_byte(UnigramLM([train_ids], 512), held_ids, token_bytes, LESSON.WINDOW)
    keep = _kept(steps)
    table = Table(
        f"Notebook 11: the decoder on the docs' BPE 512 tokens, {steps} steps; held-out bits per byte "
        f"(unigram {unigram:.3f}, bigram {bigram:.3f})",
        ["seed", *(f"step {step}" for step in keep), "bigram − final"],
    )
    finals, margins, at_25, at_100 = [], [], [], []
    for seed in seeds:
        levels = _decoder(train_ids, held_ids, token_bytes, seed, steps)
        finals.append(levels[keep[-1]])
        margins.append(bigram - levels[keep[-1]])
        table.add(seed, *(levels[step] for step in keep), margins[-1])
        at_25.append(levels.get(25, float("nan")) - unigram)
        at_100.append(levels.get(100, float("nan")) - bigram)
        progress(f"seed {seed}: final {finals[-1]:.3f}, bigram − final {margins[-1]:.3f}")
    table.notes += [
        f"Final bits per byte {span(finals)}; bigram − final {span(margins)} (the notebook asserts > 0.02).",
        f"Step 25 − unigram {span(at_25)} (asserted within ±0.15); step 100 − bigram {span(at_100)} (asserted > 0).",
    ]
    return table


def every_cut(seeds, *, steps: int = 800) -> Table:
    """Section 4 with the decoder: the same decoder, steps and windows of 64 tokens on each cut of the docs."""
    table = Table(
        f"Notebook 11: the decoder on each cut of the docs, {steps} steps; held-out bits per byte",
        ["seed", "characters", "bytes", "BPE 512", "BPE 1024"],
    )
    data = cuts()
    results: dict[str, list[float]] = {name: [] for name in data}
    for seed in seeds:
        for name, (train_ids, held_ids, token_bytes) in data.items():
            results[name].append(_decoder(train_ids, held_ids, token_bytes, seed, steps)[steps])
        table.add(seed, *(results[name][-1] for name in data))
        progress(f"seed {seed}: " + ", ".join(f"{name} {results[name][-1]:.3f}" for name in data))
    table.notes += ["Bits per byte: " + "; ".join(f"{name} {span(values)}" for name, values in results.items()) + "."]
    return table
