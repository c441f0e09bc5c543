"""The attention-only decoder, the repeated-token task and the two detectors of notebook 09."""

import pytest
import torch

from course_lib._validate import CourseInputError
from course_lib.attention_only import AttentionOnlyLM, per_token_loss, prefix_matching_score, previous_token_score
from course_lib.lab.tasks.repeated import repeated_batches, repeated_tokens


def test_repeated_tokens_repeat_their_first_half():
    tokens = repeated_tokens(5, 7, 20, torch.Generator().manual_seed(0))
    assert tokens.shape == (5, 14) and torch.equal(tokens[:, :7], tokens[:, 7:])
    batch = next(repeated_batches(3, 20, torch.Generator().manual_seed(1), 4, 6))
    half = batch.shape[1] // 2
    assert 4 <= half <= 6 and torch.equal(batch[:, :half], batch[:, half:])


@pytest.mark.parametrize("half", [2, 5, 9])
def test_detectors_score_perfect_heads_one_and_others_zero(half):
    seq = 2 * half
    previous = torch.zeros(1, 1, seq, seq)
    previous[0, 0, 0, 0] = 1.0
    for t in range(1, seq):
        previous[0, 0, t, t - 1] = 1.0
    induction = torch.zeros(1, 1, seq, seq)
    for t in range(seq):
        induction[0, 0, t, t - half + 1 if t >= half else 0] = 1.0
    copy_itself = torch.zeros(1, 1, seq, seq)  # attends to the earlier copy, not the token after it
    for t in range(seq):
        copy_itself[0, 0, t, t - half if t >= half else 0] = 1.0
    assert previous_token_score(previous).item() == pytest.approx(1.0)
    assert prefix_matching_score(induction, half).item() == pytest.approx(1.0)
    assert prefix_matching_score(copy_itself, half).item() == pytest.approx(0.0)
    if half > 2:  # with half = 2 the token after the earlier copy IS the previous token
        assert previous_token_score(induction).item() < 1.0


def test_model_shapes_causality_and_ablation():
    torch.manual_seed(0)
    model = AttentionOnlyLM(10, 16, 2, 2, max_len=12)
    tokens = torch.randint(10, (3, 8))
    logits, weights = model(tokens)
    assert logits.shape == (3, 8, 10) and len(weights) == 2 and weights[0].shape == (3, 2, 8, 8)
    assert torch.all(weights[1].triu(1) == 0)
    changed = tokens.clone()
    changed[:, -1] = (changed[:, -1] + 1) % 10
    assert torch.allclose(model(changed)[0][:, :-1], logits[:, :-1], atol=1e-6), "the future must not leak back"
    assert per_token_loss(logits, tokens).shape == (3, 7)
    with pytest.raises(CourseInputError):
        model(tokens, ablate=[(2, 0)])
