"""Checks for the exercise notebooks: run your function, compare with course_lib, explain what went wrong.

In an exercise notebook::

    from course_lib.checks import check_softmax
    check_softmax(softmax)        # prints ✅, ❌ with a hint, or ⏳ not implemented yet

Every check also returns a ``CheckResult`` (``passed``, ``status``, ``message``, ``mistake``), never raises, and
never prints the reference solution. ``MISTAKES`` is the catalogue of typical mistakes each check recognises;
``EXERCISES`` lists the exercise notebooks and their checks. The tools behind
``python -m course_lib exercises build|reset|progress|grade`` live in ``course_lib.tools``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from . import (
    attention,
    encoder,
    experiment,
    induction,
    language_model,
    modern,
    multihead,
    normalization,
    positions,
    rnn,
    tokenizer,
)
from .core import check_function, run_check
from .experiment import compare_with_prediction, short_training
from .spec import MISSING, CheckResult, CheckSpec, Mistake


@dataclass(frozen=True)
class Exercise:
    """One exercise notebook: its file stem, a title, and the checks it runs (with the learner function each takes)."""

    name: str
    title: str
    specs: tuple[CheckSpec, ...]
    withheld: tuple[str, ...] = ()
    """course_lib's implementations of what the exercise grades, as ``"module:qualified.name"``: the course package a
    sandbox shows the notebook leaves them out (calling one raises), so that a function delegating to one fails."""

    @property
    def checks(self) -> tuple[tuple[str, str], ...]:
        """``(check name, learner function name)`` pairs, in notebook order."""
        return tuple((spec.name, spec.function) for spec in self.specs)

    @property
    def filename(self) -> str:
        return f"{self.name}.ipynb"


EXERCISES: dict[str, Exercise] = {
    exercise.name: exercise
    for exercise in (
        Exercise(
            "ex01_rnn",
            "A vanilla RNN: one step, then the loop over time",
            (rnn.STEP_SPEC, rnn.FORWARD_SPEC),
            ("course_lib.recurrent:VanillaRNN.forward",),
        ),
        Exercise(
            "ex02_attention",
            "Softmax, scaled dot-product attention and the causal mask",
            (attention.SOFTMAX_SPEC, attention.ATTENTION_SPEC, attention.CAUSAL_SPEC),
            ("course_lib.attention:softmax", "course_lib.attention:scaled_dot_product_attention"),
        ),
        Exercise(
            "ex03_multi_head",
            "Multi-head attention: split, attend, merge",
            (multihead.SPLIT_SPEC, multihead.MERGE_SPEC, multihead.MHA_SPEC),
            (
                "course_lib.multihead:split_heads",
                "course_lib.multihead:merge_heads",
                "course_lib.multihead:MultiHeadAttention.forward",
            ),
        ),
        Exercise(
            "ex04_positional_encoding",
            "Sinusoidal positional encoding",
            (positions.SPEC,),
            ("course_lib.positions:sinusoidal_encoding", "course_lib.positions:SinusoidalPositionalEncoding.forward"),
        ),
        Exercise(
            "ex05_layernorm_residual",
            "LayerNorm, the residual connection, and an experiment without it",
            (normalization.LN_SPEC, normalization.RESIDUAL_SPEC, experiment.SPEC),
            ("course_lib.blocks:LayerNorm.forward", "course_lib.blocks:Residual.forward"),
        ),
        Exercise(
            "ex06_encoder_block",
            "The feed-forward network and the encoder block, pre-LN and post-LN",
            (encoder.FFN_SPEC, encoder.SPEC),
            ("course_lib.blocks:FeedForward.forward", "course_lib.blocks:TransformerEncoderBlock.forward"),
        ),
        Exercise(
            "ex08_language_model",
            "A language model: the next-token loss, top-k and top-p filtering, one step with a KV cache",
            (language_model.LOSS_SPEC, language_model.TOP_K_SPEC, language_model.TOP_P_SPEC, language_model.STEP_SPEC),
            (
                "course_lib.decoder:next_token_loss",
                "course_lib.decoder:DecoderLM.forward",
                "course_lib.sampling:top_k_filter",
                "course_lib.sampling:top_p_filter",
            ),
        ),
        Exercise(
            "ex09_induction_heads",
            "Induction heads: the repeated batch, the two detectors, and a head switched off",
            (induction.BATCH_SPEC, induction.PREVIOUS_SPEC, induction.PREFIX_SPEC, induction.ABLATION_SPEC),
            (
                "course_lib.lab.tasks.repeated:repeated_tokens",
                "course_lib.lab.tasks.repeated:repeated_batches",
                "course_lib.attention_only:previous_token_score",
                "course_lib.attention_only:prefix_matching_score",
                "course_lib.attention_only:AttentionOnlyLM.forward",
            ),
        ),
        Exercise(
            "ex10_rope_online_softmax",
            "Rotary positions and one step of the online softmax",
            (modern.ROPE_SPEC, modern.ATTENTION_SPEC, modern.STEP_SPEC),
            (
                "course_lib.rotary:apply_rotary",
                "course_lib.multihead:MultiHeadAttention.forward",  # causal with rotate: what rope_attention computes
                "course_lib.tiled_attention:online_softmax_step",
            ),
        ),
        Exercise(
            "ex11_tokenizer",
            "A byte-level BPE tokenizer: the pair count, one merge, the pair to merge next, encode and decode",
            (
                tokenizer.PAIRS_SPEC,
                tokenizer.MERGE_SPEC,
                tokenizer.MOST_FREQUENT_SPEC,
                tokenizer.ENCODE_SPEC,
                tokenizer.DECODE_SPEC,
            ),
            (
                "course_lib.tokenizer:pair_counts",
                "course_lib.tokenizer:merge_pair",
                "course_lib.tokenizer:pair_counts_in_chunks",
                "course_lib.tokenizer:merge_pair_in_chunks",
                "course_lib.tokenizer:most_frequent",
                "course_lib.tokenizer:encode",
                "course_lib.tokenizer:decode",
            ),
        ),
    )
}

SPECS: dict[str, CheckSpec] = {spec.name: spec for exercise in EXERCISES.values() for spec in exercise.specs}

CHECKS: dict[str, Callable[..., CheckResult]] = {name: check_function(spec) for name, spec in SPECS.items()}
"""The notebooks' ``check_*`` functions, made from the specs (the same objects the exercise modules export)."""

#: The mistake catalogue: for every check, the typical mistakes it recognises (each with a buggy example).
MISTAKES: dict[str, list[Mistake]] = {name: list(spec.mistakes) for name, spec in SPECS.items()}


def run_exercise_checks(exercise: str, namespace: Mapping[str, Any]) -> list[dict]:
    """Run every check of ``exercise`` quietly on the functions found in ``namespace`` (a notebook's globals()).

    Returns one dict per check (see ``CheckResult.to_dict``) plus ``function``; a function that is not defined
    gives status ``"missing"``. Used by the progress and grading tools; never raises.
    """
    results = []
    for spec in EXERCISES[exercise].specs:
        function = namespace.get(spec.function) if hasattr(namespace, "get") else None
        if function is None:
            result = CheckResult(
                spec.name,
                False,
                MISSING,
                f"❌ {spec.name}: there is no function named {spec.function} (was its cell run?).",
            )
        else:
            result = run_check(spec, function, verbose=False)
        results.append({**result.to_dict(), "function": spec.function})
    return results


globals().update(CHECKS)  # check_softmax, check_attention, ...: one per CheckSpec, named by the spec

__all__ = [
    *CHECKS,
    "compare_with_prediction",
    "short_training",
    "CheckResult",
    "Mistake",
    "Exercise",
    "EXERCISES",
    "CHECKS",
    "MISTAKES",
    "SPECS",
    "run_exercise_checks",
]
