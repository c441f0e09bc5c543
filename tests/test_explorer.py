"""The attention explorer shows course_lib's own numbers: its stages equal scaled_dot_product_attention to 1e-6,
the score terms sum to the score, the recorded weights equal the model's, and switching a head off changes the
output only through that head."""

import torch

from course_lib.attention import attention_stages, scaled_dot_product_attention, softmax
from course_lib.attention_only import AttentionOnlyLM
from course_lib.decoder import DecoderLM
from course_lib.lab.explorer import (
    STAGES,
    AttentionExplorer,
    Example,
    class_readout,
    heads_off,
    next_token_readout,
    score_terms,
    trace,
)
from course_lib.lab.models import TransformerClassifier
from course_lib.lab.tasks import agreement
from course_lib.modern_block import ModernDecoderLM
from course_lib.multihead import MultiHeadAttention


def _model(seed=0):
    torch.manual_seed(seed)
    return AttentionOnlyLM(12, 16, 2, 2, max_len=16).eval()


def test_stages_equal_course_lib_to_1e6():
    gen = torch.Generator().manual_seed(0)
    for seq, d_k in ((5, 4), (9, 8), (3, 16)):
        q, k, v = (torch.randn(2, seq, d_k, generator=gen, dtype=torch.float64) for _ in range(3))
        mask = torch.ones(seq, seq, dtype=torch.bool).tril()
        stages = dict(zip(STAGES, attention_stages(q, k, v, mask)))
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
    explorer = AttentionExplorer(model, tokens, labels, more_inputs=[(tokens.flip(1), labels[::-1])])
    explorer.select(query=5, key=2, layer=1, head=1, stage="softmax", ablated=[(1, 1)])
    text = explorer.text
    assert "query 't" in text and "layer 1 head 1" in text and "with heads off (L1H1)" in text
    stages = explorer.stages()
    assert torch.allclose(stages["softmax"], explorer.layers[1].weights[1], atol=1e-6)
    page = explorer.static_html()
    assert "<script>" in page and "http" not in page.split("<script>")[1]
    bundle = explorer._repr_mimebundle_()
    assert "text/html" in bundle and "application/vnd.jupyter.widget-view+json" in bundle


def test_a_padded_input_shows_the_real_tokens_with_the_models_own_weights():
    torch.manual_seed(0)
    model = TransformerClassifier(
        agreement.VOCAB_SIZE, 4, d_model=16, num_heads=2, d_ff=32, max_len=agreement.MAX_LEN, positions="learned"
    ).eval()
    batch = agreement.encode("the dog , which chased the cats , [V]")
    words = agreement.decode(batch.tokens[0])
    example = Example(batch.tokens, words, batch.mask, int(batch.targets[0]))
    layers, logits = trace(model, example)
    with torch.no_grad():
        assert torch.allclose(logits, model(batch.tokens, batch.mask), atol=1e-6), "the mask reaches the model"
    real = example.positions
    assert len(real) == len(words) < batch.tokens.shape[1]
    theirs = model.attention_weights[0][0][:, real][:, :, real]  # (heads, n_real, n_real)
    assert torch.allclose(layers[0].weights, theirs, atol=1e-6)
    assert torch.allclose(layers[0].weights.sum(-1), torch.ones(2, len(words)), atol=1e-6)
    explorer = AttentionExplorer(
        model, batch.tokens, words, readout=class_readout(agreement.CLASS_NAMES["both"]), mask=batch.mask
    )
    assert explorer.labels[explorer.query] == "[V]"
    guess, loss = explorer.effect()["before"]
    assert guess in agreement.CLASS_NAMES["both"] and loss is None  # no target given


def test_next_token_readout_names_the_word_and_scores_the_true_next_token():
    model = DecoderLM(5, 8, 2, 1, 16, max_len=8).eval()
    tokens = torch.tensor([[1, 3, 2, 4]])
    example = Example(tokens, ["a", "b", "c", "d"])
    readout = next_token_readout(["v0", "v1", "v2", "v3", "v4"])
    with torch.no_grad():
        logits = model(tokens)
    word, loss = readout(logits, 1, example)
    assert word == f"v{int(logits[0, 1].argmax())}"
    assert abs(loss - float(-logits[0, 1].log_softmax(-1)[2])) < 1e-6
    assert readout(logits, 3, example)[1] is None


def test_switching_inputs_and_the_static_page_stores_the_first_frames():
    model = _model()
    gen = torch.Generator().manual_seed(5)
    inputs = [(torch.randint(12, (1, n), generator=gen), [f"w{i}" for i in range(n)]) for n in (4, 6, 7)]
    explorer = AttentionExplorer(model, *inputs[0], more_inputs=inputs[1:], static_frames=2)
    explorer.select(input=2)
    assert explorer.query == 6 and explorer.layers[0].weights.shape[-1] == 7
    page = explorer.static_html()
    assert page.count('"labels"') == 2 and page == explorer.static_html(), "two frames, the same page every time"
    widget = explorer.widget()
    explorer._input.value = 1
    assert explorer.input == 1 and len(explorer._strip.options) == 6 and explorer._strip.value == 5
    explorer._strip.value = 2
    explorer._switches[3].value = True
    assert (
        explorer.query == 2 and explorer.ablated == {(1, 1)} and "layer 1 head 1 switched off" in explorer._view.value
    )
    assert widget is explorer.widget()


class _RenamedDecoder(DecoderLM):
    """A decoder by another class name: causality comes from the model's mask, never from its name."""


def _every_model():
    """(name, model, example): every kind of model of the course, each with its own attention."""
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(6)
    tokens = torch.randint(1, 12, (1, 9), generator=gen)
    labels = [f"t{i}" for i in range(9)]
    encoder = TransformerClassifier(
        agreement.VOCAB_SIZE, 4, d_model=16, num_heads=2, d_ff=32, max_len=agreement.MAX_LEN, positions="learned"
    )
    batch = agreement.encode("the dog , which chased the cats , [V]")
    padded = Example(batch.tokens, agreement.decode(batch.tokens[0]), batch.mask)
    return [
        ("encoder (padded)", encoder, padded),
        ("DecoderLM", DecoderLM(12, 16, 2, 2, 32, max_len=16), Example(tokens, labels)),
        ("DecoderLM, another class name", _RenamedDecoder(12, 16, 2, 1, 32, max_len=16), Example(tokens, labels)),
        ("AttentionOnlyLM", AttentionOnlyLM(12, 16, 2, 2, max_len=16), Example(tokens, labels)),
        (
            "ModernDecoderLM learned",
            ModernDecoderLM(12, 16, 2, 2, 32, 16, positions="learned"),
            Example(tokens, labels),
        ),
        ("ModernDecoderLM rotary", ModernDecoderLM(12, 16, 4, 2, 32, 16, positions="rotary"), Example(tokens, labels)),
        (
            "grouped-query (rotary, 4 query heads, 1 key/value head)",
            ModernDecoderLM(12, 16, 4, 2, 32, 16, positions="rotary", n_kv_heads=1, pairing="interleaved"),
            Example(tokens, labels),
        ),
        ("grouped-query DecoderLM", DecoderLM(12, 16, 4, 2, 32, max_len=16, n_kv_heads=2), Example(tokens, labels)),
    ]


def test_the_explorer_shows_each_models_own_attention_to_1e6():
    """On every model of the course, the explorer's softmax stage (the taught formula applied to the queries, keys and
    mask the model recorded) equals the weights each attention layer returned to the model, to 1e-6; the decoders'
    weights are causal and the encoder's are not, whatever the class is called."""
    for name, model, example in _every_model():
        model.eval()
        returned = {}  # the weights each attention layer hands back to its model, from its own forward pass
        hooks = [
            module.register_forward_hook(lambda m, args, out, i=i, got=returned: got.__setitem__(i, out[1].detach()))
            for i, module in enumerate(m for m in model.modules() if isinstance(m, MultiHeadAttention))
        ]
        explorer = AttentionExplorer(model, example.tokens, example.labels, mask=example.mask)
        for hook in hooks:
            hook.remove()
        real = example.positions
        assert len(returned) == len(explorer.layers) > 0, name
        for layer in range(len(explorer.layers)):
            for head in range(explorer.num_heads):
                explorer.select(layer=layer, head=head)
                own = returned[layer][0, head][real][:, real].double()
                stages = explorer.stages()
                torch.testing.assert_close(stages["softmax"].double(), own, atol=1e-6, rtol=0, msg=name)
                torch.testing.assert_close(explorer.layers[layer].weights[head].double(), own, atol=1e-6, rtol=0)
                causal = "encoder" not in name
                above = stages["softmax"].triu(1)
                assert bool((above == 0).all()) == causal, f"{name}: causal is {causal}"
        if isinstance(model, AttentionOnlyLM):
            with torch.no_grad():
                _, weights = model(example.tokens)
            torch.testing.assert_close(explorer.layers[1].weights, weights[1][0], atol=1e-6, rtol=0)
        elif hasattr(model, "attention_weights"):
            torch.testing.assert_close(explorer.layers[0].weights, model.attention_weights[0][0][:, real][:, :, real])


def test_switching_a_head_off_in_a_grouped_query_model_changes_only_that_head():
    """heads_off on a rotary, grouped-query model: the output equals zeroing that head's slice of W_O's input."""
    torch.manual_seed(1)
    model = ModernDecoderLM(12, 16, 4, 2, 32, 16, positions="rotary", n_kv_heads=2).eval()
    tokens = torch.randint(12, (2, 7), generator=torch.Generator().manual_seed(7))
    layer = model.blocks[1].attention
    zeroed = layer.w_o.register_forward_pre_hook(
        lambda module, args: (args[0].index_fill(-1, torch.arange(2 * layer.d_head, 3 * layer.d_head), 0.0),)
    )
    with torch.no_grad():
        by_hand = model(tokens)
    zeroed.remove()
    with heads_off(model, [(1, 2)]), torch.no_grad():
        switched = model(tokens)
    assert layer.head_mask is None, "the head comes back on after the block"
    with torch.no_grad():
        full = model(tokens)
    torch.testing.assert_close(switched, by_hand, atol=1e-6, rtol=0)
    assert not torch.allclose(switched, full, atol=1e-4)
