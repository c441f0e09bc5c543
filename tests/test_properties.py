"""Properties that must hold for every shape (hypothesis): a property is a stronger check than one number."""

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import course_lib as cl

shapes = st.tuples(
    st.integers(1, 3),  # batch
    st.integers(1, 7),  # seq_q
    st.integers(1, 7),  # seq_k
    st.integers(1, 9),  # d_k
    st.integers(1, 5),  # d_v
)
dtypes = st.sampled_from([torch.float32, torch.float64])
seeds = st.integers(0, 2**31 - 1)


def make_qkv(shape, dtype, seed, scale=1.0):
    batch, seq_q, seq_k, d_k, d_v = shape
    g = torch.Generator().manual_seed(seed)
    queries = torch.randn(batch, seq_q, d_k, generator=g, dtype=dtype) * scale
    keys = torch.randn(batch, seq_k, d_k, generator=g, dtype=dtype) * scale
    values = torch.randn(batch, seq_k, d_v, generator=g, dtype=dtype)
    return queries, keys, values


@settings(max_examples=60, deadline=None)
@given(shapes, dtypes, seeds, st.sampled_from([0.1, 1.0, 30.0]))
def test_weights_are_a_distribution_over_keys(shape, dtype, seed, scale):
    queries, keys, values = make_qkv(shape, dtype, seed, scale)
    output, weights = cl.scaled_dot_product_attention(queries, keys, values)
    assert output.shape == (shape[0], shape[1], shape[4])
    assert weights.shape == (shape[0], shape[1], shape[2])
    assert torch.all(weights >= 0)
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    assert torch.allclose(weights.sum(-1), torch.ones_like(weights.sum(-1)), atol=tol)


@settings(max_examples=60, deadline=None)
@given(shapes, dtypes, seeds)
def test_permuting_tokens_permutes_self_attention_output(shape, dtype, seed):
    batch, seq, _, d_model, _ = shape
    d_model = max(2, d_model - d_model % 2)
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    mha = cl.MultiHeadAttention(d_model, 2).to(dtype)
    x = torch.randn(batch, seq, d_model, generator=g, dtype=dtype)
    permutation = torch.randperm(seq, generator=g)
    with torch.no_grad():
        output, weights = mha(x)
        permuted_output, permuted_weights = mha(x[:, permutation])
    tol = 1e-5 if dtype == torch.float32 else 1e-10
    assert torch.allclose(permuted_output, output[:, permutation], atol=tol)
    assert torch.allclose(permuted_weights, weights[:, :, permutation][:, :, :, permutation], atol=tol)


@settings(max_examples=60, deadline=None)
@given(shapes, dtypes, seeds)
def test_permutation_equivariance_of_encoder_block(shape, dtype, seed):
    batch, seq, _, _, _ = shape
    torch.manual_seed(seed)
    block = cl.TransformerEncoderBlock(8, 2, 16, norm_first=bool(seed % 2)).to(dtype).eval()
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, seq, 8, generator=g, dtype=dtype)
    permutation = torch.randperm(seq, generator=g)
    with torch.no_grad():
        tol = 1e-5 if dtype == torch.float32 else 1e-10
        assert torch.allclose(block(x[:, permutation]), block(x)[:, permutation], atol=tol)


@settings(max_examples=60, deadline=None)
@given(shapes, dtypes, seeds, st.data())
def test_masked_positions_get_zero_weight(shape, dtype, seed, data):
    queries, keys, values = make_qkv(shape, dtype, seed)
    _, seq_q, seq_k, _, _ = shape
    bits = data.draw(st.lists(st.booleans(), min_size=seq_q * seq_k, max_size=seq_q * seq_k))
    mask = torch.tensor(bits, dtype=torch.bool).reshape(seq_q, seq_k)
    output, weights = cl.scaled_dot_product_attention(queries, keys, values, mask)
    assert torch.isfinite(output).all() and torch.isfinite(weights).all()
    assert torch.all(weights[:, ~mask] == 0), "a blocked key must get exactly zero weight"
    row_sums = weights.sum(-1)  # (batch, seq_q)
    has_any = mask.any(dim=-1)  # rows with at least one allowed key sum to 1; the others are all zero
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    assert torch.allclose(row_sums[:, has_any], torch.ones_like(row_sums[:, has_any]), atol=tol)
    assert torch.all(row_sums[:, ~has_any] == 0)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(1, 8), st.integers(1, 6), seeds)
def test_split_then_merge_heads_is_identity(batch, seq, num_heads, seed):
    d_head = 1 + seed % 4
    x = torch.randn(batch, seq, num_heads * d_head, generator=torch.Generator().manual_seed(seed))
    assert torch.equal(cl.merge_heads(cl.split_heads(x, num_heads)), x)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), st.integers(1, 6), st.integers(2, 12), seeds)
def test_layernorm_output_has_zero_mean_unit_variance(batch, seq, d_model, seed):
    x = torch.randn(batch, seq, d_model, dtype=torch.float64, generator=torch.Generator().manual_seed(seed)) * 5 + 3
    y = cl.LayerNorm(d_model).double()(x)
    assert torch.allclose(y.mean(-1), torch.zeros(batch, seq, dtype=torch.float64), atol=1e-9)
    x_variance = x.var(-1, unbiased=False)
    expected = x_variance / (x_variance + 1e-5)  # 1, shrunk by eps only when x is nearly constant
    assert torch.allclose(y.var(-1, unbiased=False), expected, atol=1e-9)
