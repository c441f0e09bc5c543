"""Grouped-query attention and the modern decoder: identical to multi-head at n_kv_heads = num_heads, cache bytes."""

import pytest
import torch

from course_lib import DecoderLM, generate
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
