"""Memory held for the backward pass by plain and tiled attention as the sequence grows (notebook 10).

    python benchmarks/attention_memory.py

Counts the bytes of the distinct tensors autograd saves between forward and backward
(``course_lib.tiled_attention.saved_for_backward_bytes``): exact and independent of the allocator and of load.
"""

import torch

from course_lib.tiled_attention import plain_attention, saved_for_backward_bytes, tiled_attention

LENGTHS = (256, 512, 1024, 2048)


def saved(function, n, heads=2, d_head=32):
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, heads, n, d_head, requires_grad=True) for _ in range(3))
    return saved_for_backward_bytes(lambda: function(q, k, v, True))


def main():
    print(f"{'seq':>6} {'plain MB':>10} {'tiled MB':>10}")
    rows = [
        (n, saved(plain_attention, n), saved(lambda q, k, v, c: tiled_attention(q, k, v, c, 64), n)) for n in LENGTHS
    ]
    for n, plain, tiled in rows:
        print(f"{n:6d} {plain / 1e6:10.2f} {tiled / 1e6:10.2f}")
    (n0, p0, t0), (n1, p1, t1) = rows[0], rows[2]
    print(f"{n1 // n0}x the length: plain {p1 / p0:.1f}x the memory, tiled {t1 / t0:.2f}x")


if __name__ == "__main__":
    main()
