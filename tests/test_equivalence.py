"""course_lib's building blocks against PyTorch's own modules, with the same weights and dropout 0.

Tolerances: atol 1e-5 in float32, 1e-10 in float64 (the foundation's acceptance).
"""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import course_lib as cl

DTYPES = [pytest.param(torch.float32, 1e-5, id="float32"), pytest.param(torch.float64, 1e-10, id="float64")]


def randn(*shape, dtype, seed=0):
    return torch.randn(*shape, dtype=dtype, generator=torch.Generator().manual_seed(seed))


def assert_close(ours, theirs, atol):
    assert ours.shape == theirs.shape, f"shape {tuple(ours.shape)} != {tuple(theirs.shape)}"
    err = (ours - theirs).abs().max().item()
    assert err <= atol, f"max difference {err:.3g} > {atol}"


# --- attention (notebook 02) ---------------------------------------------------------------


@pytest.mark.parametrize("dtype,atol", DTYPES)
@pytest.mark.parametrize("shape", [(1, 4, 8), (3, 7, 16), (2, 3, 5, 8)])
def test_sdpa_matches_torch_without_mask(dtype, atol, shape):
    queries, keys, values = (randn(*shape, dtype=dtype, seed=s) for s in range(3))
    output, weights = cl.scaled_dot_product_attention(queries, keys, values)
    assert_close(output, F.scaled_dot_product_attention(queries, keys, values), atol)
    reference_weights = torch.softmax(queries @ keys.transpose(-2, -1) / shape[-1] ** 0.5, dim=-1)
    assert_close(weights, reference_weights, atol)


@pytest.mark.parametrize("dtype,atol", DTYPES)
def test_sdpa_matches_torch_cross_attention_shapes(dtype, atol):
    queries = randn(2, 3, 16, dtype=dtype, seed=0)
    keys = randn(2, 9, 16, dtype=dtype, seed=1)
    values = randn(2, 9, 5, dtype=dtype, seed=2)
    output, weights = cl.scaled_dot_product_attention(queries, keys, values)
    assert output.shape == (2, 3, 5) and weights.shape == (2, 3, 9)
    assert_close(output, F.scaled_dot_product_attention(queries, keys, values), atol)


@pytest.mark.parametrize("dtype,atol", DTYPES)
def test_sdpa_matches_torch_with_causal_mask(dtype, atol):
    queries, keys, values = (randn(2, 4, 6, 8, dtype=dtype, seed=s) for s in range(3))
    mask = cl.causal_mask(6)
    output, weights = cl.scaled_dot_product_attention(queries, keys, values, mask)
    assert_close(output, F.scaled_dot_product_attention(queries, keys, values, attn_mask=mask), atol)
    assert_close(output, F.scaled_dot_product_attention(queries, keys, values, is_causal=True), atol)
    assert torch.all(weights.triu(diagonal=1) == 0), "no query may attend to a later position"


@pytest.mark.parametrize("dtype,atol", DTYPES)
def test_sdpa_matches_torch_with_padding_mask(dtype, atol):
    queries, keys, values = (randn(3, 5, 8, dtype=dtype, seed=s) for s in range(3))
    lengths = torch.tensor([5, 3, 1])
    mask = cl.padding_mask(lengths, 5)  # (batch, 1, seq_k)
    assert mask.shape == (3, 1, 5)
    output, weights = cl.scaled_dot_product_attention(queries, keys, values, mask)
    assert_close(output, F.scaled_dot_product_attention(queries, keys, values, attn_mask=mask), atol)
    for b, length in enumerate(lengths.tolist()):
        assert torch.all(weights[b, :, length:] == 0), "padded keys must get zero weight"


@pytest.mark.parametrize("dtype,atol", DTYPES)
@pytest.mark.parametrize("masked", [False, True], ids=["no-mask", "causal"])
def test_sdpa_training_path_matches_inference_path(dtype, atol, masked):
    """Without gradients the softmax overwrites the scores in place; with them it must not. Both give one answer."""
    queries, keys, values = (randn(2, 4, 6, 8, dtype=dtype, seed=s) for s in range(3))
    mask = cl.causal_mask(6) if masked else None
    originals = [t.clone() for t in (queries, keys, values)]
    with torch.no_grad():
        inference_output, inference_weights = cl.scaled_dot_product_attention(queries, keys, values, mask)
    for tensor, original in zip((queries, keys, values), originals):
        assert torch.equal(tensor, original), "attention must never overwrite its inputs"
    trainable = queries.clone().requires_grad_()
    output, weights = cl.scaled_dot_product_attention(trainable, keys, values, mask)
    assert weights.requires_grad, "with gradients on, the weights are part of the graph"
    assert_close(output, inference_output, atol)
    assert_close(weights, inference_weights, atol)
    output.sum().backward()
    reference = trainable.detach().clone().requires_grad_()
    F.scaled_dot_product_attention(reference, keys, values, attn_mask=mask).sum().backward()
    assert_close(trainable.grad, reference.grad, atol)


def test_softmax_is_stable_for_huge_scores():
    scores = torch.tensor([[1000.0, 1001.0, 1002.0], [-1000.0, 0.0, 1000.0]])
    weights = cl.softmax(scores)
    assert torch.isfinite(weights).all()
    assert_close(weights, torch.softmax(scores, dim=-1), 1e-6)


def test_softmax_along_other_axis():
    scores = randn(4, 5, dtype=torch.float64)
    assert_close(cl.softmax(scores, dim=0), torch.softmax(scores, dim=0), 1e-12)


def test_fully_masked_row_gives_zeros_not_nan():
    queries, keys, values = (randn(2, 4, 8, dtype=torch.float32, seed=s) for s in range(3))
    mask = torch.ones(4, 4, dtype=torch.bool)
    mask[1] = False  # query 1 may attend to nothing
    output, weights = cl.scaled_dot_product_attention(queries, keys, values, mask)
    assert torch.isfinite(output).all() and torch.isfinite(weights).all()
    assert torch.all(weights[:, 1] == 0) and torch.all(output[:, 1] == 0)
    assert_close(weights[:, [0, 2, 3]].sum(-1), torch.ones(2, 3), 1e-6)


def test_fully_masked_row_has_finite_gradient():
    queries = randn(1, 3, 4, dtype=torch.float64).requires_grad_()
    mask = torch.tensor([[True, True, False], [False, False, False], [True, True, True]])
    output, _ = cl.scaled_dot_product_attention(queries, queries, queries, mask)
    output.sum().backward()
    assert torch.isfinite(queries.grad).all()


def test_scaling_uses_sqrt_dk():
    """A query equal to a key scores d_k / √d_k = √d_k, not d_k and not 1."""
    d_k = 16
    keys = torch.eye(2, d_k, dtype=torch.float64)  # two orthonormal keys
    queries = keys[:1] * 1.0  # matches key 0: raw score 1, other key 0
    queries = queries * d_k  # raw score d_k
    _, weights = cl.scaled_dot_product_attention(queries[None], keys[None], keys[None])
    expected = torch.softmax(torch.tensor([d_k / d_k**0.5, 0.0], dtype=torch.float64), dim=0)
    assert_close(weights[0, 0], expected, 1e-12)


# --- multi-head attention (notebook 03) ----------------------------------------------------


@pytest.mark.parametrize("dtype,atol", DTYPES)
@pytest.mark.parametrize("d_model,num_heads", [(16, 1), (16, 4), (24, 3)])
def test_multihead_matches_torch(dtype, atol, d_model, num_heads):
    torch.manual_seed(0)
    reference = nn.MultiheadAttention(d_model, num_heads, batch_first=True, dtype=dtype).eval()
    ours = cl.MultiHeadAttention(d_model, num_heads).to(dtype).load_from_torch(reference)
    x = randn(2, 5, d_model, dtype=dtype)
    output, weights = ours(x)
    ref_output, ref_weights = reference(x, x, x, average_attn_weights=False)
    assert weights.shape == (2, num_heads, 5, 5)
    assert_close(output, ref_output, atol)
    assert_close(weights, ref_weights, atol)


@pytest.mark.parametrize("dtype,atol", DTYPES)
def test_multihead_matches_torch_cross_attention_with_mask(dtype, atol):
    torch.manual_seed(1)
    reference = nn.MultiheadAttention(16, 4, batch_first=True, dtype=dtype).eval()
    ours = cl.MultiHeadAttention(16, 4).to(dtype).load_from_torch(reference)
    queries = randn(2, 3, 16, dtype=dtype, seed=1)
    memory = randn(2, 6, 16, dtype=dtype, seed=2)
    allowed = cl.padding_mask(torch.tensor([6, 4]), 6)  # (batch, 1, seq_k), True = may attend
    output, weights = ours(queries, memory, memory, mask=allowed)
    # torch's key_padding_mask uses the opposite convention: True = ignore
    ref_output, ref_weights = reference(
        queries, memory, memory, key_padding_mask=~allowed[:, 0], average_attn_weights=False
    )
    assert_close(output, ref_output, atol)
    assert_close(weights, ref_weights, atol)


@pytest.mark.parametrize("dtype,atol", DTYPES)
def test_multihead_matches_torch_with_causal_mask(dtype, atol):
    torch.manual_seed(2)
    reference = nn.MultiheadAttention(16, 2, batch_first=True, dtype=dtype).eval()
    ours = cl.MultiHeadAttention(16, 2).to(dtype).load_from_torch(reference)
    x = randn(2, 5, 16, dtype=dtype, seed=3)
    output, _ = ours(x, mask=cl.causal_mask(5))
    ref_output, _ = reference(x, x, x, attn_mask=~cl.causal_mask(5))
    assert_close(output, ref_output, atol)


def _random_mask(*shape, seed):
    """A boolean mask (True = may attend) in which every query may attend to at least one key."""
    mask = torch.rand(*shape, generator=torch.Generator().manual_seed(seed)) < 0.6
    mask[..., 0] = True
    return mask


MASK_FORMS = [
    "(seq_q, seq_k)",
    "(batch, seq_q, seq_k)",
    "(batch, 1, seq_k)",
    "(batch, seq_q, seq_k) and (batch, 1, seq_k)",
]


@pytest.mark.parametrize("dtype,atol", DTYPES)
@pytest.mark.parametrize("form", MASK_FORMS)
@pytest.mark.parametrize("seq_q", [4, 3], ids=["seq_q=num_heads", "seq_q!=num_heads"])
def test_multihead_mask_forms_match_torch(dtype, atol, form, seq_q):
    """Every mask form the docstring promises, against nn.MultiheadAttention's attn_mask and key_padding_mask.

    With seq_q == num_heads a mask whose head axis is put in the wrong place still broadcasts, so only the values
    can tell; every row keeps one allowed key (torch gives NaN for a fully masked row, course_lib zeros).
    """
    batch, seq_k, d_model, num_heads = 3, 5, 16, 4
    torch.manual_seed(7)
    reference = nn.MultiheadAttention(d_model, num_heads, batch_first=True, dtype=dtype).eval()
    ours = cl.MultiHeadAttention(d_model, num_heads).to(dtype).load_from_torch(reference)
    queries = randn(batch, seq_q, d_model, dtype=dtype, seed=8)
    memory = randn(batch, seq_k, d_model, dtype=dtype, seed=9)
    torch_kwargs = {}
    if form == "(seq_q, seq_k)":
        mask = _random_mask(seq_q, seq_k, seed=10)
        torch_kwargs["attn_mask"] = ~mask  # torch: True = blocked
    elif form == "(batch, seq_q, seq_k)":
        mask = _random_mask(batch, seq_q, seq_k, seed=11)
        torch_kwargs["attn_mask"] = (~mask).repeat_interleave(num_heads, dim=0)  # torch: (batch * num_heads, L, S)
    elif form == "(batch, 1, seq_k)":
        mask = _random_mask(batch, 1, seq_k, seed=12)
        torch_kwargs["key_padding_mask"] = ~mask[:, 0]
    else:
        per_query = _random_mask(batch, seq_q, seq_k, seed=13)
        padding = torch.ones(batch, 1, seq_k, dtype=torch.bool)
        padding[:, :, -2:] = False
        per_query[..., :2] = True  # keep an allowed key after the padding is applied
        mask = per_query & padding
        torch_kwargs["attn_mask"] = (~per_query).repeat_interleave(num_heads, dim=0)
        torch_kwargs["key_padding_mask"] = ~padding[:, 0]
    output, weights = ours(queries, memory, memory, mask=mask)
    ref_output, ref_weights = reference(queries, memory, memory, average_attn_weights=False, **torch_kwargs)
    assert_close(output, ref_output, atol)
    assert_close(weights, ref_weights, atol)


def test_split_and_merge_heads_are_inverse_and_slice_features():
    x = torch.arange(2 * 3 * 8, dtype=torch.float32).reshape(2, 3, 8)
    heads = cl.split_heads(x, num_heads=4)
    assert heads.shape == (2, 4, 3, 2)
    assert torch.equal(heads[:, 1], x[:, :, 2:4]), "head 1 must see features 2..3 of every token"
    assert torch.equal(cl.merge_heads(heads), x)


# --- positional encoding (notebook 04) ------------------------------------------------------


def test_sinusoidal_encoding_matches_the_paper_formula():
    seq_len, d_model = 50, 16
    encoding = cl.sinusoidal_encoding(seq_len, d_model, dtype=torch.float64)
    for pos in (0, 1, 7, 49):
        for i in range(d_model // 2):
            angle = pos / 10000 ** (2 * i / d_model)
            assert abs(encoding[pos, 2 * i].item() - math.sin(angle)) < 1e-12
            assert abs(encoding[pos, 2 * i + 1].item() - math.cos(angle)) < 1e-12


def test_sinusoidal_encoding_odd_width_and_module():
    encoding = cl.sinusoidal_encoding(10, 7)
    assert encoding.shape == (10, 7)
    x = torch.zeros(2, 10, 7)
    assert torch.equal(cl.SinusoidalPositionalEncoding(7, max_len=20)(x), encoding.expand(2, 10, 7))


def test_learned_positional_embedding_adds_one_row_per_position():
    torch.manual_seed(0)
    module = cl.LearnedPositionalEmbedding(max_len=12, d_model=8)
    x = randn(3, 5, 8, dtype=torch.float32)
    assert_close(module(x) - x, module.embedding.weight[:5].expand(3, 5, 8), 1e-7)
    assert sum(p.numel() for p in module.parameters()) == 12 * 8


# --- LayerNorm, residual, feed-forward, encoder block (notebooks 05–06) ---------------------


@pytest.mark.parametrize("dtype,atol", DTYPES)
def test_layernorm_matches_torch(dtype, atol):
    reference = nn.LayerNorm(10, dtype=dtype)
    with torch.no_grad():
        reference.weight.copy_(randn(10, dtype=dtype, seed=5))
        reference.bias.copy_(randn(10, dtype=dtype, seed=6))
    ours = cl.LayerNorm(10).to(dtype).load_from_torch(reference)
    x = randn(4, 7, 10, dtype=dtype) * 3 + 1
    assert_close(ours(x), reference(x), atol)


@pytest.mark.parametrize("shift, spread", [(-1000.0, 1e-3), (1e4, 1.0), (5.0, 1e-2), (0.0, 1.0)])
def test_layernorm_is_as_accurate_as_torch_on_badly_scaled_inputs(shift, spread):
    """float32 against a float64 reference on the same inputs: course_lib's error is at most torch's (plus 1e-6)."""
    x = randn(16, 32, 64, dtype=torch.float32, seed=14) * spread + shift
    exact = F.layer_norm(x.double(), (64,), eps=1e-5)
    ours = (cl.LayerNorm(64)(x).double() - exact).abs().max().item()
    theirs = (F.layer_norm(x, (64,), eps=1e-5).double() - exact).abs().max().item()
    assert ours <= theirs + 1e-6, f"course_lib error {ours:.3g}, torch error {theirs:.3g}"
    assert ours < 1e-5


def test_layernorm_load_from_torch_copies_eps():
    reference = nn.LayerNorm(6, eps=0.5)
    ours = cl.LayerNorm(6).load_from_torch(reference)
    x = randn(3, 6, dtype=torch.float32) * 0.1
    assert ours.eps == 0.5
    assert_close(ours(x), reference(x), 1e-6)


@pytest.mark.parametrize("dtype,atol", DTYPES)
@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_encoder_block_matches_torch(dtype, atol, norm_first):
    torch.manual_seed(3)
    reference = nn.TransformerEncoderLayer(
        16, 4, dim_feedforward=32, dropout=0.0, batch_first=True, norm_first=norm_first, dtype=dtype
    ).eval()
    with torch.no_grad():  # non-trivial LayerNorm parameters, so a swapped γ/β would show
        for norm in (reference.norm1, reference.norm2):
            norm.weight.normal_()
            norm.bias.normal_()
    ours = cl.TransformerEncoderBlock(16, 4, 32, norm_first=norm_first).to(dtype).load_from_torch(reference)
    x = randn(2, 6, 16, dtype=dtype)
    assert_close(ours(x), reference(x), atol)
    mask = cl.causal_mask(6)
    assert_close(ours(x, mask), reference(x, src_mask=~mask), atol)
    assert ours.attention_weights.shape == (2, 4, 6, 6)


def test_encoder_block_load_from_torch_copies_the_layer_norm_eps():
    reference = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True, layer_norm_eps=0.3).eval()
    ours = cl.TransformerEncoderBlock(8, 2, 16).load_from_torch(reference)
    x = randn(2, 4, 8, dtype=torch.float32) * 0.2
    assert_close(ours(x), reference(x), 1e-5)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_encoder_stack_matches_torch(norm_first):
    torch.manual_seed(4)
    layer = nn.TransformerEncoderLayer(
        16, 2, 24, dropout=0.0, batch_first=True, norm_first=norm_first, dtype=torch.float64
    )
    reference = nn.TransformerEncoder(
        layer,
        num_layers=3,
        norm=nn.LayerNorm(16, dtype=torch.float64) if norm_first else None,
        enable_nested_tensor=False,
    ).eval()
    ours = cl.TransformerEncoder(3, 16, 2, 24, norm_first=norm_first).double()
    for block, ref_layer in zip(ours.blocks, reference.layers):
        block.load_from_torch(ref_layer)
    if norm_first:
        ours.final_norm.load_from_torch(reference.norm)
    x = randn(2, 5, 16, dtype=torch.float64)
    assert_close(ours(x), reference(x), 1e-10)
    assert len(ours.attention_weights) == 3


def test_residual_placements():
    torch.manual_seed(0)
    x = randn(2, 3, 8, dtype=torch.float64)
    sublayer = nn.Linear(8, 8).double()
    norm = cl.LayerNorm(8).double()
    post = cl.Residual(8, norm_first=False).double()
    pre = cl.Residual(8, norm_first=True).double()
    assert_close(post(x, sublayer), norm(x + sublayer(x)), 1e-12)
    assert_close(pre(x, sublayer), x + sublayer(norm(x)), 1e-12)
    no_skip = cl.Residual(8, norm_first=True, residual=False).double()
    assert_close(no_skip(x, sublayer), sublayer(norm(x)), 1e-12)
    no_norm = cl.Residual(8, norm_first=False, layer_norm=False).double()
    assert_close(no_norm(x, sublayer), x + sublayer(x), 1e-12)


def test_feed_forward_is_position_wise():
    torch.manual_seed(0)
    ffn = cl.FeedForward(8, 32).double()
    x = randn(2, 5, 8, dtype=torch.float64)
    one_token = ffn(x[:, 2:3])
    assert_close(ffn(x)[:, 2:3], one_token, 1e-12)
    assert_close(ffn(x), ffn.linear2(torch.relu(ffn.linear1(x))), 1e-12)


# --- recurrent (notebook 01) ----------------------------------------------------------------


@pytest.mark.parametrize("dtype,atol", DTYPES)
def test_vanilla_rnn_matches_torch(dtype, atol):
    torch.manual_seed(0)
    reference = nn.RNN(4, 6, batch_first=True, dtype=dtype)
    ours = cl.VanillaRNN(4, 6).to(dtype).load_from_torch(reference)
    x = randn(3, 9, 4, dtype=dtype)
    hidden_states, h_last = ours(x)
    ref_states, ref_last = reference(x)
    assert_close(hidden_states, ref_states, atol)
    assert_close(h_last, ref_last[0], atol)


def test_gradient_probe_shows_vanishing_gradients_in_rnn_not_attention():
    torch.manual_seed(0)
    rnn = nn.RNN(32, 64, batch_first=True)
    x = torch.randn(16, 100, 32)
    norms = cl.input_gradient_norms(lambda inputs: rnn(inputs)[0][:, -1], x)
    assert norms.shape == (100,)
    ratio_20_steps_back = (norms[-21] / norms[-1]).item()
    assert ratio_20_steps_back < 1e-4, ratio_20_steps_back
    query = 0.3 * torch.randn(32)  # a fixed query: it does not depend on any position

    def attention_readout(inputs):
        weights = cl.softmax(inputs @ query / 32**0.5, dim=-1)  # (batch, seq)
        return (weights[..., None] * inputs).sum(dim=1)

    attention_norms = cl.input_gradient_norms(attention_readout, x)
    assert (attention_norms.min() / attention_norms.max()).item() > 0.05
