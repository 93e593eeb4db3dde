"""Regression: tests/data/repro/straight_line_24_ops.sync (24 straight-line ops) ended in
MemoryError: the general planner's necessity samples were the whole product of four
values per parameter, and planning by statement adds a parameter per earlier statement.
Now the closed stage plans it by arithmetic, and the general stages plan it too, with
samples that no longer grow exponentially with the parameters."""

from __future__ import annotations

import pytest

from algorithm.registry import sync_threshold
from algorithm.threshold.options import PlannerOptions
from syncproof import VerifyOptions, load, verify

from tests.support.corpus import ROOT

KERNEL = ROOT / "tests" / "data" / "repro" / "straight_line_24_ops.sync"


@pytest.mark.parametrize("stages", [("closed", "by statement", "general"), ("by statement", "general"), ("general",)])
def test_straight_line_ops_are_planned_by_every_stage_and_stay_bisimilar(stages):
    program = load(str(KERNEL))
    synced = sync_threshold(program, options=PlannerOptions(stages=stages)).program
    report = verify(synced, VerifyOptions(strategy="manual", scope="bounded"))
    assert report.result.verdict.value == "bisimilar"


def test_the_closed_stage_drops_at_least_what_the_general_stage_drops():
    program = load(str(KERNEL))
    closed = sync_threshold(program).stats
    general = sync_threshold(program, options=PlannerOptions(stages=("by statement", "general"))).stats
    assert closed.waits <= general.waits
