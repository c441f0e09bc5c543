"""How long does notebook 08's language model take to train, and how much does the KV cache speed up generation?
(a benchmark, not a test)

1. Trains notebook 08's model (a ``DecoderLM`` on the relative-clause corpus, with ``train_lm``) and reports the
   seconds and the steps per second.
2. Generates ``--new-tokens`` tokens greedily after prompts of 32, 128 and 512 positions, with and without the
   KV cache, timed in alternation round after round (``attention_speed.time_pair``), and reports tokens per second
   and their ratio. A model of the notebook's width and depth is used, with ``max_len`` long enough for the longest
   prompt (its position table is the only difference; generation speed does not depend on the weights). Both ways
   must produce the same tokens, which the script asserts.

On a loaded machine the absolute numbers move a lot; the ratio, measured on the same prompts in the same rounds,
moves much less. Report ratios.

    python benchmarks/lm_generation.py [--positions 32 128 512] [--new-tokens 16] [--repeats 9] [--markdown]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import torch

from course_lib.decoder import DecoderLM, generate
from course_lib.lab.lm_baselines import train_lm
from course_lib.lab.tasks.relative_clauses import MAX_LEN, RelativeClauseCorpus
from course_lib.sampling import greedy

try:  # run as a script from benchmarks/ (or with it on sys.path)
    from attention_speed import time_pair
except ImportError:  # pragma: no cover - imported as benchmarks.lm_generation
    from benchmarks.attention_speed import time_pair

#: notebook 08's model and training budget (D_MODEL, HEADS, N_BLOCKS, D_FF of its section 1; STEPS and lr of section 3)
NOTEBOOK_MODEL = {"d_model": 64, "num_heads": 2, "n_blocks": 1, "d_ff": 128}
NOTEBOOK_TRAINING = {"steps": 600, "batch_size": 32, "lr": 0.003, "n_sentences": 6000}


def train_the_notebooks_model(model_size: dict, training: dict, seed: int = 0) -> dict:
    """Train like notebook 08; return seconds, steps per second and the last loss."""
    corpus = RelativeClauseCorpus(n_sentences=training["n_sentences"], seed=seed)
    torch.manual_seed(seed)
    model = DecoderLM(len(corpus.vocab), max_len=MAX_LEN, **model_size)
    started = time.perf_counter()
    history = train_lm(
        model,
        corpus.batch,
        training["steps"],
        lr=training["lr"],
        batch_size=training["batch_size"],
        seed=seed,
        pad_id=corpus.vocab.pad_id,
        log_every=training["steps"],
        name="notebook 08 model",
    )
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "steps_per_second": training["steps"] / seconds, "loss": history["loss"][-1]}


def generation_speed(
    model_size: dict, positions: list[int], new_tokens: int, repeats: int, seed: int = 0
) -> list[dict]:
    """Tokens per second with and without the cache after a prompt of each length, measured in the same rounds."""
    torch.manual_seed(seed)
    vocab = 32
    model = DecoderLM(vocab, max_len=max(positions) + new_tokens, **model_size).eval()
    rows = []
    for length in positions:
        prompt = torch.randint(0, vocab, (1, length), generator=torch.Generator().manual_seed(length))
        cached = generate(model, prompt, new_tokens, sampler=greedy, use_cache=True)
        uncached = generate(model, prompt, new_tokens, sampler=greedy, use_cache=False)
        assert torch.equal(cached, uncached), f"cached and uncached generation differ after {length} positions"
        with_cache, without_cache, ratio = time_pair(
            lambda prompt=prompt: generate(model, prompt, new_tokens, sampler=greedy, use_cache=True),
            lambda prompt=prompt: generate(model, prompt, new_tokens, sampler=greedy, use_cache=False),
            repeats,
            warmup=1,
        )
        rows.append(
            {
                "positions": length,
                "cached_tokens_per_second": new_tokens / with_cache,
                "uncached_tokens_per_second": new_tokens / without_cache,
                "speed_up": 1 / ratio,  # median over rounds of (time without cache / time with cache)
            }
        )
    return rows


def load_average() -> str:
    """The machine's load: 1, 5 and 15 minute load averages (how many processes wanted a CPU)."""
    if not hasattr(os, "getloadavg"):
        return "load average unknown"
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.1f} / {five:.1f} / {fifteen:.1f} (1 / 5 / 15 min)"


def machine() -> str:
    return (
        f"{platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__} with {torch.get_num_threads()} "
        f"thread(s), Python {platform.python_version()}"
    )


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--positions", type=int, nargs="+", default=[32, 128, 512])
    parser.add_argument("--new-tokens", type=int, default=16, help="tokens generated after each prompt")
    parser.add_argument("--repeats", type=int, default=9, help="timing rounds per prompt length")
    parser.add_argument("--steps", type=int, default=NOTEBOOK_TRAINING["steps"], help="training steps")
    parser.add_argument("--n-sentences", type=int, default=NOTEBOOK_TRAINING["n_sentences"])
    parser.add_argument("--d-model", type=int, default=NOTEBOOK_MODEL["d_model"])
    parser.add_argument("--num-heads", type=int, default=NOTEBOOK_MODEL["num_heads"])
    parser.add_argument("--n-blocks", type=int, default=NOTEBOOK_MODEL["n_blocks"])
    parser.add_argument("--d-ff", type=int, default=NOTEBOOK_MODEL["d_ff"])
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the notebooks use one)")
    parser.add_argument("--markdown", action="store_true", help="print the results as Markdown tables")
    args = parser.parse_args(argv)

    torch.set_num_threads(args.threads)
    load_before = load_average()
    size = {"d_model": args.d_model, "num_heads": args.num_heads, "n_blocks": args.n_blocks, "d_ff": args.d_ff}
    training = {**NOTEBOOK_TRAINING, "steps": args.steps, "n_sentences": args.n_sentences}
    trained = train_the_notebooks_model(size, training)
    rows = generation_speed(size, args.positions, args.new_tokens, args.repeats)

    print(f"machine: {machine()}")
    print(f"load: before {load_before}; after {load_average()}")
    print(f"model: {size}")
    print(
        f"training: {training['steps']} steps of batch {training['batch_size']} in {trained['seconds']:.1f} s "
        f"({trained['steps_per_second']:.1f} steps/s), last loss {trained['loss']:.2f} nats/token"
    )
    if args.markdown:
        print(f"\n{args.new_tokens} tokens generated after the prompt (reading the prompt included), greedy, batch 1:")
        print("\n| prompt positions | with cache (tokens/s) | without cache (tokens/s) | speed-up (this run) |")
        print("|---:|---:|---:|---:|")
        for row in rows:
            print(
                f"| {row['positions']} | {row['cached_tokens_per_second']:.0f} | "
                f"{row['uncached_tokens_per_second']:.0f} | {row['speed_up']:.2f}× |"
            )
    else:
        print(
            f"generation of {args.new_tokens} tokens after the prompt (reading the prompt included), greedy, batch 1:"
        )
        print(f"{'positions':>10}{'cached tok/s':>15}{'uncached tok/s':>17}{'speed-up':>10}")
        for row in rows:
            print(
                f"{row['positions']:>10}{row['cached_tokens_per_second']:>15.0f}"
                f"{row['uncached_tokens_per_second']:>17.0f}{row['speed_up']:>9.2f}x"
            )
    print("(medians over the rounds; the speed-up is the median of the per-round ratios, uncached time / cached time)")
    return {"training": trained, "generation": rows}


if __name__ == "__main__":
    main()
