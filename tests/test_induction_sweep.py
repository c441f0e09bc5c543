"""Notebook 09's experiment at seed 0 holds every claim the sweep checks (thresholds in sweeps/nb09.py)."""

import pytest

from course_lib.tools.evidence.sweeps.nb09 import THRESHOLDS, induction_heads


@pytest.mark.slow
def test_every_claim_holds_at_seed_0():
    table = induction_heads([0])
    row = dict(zip(table.columns, table.rows[0]))
    assert row["repeat loss"] < THRESHOLDS["repeat_below"]
    assert row["previous-token L0"] > THRESHOLDS["previous_above"]
    assert row["prefix-matching L1"] > THRESHOLDS["prefix_above"]
    assert row["repeat loss, L1 off"] > THRESHOLDS["off_above"]
    assert row["1-layer prefix score"] < THRESHOLDS["one_layer_prefix_below"]
    assert row["all claims"] is True, table.render()
