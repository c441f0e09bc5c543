"""The small models, the recall task and the training loop that the notebooks build their experiments on."""

import pytest
import torch

from course_lib._validate import CourseInputError
from course_lib.lab.models import RecurrentClassifier, TransformerClassifier, count_parameters
from course_lib.lab.tasks.recall import NUM_KEYS, NUM_VALUES, VOCAB_SIZE, key_value_recall, recall_batches
from course_lib.lab.training import evaluate_accuracy, train_classifier


def test_recall_batches_are_consistent_and_seeded():
    tokens, targets, positions = key_value_recall(50, 8, torch.Generator().manual_seed(0), return_positions=True)
    assert tokens.shape == (50, 9, 2) and targets.shape == (50,)
    for row in range(50):
        keys = tokens[row, :8, 0]
        assert len(set(keys.tolist())) == 8, "keys in one sequence are distinct"
        query_key = tokens[row, 8, 0]
        stored_at = (keys == query_key).nonzero().item()
        assert stored_at == positions[row]
        assert tokens[row, stored_at, 1] - NUM_KEYS == targets[row]
        assert tokens[row, 8, 1] == NUM_KEYS + NUM_VALUES, "the query carries the '?' value"
    again = key_value_recall(50, 8, torch.Generator().manual_seed(0))
    assert torch.equal(again[0], tokens)


def test_recall_batches_cycle_item_counts():
    make_batch = recall_batches((4, 8))
    g = torch.Generator().manual_seed(0)
    assert [make_batch(2, g)[0].shape[1] for _ in range(4)] == [5, 9, 5, 9]


def test_parameter_matched_models_from_the_research_notes():
    transformer = TransformerClassifier(VOCAB_SIZE, NUM_VALUES, 64, 2, 128, 1, positions="none", norm_first=True)
    lstm = RecurrentClassifier(VOCAB_SIZE, NUM_VALUES, hidden_size=64, embed_dim=64, kind="lstm")
    assert count_parameters(transformer) == 37_776
    assert count_parameters(lstm) == 37_456


@pytest.mark.parametrize("positions", ["none", "sinusoidal", "learned"])
@pytest.mark.parametrize("readout", ["last", "first", "mean"])
def test_transformer_classifier_shapes(positions, readout):
    model = TransformerClassifier(
        20, 3, d_model=16, num_heads=2, d_ff=32, num_layers=2, max_len=10, positions=positions, readout=readout
    )
    logits = model(torch.randint(0, 20, (4, 7)))
    assert logits.shape == (4, 3)
    assert [w.shape for w in model.attention_weights] == [(4, 2, 7, 7)] * 2


def test_models_refuse_bad_arguments():
    with pytest.raises(CourseInputError, match="positions must be"):
        TransformerClassifier(10, 2, positions="rotary")
    with pytest.raises(CourseInputError, match="kind must be"):
        RecurrentClassifier(10, 2, kind="transformer")
    with pytest.raises(CourseInputError, match="integer ids"):
        TransformerClassifier(10, 2, d_model=8, num_heads=2, d_ff=8)(torch.zeros(2, 3))


def test_training_learns_recall_and_is_deterministic():
    def run():
        torch.manual_seed(0)
        model = TransformerClassifier(VOCAB_SIZE, NUM_VALUES, 32, 2, 64, 1, norm_first=True)
        history = train_classifier(model, recall_batches((4,)), steps=150, lr=3e-3, clip=1.0, log_every=1000)
        accuracy = evaluate_accuracy(model, key_value_recall(500, 4, torch.Generator().manual_seed(1)))
        return history["loss"], accuracy

    losses, accuracy = run()
    assert accuracy > 0.9, accuracy
    assert losses[-1] < losses[0] / 5
    assert run() == (losses, accuracy), "same seed, same machine: the same numbers"


def test_training_stops_on_divergence(capsys):
    torch.manual_seed(0)
    model = RecurrentClassifier(VOCAB_SIZE, NUM_VALUES, hidden_size=8, embed_dim=8, kind="rnn")
    with torch.no_grad():
        model.head.weight.fill_(float("nan"))
    history = train_classifier(model, recall_batches((4,)), steps=50, name="broken")
    assert history["diverged"] and len(history["loss"]) == 1
    assert "diverged" in capsys.readouterr().out


def test_set_seed_makes_draws_repeat_and_pins_the_thread_count():
    from course_lib import set_seed

    before = torch.get_num_threads()
    try:
        generator = set_seed(7)
        first = (torch.rand(3), torch.rand(3, generator=generator))
        generator = set_seed(7)
        assert torch.equal(first[0], torch.rand(3)) and torch.equal(first[1], torch.rand(3, generator=generator))
        assert torch.get_num_threads() == 1
        assert torch.are_deterministic_algorithms_enabled() and torch.is_deterministic_algorithms_warn_only_enabled()
        set_seed(0, threads=None)
        assert torch.get_num_threads() == 1, "threads=None leaves the setting alone"
        for bad in [dict(seed=1.5), dict(seed=True), dict(seed=0, threads=0)]:
            with pytest.raises(ValueError):
                set_seed(**bad)
    finally:
        torch.set_num_threads(before)
