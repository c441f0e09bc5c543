"""Grouped-query attention as an option of multi-head attention (``n_kv_heads``), in DecoderLM and the modern decoder:
identical to multi-head at n_kv_heads = num_heads, and the cache's bytes shrink by exactly num_heads / n_kv_heads."""

import pytest
import torch

from course_lib import DecoderLM, MultiHeadAttention, generate
from course_lib._validate import CourseInputError
from course_lib.modern_block import ModernDecoderLM
from course_lib.sampling import greedy


def test_the_2017_configuration_is_exactly_decoder_lm_and_gives_the_same_tokens():
    torch.manual_seed(0)
    lm = DecoderLM(20, 32, 4, 2, 64, 30).eval()
    modern = ModernDecoderLM.from_decoder(lm).eval()
    tokens = torch.randint(20, (3, 12))
    with torch.no_grad():
        assert torch.equal(lm(tokens), modern(tokens))
    assert torch.equal(
        generate(lm, tokens[:, :3], 10, sampler=greedy), generate(modern, tokens[:, :3], 10, sampler=greedy)
    )


@pytest.mark.parametrize("n_kv_heads", [4, 2, 1])
def test_cache_bytes_shrink_by_the_group_and_cached_generation_is_unchanged(n_kv_heads):
    torch.manual_seed(1)
    model = ModernDecoderLM(20, 32, 4, 2, 64, 30, n_kv_heads=n_kv_heads).eval()
    tokens = torch.randint(20, (3, 12))
    cache = model.new_cache()
    with torch.no_grad():
        model(tokens, cache)
    d_head = 32 // 4
    assert (
        cache.nbytes == 2 * 2 * 3 * n_kv_heads * 12 * d_head * 4
    )  # 2 (K and V) × blocks × batch × heads × pos × d_head × 4
    cached = generate(model, tokens[:, :3], 9, sampler=greedy)
    uncached = generate(model, tokens[:, :3], 9, sampler=greedy, use_cache=False)
    assert torch.equal(cached, uncached)


def test_gqa_refuses_a_head_count_that_does_not_divide():
    with pytest.raises(CourseInputError, match="multiple of n_kv_heads"):
        ModernDecoderLM(20, 32, 4, 1, 64, 30, n_kv_heads=3)
    with pytest.raises(CourseInputError, match="multiple of n_kv_heads"):
        MultiHeadAttention(32, 4, n_kv_heads=3)
    with pytest.raises(CourseInputError, match="n_kv_heads"):
        DecoderLM(20, 32, 4, 1, 64, 30, n_kv_heads=0)


def test_decoder_lm_at_n_kv_heads_equal_num_heads_is_the_multi_head_model_token_for_token():
    torch.manual_seed(2)
    plain = DecoderLM(25, 32, 4, 2, 64, 40).eval()
    torch.manual_seed(2)
    grouped = DecoderLM(25, 32, 4, 2, 64, 40, n_kv_heads=4).eval()
    prompt = torch.randint(25, (3, 4))
    assert all(torch.equal(a, b) for a, b in zip(plain.state_dict().values(), grouped.state_dict().values()))
    assert torch.equal(generate(plain, prompt, 20, sampler=greedy), generate(grouped, prompt, 20, sampler=greedy))


@pytest.mark.parametrize("n_kv_heads", [8, 4, 2, 1])
def test_decoder_lm_cache_bytes_shrink_by_exactly_num_heads_over_n_kv_heads(n_kv_heads):
    num_heads, batch, positions = 8, 2, 15
    torch.manual_seed(3)
    full, grouped = (DecoderLM(25, 64, num_heads, 3, 128, 40, n_kv_heads=n).eval() for n in (None, n_kv_heads))
    tokens = torch.randint(25, (batch, positions))
    caches = full.new_cache(), grouped.new_cache()
    with torch.no_grad():
        full(tokens, caches[0])
        grouped(tokens, caches[1])
    assert caches[1].keys[0].shape == (batch, n_kv_heads, positions, 64 // num_heads)
    assert caches[0].nbytes == caches[1].nbytes * (num_heads // n_kv_heads)
    cached = generate(grouped, tokens[:, :3], 12, sampler=greedy)
    assert torch.equal(cached, generate(grouped, tokens[:, :3], 12, sampler=greedy, use_cache=False))


@pytest.mark.parametrize("seed", range(10))
def test_gqa_equals_multi_head_attention_whose_key_and_value_heads_are_copies(seed):
    """Independent reference: the n_kv_heads heads of W_K, W_V repeated in groups make a plain multi-head module."""
    g = torch.Generator().manual_seed(seed)
    n_kv_heads, group, d_head = [1, 2, 3][seed % 3], [1, 2, 4][seed // 3 % 3], 2 + seed % 4
    num_heads = n_kv_heads * group
    d_model = num_heads * d_head
    torch.manual_seed(seed)
    grouped = MultiHeadAttention(d_model, num_heads, n_kv_heads=n_kv_heads).double()
    reference = MultiHeadAttention(d_model, num_heads).double()
    with torch.no_grad():
        for name in ("w_q", "w_o"):
            getattr(reference, name).load_state_dict(getattr(grouped, name).state_dict())
        for name in ("w_k", "w_v"):
            ours, theirs = getattr(grouped, name), getattr(reference, name)
            theirs.weight.copy_(
                ours.weight.reshape(n_kv_heads, d_head, d_model).repeat_interleave(group, 0).flatten(0, 1)
            )
            theirs.bias.copy_(ours.bias.reshape(n_kv_heads, d_head).repeat_interleave(group, 0).flatten())
    queries = torch.randn(2, 5, d_model, generator=g, dtype=torch.float64)
    keys = torch.randn(2, 7, d_model, generator=g, dtype=torch.float64)
    mask = torch.rand(2, 5, 7, generator=g) < 0.7
    mask[..., 0] = True
    out, weights = grouped(queries, keys, mask=mask)
    expected, expected_weights = reference(queries, keys, mask=mask)
    torch.testing.assert_close(out, expected, atol=1e-12, rtol=0)
    torch.testing.assert_close(weights, expected_weights, atol=1e-12, rtol=0)
    if group > 1:  # fewer key/value parameters
        assert sum(p.numel() for p in grouped.parameters()) < sum(p.numel() for p in reference.parameters())


def test_gqa_refuses_to_load_torch_multihead_attention():
    with pytest.raises(CourseInputError, match="grouped-query"):
        MultiHeadAttention(16, 4, n_kv_heads=2).load_from_torch(torch.nn.MultiheadAttention(16, 4))
