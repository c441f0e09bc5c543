"""The quiz banks and engine: every bank is valid, every question checks right, every answer agrees with course_lib.

- Schema and coverage: each notebook bank has ≥ 5 questions, Part 1's check ≥ 15 over every topic of 01–06.
- For every question: the right answer succeeds; each wrong option fails with ITS feedback; numeric mistakes get
  their own feedback; nothing wrong reveals the explanation.
- Consistency: parameter counts, shapes and values in the questions are recomputed from ``course_lib``.
- Malformed banks: each defect gives one ``QuizBankError`` naming the file and the question.
"""

from __future__ import annotations

import math
from collections import Counter

import pytest
import torch
from torch import nn

from course_lib import (
    LayerNorm,
    LearnedPositionalEmbedding,
    MultiHeadAttention,
    SinusoidalPositionalEncoding,
    TransformerEncoderBlock,
    VanillaRNN,
    causal_mask,
    input_gradient_norms,
    merge_heads,
    scaled_dot_product_attention,
    softmax,
    split_heads,
)
from course_lib import _syllabus as syllabus
from course_lib._validate import CourseInputError
from course_lib.interactive.quiz import (
    TOPICS,
    QuizAnswerError,
    QuizBankError,
    available_banks,
    check_banks,
    load_bank,
    parse_bank,
)
from course_lib.interactive.quiz.model import letter
from course_lib.lab.models import count_parameters
from course_lib.tools.cli import main as cli_main

# every bank comes from the syllabus: a new notebook's bank is tested without editing this file
NOTEBOOK_BANKS = [row.quiz for row in syllabus.COURSE if row.quiz and row.number not in syllabus.KNOWLEDGE_CHECKS]
ALL_BANKS = NOTEBOOK_BANKS + [
    row.quiz for row in syllabus.COURSE if row.quiz and row.number in syllabus.KNOWLEDGE_CHECKS
]
QUIZZES = {name: load_bank(name) for name in ALL_BANKS}
QUESTIONS = [(name, q) for name, quiz in QUIZZES.items() for q in quiz.questions]


def by_id(question_id: str):
    for _, question in QUESTIONS:
        if question.id == question_id:
            return question
    raise KeyError(f"no question {question_id!r} in any bank: was it renamed? Update CONSISTENCY in this file.")


def correct_text(question) -> str:
    (index,) = question.correct_indices
    return question.options[index].text


# -- the banks as a whole ----------------------------------------------------------------------------------------
def test_all_banks_are_shipped_and_valid():
    assert available_banks() == sorted(ALL_BANKS)
    quizzes, errors = check_banks()
    assert errors == []
    assert len(quizzes) == len(ALL_BANKS)


@pytest.mark.parametrize("name", NOTEBOOK_BANKS)
def test_notebook_bank_covers_its_notebook(name):
    quiz = QUIZZES[name]
    assert len(quiz) >= 5, f"bank {name} needs at least 5 questions"
    assert {q.notebook for q in quiz.questions} == {name}
    assert quiz.notebook == name


def test_final_check_spans_every_topic_of_part_1_and_nothing_after():
    final = QUIZZES["final"]
    assert len(final) >= 15
    counts = Counter(q.topic for q in final.questions)
    part_1 = syllabus.part_of(syllabus.FINAL_CHECK).notebooks
    taught = {q.topic for name in NOTEBOOK_BANKS if name in part_1 for q in QUIZZES[name].questions}
    assert set(counts) == taught, f"missing topics: {taught - set(counts)}, extra: {set(counts) - taught}"
    assert {q.notebook for q in final.questions} <= set(part_1), "Part 1's check quizzes notebooks 01-06 only"
    assert min(counts.values()) >= 2, f"each topic needs at least 2 questions for a meaningful score: {counts}"


def test_the_part_2_check_quizzes_part_2_only():
    part2 = QUIZZES["part2"]
    part_2 = syllabus.part_of(syllabus.PART2_CHECK).notebooks
    assert {q.notebook for q in part2.questions} <= set(part_2), "Part 2's check quizzes Part 2's notebooks only"


def test_each_bank_mixes_question_kinds_and_answer_positions():
    for name, quiz in QUIZZES.items():
        kinds = Counter(q.kind for q in quiz.questions)
        assert kinds["numeric"] >= 1 and kinds["single"] >= 1, f"bank {name}: {kinds}"
        # the position of the right answer is the engine's shuffle, checked pooled in tests/test_quiz_balance.py


def test_question_ids_are_unique_across_banks():
    ids = Counter(q.id for _, q in QUESTIONS)
    assert [i for i, n in ids.items() if n > 1] == []


@pytest.mark.parametrize("name,question", QUESTIONS, ids=[q.id for _, q in QUESTIONS])
def test_question_content_is_complete(name, question):
    assert question.topic in TOPICS
    assert question.prompt.strip() and question.explanation.strip()
    assert len(question.explanation) > 40, "an explanation should explain, not just restate the answer"
    if question.kind == "numeric":
        assert question.options == ()
        assert question.wrong_feedback.strip()
        assert all(m.feedback.strip() for m in question.mistakes)
    else:
        assert 3 <= len(question.options) <= 6
        assert all(o.feedback.strip() for o in question.options)
        texts = [o.text for o in question.options]
        assert len(set(texts)) == len(texts)


# -- every question checks right ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name,question", QUESTIONS, ids=[q.id for _, q in QUESTIONS])
def test_right_answer_succeeds_and_each_wrong_answer_fails_with_its_feedback(name, question):
    quiz = load_bank(name)
    if question.kind == "single":
        (right,) = question.correct_indices
        result = question.check(letter(right))
        assert result.correct and result.explanation == question.explanation
        assert result.feedback == question.options[right].feedback
        for i, option in enumerate(question.options):
            if i != right:
                result = question.check(i)
                assert not result.correct
                assert result.feedback == option.feedback, "a wrong option must answer with its own feedback"
                assert result.explanation is None, "a wrong answer must not reveal the explanation"
    elif question.kind == "multiple":
        right = set(question.correct_indices)
        result = question.check(sorted(right))
        assert result.correct and result.explanation == question.explanation
        for i, option in enumerate(question.options):
            if i in right:
                if len(right) > 1:
                    partial = question.check(sorted(right - {i}))
                    assert not partial.correct and "did not tick" in partial.feedback
                    assert partial.explanation is None
            else:
                result = question.check(sorted(right | {i}))
                assert not result.correct
                assert option.feedback in result.feedback, "a wrongly ticked option must answer with its own feedback"
                assert result.explanation is None
                alone = question.check([i])
                assert not alone.correct and option.feedback in alone.feedback
    else:
        result = question.check(question.answer)
        assert result.correct and result.explanation == question.explanation
        for edge in (question.answer - question.tolerance, question.answer + question.tolerance):
            assert question.check(edge).correct, "answers at the edge of the tolerance count as right"
        for mistake in question.mistakes:
            result = question.check(mistake.answer)
            assert not result.correct and result.feedback == mistake.feedback and result.explanation is None
        far_off = question.answer + 10 * (abs(question.answer) + question.tolerance + 1) + 0.123
        result = question.check(far_off)
        assert not result.correct and result.feedback == question.wrong_feedback
    # through the quiz, the same answer is recorded
    quiz.check(
        question.id,
        question.answer
        if question.kind == "numeric"
        else list(question.correct_indices)
        if question.kind == "multiple"
        else question.correct_indices[0],
    )
    assert quiz.is_solved(question.id)


# -- answers consistent with course_lib ----------------------------------------------------------------------------
def _rnn_final_state(question):
    rnn = VanillaRNN(input_size=16, hidden_size=64)
    with torch.no_grad():
        _, h_last = rnn(torch.randn(3, 500, 16))
    assert correct_text(question) == f"`{tuple(h_last.shape)}`"


def _vanishing_exponent(question):
    torch.manual_seed(0)
    rnn = VanillaRNN(input_size=32, hidden_size=64)
    norms = input_gradient_norms(lambda x: rnn(x)[1], torch.randn(16, 100, 32))
    exponent = math.log10((norms[-21] / norms[-1]).item())
    assert abs(exponent - question.answer) <= question.tolerance, f"measured 10^{exponent:.2f}"
    assert abs(math.log10(0.5**20) - question.answer) <= question.tolerance


def _final_rnn_memory(question):
    rnn = VanillaRNN(input_size=8, hidden_size=256)
    with torch.no_grad():
        _, h_last = rnn(torch.randn(1, 300, 8))
    assert h_last.numel() == question.answer
    assert question.mistakes[0].answer == 10_000 * 256


def _attention_shapes(question):
    output, weights = scaled_dot_product_attention(torch.randn(2, 5, 16), torch.randn(2, 7, 16), torch.randn(2, 7, 32))
    assert correct_text(question) == f"weights `{tuple(weights.shape)}`, output `{tuple(output.shape)}`"


def _self_attention_shape(question):
    x = torch.randn(4, 12, 32)
    _, weights = scaled_dot_product_attention(x, x, x)
    assert correct_text(question) == f"`{tuple(weights.shape)}`"


def _score_std(d_k):
    def check(question):
        assert question.answer == math.sqrt(d_k)
        generator = torch.Generator().manual_seed(0)
        q, k = torch.randn(50_000, d_k, generator=generator), torch.randn(50_000, d_k, generator=generator)
        measured = (q * k).sum(-1).std().item()
        assert abs(measured - question.answer) < 0.02 * question.answer, f"measured {measured:.3f}"
        assert math.isclose(((q * k).sum(-1) / math.sqrt(d_k)).std().item(), 1.0, rel_tol=0.02)

    return check


def _unscaled_consequences(question):
    generator = torch.Generator().manual_seed(0)
    d_k = 1024
    q, k = torch.randn(1000, d_k, generator=generator), torch.randn(32, d_k, generator=generator)
    weights = softmax(q @ k.T)
    assert (weights.amax(-1) > 0.99).float().mean() >= 0.5, "most rows should saturate without scaling"
    assert torch.allclose(weights.sum(-1), torch.ones(1000))
    assert "32" in question.options[question.correct_indices[-1]].text and math.sqrt(d_k) == 32


def _naive_softmax(question):
    scores = torch.tensor([1000.0, 1001.0, 1002.0])
    naive = torch.exp(scores) / torch.exp(scores).sum()
    assert torch.isnan(naive).all()
    assert "nan" in correct_text(question)
    stable = ", ".join(f"{v:.4f}" for v in softmax(scores).tolist())
    assert any(f"`tensor([{stable}])`" in o.text for o in question.options), "an option quotes the stable softmax"


def _temperature(question):
    scores = torch.tensor([2.0, 1.0, 0.5, -1.0])
    cold, hot = softmax(scores), softmax(scores / 10)
    assert hot.max() < cold.max() and hot.min() > cold.min() and math.isclose(hot.sum().item(), 1.0, rel_tol=1e-6)
    assert "flatter" in correct_text(question)


def _causal_count(question):
    assert causal_mask(5).sum().item() == question.answer
    assert torch.ones(5, 5).tril(-1).sum().item() == question.mistakes[1].answer


def _mask_after_softmax(question):
    scores = torch.randn(4, 4)
    weights = softmax(scores).masked_fill(~causal_mask(4), 0.0)
    assert (weights.sum(-1)[:-1] < 1 - 1e-3).all(), "masking after the softmax leaves rows summing to less than 1"
    _, proper = scaled_dot_product_attention(
        scores[None, :, :1], scores[None, :, :1], scores[None], mask=causal_mask(4)
    )
    assert torch.allclose(proper.sum(-1), torch.ones(1, 4))


def _causal_change(question):
    torch.manual_seed(0)
    attention = MultiHeadAttention(16, 2)
    x = torch.randn(1, 8, 16)
    changed = x.clone()
    changed[0, -1] = torch.randn(16)
    with torch.no_grad():
        before, _ = attention(x, mask=causal_mask(8))
        after, _ = attention(changed, mask=causal_mask(8))
    moved = ((after - before).abs().amax(-1) > 1e-6)[0].nonzero().flatten().tolist()
    assert moved == [7]
    assert correct_text(question) == "Only the last."


def _decoder_mask(question):
    mask = causal_mask(6)
    for i in range(6):
        assert mask[i].nonzero().flatten().tolist() == list(range(i + 1)), "position i sees positions 0..i"
    assert "causal mask" in correct_text(question)


def _weighted_sum(question):
    output = torch.tensor([[0.7, 0.2, 0.1]]) @ torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    assert abs(output[0, 0].item() - question.answer) <= question.tolerance


def _one_head_blend(question):
    blend = {(s, c): 0.5 * s + 0.5 * c for s in (1, -1) for c in (1, -1)}
    assert blend[(1, -1)] == blend[(-1, 1)] and len(set(blend.values())) == 3
    assert correct_text(question) == '"the dog … the squirrels" and "the dogs … the squirrel"'


def _split_heads_shape(question):
    assert correct_text(question) == f"`{tuple(split_heads(torch.randn(2, 10, 64), 8).shape)}`"


def _reshape_without_transpose(question):
    queries = torch.randn(2, 5, 12)
    wrong = queries.reshape(2, 3, 5, 4)
    right = split_heads(queries, 3)
    assert wrong.shape == right.shape and not torch.equal(wrong, right)


def _mha_parameters(d_model, num_heads):
    def check(question):
        assert count_parameters(MultiHeadAttention(d_model, num_heads)) == question.answer
        for heads in (1, 2, 4, 8):
            assert count_parameters(MultiHeadAttention(d_model, heads)) == question.answer, (
                "heads do not change the count"
            )
        no_bias = count_parameters(MultiHeadAttention(d_model, num_heads, bias=False))
        assert no_bias in [m.answer for m in question.mistakes], "the no-bias count is a listed mistake"
        assert count_parameters(nn.MultiheadAttention(d_model, num_heads)) == question.answer

    return check


def _heads_cost(question):
    assert count_parameters(MultiHeadAttention(64, 1)) == count_parameters(MultiHeadAttention(64, 8))
    weights_8 = MultiHeadAttention(64, 8)(torch.randn(1, 10, 64))[1]
    assert weights_8.shape == (1, 8, 10, 10)


def _merge_heads(question):
    heads = torch.randn(2, 4, 6, 8)
    assert torch.equal(heads.transpose(1, 2).reshape(2, 6, 32), merge_heads(heads))
    assert not torch.equal(heads.reshape(2, 6, 32), merge_heads(heads))
    assert "transpose(1, 2)" in correct_text(question)


def _head_scaling_bug(question):
    torch.manual_seed(0)
    attention = MultiHeadAttention(512, 8)
    x = torch.randn(1, 10, 512)
    with torch.no_grad():
        _, weights = attention(x)  # course_lib scales each head by sqrt(d_head)
        q = split_heads(attention.w_q(x), 8)
        k = split_heads(attention.w_k(x), 8)
        right = softmax(q @ k.transpose(-2, -1) / math.sqrt(64))
        too_flat = softmax(q @ k.transpose(-2, -1) / math.sqrt(512))
    assert torch.allclose(weights, right, atol=1e-6), "course_lib divides by sqrt(d_head)"
    assert too_flat.amax(-1).mean() < right.amax(-1).mean()


def _equivariance(question):
    torch.manual_seed(0)
    block = TransformerEncoderBlock(32, 2, 64).eval()
    x = torch.randn(1, 5, 32)
    permutation = torch.tensor([3, 1, 2, 0, 4])  # swap "cat" and "dog"
    with torch.no_grad():
        out, out_permuted = block(x), block(x[:, permutation])
    assert torch.allclose(out[:, permutation], out_permuted, atol=1e-5)
    assert torch.allclose(out.mean(1), out_permuted.mean(1), atol=1e-5)
    with torch.no_grad():
        positions = SinusoidalPositionalEncoding(32)
        with_pe, with_pe_permuted = block(positions(x)), block(positions(x[:, permutation]))
    assert not torch.allclose(with_pe.mean(1), with_pe_permuted.mean(1), atol=1e-3)


def _pe_shape(question):
    output = SinusoidalPositionalEncoding(d_model=64)(torch.randn(2, 10, 64))
    assert correct_text(question) == f"`{tuple(output.shape)}`"


def _pe_frequencies(question):
    from course_lib import sinusoidal_encoding

    pe = sinusoidal_encoding(50, 64, dtype=torch.float64)
    assert torch.allclose(pe[:, 0::2] ** 2 + pe[:, 1::2] ** 2, torch.ones(50, 32, dtype=torch.float64))
    angles = torch.atan2(pe[1, 0::2], pe[1, 1::2])  # the angle per position of each (sin, cos) pair
    assert len(set(round(a, 9) for a in angles.tolist())) == question.answer


def _pe_similarity(question):
    from course_lib import sinusoidal_encoding

    pe = sinusoidal_encoding(200, 64, dtype=torch.float64)
    for k in (0, 1, 5, 20):
        dots = torch.stack([pe[p] @ pe[p + k] for p in (0, 17, 90, 150)])
        assert torch.allclose(dots, dots[0]), "the dot product depends on the offset only"
    dots_by_offset = torch.stack([pe[10] @ pe[10 + k] for k in range(1, 40)])
    assert (dots_by_offset < pe[10] @ pe[10]).all()


def _learned_max_len(question):
    table = LearnedPositionalEmbedding(max_len=128, d_model=64)
    with pytest.raises(CourseInputError, match="max_len"):
        table(torch.randn(1, 200, 64))
    assert "fails" in correct_text(question)


def _pe_properties(question):
    assert count_parameters(SinusoidalPositionalEncoding(64)) == 0
    assert SinusoidalPositionalEncoding(64, max_len=5000).encoding.abs().max() <= 1


def _learned_vs_sinusoidal(question):
    assert count_parameters(LearnedPositionalEmbedding(512, 768)) == 512 * 768
    assert count_parameters(SinusoidalPositionalEncoding(768)) == 0


def _collapse(question):
    torch.manual_seed(0)
    x = torch.randn(1, 32, 64)
    with torch.no_grad():
        for _ in range(3):
            x = MultiHeadAttention(64, 4)(x)[0]
    spread = ((x - x.mean(-2, keepdim=True)).norm() / x.norm()).item()
    assert spread < 1e-3, f"r after 3 layers without skips: {spread:.1e}"


def _layernorm_count(question):
    x = torch.randn(8, 10, 64)
    assert x.mean(dim=-1).numel() == question.answer
    out = LayerNorm(64)(x)
    assert torch.allclose(out.mean(-1), torch.zeros(8, 10), atol=1e-5)


def _layernorm_parameters(question):
    assert count_parameters(LayerNorm(64)) == question.answer == count_parameters(nn.LayerNorm(64))


def _batch_independence(question):
    batch = torch.randn(4, 5)
    changed = batch.clone()
    changed[3] = torch.tensor([100.0, -50.0, 30.0, 0.0, 7.0])
    norm, batch_norm = LayerNorm(5), nn.BatchNorm1d(5)
    with torch.no_grad():
        assert torch.allclose(norm(batch)[:3], norm(changed)[:3])
        assert not torch.allclose(batch_norm(batch)[:3], batch_norm(changed)[:3], atol=0.1)


def _layernorm_value(question):
    x = torch.tensor([0.0, 0.0, 0.0, 4.0])
    with torch.no_grad():
        value = LayerNorm(4)(x)[0].item()
    assert abs(value - question.answer) <= question.tolerance
    unbiased = ((x[0] - x.mean()) / x.std(unbiased=True)).item()
    assert abs(unbiased - question.mistakes[0].answer) <= question.tolerance


def _gpt2_medium_blocks(question):
    block = TransformerEncoderBlock(d_model=1024, num_heads=16, d_ff=4096)
    assert 24 * count_parameters(block) == question.answer, "24 blocks of course_lib's encoder block"
    assert count_parameters(block) == question.mistakes[0].answer, "the one-block mistake"
    assert 24 * (count_parameters(block) - 2 * 2 * 1024) == question.mistakes[2].answer, "without the LayerNorms"
    assert 24 * count_parameters(block) + 50_257 * 1024 + 1024 * 1024 + 2 * 1024 == 354_823_168, "GPT-2 medium's 355M"


def _block_part(part):
    def check(question):
        block = TransformerEncoderBlock(d_model=64, num_heads=4, d_ff=128)
        counts = {
            "attention": count_parameters(block.self_attention),
            "ffn": count_parameters(block.feed_forward),
            "norms": count_parameters(block.norm1) + count_parameters(block.norm2),
            "total": count_parameters(block),
        }
        assert counts[part] == question.answer, f"{part}: course_lib counts {counts[part]}"
        torch_layer = nn.TransformerEncoderLayer(64, 4, 128)
        assert count_parameters(torch_layer) == counts["total"]
        if part == "total":
            assert counts["attention"] + counts["ffn"] == question.mistakes[0].answer

    return check


def _block_sequence_length(question):
    block = TransformerEncoderBlock(64, 4, 128)
    before = count_parameters(block)
    with torch.no_grad():
        block(torch.randn(1, 10, 64)), block(torch.randn(1, 1000, 64))
    assert count_parameters(block) == before


def _weight_tying(question):
    from course_lib.decoder import DecoderLM

    tied, untied = DecoderLM(1000, 128, 4, 1, 256, 8), DecoderLM(1000, 128, 4, 1, 256, 8, tie_weights=False)
    assert count_parameters(untied) - count_parameters(tied) == question.answer


def _top_p_count(question):
    from course_lib.sampling import top_p_filter

    logits = torch.tensor([0.5, 0.3, 0.15, 0.05]).log()
    assert int(torch.isfinite(top_p_filter(logits, 0.9)).sum()) == question.answer


def _cache_bytes(question):
    from course_lib.decoder import DecoderLM

    model = DecoderLM(10, 8 * 32, 8, 4, 64, max_len=100).eval()
    cache = model.new_cache()
    with torch.no_grad():
        model(torch.zeros(1, 100, dtype=torch.long), cache)
    assert cache.nbytes == question.answer
    assert cache.nbytes // 2 == question.mistakes[0].answer


def _top_k_equivalent(question):
    """Three of the four ways give exactly the top-k distribution; the one marked right is the one that does not."""
    from course_lib.sampling import top_k_filter

    logits, k = torch.tensor([2.0, 1.0, 0.5, -1.0, -2.0]), 2
    top_k = torch.softmax(top_k_filter(logits, k), dim=-1)
    kept = torch.zeros_like(logits, dtype=torch.bool)
    kept[logits.topk(k).indices] = True
    probs = torch.softmax(logits, dim=-1)
    zeroed = probs * kept / (probs * kept).sum()
    draws = torch.multinomial(probs, 200_000, replacement=True, generator=torch.Generator().manual_seed(0))
    accepted = draws[kept[draws]]  # redraw until a kept token: the accepted draws, in order
    rejection = torch.bincount(accepted, minlength=len(logits)) / len(accepted)
    logit_zero = torch.softmax(torch.where(kept, logits, torch.zeros_like(logits)), dim=-1)
    assert torch.allclose(zeroed, top_k) and torch.allclose(rejection, top_k, atol=0.01)
    assert (logit_zero[~kept] > 0.05).all(), "logits set to 0 leave the excluded tokens in play"
    (right,) = [option for option in question.options if option.correct]
    assert "logits to 0" in right.text and len(question.options) == 4


def _modern_answer(question, kind):
    from course_lib.rmsnorm import RMSNorm
    from course_lib.swiglu import swiglu_width

    computed = swiglu_width(768) if kind == "swiglu" else sum(p.numel() for p in RMSNorm(512).parameters())
    assert question.answer == computed


def _induction_key_position(question):
    """A head that attends from every repeated token to ``question.answer``'s offset scores 1 on the prefix detector."""
    from course_lib.attention_only import prefix_matching_score

    half, query = 10, 14
    weights = torch.zeros(1, 1, 2 * half, 2 * half)
    for t in range(half, 2 * half):
        weights[0, 0, t, t - query + question.answer] = 1.0  # the key at the same offset from every query
    assert prefix_matching_score(weights, half).item() == 1.0


def _gqa_cache_ratio(question):
    from course_lib.decoder import DecoderLM

    nbytes = {}
    for n_kv in (32, 8):
        model = DecoderLM(10, 64, 32, 1, 64, max_len=8, n_kv_heads=n_kv).eval()
        cache = model.new_cache()
        with torch.no_grad():
            model(torch.zeros(1, 8, dtype=torch.long), cache)
        nbytes[n_kv] = cache.nbytes
    assert nbytes[32] == question.answer * nbytes[8]


def _utf8_bytes(question):
    assert len("café 日".encode()) == question.answer
    assert len("café 日") == question.mistakes[0].answer
    assert len("cafe 日".encode()) == question.mistakes[1].answer  # é taken for one byte


def _overlapping_pairs(question):
    from course_lib.tokenizer import merge_pair, pair_counts

    ids = list(b"aaaa")
    assert pair_counts(ids)[(97, 97)] == question.answer
    assert len(merge_pair(ids, (97, 97), 256)) == question.mistakes[0].answer  # the non-overlapping ones a merge uses


def _bits_per_byte_by_hand(question):
    from course_lib.lab.text import bits_per_byte

    class Uniform(torch.nn.Module):  # 64 equally likely tokens: 6 bits per token
        def forward(self, tokens):
            return torch.zeros(*tokens.shape, 64)

    assert bits_per_byte(Uniform(), list(range(64)) * 4, [3] * 64, 16) == pytest.approx(question.answer)


CONSISTENCY = {
    "part2-tokens-bits-per-byte": _bits_per_byte_by_hand,
    "tokens-utf8-bytes": _utf8_bytes,
    "tokens-overlapping-pairs": _overlapping_pairs,
    "part2-gqa-cache-size": _gqa_cache_ratio,
    "lm-top-k-equivalent": _top_k_equivalent,
    "rnn-final-state-shape": _rnn_final_state,
    "vanishing-gradient-exponent": _vanishing_exponent,
    "final-rnn-memory": _final_rnn_memory,
    "attention-shapes": _attention_shapes,
    "final-self-attention-shape": _self_attention_shape,
    "dot-product-std": _score_std(64),
    "final-score-std": _score_std(256),
    "unscaled-consequences": _unscaled_consequences,
    "naive-softmax-overflow": _naive_softmax,
    "temperature": _temperature,
    "causal-mask-count": _causal_count,
    "mask-after-softmax": _mask_after_softmax,
    "final-causal-change": _causal_change,
    "decoder-causal-mask": _decoder_mask,
    "final-weighted-sum": _weighted_sum,
    "one-head-blend": _one_head_blend,
    "split-heads-shape": _split_heads_shape,
    "reshape-without-transpose": _reshape_without_transpose,
    "mha-parameters": _mha_parameters(64, 4),
    "final-mha-parameters": _mha_parameters(512, 8),
    "block-attention-parameters": _block_part("attention"),
    "heads-cost": _heads_cost,
    "final-merge-heads": _merge_heads,
    "final-head-scaling-bug": _head_scaling_bug,
    "permutation-equivariance": _equivariance,
    "final-pooled-order": _equivariance,
    "pe-output-shape": _pe_shape,
    "pe-frequencies": _pe_frequencies,
    "pe-similarity": _pe_similarity,
    "learned-max-len": _learned_max_len,
    "pe-properties": _pe_properties,
    "final-learned-vs-sinusoidal": _learned_vs_sinusoidal,
    "collapse-without-skips": _collapse,
    "layernorm-statistics-count": _layernorm_count,
    "layernorm-parameters": _layernorm_parameters,
    "batch-independence": _batch_independence,
    "final-layernorm-value": _layernorm_value,
    "block-ffn-parameters": _block_part("ffn"),
    "block-norm-parameters": _block_part("norms"),
    "final-gpt2-medium-blocks": _gpt2_medium_blocks,
    "block-sequence-length": _block_sequence_length,
    "lm-weight-tying": _weight_tying,
    "lm-top-p-count": _top_p_count,
    "lm-cache-bytes": _cache_bytes,
    "swiglu-width": lambda question: _modern_answer(question, "swiglu"),
    "part2-rmsnorm-parameters": lambda question: _modern_answer(question, "rmsnorm"),
    "induction-key-position": _induction_key_position,
}


@pytest.mark.parametrize("question_id", sorted(CONSISTENCY))
def test_answer_agrees_with_course_lib(question_id):
    torch.manual_seed(0)
    CONSISTENCY[question_id](by_id(question_id))


def test_every_numeric_answer_is_computed():
    unchecked = [
        q.id for _, q in QUESTIONS if q.kind == "numeric" and q.id not in CONSISTENCY and q.id != "who-did-it-ceiling"
    ]
    assert unchecked == [], "numeric answers should be recomputed from course_lib in CONSISTENCY"


# -- the engine ----------------------------------------------------------------------------------------------------
def test_answer_formats():
    quiz = load_bank("03")
    single = quiz.question("split-heads-shape")
    (right,) = single.correct_indices  # the display position, after the engine's shuffle
    key = letter(right)
    assert (
        single.check(key).correct
        and single.check(key.upper()).correct
        and single.check(f"({key})").correct
        and single.check(right).correct
    )
    multiple = quiz.question("heads-cost")
    right_set = multiple.correct_indices
    keys = [letter(i) for i in right_set]
    assert len(keys) >= 2, "this test needs a multiple-choice question with several right options"
    assert (
        multiple.check(", ".join(keys)).correct
        and multiple.check(keys).correct
        and multiple.check(set(right_set)).correct
    )
    assert multiple.check("".join(keys).replace("", " ")).correct
    numeric = quiz.question("mha-parameters")
    assert numeric.check("16,640").correct and numeric.check(" 16 640 ").correct and numeric.check(16640.0).correct


@pytest.mark.parametrize(
    "question_id,answer,message",
    [
        ("split-heads-shape", None, "choose an option"),
        ("split-heads-shape", "", "choose an option"),
        ("split-heads-shape", "z", "not an option"),
        ("split-heads-shape", 7, "not an option"),
        ("split-heads-shape", True, "not an option"),
        ("heads-cost", [], "tick at least one"),
        ("heads-cost", "a, q", "not an option"),
        ("mha-parameters", "", "type a number"),
        ("mha-parameters", None, "type a number"),
        ("mha-parameters", "many", "not a number"),
        ("mha-parameters", float("nan"), "finite"),
        ("mha-parameters", "inf", "finite"),
    ],
)
def test_unreadable_answers_are_not_attempts(question_id, answer, message):
    quiz = load_bank("03")
    with pytest.raises(QuizAnswerError, match=message):
        quiz.check(question_id, answer)
    assert quiz.attempts(question_id) == 0 and quiz.score.answered == 0


def test_unknown_question_id_lists_the_ids():
    with pytest.raises(QuizAnswerError, match="has no question 'nope'.*split-heads-shape"):
        load_bank("03").check("nope", "a")


def test_score_first_try_and_topic_summary():
    quiz = load_bank("final")
    events = []
    quiz.subscribe(lambda q, result: events.append((result.question_id, result.correct)))
    quiz.check("final-rnn-memory", 2560000)  # wrong first
    quiz.check("final-rnn-memory", 256)
    quiz.check("final-weighted-sum", 0.8)  # right first
    quiz.check("final-weighted-sum", 1)  # a later wrong attempt does not undo it
    assert quiz.score.total == len(quiz) and quiz.score.answered == 2
    assert quiz.score.solved == 2 and quiz.score.first_try == 1
    assert str(quiz.score) == f"2 / {len(quiz)} solved (1 on the first try)"
    assert events == [
        ("final-rnn-memory", False),
        ("final-rnn-memory", True),
        ("final-weighted-sum", True),
        ("final-weighted-sum", False),
    ]
    rows = {row.topic: row for row in quiz.topic_scores()}
    part_1 = syllabus.part_of(syllabus.FINAL_CHECK).notebooks
    taught = {q.topic for name in NOTEBOOK_BANKS if name in part_1 for q in QUIZZES[name].questions}
    assert list(rows) == [t for t in TOPICS if t in taught], "Part 1's topics, in teaching order"
    assert rows["rnn_limits"].revisit == ("01",) and rows["rnn_limits"].status.startswith("revisit 01")
    assert rows["qkv_attention"].revisit == () and rows["qkv_attention"].status == "good so far"
    assert rows["layernorm"].status == "not answered yet"
    part = quiz.score_of(["final-rnn-memory", "final-rnn-gradient-meaning"])
    assert (part.total, part.solved, part.first_try) == (2, 1, 0)
    quiz.reset()
    assert quiz.score.answered == 0 and quiz.topic_scores()[0].revisit == ()


def test_topic_solid_when_all_right_first_try():
    quiz = load_bank("final")
    for question in quiz.questions:
        if question.topic == "layernorm":
            quiz.check(question.id, question.answer if question.kind == "numeric" else question.correct_indices[0])
    row = next(r for r in quiz.topic_scores() if r.topic == "layernorm")
    assert row.status == "solid"


def test_quiz_check_is_deterministic():
    a, b = load_bank("02"), load_bank("02")
    assert [q.options for q in a.questions] == [q.options for q in b.questions], "options keep the bank's order"
    assert a.check("temperature", "b") == b.check("temperature", "b")


# -- malformed banks: one clear error naming the file and the question ----------------------------------------
GOOD_QUESTION = """
  - id: q1
    kind: single
    topic: scaling
    prompt: Why divide by $\\sqrt{d_k}$?
    options:
      - text: To keep the variance near 1.
        correct: true
        feedback: Yes.
      - text: To make it faster.
        feedback: No, it costs a little extra.
    explanation: The variance of the dot product grows like $d_k$.
"""


def bank(questions: str, header: str = "title: A test bank\nnotebook: '02'\n") -> str:
    return header + "questions:" + GOOD_QUESTION.rstrip() + "\n" + questions


BROKEN = {
    "no correct option": (
        """
  - id: q2
    kind: single
    topic: scaling
    prompt: Pick one.
    options:
      - text: A
        feedback: Not A.
      - text: B
        feedback: Not B.
    explanation: Neither was marked.
""",
        'no option is marked "correct: true"',
    ),
    "two correct in a single-choice question": (
        """
  - id: q2
    kind: single
    topic: scaling
    prompt: Pick one.
    options:
      - {text: A, correct: true, feedback: Yes A.}
      - {text: B, correct: true, feedback: Yes B.}
    explanation: Two marked.
""",
        "exactly one",
    ),
    "no correct option in a multiple-choice question": (
        """
  - id: q2
    kind: multiple
    topic: scaling
    prompt: Pick all.
    options:
      - {text: A, feedback: Not A.}
      - {text: B, feedback: Not B.}
    explanation: None marked.
""",
        "at least one",
    ),
    "duplicate id": (
        GOOD_QUESTION.replace("id: q1", "id: q2") + GOOD_QUESTION.replace("id: q1", "id: q2"),
        "duplicate id",
    ),
    "option without feedback": (
        """
  - id: q2
    kind: single
    topic: scaling
    prompt: Pick one.
    options:
      - {text: A, correct: true, feedback: Yes.}
      - {text: B}
    explanation: B has no feedback.
""",
        "has no feedback",
    ),
    "empty feedback": (
        """
  - id: q2
    kind: single
    topic: scaling
    prompt: Pick one.
    options:
      - {text: A, correct: true, feedback: Yes.}
      - {text: B, feedback: '  '}
    explanation: B has empty feedback.
""",
        "has no feedback",
    ),
    "unknown kind": (
        """
  - id: q2
    kind: choice
    topic: scaling
    prompt: Pick one.
    explanation: Wrong kind.
""",
        "unknown kind 'choice'",
    ),
    "numeric without answer": (
        """
  - id: q2
    kind: numeric
    topic: scaling
    prompt: How many?
    tolerance: 0
    wrong_feedback: Count again.
    explanation: No answer given.
""",
        'needs "answer:"',
    ),
    "numeric without tolerance": (
        """
  - id: q2
    kind: numeric
    topic: scaling
    prompt: How many?
    answer: 3
    wrong_feedback: Count again.
    explanation: No tolerance given.
""",
        'needs "tolerance:"',
    ),
    "negative tolerance": (
        """
  - id: q2
    kind: numeric
    topic: scaling
    prompt: How many?
    answer: 3
    tolerance: -1
    wrong_feedback: Count again.
    explanation: Negative.
""",
        "0 or more",
    ),
    "numeric answer that is text": (
        """
  - id: q2
    kind: numeric
    topic: scaling
    prompt: How many?
    answer: three
    tolerance: 0
    wrong_feedback: Count again.
    explanation: Text.
""",
        "finite number",
    ),
    "numeric answer that is not finite": (
        """
  - id: q2
    kind: numeric
    topic: scaling
    prompt: How many?
    answer: .inf
    tolerance: 0
    wrong_feedback: Count again.
    explanation: Text.
""",
        "finite number",
    ),
    "numeric tolerance that is not a number": (
        """
  - id: q2
    kind: numeric
    topic: scaling
    prompt: How many?
    answer: 3
    tolerance: .nan
    wrong_feedback: Count again.
    explanation: Text.
""",
        "finite number",
    ),
    "numeric without feedback for other wrong answers": (
        """
  - id: q2
    kind: numeric
    topic: scaling
    prompt: How many?
    answer: 3
    tolerance: 0
    explanation: No wrong_feedback.
""",
        'no "wrong_feedback:"',
    ),
    "mistake within the tolerance": (
        """
  - id: q2
    kind: numeric
    topic: scaling
    prompt: How many?
    answer: 3
    tolerance: 0.5
    wrong_feedback: Count again.
    mistakes:
      - {answer: 3.2, feedback: Too close.}
    explanation: The mistake is right.
""",
        "within the tolerance",
    ),
    "a typo in a key": (
        """
  - id: q2
    kind: single
    topic: scaling
    prompt: Pick one.
    options:
      - {text: A, correct: true, feedback: Yes.}
      - {text: B, feedbak: No.}
    explanation: Typo.
""",
        'did you mean "feedback"',
    ),
    "unknown topic": (
        """
  - id: q2
    kind: single
    topic: layer_norm
    prompt: Pick one.
    options:
      - {text: A, correct: true, feedback: Yes.}
      - {text: B, feedback: No.}
    explanation: Typo in the topic.
""",
        'did you mean "layernorm"',
    ),
    "missing explanation": (
        """
  - id: q2
    kind: single
    topic: scaling
    prompt: Pick one.
    options:
      - {text: A, correct: true, feedback: Yes.}
      - {text: B, feedback: No.}
""",
        'has no "explanation:"',
    ),
    "a key given twice": (
        """
  - id: q2
    kind: single
    topic: scaling
    prompt: Pick one.
    options:
      - text: A
        correct: true
        feedback: Yes.
        feedback: Also yes.
      - {text: B, feedback: No.}
    explanation: Two feedback keys.
""",
        "found the key 'feedback' twice",
    ),
    "bad YAML: an unquoted colon": (
        """
  - id: q2
    kind: single
    topic: scaling
    prompt: Pick one: the first or the second.
    explanation: Colon.
""",
        "not valid YAML (line",
    ),
    "bad YAML: a tab": (
        """
  - id: q2
    kind: single
    topic: scaling
\tprompt: Tabbed.
""",
        "not valid YAML",
    ),
    "bad YAML: a backslash in double quotes": (
        """
  - id: q2
    kind: single
    topic: scaling
    prompt: "Divide by $\\sqrt{d_k}$"
""",
        "single quotes",
    ),
}


@pytest.mark.parametrize("defect", sorted(BROKEN))
def test_malformed_bank_gives_one_clear_error(defect, tmp_path):
    questions, expected = BROKEN[defect]
    path = tmp_path / "broken.yaml"
    path.write_text(bank(questions), encoding="utf-8")
    with pytest.raises(QuizBankError) as caught:
        load_bank(path)
    error = caught.value
    message = str(error)
    assert expected in message, message
    assert error.path == path and error.question_id == "q2", message
    assert "broken.yaml" in message and "'q2'" in message
    assert "\n" not in message and len(message) < 400, "one short line"
    assert error._render_traceback_() == [f"QuizBankError: {message}"], "IPython shows the message, not a traceback"
    quizzes, errors = check_banks([path])
    assert quizzes == [] and [str(e) for e in errors] == [message]


@pytest.mark.parametrize(
    "text,expected",
    [
        ("just a string", 'must be a mapping with "title:"'),
        ("title: T\nquestions: []\n", "non-empty list"),
        ("title: T\nquestions:\n  - 42\n", "question 1 must be a mapping"),
        ("questions:\n  - id: q1\n", 'has no "title:"'),
        ("title: T\nnotebook: '99'\nquestions: []\n", "not one of the course notebooks"),
        ("title: T\nquestions:\n  - id: Bad Id\n", 'needs an "id:"'),
        ("title: T\nauthor: me\nquestions: []\n", 'unknown key "author" in the bank'),
    ],
)
def test_malformed_bank_structure(text, expected, tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(QuizBankError, match="broken.yaml") as caught:
        load_bank(path)
    assert expected in str(caught.value)


def test_final_style_bank_needs_a_notebook_per_question():
    text = bank("", header="title: No notebook\n")
    with pytest.raises(QuizBankError, match="which notebook teaches this") as caught:
        parse_bank(text, "final_like.yaml")
    assert caught.value.question_id == "q1"


def test_duplicate_id_across_banks_is_reported(tmp_path):
    path = tmp_path / "extra.yaml"
    path.write_text(bank("").replace("id: q1", "id: final-rnn-memory"), encoding="utf-8")
    _, errors = check_banks(["final", path])
    assert (
        len(errors) == 1 and "also used in final.yaml" in str(errors[0]) and errors[0].question_id == "final-rnn-memory"
    )


def test_unknown_bank_name_lists_the_banks():
    with pytest.raises(QuizBankError, match="there is no quiz called '99'; the quizzes are: 01, 02"):
        load_bank("99")
    assert load_bank(1).id == "01" and load_bank("6").id == "06"


# -- command line -------------------------------------------------------------------------------------------------
def test_cli_check_all_banks(capsys):
    assert cli_main(["quiz", "check"]) == 0
    out = capsys.readouterr().out
    assert f"All {len(ALL_BANKS)} banks are valid and balanced." in out and "OK    final.yaml" in out


def test_cli_check_reports_a_broken_file(tmp_path, capsys):
    path = tmp_path / "mine.yaml"
    path.write_text(bank(BROKEN["option without feedback"][0]), encoding="utf-8")
    assert cli_main(["quiz", "check", str(path)]) == 1
    err = capsys.readouterr().err
    assert "mine.yaml" in err and "'q2'" in err and "has no feedback" in err and "Traceback" not in err


def test_cli_show_hides_answers_unless_asked(capsys):
    assert cli_main(["quiz", "show", "04"]) == 0
    plain = capsys.readouterr().out
    assert "1. A Transformer block" in plain and "Answer:" not in plain and "--answers" in plain
    assert cli_main(["quiz", "show", "04", "--answers"]) == 0
    assert capsys.readouterr().out.count("Answer:") == len(QUIZZES["04"])
    assert cli_main(["quiz", "show", "nope"]) == 2
    assert "there is no quiz called 'nope'" in capsys.readouterr().err
    assert cli_main(["quiz", "list"]) == 0
    assert "final" in capsys.readouterr().out
