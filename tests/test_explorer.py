"""The attention explorer shows course_lib's own numbers: its stages equal scaled_dot_product_attention to 1e-6,
the score terms sum to the score, the recorded weights equal the model's, and switching a head off changes the
output only through that head."""

import torch

from course_lib.attention import scaled_dot_product_attention, softmax
from course_lib.attention_only import AttentionOnlyLM
from course_lib.decoder import DecoderLM
from course_lib.explorer import STAGES, AttentionExplorer, attention_stages, heads_off, score_terms, trace


def _model(seed=0):
    torch.manual_seed(seed)
    return AttentionOnlyLM(12, 16, 2, 2, max_len=16).eval()


def test_stages_equal_course_lib_to_1e6():
    gen = torch.Generator().manual_seed(0)
    for seq, d_k in ((5, 4), (9, 8), (3, 16)):
        q, k, v = (torch.randn(2, seq, d_k, generator=gen, dtype=torch.float64) for _ in range(3))
        mask = torch.ones(seq, seq, dtype=torch.bool).tril()
        stages = attention_stages(q, k, v, mask)
        output, weights = scaled_dot_product_attention(q, k, v, mask)
        assert list(stages) == list(STAGES)
        assert torch.allclose(stages["QKᵀ"], q @ k.transpose(-2, -1), atol=1e-6)
        assert torch.allclose(stages["softmax"], weights, atol=1e-6)
        assert torch.allclose(stages["softmax"], softmax(stages["mask"]), atol=1e-6)
        assert torch.allclose(stages["·V"], output, atol=1e-6)


def test_recorded_weights_equal_the_models_own():
    model = _model()
    tokens = torch.randint(12, (1, 10), generator=torch.Generator().manual_seed(1))
    layers, output = trace(model, tokens)
    _, weights = model(tokens)
    for layer, theirs in zip(layers, weights):
        assert torch.allclose(layer.weights, theirs[0], atol=1e-6)
    decoder = DecoderLM(12, 16, 2, 2, 32, max_len=16).eval()
    layers, _ = trace(decoder, tokens)
    for layer, theirs in zip(layers, decoder.attention_weights):
        assert torch.allclose(layer.weights, theirs[0], atol=1e-6)


def test_score_terms_sum_to_the_score():
    model = _model()
    tokens = torch.randint(12, (1, 8), generator=torch.Generator().manual_seed(2))
    layers, _ = trace(model, tokens)
    q, k = layers[1].queries[1], layers[1].keys[1]
    for query, key in ((7, 0), (3, 3), (5, 2)):
        assert torch.allclose(score_terms(q, k, query, key).sum(), (q @ k.T)[query, key], atol=1e-6)


def test_switching_a_head_off_equals_the_models_own_ablation():
    model = _model()
    tokens = torch.randint(12, (3, 9), generator=torch.Generator().manual_seed(3))
    for heads in ([(0, 0)], [(1, 1)], [(0, 1), (1, 0)]):
        with heads_off(model, heads), torch.no_grad():
            hooked, _ = model(tokens)
        with torch.no_grad():
            own, _ = model(tokens, ablate=heads)
            full, _ = model(tokens)
        assert torch.allclose(hooked, own, atol=1e-6)
        assert not torch.allclose(hooked, full, atol=1e-3)


def test_explorer_text_html_and_static_page():
    model = _model()
    tokens = torch.randint(12, (1, 8), generator=torch.Generator().manual_seed(4))
    labels = [f"t{int(t)}" for t in tokens[0]]
    explorer = AttentionExplorer(model, tokens, labels, static_inputs=[(tokens.flip(1), labels[::-1])])
    explorer.select(query=5, key=2, layer=1, head=1, stage="softmax", ablated=[(1, 1)])
    text = explorer.text
    assert "query 't" in text and "layer 1 head 1" in text and "with heads off (L1H1)" in text
    stages = explorer.stages()
    assert torch.allclose(stages["softmax"], explorer.layers[1].weights[1], atol=1e-6)
    page = explorer.static_html()
    assert "<script>" in page and "http" not in page.split("<script>")[1]
    bundle = explorer._repr_mimebundle_()
    assert "text/html" in bundle and "application/vnd.jupyter.widget-view+json" in bundle
