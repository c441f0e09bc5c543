"""The taught modules read like their formulas; the fast path the training helpers use is tested equal to them.

- the fast path: ``attention_fast`` and LayerNorm's ``fast`` setting give the taught functions' values and gradients;
  it is an attribute of each module that training sets on the model it trains (``training.fast_path``), nothing
  global: a cell running beside a training thread keeps the taught path.
- the seven concept modules stay short (at most 860 lines together).
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
from course_lib.attention import attention_fast
from course_lib.lab.tasks import agreement
from course_lib.lab.training import fast_path, train_classifier
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
    taught = norm(taught_input)
    norm.fast = True
    fast = norm(fast_input)
    torch.testing.assert_close(taught, fast, atol=atol, rtol=0)
    torch.testing.assert_close(taught, torch_norm(x), atol=atol, rtol=0)
    upstream = torch.randn(x.shape, generator=generator, dtype=dtype)
    taught.backward(upstream)
    fast.backward(upstream)
    torch.testing.assert_close(taught_input.grad, fast_input.grad, atol=10 * atol, rtol=0)


def _attention_and_norms(model):
    return [m for m in model.modules() if isinstance(m, (cl.MultiHeadAttention, cl.LayerNorm))]


def test_the_fast_path_is_a_setting_of_the_model_being_trained_and_nothing_else():
    torch.manual_seed(0)
    model = cl.TransformerEncoder(2, 16, 4, 32, norm_first=True).eval()
    x, mask = torch.randn(3, 5, 16), cl.causal_mask(5)
    modules = _attention_and_norms(model)
    assert len(modules) == 2 * 3 + 1 and not any(m.fast for m in modules), "the taught path by default"
    taught = model(x, mask)
    with fast_path(model):
        assert all(m.fast for m in modules)
        fast = model(x, mask)
        with fast_path(model):
            pass
        assert all(m.fast for m in modules), "an inner block must not end the outer one"
    assert not any(m.fast for m in modules), "each module's setting is put back"
    torch.testing.assert_close(taught, fast, atol=1e-5, rtol=0)
    assert not torch.equal(taught, fast), "the two paths round differently (so the test below can tell them apart)"


def test_a_cell_running_beside_a_training_thread_keeps_the_taught_path():
    """While train_classifier trains one model in a thread, another model run in the notebook's thread gives exactly
    the numbers of the taught path (with a global swap, as before, it got the fast path's)."""
    torch.manual_seed(0)
    trained = cl.TransformerEncoder(1, 16, 2, 32, norm_first=True)
    classifier = _Classifier(trained)
    beside = cl.TransformerEncoder(2, 16, 4, 32, norm_first=True).eval()
    x, mask = torch.randn(3, 6, 16), cl.causal_mask(6)
    with torch.no_grad():
        taught = beside(x, mask)
        with fast_path(beside):
            assert not torch.equal(beside(x, mask), taught), "the fast path would show"
    training, checked = threading.Event(), threading.Event()
    seen_in_training = []

    def callback(step, model):
        seen_in_training.append(all(m.fast for m in _attention_and_norms(model)))
        if step == 2:
            training.set()
            assert checked.wait(timeout=60), "the main thread never ran its cell"

    thread = threading.Thread(
        target=train_classifier,
        kwargs=dict(model=classifier, make_batch=_batches, steps=4, batch_size=4, log_every=100, callback=callback),
    )
    thread.start()
    try:
        assert training.wait(timeout=60), "training never started"
        with torch.no_grad():
            during = beside(x, mask)
        assert not any(m.fast for m in _attention_and_norms(beside))
    finally:
        checked.set()
        thread.join()
    assert torch.equal(during, taught), "the cell beside the training thread got the fast path"
    assert seen_in_training == [True] * 4, "the model being trained runs the fast path"
    assert not any(m.fast for m in _attention_and_norms(classifier)), "and goes back to the taught path afterwards"


class _Classifier(nn.Module):
    def __init__(self, encoder):
        super().__init__()
        self.embed, self.encoder, self.head = nn.Embedding(agreement.VOCAB_SIZE, 16), encoder, nn.Linear(16, 2)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens))[:, -1])


def _batches(batch_size, generator):
    tokens = torch.randint(agreement.VOCAB_SIZE, (batch_size, 6), generator=generator)
    return tokens, tokens[:, 0] % 2


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
    # 800 until the one attention path: MultiHeadAttention's options (causal, rotate, head_mask, fast, recorded)
    # replaced three copies of its forward outside this count, and attention_fast moved here from lab/fast.py
    assert sum(lines.values()) <= 860, f"the concept modules hold {sum(lines.values())} lines (at most 860): {lines}"


def test_the_taught_functions_open_with_their_formula():
    """The first line after the one-line input check is the formula's first line."""
    import inspect

    def body(function):
        lines = [line.strip() for line in inspect.getsource(function).splitlines()]
        start = next(i for i, line in enumerate(lines) if line.startswith("check_"))
        return lines[start + 1 :]

    assert [line.split(" = ")[0] for line in body(cl.attention_stages)[:7]] == [
        "d_k",
        "scores",
        "scaled",
        "masked",
        "weights",
        "output",
        "return AttentionStages(scores, scaled, masked, weights, output)",
    ]
    assert body(cl.attention_stages)[:3] == [
        "d_k = queries.shape[-1]",
        "scores = queries @ keys.transpose(-2, -1)  # Q Kᵀ: (..., seq_q, seq_k)",
        "scaled = scores / math.sqrt(d_k)  # ÷ √d_k",
    ]
    norm = body(cl.LayerNorm.forward)
    assert norm[-1] == "return self.gamma * (x - mean) / torch.sqrt(var + self.eps) + self.beta"
    assert len(norm) <= 6, "the centring, the fast path's one line, then the formula"
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
