"""The taught modules read like their formulas; the fast path the training helpers use is tested equal to them.

- ``course_lib.lab.fast``: attention and LayerNorm rearranged for speed give the taught functions' values and gradients;
  ``fast_kernels()`` swaps them in only inside its block (nested and from several threads).
- the seven concept modules stay short (at most 800 lines together).
- sampling: ties at the top-k / top-p boundary are all kept; ``top_p_filter(logits, 1.0)`` keeps every token.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest
import torch
from torch import nn

import course_lib as cl
from course_lib import blocks, multihead
from course_lib.lab.fast import attention_fast, fast_kernels, layer_norm_fast
from course_lib.sampling import top_k_filter, top_p_filter

ROOT = Path(__file__).resolve().parents[1]
CONCEPT_MODULES = ("attention", "multihead", "positions", "blocks", "recurrent", "decoder", "sampling")


def _random_mask(shape, generator, blocked_row: bool):
    mask = torch.rand(shape, generator=generator) < 0.6
    mask[..., 0] = True
    if blocked_row:
        mask[..., 1, :] = False  # one query that may attend to nothing
    return mask


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fast_attention_equals_the_taught_one_values_and_gradients(seed, dtype):
    generator = torch.Generator().manual_seed(seed)
    lead = [(2,), (2, 3), (1,)][seed % 3]
    seq_q, seq_k, d_k, d_v = 2 + seed % 4, 1 + seed % 5 + 1, 4 + seed % 3 * 4, 3 + seed % 2
    queries, keys, values = (
        torch.randn(*lead, n, d, generator=generator, dtype=dtype)
        for n, d in ((seq_q, d_k), (seq_k, d_k), (seq_k, d_v))
    )
    mask = None if seed % 4 == 0 else _random_mask((*lead, seq_q, seq_k), generator, blocked_row=seed % 4 == 3)
    atol = 1e-6 if dtype == torch.float32 else 1e-12
    results = []
    for attend in (cl.scaled_dot_product_attention, attention_fast):
        inputs = [t.clone().requires_grad_() for t in (queries, keys, values)]
        output, weights = attend(*inputs, mask)
        (output * torch.linspace(-1, 1, output.numel(), dtype=dtype).reshape(output.shape)).sum().backward()
        results.append((output.detach(), weights.detach(), [t.grad for t in inputs]))
    (out_a, w_a, grads_a), (out_b, w_b, grads_b) = results
    torch.testing.assert_close(out_a, out_b, atol=atol, rtol=0)
    torch.testing.assert_close(w_a, w_b, atol=atol, rtol=0)
    for grad_a, grad_b in zip(grads_a, grads_b):
        assert torch.isfinite(grad_a).all()
        torch.testing.assert_close(grad_a, grad_b, atol=10 * atol, rtol=0)
    with torch.no_grad():  # the in-place softmax of the fast path gives the same weights too
        torch.testing.assert_close(attention_fast(queries, keys, values, mask)[1], w_a, atol=atol, rtol=0)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fast_layer_norm_and_torch_layer_norm_equal_the_taught_one(seed, dtype):
    generator = torch.Generator().manual_seed(seed)
    d = 3 + seed * 5
    norm = cl.LayerNorm(d, eps=[1e-5, 1e-3][seed % 2]).to(dtype)
    torch_norm = nn.LayerNorm(d, eps=norm.eps, dtype=dtype)
    with torch.no_grad():
        norm.gamma.copy_(torch.randn(d, generator=generator))
        norm.beta.copy_(torch.randn(d, generator=generator))
        torch_norm.weight.copy_(norm.gamma)
        torch_norm.bias.copy_(norm.beta)
    x = torch.randn(2, 4, d, generator=generator, dtype=dtype) * (1 + seed) + seed
    atol = 1e-5 if dtype == torch.float32 else 1e-12
    taught_input, fast_input = x.clone().requires_grad_(), x.clone().requires_grad_()
    taught, fast = norm(taught_input), layer_norm_fast(norm, fast_input)
    torch.testing.assert_close(taught, fast, atol=atol, rtol=0)
    torch.testing.assert_close(taught, torch_norm(x), atol=atol, rtol=0)
    upstream = torch.randn(x.shape, generator=generator, dtype=dtype)
    taught.backward(upstream)
    fast.backward(upstream)
    torch.testing.assert_close(taught_input.grad, fast_input.grad, atol=10 * atol, rtol=0)


def test_fast_kernels_swaps_in_only_inside_its_block_and_nests_across_threads():
    taught_attention, taught_norm = multihead.scaled_dot_product_attention, blocks.LayerNorm.forward
    assert taught_attention is cl.scaled_dot_product_attention
    seen = []

    def train():
        with fast_kernels():
            seen.append(multihead.scaled_dot_product_attention is attention_fast)

    with fast_kernels():
        with fast_kernels():
            assert blocks.LayerNorm.forward is layer_norm_fast
        assert multihead.scaled_dot_product_attention is attention_fast, "an inner block must not end the outer one"
        threads = [threading.Thread(target=train) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert multihead.scaled_dot_product_attention is attention_fast
    assert seen == [True, True, True]
    assert multihead.scaled_dot_product_attention is taught_attention and blocks.LayerNorm.forward is taught_norm


def test_a_model_gives_the_same_outputs_on_either_path():
    torch.manual_seed(0)
    model = cl.TransformerEncoder(2, 16, 4, 32, norm_first=True).eval()
    x, mask = torch.randn(3, 5, 16), cl.causal_mask(5)
    taught = model(x, mask)
    with fast_kernels():
        fast = model(x, mask)
    torch.testing.assert_close(taught, fast, atol=1e-5, rtol=0)


def test_the_concept_modules_stay_short():
    lines = {
        # the list of public names (``__all__`` and the blank line before it) is bookkeeping, not reading
        name: len(
            re.sub(
                r"\n\n__all__ = \[[^\]]*\]", "", (ROOT / "course_lib" / f"{name}.py").read_text(encoding="utf-8")
            ).splitlines()
        )
        for name in CONCEPT_MODULES
    }
    assert sum(lines.values()) <= 800, f"the concept modules hold {sum(lines.values())} lines (at most 800): {lines}"


def test_the_taught_functions_open_with_their_formula():
    """The first line after the one-line input check is the formula's first line."""
    import inspect

    def body(function):
        lines = [line.strip() for line in inspect.getsource(function).splitlines()]
        start = next(i for i, line in enumerate(lines) if line.startswith("check_"))
        return lines[start + 1 :]

    assert body(cl.scaled_dot_product_attention)[:2] == [
        "d_k = queries.shape[-1]",
        "scores = queries @ keys.transpose(-2, -1) / math.sqrt(d_k)  # (..., seq_q, seq_k)",
    ]
    assert any(
        "self.gamma * (x - mean) / torch.sqrt(var + self.eps) + self.beta" in line
        for line in body(cl.LayerNorm.forward)[:4]
    )
    block = inspect.getsource(cl.TransformerEncoderBlock.forward)
    for equation in (
        "x = x + self.dropout(self.attend(self.norm1(x), mask))",
        "x = x + self.dropout(self.feed_forward(self.norm2(x)))",
        "x = self.norm1(x + self.dropout(self.attend(x, mask)))",
        "x = self.norm2(x + self.dropout(self.feed_forward(x)))",
    ):
        assert equation in block


# ------------------------------------------------------------------------------------------------- sampling ties


def test_top_k_keeps_every_token_tied_with_the_kth():
    logits = torch.tensor([[3.0, 1.0, 2.0, 2.0, 0.0], [5.0, 4.0, 3.0, 2.0, 1.0]])
    kept = torch.isfinite(top_k_filter(logits, 2))
    assert kept.tolist() == [[True, False, True, True, False], [True, True, False, False, False]]
    all_tied = torch.zeros(1, 6)
    assert torch.isfinite(top_k_filter(all_tied, 1)).all(), "six equal logits: all tie with the best"
    assert torch.equal(top_k_filter(logits, 2), top_k_filter(logits.flip(-1), 2).flip(-1)), "index plays no part"


def test_top_p_keeps_every_token_tied_with_the_last_kept_one():
    probs = torch.tensor([[0.4, 0.2, 0.2, 0.1, 0.1]])
    logits = probs.log()
    # 0.4 < 0.5, then 0.4 + 0.2 reaches 0.5: the first 0.2 is kept, and the other 0.2 ties with it
    assert torch.isfinite(top_p_filter(logits, 0.5)).tolist() == [[True, True, True, False, False]]
    assert torch.equal(top_p_filter(logits, 0.5), top_p_filter(logits.flip(-1), 0.5).flip(-1)), "index plays no part"
    assert torch.isfinite(top_p_filter(logits, 0.3)).tolist() == [[True, False, False, False, False]]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_top_p_of_one_keeps_every_token(dtype):
    """With one token holding almost all the mass, the running sum reaches 1 in rounding before the last token."""
    logits = torch.tensor([[30.0, 0.0, 0.0, -5.0], [1.0, 2.0, 3.0, 4.0]], dtype=dtype)
    assert torch.equal(top_p_filter(logits, 1.0), logits)
    generator = torch.Generator().manual_seed(0)
    random_logits = torch.randn(50, 40, generator=generator, dtype=dtype) * 6
    assert torch.isfinite(top_p_filter(random_logits, 1.0)).all()
