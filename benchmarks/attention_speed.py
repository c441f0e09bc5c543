"""How fast is course_lib's attention next to PyTorch's fused kernel? (a benchmark, not a test)

Times the forward pass of ``course_lib.scaled_dot_product_attention`` and of
``torch.nn.functional.scaled_dot_product_attention`` on the CPU for (batch 8, heads 8, seq 256, d_k 64) and
prints the ratio. It is reported, not a target: the taught function is the formula, softmax(QKᵀ/√d_k)V with
``masked_fill``, written to be read, and it returns the attention weights, which the fused kernel never materialises.

    python benchmarks/attention_speed.py [--repeats 50] [--batch 8 --heads 8 --seq 256 --d-k 64]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

import course_lib


def time_pair(fn_a, fn_b, repeats: int, warmup: int = 5) -> tuple[float, float, float]:
    """Median seconds of ``fn_a()`` and of ``fn_b()``, and the median of their per-round ratio.

    The two are timed in alternation, round after round, so a slow spell of the machine (another program waking
    up) hits both alike. The order swaps every round (a b, b a, a b, ...): whichever kernel runs right after the
    other pays for the caches and threads the other left behind (measured: up to 0.8x of a call), and swapping
    makes both pay it equally often.
    """
    with torch.inference_mode():
        for _ in range(warmup):
            fn_a()
            fn_b()
        a_samples, b_samples = [], []
        for round_number in range(repeats):
            for which in (0, 1) if round_number % 2 == 0 else (1, 0):
                start = time.perf_counter()
                (fn_a, fn_b)[which]()
                (a_samples, b_samples)[which].append(time.perf_counter() - start)
    ratios = [a / b for a, b in zip(a_samples, b_samples)]
    return statistics.median(a_samples), statistics.median(b_samples), statistics.median(ratios)


def main(argv: list[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--seq", type=int, default=256)
    parser.add_argument("--d-k", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args(argv)

    generator = torch.Generator().manual_seed(0)
    shape = (args.batch, args.heads, args.seq, args.d_k)
    queries, keys, values = (torch.randn(*shape, generator=generator) for _ in range(3))
    ours, fused, ratio = time_pair(
        lambda: course_lib.scaled_dot_product_attention(queries, keys, values),
        lambda: F.scaled_dot_product_attention(queries, keys, values),
        args.repeats,
    )
    causal = course_lib.causal_mask(args.seq)
    ours_masked, fused_masked, ratio_masked = time_pair(
        lambda: course_lib.scaled_dot_product_attention(queries, keys, values, causal),
        lambda: F.scaled_dot_product_attention(queries, keys, values, attn_mask=causal),
        args.repeats,
    )

    print(
        f"attention forward, shape {shape}, float32, {torch.get_num_threads()} CPU threads, torch {torch.__version__}"
    )
    print(f"{'':24}{'course_lib':>12}{'F.sdpa':>12}{'ratio':>8}")
    print(f"{'no mask':24}{ours * 1e3:>10.2f}ms{fused * 1e3:>10.2f}ms{ratio:>7.2f}x")
    print(f"{'causal mask':24}{ours_masked * 1e3:>10.2f}ms{fused_masked * 1e3:>10.2f}ms{ratio_masked:>7.2f}x")
    print("(medians over the rounds; the ratio is the median of the per-round ratios)")
    return ratio


if __name__ == "__main__":
    main()
