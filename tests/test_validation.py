"""Bad input to learner-facing functions gets one short message naming the argument, not a torch traceback."""

import numpy as np
import pytest
import torch

import course_lib as cl
from course_lib._validate import CourseInputError


def test_queries_with_wrong_rank_name_the_argument_and_shape():
    with pytest.raises(CourseInputError, match=r"queries must be \(batch, seq_q, d_k\), got \(8,\)"):
        cl.scaled_dot_product_attention(torch.zeros(8), torch.zeros(2, 8), torch.zeros(2, 8))


def test_mismatched_d_k_is_explained():
    with pytest.raises(CourseInputError, match="share their last axis d_k"):
        cl.scaled_dot_product_attention(torch.zeros(1, 3, 8), torch.zeros(1, 3, 4), torch.zeros(1, 3, 4))


def test_keys_and_values_need_the_same_length():
    with pytest.raises(CourseInputError, match="same seq_k"):
        cl.scaled_dot_product_attention(torch.zeros(1, 3, 8), torch.zeros(1, 5, 8), torch.zeros(1, 4, 8))


def test_numpy_input_gets_a_conversion_hint():
    with pytest.raises(CourseInputError, match="torch.as_tensor"):
        cl.scaled_dot_product_attention(np.zeros((1, 3, 8)), torch.zeros(1, 3, 8), torch.zeros(1, 3, 8))


def test_integer_tensors_are_refused_with_dtype_message():
    with pytest.raises(CourseInputError, match="floating-point"):
        cl.softmax(torch.tensor([1, 2, 3]))


def test_mask_must_be_boolean_and_broadcastable():
    q = torch.zeros(1, 3, 4)
    with pytest.raises(CourseInputError, match="dtype torch.bool"):
        cl.scaled_dot_product_attention(q, q, q, torch.ones(3, 3))
    with pytest.raises(CourseInputError, match="does not broadcast"):
        cl.scaled_dot_product_attention(q, q, q, torch.ones(4, 4, dtype=torch.bool))


def test_heads_must_divide_d_model():
    with pytest.raises(CourseInputError, match="must split evenly"):
        cl.MultiHeadAttention(10, 3)
    with pytest.raises(CourseInputError, match="must split evenly"):
        cl.split_heads(torch.zeros(1, 2, 10), 3)


def test_multihead_checks_d_model_of_input():
    mha = cl.MultiHeadAttention(8, 2)
    with pytest.raises(CourseInputError, match=r"queries must be \(batch, seq, d_model=8\), got \(1, 3, 6\)"):
        mha(torch.zeros(1, 3, 6))


def test_positional_encoding_limits_are_explained():
    with pytest.raises(CourseInputError, match="max_len is 4"):
        cl.LearnedPositionalEmbedding(4, 8)(torch.zeros(1, 5, 8))
    with pytest.raises(CourseInputError, match="seq_len must be a positive whole number"):
        cl.sinusoidal_encoding(0, 8)


def test_layernorm_names_expected_width():
    with pytest.raises(CourseInputError, match=r"d_model=6"):
        cl.LayerNorm(6)(torch.zeros(2, 5))


def test_padding_mask_checks_lengths():
    with pytest.raises(CourseInputError, match="between 0 and seq_len=4"):
        cl.padding_mask(torch.tensor([5]), 4)


def test_course_input_error_is_a_value_error():
    assert issubclass(CourseInputError, ValueError)


def test_blocks_and_models_name_the_expected_width_and_vocabulary():
    from course_lib.lab.models import TransformerClassifier

    with pytest.raises(CourseInputError, match=r"x must be \(batch, seq, d_model=8\), got \(1, 3, 6\)"):
        cl.TransformerEncoderBlock(8, 2, 16)(torch.zeros(1, 3, 6))
    with pytest.raises(CourseInputError, match=r"x must be \(batch, seq, d_model=8\), got \(3, 8\)"):
        cl.TransformerEncoderBlock(8, 2, 16)(torch.zeros(3, 8))
    with pytest.raises(CourseInputError, match=r"x must be \(batch, seq, d_model=8\), got \(1, 3, 7\)"):
        cl.FeedForward(8, 16)(torch.zeros(1, 3, 7))
    with pytest.raises(CourseInputError, match=r"between 0 and vocab_size - 1 = 9, got ids from 0 to 12"):
        TransformerClassifier(10, 3)(torch.tensor([[0, 12]]))


def test_training_refuses_a_third_batch_item_that_is_not_a_mask():
    from course_lib.lab.models import TransformerClassifier
    from course_lib.lab.tasks.recall import NUM_VALUES, VOCAB_SIZE, key_value_recall
    from course_lib.lab.training import evaluate_accuracy, train_classifier

    model = TransformerClassifier(VOCAB_SIZE, NUM_VALUES, 16, 2, 32, 1, positions="none")
    batch = key_value_recall(10, 4, torch.Generator().manual_seed(0), return_positions=True)
    with pytest.raises(CourseInputError, match=r"third item is a torch.int64 tensor of shape \(10,\).*batch\[:2\]"):
        evaluate_accuracy(model, batch)
    with pytest.raises(CourseInputError, match="return_positions=True"):
        train_classifier(
            model, lambda size, generator: key_value_recall(size, 4, generator, return_positions=True), steps=1
        )
    assert 0.0 <= evaluate_accuracy(model, batch[:2]) <= 1.0
    mask = torch.ones(10, 1, 5, dtype=torch.bool)
    assert 0.0 <= evaluate_accuracy(model, (*batch[:2], mask)) <= 1.0
    assert (
        0.0 <= evaluate_accuracy(model, (*batch[:2], mask, "more fields, as the agreement task's batches have")) <= 1.0
    )


# --- load_from_torch refuses what it cannot copy exactly -----------------------------------------------


def _block_without_layer_norm():
    """A block whose LayerNorms were removed, as notebook 05 does for its experiments."""
    block = cl.TransformerEncoderBlock(8, 2, 16)
    block.norm1, block.norm2 = torch.nn.Identity(), torch.nn.Identity()
    return block


@pytest.mark.parametrize(
    "ours, theirs, words",
    [
        (lambda: cl.MultiHeadAttention(8, 2, bias=False), lambda: torch.nn.MultiheadAttention(8, 2), "bias=True"),
        (lambda: cl.MultiHeadAttention(8, 2), lambda: torch.nn.MultiheadAttention(8, 2, bias=False), "bias=False"),
        (
            lambda: cl.MultiHeadAttention(8, 2),
            lambda: torch.nn.MultiheadAttention(8, 2, add_bias_kv=True),
            "add_bias_kv",
        ),
        (
            lambda: cl.MultiHeadAttention(8, 2),
            lambda: torch.nn.MultiheadAttention(8, 2, add_zero_attn=True),
            "add_zero_attn",
        ),
        (
            lambda: cl.TransformerEncoderBlock(8, 2, 16),
            lambda: torch.nn.TransformerEncoderLayer(8, 2, 16, activation="gelu"),
            "gelu",
        ),
        (
            lambda: cl.TransformerEncoderBlock(8, 2, 16),
            lambda: torch.nn.TransformerEncoderLayer(8, 2, 32),
            "dim_feedforward=32",
        ),
        (
            lambda: cl.TransformerEncoderBlock(8, 2, 16),
            lambda: torch.nn.TransformerEncoderLayer(8, 2, 16, bias=False),
            "bias",
        ),
        (
            lambda: _block_without_layer_norm(),
            lambda: torch.nn.TransformerEncoderLayer(8, 2, 16),
            "layer_norm=False",
        ),
        (lambda: cl.LayerNorm(8), lambda: torch.nn.LayerNorm(8, elementwise_affine=False), "elementwise_affine"),
        (lambda: cl.LayerNorm(8), lambda: torch.nn.LayerNorm(6), "size 8"),
        (lambda: cl.VanillaRNN(3, 4), lambda: torch.nn.RNN(3, 5, batch_first=True), "hidden_size=5"),
    ],
    ids=[
        "mha bias=False from biases",
        "mha biases from bias=False",
        "add_bias_kv",
        "add_zero_attn",
        "gelu",
        "another d_ff",
        "layer bias=False",
        "block without LayerNorm",
        "LayerNorm without affine",
        "LayerNorm size",
        "RNN size",
    ],
)
def test_load_from_torch_refuses_what_it_cannot_copy(ours, theirs, words):
    module = ours()
    before = {name: value.clone() for name, value in module.state_dict().items()}
    with pytest.raises(CourseInputError, match=words):
        module.load_from_torch(theirs())
    assert all(torch.equal(before[name], value) for name, value in module.state_dict().items()), (
        "nothing may be half-copied"
    )


# --- friendly errors for wrong mask and batch shapes -----------------------------------------------------


def test_a_mask_with_more_axes_than_the_scores_is_explained():
    q = torch.zeros(2, 3, 4)
    with pytest.raises(
        CourseInputError, match=r"mask of shape \(2, 1, 1, 3\) does not broadcast to the scores \(2, 3, 3\).*4 axes"
    ):
        cl.scaled_dot_product_attention(q, q, q, torch.ones(2, 1, 1, 3, dtype=torch.bool))


def test_keys_with_another_batch_size_are_explained():
    mha = cl.MultiHeadAttention(8, 2)
    with pytest.raises(CourseInputError, match="same batch size"):
        mha(torch.zeros(2, 3, 8), torch.zeros(3, 5, 8), torch.zeros(3, 5, 8))
    with pytest.raises(CourseInputError, match="same leading"):
        cl.scaled_dot_product_attention(torch.zeros(2, 3, 4), torch.zeros(3, 5, 4), torch.zeros(3, 5, 4))


def test_softmax_along_an_axis_that_does_not_exist_is_explained():
    with pytest.raises(CourseInputError, match=r"dim must be an axis of scores \(5,\), between -1 and 0, got 4"):
        cl.softmax(torch.zeros(5), dim=4)


def test_broadcast_shape_follows_torch():
    """The plain-Python broadcast rule the attention checks use agrees with torch.broadcast_shapes."""
    import random

    from course_lib._validate import broadcast_shape

    rng = random.Random(0)
    for _ in range(5000):
        shapes = [
            tuple(rng.choice([0, 1, 1, 2, 3]) for _ in range(rng.randint(0, 4))) for _ in range(rng.randint(1, 3))
        ]
        try:
            expected = tuple(torch.broadcast_shapes(*shapes))
        except RuntimeError:
            expected = None
        assert broadcast_shape(*shapes) == expected, shapes
