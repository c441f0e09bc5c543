"""Checks for the exercise notebooks: run your function, compare with course_lib, explain what went wrong.

In an exercise notebook::

    from course_lib.checks import check_softmax
    check_softmax(softmax)        # prints ✅, ❌ with a hint, or ⏳ not implemented yet

Every check also returns a ``CheckResult`` (``passed``, ``status``, ``message``, ``mistake``), never raises, and
never prints the reference solution. ``MISTAKES`` is the catalogue of typical mistakes each check recognises;
``EXERCISES`` lists the exercise notebooks and their checks. The tools behind
``python -m course_lib exercises build|reset|progress|grade`` live in ``course_lib.tools``.
"""

from .attention import check_attention, check_causal_attention, check_softmax
from .core import CheckResult, Mistake
from .encoder import check_encoder_block, check_feed_forward
from .experiment import check_experiment, compare_with_prediction, short_training
from .induction import (
    check_ablated_repeat_loss,
    check_prefix_matching_score,
    check_previous_token_score,
    check_repeated_batch,
)
from .language_model import check_kv_cache_step, check_next_token_loss, check_top_k_filter, check_top_p_filter
from .modern import check_online_softmax_step, check_rope, check_rope_attention
from .multihead import check_merge_heads, check_multi_head_attention, check_split_heads
from .normalization import check_layer_norm, check_sublayer_connection
from .positions import check_positional_encoding
from .registry import CHECKS, EXERCISES, MISTAKES, SPECS, Exercise, run_exercise_checks
from .rnn import check_rnn_forward, check_rnn_step

__all__ = [
    "check_rope",
    "check_rope_attention",
    "check_online_softmax_step",
    "check_repeated_batch",
    "check_previous_token_score",
    "check_prefix_matching_score",
    "check_ablated_repeat_loss",
    "CheckResult",
    "Mistake",
    "Exercise",
    "EXERCISES",
    "CHECKS",
    "MISTAKES",
    "SPECS",
    "run_exercise_checks",
    "check_rnn_step",
    "check_rnn_forward",
    "check_softmax",
    "check_attention",
    "check_causal_attention",
    "check_split_heads",
    "check_merge_heads",
    "check_multi_head_attention",
    "check_positional_encoding",
    "check_layer_norm",
    "check_sublayer_connection",
    "check_experiment",
    "compare_with_prediction",
    "short_training",
    "check_feed_forward",
    "check_encoder_block",
    "check_next_token_loss",
    "check_top_k_filter",
    "check_top_p_filter",
    "check_kv_cache_step",
]
