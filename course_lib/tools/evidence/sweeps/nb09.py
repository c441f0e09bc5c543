"""Notebook 09's sweep: does an induction head form, at the step the loss falls, and does it carry the drop?"""

from __future__ import annotations

import math

from course_lib.lab import induction

from .common import Table, count, progress, span


def induction_heads(seeds, *, steps: int = induction.STEPS) -> Table:
    """Every claim of notebook 09, per seed: the repeated-half loss, the two detectors, the phase change, the two
    ablations and the one-layer model (asserted thresholds in the last column, as in the notebook)."""
    evaluation = induction.held_out()
    ln_vocab = math.log(induction.VOCAB_SIZE)
    table = Table(
        f"Two layers × one head, {steps} steps; a one-layer model (2 heads, the same d_model) beside it",
        [
            "seed",
            "repeat loss",
            "first-half loss",
            "previous-token L0",
            "prefix-matching L1",
            "previous-token L1",
            "prefix-matching L0",
            "loss / score halfway step",
            "repeat loss, L1 off",
            "first half, L1 off",
            "repeat loss, L0 off",
            "1-layer repeat loss",
            "1-layer prefix score",
            "all claims",
        ],
    )
    for seed in seeds:
        run = induction.train(seed, steps=steps)
        result = induction.measure(run.model, evaluation)
        loss_step, score_step = induction.phase_change(run)
        induction_off = induction.measure(run.model, evaluation, ablate=[(1, 0)])
        previous_off = induction.measure(run.model, evaluation, ablate=[(0, 0)])
        one = induction.train(seed, steps=steps, every=steps, **induction.ONE_LAYER)
        one_result = induction.measure(one.model, evaluation)
        row = {
            "repeat": result["repeat"],
            "first": result["first"],
            "previous": result["previous"][0].max().item(),
            "prefix": result["prefix"][1].max().item(),
            "previous_l1": result["previous"][1].max().item(),
            "prefix_l0": result["prefix"][0].max().item(),
            "gap": abs(loss_step - score_step),
            "induction_off": induction_off["repeat"],
            "induction_off_first": induction_off["first"],
            "previous_off": previous_off["repeat"],
            "one_repeat": one_result["repeat"],
            "one_prefix": one_result["prefix"][0].max().item(),
        }
        holds = claims_hold(row, ln_vocab)
        table.add(
            seed,
            row["repeat"],
            row["first"],
            row["previous"],
            row["prefix"],
            row["previous_l1"],
            row["prefix_l0"],
            f"{loss_step} / {score_step}",
            row["induction_off"],
            row["induction_off_first"],
            row["previous_off"],
            row["one_repeat"],
            row["one_prefix"],
            holds,
        )
        progress(f"seed {seed}: {row}")
    column = table.column
    table.notes += [
        f"- repeated-half loss {span(column('repeat loss'))} (ln {induction.VOCAB_SIZE} = {ln_vocab:.3f} without looking back); "
        f"first half {span(column('first-half loss'))}",
        f"- previous-token score in layer 0 {span(column('previous-token L0'))}; prefix-matching in layer 1 "
        f"{span(column('prefix-matching L1'))}; the other way round {span(column('previous-token L1'))} and "
        f"{span(column('prefix-matching L0'))}",
        f"- induction head off: repeated-half loss {span(column('repeat loss, L1 off'))}, first half "
        f"{span(column('first half, L1 off'))}; previous-token head off: "
        f"{span(column('repeat loss, L0 off'))}",
        f"- one layer: repeated-half loss {span(column('1-layer repeat loss'))}, best prefix-matching score "
        f"{span(column('1-layer prefix score'))}",
        f"- every claim of the notebook holds in {count(column('all claims'))} seeds",
    ]
    return table


# The notebook's asserts, with the same thresholds.
THRESHOLDS = {
    "repeat_below": 0.6,  # the repeated half is predicted: loss below 0.6 nats
    "previous_above": 0.5,  # a previous-token head in layer 0
    "prefix_above": 0.6,  # an induction head in layer 1
    "gap_at_most": 20,  # the loss and the score pass halfway within 20 steps of each other
    "first_above": math.log(induction.VOCAB_SIZE),  # the first half: no model beats a uniform guess, ln(vocab)
    "previous_l1_below": 0.3,  # neither head does the other's job
    "prefix_l0_below": 0.2,
    "off_above": math.log(induction.VOCAB_SIZE),  # with the induction head off, the loss is back above ln(vocab)
    "off_first_below": 4.5,  # and the first half comes back near ln(vocab): the head's copying made it worse
    "previous_off_above": 2.0,  # with the previous-token head off, most of the drop is gone too
    "one_layer_repeat_above": 1.0,  # one layer does not get there
    "one_layer_prefix_below": 0.5,
}


def claims_hold(row: dict, ln_vocab: float) -> bool:
    t = THRESHOLDS
    return (
        row["repeat"] < t["repeat_below"]
        and row["first"] > t["first_above"]
        and row["previous_l1"] < t["previous_l1_below"]
        and row["prefix_l0"] < t["prefix_l0_below"]
        and row["previous_off"] > t["previous_off_above"]
        and row["induction_off_first"] < t["off_first_below"]
        and row["previous"] > t["previous_above"]
        and row["prefix"] > t["prefix_above"]
        and row["gap"] <= t["gap_at_most"]
        and row["induction_off"] > t["off_above"]
        and row["one_repeat"] > t["one_layer_repeat_above"]
        and row["one_prefix"] < t["one_layer_prefix_below"]
    )
