"""The closed-form planner (algorithm/threshold/closed.py) on flat programs: every
threshold it plans is the brute-force T_min at every instance, its output is bisimilar
per the independent oracle, its concrete check agrees with it everywhere, and broken
variants of it are caught. Expected values come from the definition (tests/support),
never from the planner."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from algorithm.threshold import closed as closed_mod
from algorithm.threshold.concrete import Disagreement, check_and_reduce
from algorithm.threshold.flat import NotFlat, flat_shape
from algorithm.threshold.plan import apply_plan
from semantics.parser import parse, parse_file
from verify.search.generators import param_bounds

from tests.support import oracle
from tests.support.corpus import ROOT
from tests.support.closed_plans import in_the_class, raw_thresholds, planned, problems

FLAT = ["kernels/pipeline_db.sync", "kernels/masked_wait.sync", "kernels/zero_trip_acc.sync",
        "kernels/suite/pingpong_two_chains_shared.sync", "kernels/six_engine_block.sync", "kernels/suite/paged_decode_attention.sync",
        "kernels/suite/pingpong.sync", "kernels/suite/pingpong_two_chains.sync", "kernels/suite/softmax.sync",
        "tests/data/threshold_cases/carried_distance.sync", "tests/data/threshold_cases/five_engines_fan.sync",
        "docs/examples/double_buffer.sync"]


@pytest.mark.parametrize("path", FLAT)
def test_flat_kernels_are_planned_exactly_and_stay_bisimilar(path):
    program = parse_file(str(ROOT / path))
    assert closed_mod.sync_closed(program) is not None  # in the class, and the concrete check agrees
    assert problems(program) == []


def test_non_flat_kernels_are_left_to_the_general_planner():
    for path in ["kernels/suite/flash_attention_causal.sync", "kernels/if_else_split.sync",
                 "kernels/nested_dynamic.sync", "kernels/dma_trigger.sync"]:
        with pytest.raises(NotFlat):
            flat_shape(parse_file(str(ROOT / path)))


# ---------------------------------------------------------------- generated flat programs

ENGINES = ["E0", "E1", "E2", "E3"]
LOOP_INDICES = ["i % 2", "(i + 1) % 2", "i % 3", "i", "i + 1", "0", "1", "0..2", None]
CONST_INDICES = ["0", "1", "0..2", None]


@st.composite
def flat_programs(draw):
    engines = ENGINES[:draw(st.integers(2, 4))]
    buffers = ["a", "b", "c"]
    lines = ["engines " + " ".join(engines), f"param N >= {draw(st.integers(0, 1))}"]

    def op(name, indices):
        buffer = lambda: draw(st.sampled_from(buffers))
        access = lambda: (lambda b, ix: b if ix is None else f"{b}[{ix}]")(buffer(), draw(st.sampled_from(indices)))
        reads = draw(st.lists(st.builds(access), max_size=2))
        writes = draw(st.lists(st.builds(access), min_size=0 if reads else 1, max_size=1))
        text = f"{draw(st.sampled_from(engines))} {name}"
        text += (" reads " + ", ".join(reads)) if reads else ""
        text += (" writes " + ", ".join(writes)) if writes else ""
        return text

    n = 0
    for _ in range(draw(st.integers(0, 2))):
        lines.append(op(f"p{(n := n + 1)}", CONST_INDICES))
    lines.append(f"for i in {draw(st.integers(0, 1))}..N {{")
    for _ in range(draw(st.integers(1, 5))):
        lines.append("  " + op(f"b{(n := n + 1)}", LOOP_INDICES))
    lines.append("}")
    for _ in range(draw(st.integers(0, 2))):
        lines.append(op(f"s{(n := n + 1)}", CONST_INDICES))
    # A dimension count per buffer: an index-less access must not meet an indexed one.
    text = "\n".join(lines) + "\n"
    for b in buffers:
        if f" {b}[" in text or f", {b}[" in text:
            text = text.replace(f" {b},", f" {b}[0],").replace(f" {b}\n", f" {b}[0]\n")
    return parse(text)


@settings(max_examples=120, deadline=None)
@given(program=flat_programs())
def test_generated_flat_programs_are_planned_exactly(program):
    if not in_the_class(program):
        return  # outside the class: the general planner's tests cover it
    assert closed_mod.sync_closed(program) is not None, "the concrete check disagreed with the closed forms"
    assert problems(program, hi=4) == []


class _OneTooClose(closed_mod.Planner):
    """Broken: a loop-carried dependence is taken one iteration too recent."""

    def distance_of(self, ix, iy, first):
        d = super().distance_of(ix, iy, first)
        return d if not d else d - 1


class _NoLoopCarried(closed_mod.Planner):
    """Broken: only same-iteration dependences in the body."""

    def distance_of(self, ix, iy, first):
        d = super().distance_of(ix, iy, first)
        return d if d == 0 else None


@pytest.mark.parametrize("broken", [_OneTooClose, _NoLoopCarried])
def test_broken_closed_planners_are_caught(broken):
    """The brute-force comparison and the oracle catch each broken variant on the flat
    kernels, and so does the planner's own concrete check (which then leaves the program
    to the general planner instead of emitting it)."""
    caught = [path for path in FLAT if problems(parse_file(str(ROOT / path)), broken, reduce=False)]
    assert caught, f"{broken.__name__} passed every check"
    program = parse_file(str(ROOT / caught[0]))
    flat, thresholds, distance = raw_thresholds(program, broken)
    with pytest.raises(Disagreement):
        check_and_reduce(program, flat, thresholds, distance)


def test_broken_irredundancy_is_caught():
    """Dropping every wait the predecessor alone does not cover is caught by the oracle."""
    program = parse_file(str(ROOT / "kernels/pipeline_db.sync"))
    full = planned(program, reduce=False).entries
    broken = apply_plan(program, full[1:])  # one needed wait less
    assert oracle.verdict(broken, param_bounds(program, 3)) != oracle.BISIMILAR


def test_the_closed_stage_leaves_a_program_past_its_instance_budget_to_the_others():
    from algorithm.registry import sync_threshold
    from algorithm.threshold.options import PlannerOptions

    program = parse_file(str(ROOT / "kernels/pipeline_db.sync"))
    assert closed_mod.sync_closed(program, max_instances=5) is None
    small = sync_threshold(program, options=PlannerOptions(closed_instances=5))
    assert oracle.verdict(small.program, param_bounds(program, 3)) == oracle.BISIMILAR


def test_planner_options_need_the_general_stage_last():
    from algorithm.threshold.options import PlannerOptions

    with pytest.raises(ValueError):
        PlannerOptions(stages=("closed",))
    with pytest.raises(ValueError):
        PlannerOptions(stages=("closed", "fast", "general"))
