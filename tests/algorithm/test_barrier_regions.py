"""The barrier layout plans each region between its barriers as a program of its own
(algorithm/barrier.py). Held to the brute-force oracle (tests/support/oracle.py), which
shares nothing with the planner:

- every wait the layout keeps (in kernels without DMA queues) says, at every instance, exactly the count of its producer
  engine's instances since the last barrier up to the last one the instance depends on
  (0 or less where it depends on none since the barrier);
- the layout is sound (no early issue, no deadlock) on generated kernels;
- a region whose barrier loop may start below 0 is planned on its shifted index, and a
  region count that would read `iters()` of a loop nested in a repeated region gets a
  local barrier instead.

A layout whose waits are one too high, or that plans a region without its barrier
loop's lower bound, is caught.
"""

from __future__ import annotations

import attrs
import pytest
from hypothesis import HealthCheck, given, settings

from algorithm import regions as regions_mod
from algorithm.barrier import barrier_layout
from algorithm.registry import get_strategy
from semantics.ir import Barrier, BinOp, Const, For, Iters, Op, Program, Wait, map_ops, walk_stmts
from semantics.parser import parse, parse_file
from verify.search.generators import programs
from verify.search.rich import rich_programs

from tests.support.corpus import ALL_KERNELS, DATA_DIR, kernel_id
from tests.support.oracle import BISIMILAR, OVER_SYNCHRONIZED, all_valuations, dependences, unroll_program, verdict_at

REPRO = sorted((DATA_DIR / "repro").glob("*.sync"))
# The oracle runs an op on its own engine: kernels with DMA queues (`via Q`, whose
# transfers count on Q) are judged by the checkers instead (tests/algorithm/test_sync_outputs.py).
WITHOUT_QUEUES = [p for p in ALL_KERNELS + REPRO if not parse_file(str(p)).queues]


def valuations(program: Program, span: int = 2) -> list[dict]:
    return all_valuations(tuple((p.name, p.lower, p.lower + span) for p in program.params))


def region_mismatches(synced: Program, values: dict) -> list[str]:
    """Waits whose value differs from the region-minimal threshold, by brute force."""
    run = unroll_program(synced, values)
    deps = dependences(run)
    by_id = {inst.id: inst for inst in run.instances}
    out = []
    for y in run.instances:
        needed: dict[str, int] = {}
        for x in map(by_id.__getitem__, deps[y.id]):
            if x.segment == y.segment:
                needed[x.engine] = max(needed.get(x.engine, 0), x.seg_local + 1)
        for engine, value in y.waits:
            if max(value, 0) != needed.get(engine, 0):
                out.append(f"{y.op} at {dict(y.key)} waits {engine} >= {value}, needs {needed.get(engine, 0)}")
    return out


def sound(verdict: str) -> bool:
    return verdict in (BISIMILAR, OVER_SYNCHRONIZED)


@pytest.mark.parametrize("path", WITHOUT_QUEUES, ids=kernel_id)
def test_barrier_waits_count_exactly_since_the_region_start(path):
    program = parse_file(str(path))
    synced = get_strategy("barrier")(program).program
    for values in valuations(program)[:27]:
        assert not region_mismatches(synced, values), values


def test_every_op_is_in_one_region_and_no_region_holds_a_barrier():
    for path in ALL_KERNELS:
        program = parse_file(str(path))
        laid = get_strategy("barrier")(program).program.body
        seen = []
        for region in regions_mod.split_regions(laid):
            stmts = list(walk_stmts(region.body))
            assert not any(isinstance(s, Barrier) for s in stmts), path
            seen += [s.name for s in stmts if isinstance(s, Op)]
        names = [s.name for s in walk_stmts(laid) if isinstance(s, Op)]
        # an `if` with barriers lends its region only the parts of its branches before them
        assert sorted(seen) == sorted(names), path


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(programs(engines=(2, 3), max_depth=3, max_statements=4))
def test_barrier_layout_of_generated_kernels_is_sound_and_exact_per_region(program):
    synced = get_strategy("barrier")(program).program
    for values in valuations(program, 1)[:8]:
        assert sound(verdict_at(synced, values)), values
        assert not region_mismatches(synced, values), values


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(rich_programs(max_queues=0))
def test_barrier_layout_of_rich_kernels_is_sound_and_exact_per_region(program):
    # parameter lower bounds, triangular and min/max bounds, if/else on affine
    # conditions, ranges: regions under branches and loops that may start late
    synced = get_strategy("barrier")(program).program
    for values in valuations(program, 1)[:8]:
        assert sound(verdict_at(synced, values)), values
        assert not region_mismatches(synced, values), values


SHIFTED = """
engines A B
param N
for i in N - 3..N {
  A w writes x
  for j in 0..i {
    A p writes y[j]
  }
  B r reads x, y[i // 2]
  for k in i..N {
    A v writes z[k]
    B u reads z[k], y[k // 2]
  }
}
"""


def test_a_barrier_loop_that_may_start_below_zero_is_planned_on_its_shifted_index():
    program = parse(SHIFTED)
    synced = get_strategy("barrier")(program).program
    for values in valuations(program, 4):
        assert not region_mismatches(synced, values), values
        assert sound(verdict_at(synced, values)), values


def test_a_region_planned_without_its_loops_lower_bound_is_caught(monkeypatch):
    # The broken variant: the loop variable is taken as the offset from the lower bound
    # but never mapped back (as if every barrier loop started at 0).
    original = regions_mod.region_program

    def forgetful(program, region):
        found = original(program, region)
        return attrs.evolve(found, names={name: value.left if isinstance(value, BinOp) else value
                                          for name, value in found.names.items()})

    monkeypatch.setattr(regions_mod, "region_program", forgetful)
    program = parse(SHIFTED)
    synced = get_strategy("barrier")(program).program
    assert any(region_mismatches(synced, values) for values in valuations(program, 4))


def test_waits_one_too_high_are_caught(monkeypatch):
    from algorithm.threshold import pipeline

    original = pipeline.plan

    def greedy(program, options, stats):
        synced, fields = original(program, options, stats)
        raise_by_one = lambda op: attrs.evolve(op, waits=tuple(
            Wait(w.engine, BinOp("+", w.threshold, Const(1))) for w in op.waits))
        return attrs.evolve(synced, body=map_ops(synced.body, raise_by_one)), fields

    monkeypatch.setattr(pipeline, "plan", greedy)
    program = parse_file(str(next(p for p in ALL_KERNELS if p.stem == "pipeline_db")))
    synced = barrier_layout(program).program
    assert any(region_mismatches(synced, values) for values in valuations(program))


def test_a_region_count_that_reads_nested_iters_gets_a_local_barrier(monkeypatch):
    # Region counts read `iters(w)` only for loops nested in the region; in a region run
    # once per barrier-loop iteration, iters(w) would keep counting across runs. Such a
    # wait is replaced by a local barrier (sound), and the note says why.
    from algorithm.threshold import pipeline

    original = pipeline.plan

    def with_iters(program, options, stats):
        synced, fields = original(program, options, stats)
        loops = [s.var for s in walk_stmts(program.body) if isinstance(s, For)]
        if not loops:
            return synced, fields
        tracked = lambda op: attrs.evolve(op, waits=tuple(  # the innermost loop's count
            Wait(w.engine, BinOp("+", w.threshold, BinOp("*", Const(0), Iters(loops[-1])))) for w in op.waits))
        return attrs.evolve(synced, body=map_ops(synced.body, tracked)), fields

    monkeypatch.setattr(pipeline, "plan", with_iters)
    program = parse("""
engines A B
param N, M
for i in 0..N {
  A w writes x
  for j in 0..M {
    for k in 0..M {
      B r reads x writes y[k]
    }
  }
  A s reads y[0]
}
""")
    layout = barrier_layout(program)
    assert "s" in layout.local and any("iters()" in note for note in layout.notes)
    for values in valuations(program):
        assert sound(verdict_at(layout.program, values)), values


def test_the_barrier_layout_plans_regions_not_the_whole_program(monkeypatch):
    # ../shared/repro/barrier_slow_mod_k.sync took 9.5 s of CPU when the layout planned
    # the whole program with the general planner and subtracted each region's start; its
    # regions are small enough for milliseconds. No planned program may be the whole.
    import algorithm.threshold.pipeline as pipeline

    planned = []
    original = pipeline.plan

    def spy(program, *args, **kwargs):
        planned.append(len([s for s in walk_stmts(program.body) if isinstance(s, Op)]))
        return original(program, *args, **kwargs)

    monkeypatch.setattr(pipeline, "plan", spy)
    program = parse_file(str(DATA_DIR / "repro" / "barrier_slow_mod_k.sync"))
    result = get_strategy("barrier")(program)
    total = len([s for s in walk_stmts(program.body) if isinstance(s, Op)])
    assert result.stats.barriers == 4 and result.stats.local_barriers == 0
    assert planned and all(n < total for n in planned), planned


def test_regions_equal_up_to_names_are_planned_once(monkeypatch):
    # Two layers compiled to the same loop nest (other names, other latencies): their
    # regions share one plan, and each layer's waits are in its own names.
    calls = []
    original = regions_mod.plan_region
    monkeypatch.setattr(regions_mod, "plan_region", lambda region, options: calls.append(region.key)
                        or original(region, options))
    layer = """
for i{n} in 0..N {{
  A ld{n} writes x{n}[i{n} % 2] lat {lat}
  B mm{n} reads x{n}[i{n} % 2] writes y{n}
  A st{n} reads y{n}
}}"""
    program = parse("engines A B\nparam N\n" + layer.format(n=0, lat=4) + layer.format(n=1, lat=9))
    synced = get_strategy("barrier")(program).program
    assert len(calls) == len(set(calls)) == 1
    waits = {op.name: op.waits for op in walk_stmts(synced.body) if isinstance(op, Op)}
    assert [w.engine for w in waits["mm1"]] == ["A"] and [w.engine for w in waits["st1"]] == ["B"]
    for values in valuations(program):
        assert not region_mismatches(synced, values), values
