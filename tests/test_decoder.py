"""The decoder-only language model, sampling, the KV cache and notebook 08's corpus and baselines.

Equivalence: a decoder block equals torch's pre-LN encoder layer run with a causal mask. Properties: cached and
uncached generation give the same tokens for random models and prompts; top-k never leaves the k best; top-p keeps
the smallest set with mass >= p; temperature -> 0 is greedy.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from course_lib._validate import CourseInputError
from course_lib.decoder import DecoderBlock, DecoderLM, KVCache, generate, next_token_loss
from course_lib.lab.lm_baselines import LSTMLM, BigramLM, UnigramLM, train_lm, validation_loss
from course_lib.lab.models import count_parameters
from course_lib.lab.tasks import relative_clauses as rc
from course_lib.sampling import greedy, sample, sampler, temperature, top_k_filter, top_p_filter


def small_model(seed: int, vocab: int = 11, d_model: int = 16, heads: int = 2, n_blocks: int = 2) -> DecoderLM:
    torch.manual_seed(seed)
    model = DecoderLM(vocab, d_model, heads, n_blocks, 2 * d_model, max_len=40)
    with torch.no_grad():  # larger weights than the init, so the logits are far from uniform
        for parameter in model.parameters():
            parameter.add_(0.3 * torch.randn_like(parameter))
    return model.eval()


# ------------------------------------------------------------------------------------------------- equivalence


@pytest.mark.parametrize("seed", range(3))
def test_decoder_block_equals_torch_encoder_layer_with_a_causal_mask(seed):
    torch.manual_seed(seed)
    layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True, norm_first=True).eval()
    block = DecoderBlock(16, 4, 32).load_from_torch(layer).eval()
    x = torch.randn(3, 9, 16)
    torch_mask = nn.Transformer.generate_square_subsequent_mask(9)  # -inf above the diagonal
    expected = layer(x, src_mask=torch_mask, is_causal=True)
    torch.testing.assert_close(block(x), expected, atol=1e-5, rtol=1e-5)


def test_the_causal_block_ignores_the_future():
    block = DecoderBlock(16, 2, 32).eval()
    x = torch.randn(2, 7, 16)
    changed = x.clone()
    changed[:, 4:] = torch.randn(2, 3, 16)
    torch.testing.assert_close(block(x)[:, :4], block(changed)[:, :4])
    assert not torch.allclose(block(x)[:, 4:], block(changed)[:, 4:])


def test_weight_tying_shares_storage_and_saves_parameters():
    tied = DecoderLM(30, 16, 2, 1, 32, 10, tie_weights=True)
    untied = DecoderLM(30, 16, 2, 1, 32, 10, tie_weights=False)
    assert tied.unembed.weight.data_ptr() == tied.embed.weight.data_ptr()
    assert untied.unembed.weight.data_ptr() != untied.embed.weight.data_ptr()
    assert count_parameters(untied) - count_parameters(tied) == 30 * 16
    next_token_loss(tied(torch.randint(30, (2, 5))), torch.randint(30, (2, 5))).backward()
    assert tied.embed.weight.grad is tied.unembed.weight.grad  # one tensor, one gradient from both uses


def test_next_token_loss_shifts_the_targets_by_one():
    logits = torch.randn(2, 5, 7)
    tokens = torch.randint(7, (2, 5))
    by_hand = -torch.log_softmax(logits[:, :-1], dim=-1).gather(-1, tokens[:, 1:, None]).mean()
    torch.testing.assert_close(next_token_loss(logits, tokens), by_hand)
    unshifted = nn.functional.cross_entropy(logits.reshape(-1, 7), tokens.reshape(-1))
    assert not torch.isclose(next_token_loss(logits, tokens), unshifted)
    tokens[:, 3] = 0
    ignoring = next_token_loss(logits, tokens, ignore_index=0)
    keep = tokens[:, 1:] != 0
    expected = -torch.log_softmax(logits[:, :-1], -1).gather(-1, tokens[:, 1:, None])[..., 0][keep].mean()
    torch.testing.assert_close(ignoring, expected)


def test_the_model_refuses_what_it_cannot_read():
    model = DecoderLM(10, 8, 2, 1, 16, max_len=6)
    with pytest.raises(CourseInputError, match="integer token ids"):
        model(torch.randn(2, 3))
    with pytest.raises(CourseInputError, match="vocab_size - 1 = 9"):
        model(torch.tensor([[1, 10]]))
    with pytest.raises(CourseInputError, match="max_len=6"):
        model(torch.zeros(1, 7, dtype=torch.long))
    cache = model.new_cache()
    model(torch.zeros(1, 5, dtype=torch.long), cache)
    with pytest.raises(CourseInputError, match="5 cached"):
        model(torch.zeros(1, 2, dtype=torch.long), cache)


# ------------------------------------------------------------------------------------------------- the KV cache


@pytest.mark.parametrize("seed", range(6))
def test_cached_generation_equals_uncached(seed):
    generator = torch.Generator().manual_seed(seed)
    n_blocks = 1 + seed % 3
    model = small_model(seed, n_blocks=n_blocks, heads=1 + seed % 2 * 3)
    prompt_len = 1 + int(torch.randint(6, (1,), generator=generator))
    prompt = torch.randint(11, (2, prompt_len), generator=generator)
    for pick in (greedy, sampler(temperature=1.0, top_k=5)):
        cached = generate(model, prompt, 12, sampler=pick, use_cache=True, generator=torch.Generator().manual_seed(7))
        uncached = generate(
            model, prompt, 12, sampler=pick, use_cache=False, generator=torch.Generator().manual_seed(7)
        )
        assert torch.equal(cached, uncached)
        assert torch.equal(cached[:, :prompt_len], prompt)


def test_cached_logits_equal_the_full_forward_pass():
    model = small_model(0)
    tokens = torch.randint(11, (3, 10))
    full = model(tokens)
    cache = model.new_cache()
    pieces = [model(tokens[:, :4], cache), model(tokens[:, 4:5], cache), model(tokens[:, 5:], cache)]
    torch.testing.assert_close(torch.cat(pieces, dim=1), full, atol=1e-5, rtol=1e-5)
    assert cache.length == 10


def test_the_cache_shape_offset_reset_and_bytes():
    model = DecoderLM(11, 16, 4, 3, 32, max_len=20).eval()
    cache = model.new_cache()
    assert isinstance(cache, KVCache) and cache.length == 0 and cache.nbytes == 0
    model(torch.randint(11, (2, 5)), cache)
    model(torch.randint(11, (2, 1)), cache)
    assert cache.length == 6
    for keys, values in zip(cache.keys, cache.values):
        assert keys.shape == values.shape == (2, 4, 6, 4)  # (batch, heads, positions, d_head)
    assert cache.nbytes == 2 * 3 * 2 * 4 * 4 * 6 * 4  # 2 x blocks x batch x heads x d_head x positions x 4 bytes
    cache.reset()
    assert cache.length == 0 and cache.nbytes == 0


def test_a_cache_that_does_not_advance_the_position_changes_the_logits():
    model = small_model(1)
    tokens = torch.randint(11, (1, 6))
    cache = model.new_cache()
    model(tokens[:, :5], cache)
    right = model(tokens[:, 5:], cache)[:, -1]
    torch.testing.assert_close(right, model(tokens)[:, -1], atol=1e-5, rtol=1e-5)
    # position 0 instead of 5 for the new token: a different answer, so the offset matters
    wrong = model(tokens[:, 5:])[:, -1]
    assert not torch.allclose(right, wrong, atol=1e-3)


# ------------------------------------------------------------------------------------------------- sampling


@pytest.mark.parametrize("seed", range(5))
def test_top_k_never_leaves_the_k_best(seed):
    generator = torch.Generator().manual_seed(seed)
    logits = torch.randn(4, 30, generator=generator) * 3
    for k in (1, 3, 10):
        filtered = top_k_filter(logits, k)
        assert (torch.isfinite(filtered).sum(dim=-1) == k).all()
        best = logits.topk(k, dim=-1).indices
        draws = torch.stack([sample(logits, top_k=k, generator=generator) for _ in range(200)], dim=1)  # (4, 200)
        assert all(set(draws[row].tolist()) <= set(best[row].tolist()) for row in range(4))


@pytest.mark.parametrize("seed", range(5))
def test_top_p_keeps_the_smallest_set_with_mass_at_least_p(seed):
    generator = torch.Generator().manual_seed(seed)
    logits = torch.randn(6, 25, generator=generator) * 2
    probs = torch.softmax(logits, dim=-1)
    for p in (0.1, 0.5, 0.9, 0.99, 1.0):
        kept = torch.isfinite(top_p_filter(logits, p))
        for row in range(6):
            n = int(kept[row].sum())
            sorted_probs = probs[row].sort(descending=True).values
            assert set(kept[row].nonzero().flatten().tolist()) == set(probs[row].topk(n).indices.tolist())
            assert sorted_probs[:n].sum() >= p - 1e-6, "the kept set reaches p"
            assert n == 1 or sorted_probs[: n - 1].sum() < p, "one token fewer would not"


def test_filters_work_on_logits_and_keep_the_survivors_ratios():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]])
    renormalised = torch.softmax(top_k_filter(logits, 2), dim=-1)
    torch.testing.assert_close(renormalised[0, :2], torch.softmax(logits[0, :2], dim=-1))
    assert renormalised[0, 2:].sum() == 0


@pytest.mark.parametrize("seed", range(4))
def test_temperature_towards_zero_is_greedy(seed):
    generator = torch.Generator().manual_seed(seed)
    # logits 0, 0.1, ..., 1.9 in a random order per row: the best beats the second by 0.1, i.e. by 0.1 / τ after scaling
    logits = torch.stack([torch.randperm(20, generator=generator) * 0.1 for _ in range(8)])
    for tau in (0.005, 0.001):
        draws = torch.stack([sample(logits, temperature=tau, generator=generator) for _ in range(50)])
        assert (draws == greedy(logits)).all()
    assert torch.equal(sample(logits, temperature=0), greedy(logits))
    torch.testing.assert_close(temperature(logits, 2.0), logits / 2)
    with pytest.raises(CourseInputError, match="positive"):
        temperature(logits, 0.0)


def test_sampling_follows_the_softmax_with_a_fixed_generator():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.2]]))
    generator = torch.Generator().manual_seed(0)
    draws = torch.stack([sample(logits, generator=generator) for _ in range(4000)]).flatten()
    frequencies = torch.bincount(draws, minlength=3) / 4000
    assert torch.allclose(frequencies, torch.tensor([0.5, 0.3, 0.2]), atol=0.03)


# ------------------------------------------------------------------------------------------------- corpus and baselines


def test_the_corpus_is_seeded_split_and_needs_long_range_agreement():
    corpus = rc.RelativeClauseCorpus(600, seed=3)
    again = rc.RelativeClauseCorpus(600, seed=3)
    assert corpus.train == again.train and corpus.validation == again.validation
    assert not {tuple(s) for s in corpus.validation} & {tuple(s) for s in corpus.train}
    assert max(len(s) for s in corpus.train) <= rc.MAX_LEN
    assert corpus.batch(8, torch.Generator().manual_seed(0)).shape == (8, rc.MAX_LEN)
    vocab = corpus.vocab
    assert vocab.decode(vocab.encode("the dog barks .")) == "the dog barks ."
    items = list(rc.agreement_items(50, seed=0))
    assert len(items) == 50 and sum(vocab.words[i.agreeing].endswith("s") for i in items) == 25
    for item in items:
        words = [vocab.words[i] for i in item.prefix]
        assert words[-1] == "," and "which" in words
        subject = words[item.subject_index]
        assert {vocab.words[item.agreeing], vocab.words[item.wrong]} & set(sum(rc.VERBS, ())) == {
            vocab.words[item.agreeing],
            vocab.words[item.wrong],
        }
        singular_subject = subject in [s for s, _ in rc.SUBJECTS]
        assert singular_subject == (vocab.words[item.agreeing] in [s for s, _ in rc.VERBS])
        clause_nouns = [w for w in words[item.subject_index + 1 :] if w in sum(rc.ANIMALS + rc.PLACES, ())]
        assert clause_nouns and all(
            (n in [s for s, _ in rc.ANIMALS + rc.PLACES]) != singular_subject for n in clause_nouns
        )


def test_baselines_count_and_a_bigram_cannot_see_the_subject():
    corpus = rc.RelativeClauseCorpus(2000, seed=0)
    vocab_size = len(corpus.vocab)
    unigram, bigram = UnigramLM(corpus.train, vocab_size), BigramLM(corpus.train, vocab_size)
    validation = corpus.validation_batch()
    assert validation_loss(bigram, validation) < validation_loss(unigram, validation) - 1.0
    torch.testing.assert_close(bigram.log_probs.exp().sum(dim=1), torch.ones(vocab_size))
    items = list(rc.agreement_items(200, seed=0))
    assert abs(rc.agreement_accuracy(bigram, items) - 0.5) < 0.1  # it sees only the comma before the verb


def test_the_lstm_is_sized_like_the_transformer_and_training_lowers_the_loss():
    model = DecoderLM(len(rc.VOCAB), 32, 2, 1, 64, rc.MAX_LEN)
    hidden = LSTMLM.hidden_for(count_parameters(model), len(rc.VOCAB), 32)
    lstm = LSTMLM(len(rc.VOCAB), 32, hidden)
    assert count_parameters(lstm) == LSTMLM.parameters_for(len(rc.VOCAB), 32, hidden)
    assert abs(count_parameters(lstm) - count_parameters(model)) < 0.02 * count_parameters(model)
    corpus = rc.RelativeClauseCorpus(500, seed=0)
    before = validation_loss(model, corpus.validation_batch())
    history = train_lm(model, corpus.batch, 30, log_every=30)
    assert validation_loss(model, corpus.validation_batch()) < before - 0.5
    assert len(history["loss"]) == 30


def test_the_sampling_widget_redraws_and_has_a_text_fallback():
    from course_lib.lab.widgets import SamplingWidget, sampling_distributions

    model = DecoderLM(len(rc.VOCAB), 16, 2, 1, 32, rc.MAX_LEN).eval()
    lab = SamplingWidget(model, rc.VOCAB, ["the dog , which chased the owls ,", "the geese"])
    assert "sampled continuation" in lab.text and lab.text in repr(lab)
    assert len(lab.output.outputs) == 2 and "image/png" in lab.output.outputs[0]["data"]
    lab.top_k.value = 1  # only one word can be drawn now
    assert "1 of 60 words can be drawn" in lab.text
    lab.top_k.value = len(rc.VOCAB)
    lab.top_p.value = 0.05
    probabilities, filtered = sampling_distributions(
        model, [rc.VOCAB.bos_id] + rc.VOCAB.encode(lab.prompt.value), 1.0, None, 0.05
    )
    kept = int((filtered > 0).sum())
    assert kept < len(rc.VOCAB) and f"{kept} of 60 words can be drawn" in lab.text
    assert probabilities.sort(descending=True).values[:kept].sum() >= 0.05
