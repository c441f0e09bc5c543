"""Notebook 10's library pieces against independent references: RoPE, RMSNorm, SwiGLU and tiled attention."""

import math

import pytest
import torch
import torch.nn.functional as F

from course_lib._validate import CourseInputError
from course_lib.rmsnorm import RMSNorm, rms_norm
from course_lib.rotary import apply_rotary, rotation_matrix
from course_lib.swiglu import SwiGLUFeedForward, swiglu_width
from course_lib.tiled_attention import (
    online_softmax_step,
    plain_attention,
    saved_for_backward_bytes,
    tiled_attention,
)


def _rope_by_complex_numbers(x, positions, base=10000.0):
    """Interleaved RoPE as the paper writes it: pair (2i, 2i+1) is the complex number a + ib, times e^(i m θ_i)."""
    d_head = x.shape[-1]
    theta = torch.tensor([base ** (-2 * i / d_head) for i in range(d_head // 2)], dtype=torch.float64)
    turn = torch.polar(torch.ones(len(positions), d_head // 2, dtype=torch.float64), positions[:, None] * theta)
    pairs = torch.view_as_complex(x.double().reshape(*x.shape[:-1], d_head // 2, 2).contiguous())
    return torch.view_as_real(pairs * turn).flatten(-2)


def _halves_to_interleaved(x):
    half = x.shape[-1] // 2
    return torch.stack([x[..., :half], x[..., half:]], dim=-1).flatten(-2)


@pytest.mark.parametrize("seed", range(20))
def test_rope_matches_the_complex_number_form_in_both_pairings(seed):
    g = torch.Generator().manual_seed(seed)
    seq, d_head = int(torch.randint(1, 20, (1,), generator=g)), 2 * int(torch.randint(1, 17, (1,), generator=g))
    x = torch.randn(3, seq, d_head, generator=g, dtype=torch.float64)
    positions = torch.randint(0, 500, (seq,), generator=g)
    expected = _rope_by_complex_numbers(x, positions.double())
    torch.testing.assert_close(apply_rotary(x, positions, "interleaved"), expected, atol=1e-10, rtol=0)
    # halves = interleaved after moving feature i + d/2 next to feature i
    halves = apply_rotary(x, positions, "halves")
    torch.testing.assert_close(
        _halves_to_interleaved(halves),
        _rope_by_complex_numbers(_halves_to_interleaved(x), positions.double()),
        atol=1e-10,
        rtol=0,
    )


@pytest.mark.parametrize("pairing", ["halves", "interleaved"])
def test_rope_scores_depend_only_on_the_offset(pairing):
    g = torch.Generator().manual_seed(1)
    worst = 0.0
    for _ in range(300):
        d_head = 2 * int(torch.randint(1, 33, (1,), generator=g))
        q, k = torch.randn(2, d_head, generator=g, dtype=torch.float64)
        m, n, shift = (int(v) for v in torch.randint(0, 1000, (3,), generator=g))
        score = apply_rotary(q[None], torch.tensor([m]), pairing) @ apply_rotary(k[None], torch.tensor([n]), pairing).T
        shifted = (
            apply_rotary(q[None], torch.tensor([m + shift]), pairing)
            @ apply_rotary(k[None], torch.tensor([n + shift]), pairing).T
        )
        worst = max(worst, abs(score - shifted).item())
    assert worst < 1e-6


def test_rope_in_float32_keeps_the_relative_property_to_1e_5():
    g = torch.Generator().manual_seed(2)
    q, k = torch.randn(2, 64, generator=g)
    base = apply_rotary(q[None], torch.tensor([7])) @ apply_rotary(k[None], torch.tensor([3])).T
    later = apply_rotary(q[None], torch.tensor([407])) @ apply_rotary(k[None], torch.tensor([403])).T
    assert abs(base - later).item() < 1e-4


@pytest.mark.parametrize("pairing", ["halves", "interleaved"])
def test_position_zero_is_the_identity_and_lengths_are_kept(pairing):
    x = torch.randn(4, 9, 16, dtype=torch.float64)
    turned = apply_rotary(x, pairing=pairing)
    torch.testing.assert_close(turned[:, 0], x[:, 0], atol=0, rtol=0)
    torch.testing.assert_close(turned.norm(dim=-1), x.norm(dim=-1))
    R = rotation_matrix(5, 16, pairing)
    torch.testing.assert_close(R @ R.T, torch.eye(16, dtype=torch.float64))
    torch.testing.assert_close(apply_rotary(x, pairing=pairing)[:, 5], x[:, 5] @ R.T)


def test_mixing_the_pairings_breaks_the_relative_property():
    g = torch.Generator().manual_seed(3)
    q, k = torch.randn(2, 1, 32, generator=g, dtype=torch.float64)

    def score(m, n):
        return (
            apply_rotary(q, torch.tensor([m]), "halves") @ apply_rotary(k, torch.tensor([n]), "interleaved").T
        ).item()

    assert abs(score(10, 3) - score(110, 103)) > 1e-2
    same = [
        (apply_rotary(q, torch.tensor([m]), p) @ apply_rotary(k, torch.tensor([m - 7]), p).T).item()
        for p in ("halves", "interleaved")
        for m in (7, 50)
    ]
    assert abs(same[0] - same[1]) < 1e-9 and abs(same[2] - same[3]) < 1e-9


def test_rope_refuses_bad_input_with_a_sentence():
    with pytest.raises(CourseInputError, match="even"):
        apply_rotary(torch.randn(3, 5))
    with pytest.raises(CourseInputError, match="pairing"):
        apply_rotary(torch.randn(3, 4), pairing="pairs")
    with pytest.raises(CourseInputError, match="positions"):
        apply_rotary(torch.randn(3, 4), torch.arange(4))


@pytest.mark.parametrize("seed", range(10))
def test_rms_norm_equals_torch_and_the_formula(seed):
    g = torch.Generator().manual_seed(seed)
    d = int(torch.randint(1, 40, (1,), generator=g))
    x = torch.randn(3, 5, d, generator=g, dtype=torch.float64) * 3
    norm = RMSNorm(d).double()
    with torch.no_grad():
        norm.gain.copy_(torch.randn(d, generator=g))
    by_hand = torch.stack(
        [
            torch.tensor(
                [
                    [
                        norm.gain[j].item() * row[j] / math.sqrt(sum(v * v for v in row.tolist()) / d + 1e-6)
                        for j in range(d)
                    ]
                    for row in batch
                ]
            )
            for batch in x
        ]
    ).double()
    torch.testing.assert_close(norm(x), by_hand)
    torch.testing.assert_close(norm(x), F.rms_norm(x, (d,), norm.gain, eps=1e-6))
    assert sum(p.numel() for p in norm.parameters()) == d
    assert rms_norm(x, torch.ones(d, dtype=torch.float64), 0.0).pow(2).mean(-1).sub(1).abs().max() < 1e-12


@pytest.mark.parametrize("seed", range(10))
def test_swiglu_equals_its_formula_and_counts_three_matrices(seed):
    g = torch.Generator().manual_seed(seed)
    d_model, d_hidden = (int(v) for v in torch.randint(1, 30, (2,), generator=g))
    ffn = SwiGLUFeedForward(d_model, d_hidden).double()
    x = torch.randn(2, 4, d_model, generator=g, dtype=torch.float64)
    gate = x @ ffn.w_1.weight.T
    expected = ((gate / (1 + torch.exp(-gate))) * (x @ ffn.w_3.weight.T)) @ ffn.w_2.weight.T
    torch.testing.assert_close(ffn(x), expected)
    assert sum(p.numel() for p in ffn.parameters()) == 3 * d_model * d_hidden


def test_swiglu_width_keeps_the_parameter_budget():
    for d_model in (16, 64, 512):
        d_ff = 4 * d_model
        relu = 2 * d_model * d_ff
        swiglu = 3 * d_model * swiglu_width(d_ff)
        assert abs(swiglu - relu) <= 3 * d_model  # rounding the width by less than one unit
    assert swiglu_width(12) == 8


def _random_case(g, dtype):
    batch, heads = (int(v) for v in torch.randint(1, 4, (2,), generator=g))
    seq_q = int(torch.randint(1, 41, (1,), generator=g))
    causal = bool(torch.randint(0, 2, (1,), generator=g))
    seq_k = seq_q if causal and torch.rand(1, generator=g) < 0.5 else int(torch.randint(1, 41, (1,), generator=g))
    if causal:
        seq_k = max(seq_k, seq_q)  # every query sees at least key 0 either way; keep the shapes of a decoder
    d_k, d_v = (int(v) for v in torch.randint(1, 17, (2,), generator=g))
    tile = int(torch.randint(3, 17, (1,), generator=g))

    def make(*shape):
        return (torch.randn(*shape, generator=g, dtype=dtype) * 2).requires_grad_()

    return make(batch, heads, seq_q, d_k), make(batch, heads, seq_k, d_k), make(batch, heads, seq_k, d_v), causal, tile


def _bottom_right(q, k):
    """The causal mask of a decoder with a cache: the seq_q queries are the last of seq_k positions (True: may attend).
    PyTorch's ``is_causal=True`` aligns it top-left instead, which is the same only when seq_q = seq_k."""
    seq_q, seq_k = q.shape[-2], k.shape[-2]
    return torch.ones(seq_q, seq_k, dtype=torch.bool).tril(seq_k - seq_q)


@pytest.mark.parametrize("dtype, tolerance", [(torch.float32, 1e-5), (torch.float64, 1e-10)])
def test_tiled_attention_equals_pytorch_fused_attention_in_values_and_gradients(dtype, tolerance):
    g = torch.Generator().manual_seed(0)
    kinds = {"causal": 0, "ragged": 0}
    for _ in range(220):
        q, k, v, causal, tile = _random_case(g, dtype)
        kinds["causal"] += causal
        kinds["ragged"] += q.shape[-2] % tile != 0 or k.shape[-2] % tile != 0
        ours = tiled_attention(q, k, v, causal=causal, tile_size=tile)
        theirs = F.scaled_dot_product_attention(q, k, v, attn_mask=_bottom_right(q, k) if causal else None)
        cotangent = torch.randn(ours.shape, generator=g, dtype=dtype)
        grads = torch.autograd.grad(ours, (q, k, v), cotangent)
        expected = torch.autograd.grad(theirs, (q, k, v), cotangent)
        assert (ours - theirs).abs().max() <= tolerance, (q.shape, k.shape, causal, tile)
        scale = max(1.0, *(want.abs().max().item() for want in expected))  # the gradients' size, for float32's rounding
        for name, got, want in zip("qkv", grads, expected):
            assert (got - want).abs().max() <= tolerance * scale, (name, q.shape, k.shape, causal, tile)
    assert kinds["causal"] >= 50 and kinds["ragged"] >= 50


def test_online_softmax_over_tiles_equals_the_softmax():
    g = torch.Generator().manual_seed(4)
    scores, values = (
        torch.randn(3, 7, 23, generator=g, dtype=torch.float64) * 5,
        torch.randn(3, 23, 4, dtype=torch.float64),
    )
    m, s, o = (
        torch.full((3, 7), float("-inf"), dtype=torch.float64),
        torch.zeros(3, 7, dtype=torch.float64),
        torch.zeros(3, 7, 4, dtype=torch.float64),
    )
    for start in range(0, 23, 5):
        m, s, o = online_softmax_step(m, s, o, scores[..., start : start + 5], values[:, start : start + 5])
    torch.testing.assert_close(o / s[..., None], torch.softmax(scores, -1) @ values)
    torch.testing.assert_close(m + s.log(), torch.logsumexp(scores, -1))


def test_tiled_attention_keeps_memory_linear_and_plain_attention_quadratic():
    def saved(function, n):
        q, k, v = (torch.randn(1, 2, n, 16, requires_grad=True) for _ in range(3))
        return saved_for_backward_bytes(lambda: function(q, k, v, True))

    tiled = saved(lambda q, k, v, c: tiled_attention(q, k, v, c, 32), 512) / saved(
        lambda q, k, v, c: tiled_attention(q, k, v, c, 32), 128
    )
    plain = saved(plain_attention, 512) / saved(plain_attention, 128)
    assert tiled <= 4.5 and plain >= 12, (tiled, plain)


def test_tiled_attention_refuses_shapes_that_do_not_fit():
    with pytest.raises(CourseInputError, match="do not fit"):
        tiled_attention(torch.randn(2, 5, 4), torch.randn(2, 5, 3), torch.randn(2, 5, 3))
    with pytest.raises(CourseInputError, match="tile_size"):
        tiled_attention(torch.randn(2, 5, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 3), tile_size=0)


@pytest.mark.parametrize("tile", [1, 3, 8])
def test_tiled_causal_attention_on_the_newest_queries_equals_the_last_rows_of_full_attention(tile):
    """The KV-cache case: 3 new queries against 11 keys (8 cached) give the last 3 rows of attention over all 11."""
    g = torch.Generator().manual_seed(7)
    q, k, v = (torch.randn(2, 2, 11, 4, generator=g, dtype=torch.float64, requires_grad=True) for _ in range(3))
    full = F.scaled_dot_product_attention(q, k, v, is_causal=True)[..., -3:, :]
    newest = tiled_attention(q[..., -3:, :], k, v, causal=True, tile_size=tile)
    torch.testing.assert_close(newest, full, msg="the newest queries must see every cached key and themselves")
    torch.testing.assert_close(plain_attention(q[..., -3:, :], k, v, causal=True), full)
    d_out = torch.randn(full.shape, generator=g, dtype=torch.float64)
    for got, want in zip(torch.autograd.grad(newest, (q, k, v), d_out), torch.autograd.grad(full, (q, k, v), d_out)):
        torch.testing.assert_close(got, want)
    one = tiled_attention(q[..., -1:, :], k, v, causal=True, tile_size=tile)  # one new token: sees all 11 keys
    torch.testing.assert_close(one, F.scaled_dot_product_attention(q[..., -1:, :], k, v))


def test_causal_attention_refuses_more_queries_than_keys():
    q, k = torch.randn(1, 5, 4), torch.randn(1, 3, 4)
    for attend in (tiled_attention, plain_attention):
        with pytest.raises(CourseInputError, match="at least as many keys as queries"):
            attend(q, k, k, causal=True)
