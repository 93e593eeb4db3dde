"""Range accesses `a[lo..hi]` (docs/design.md section 5): every element in the half-open
range; two accesses conflict when their element sets intersect; an empty range touches
nothing.

Referee style: the expected dependences and thresholds come from the independent
oracle (tests/support/oracle.py), which expands ranges to elements by brute force, and
generated programs with ranges (`programs(ranges=True)`) go through the sequential
meaning, the symbolic conflict test, the threshold strategy and the explicit checker.
The teeth tests show that the properties catch a range-blind conflict test.
"""

from __future__ import annotations

import itertools

import pytest
import z3
from hypothesis import HealthCheck, Phase, assume, event, find, given, note, settings
from hypothesis import strategies as st

import algorithm.threshold.plan as threshold_mod
from algorithm.registry import get_strategy
from algorithm.threshold import Unsupported
from semantics.ir import Access, Const, Range
from semantics.parser import parse
from semantics.printer import print_program
from semantics.sequential import requirements, unroll
from semantics.symbolic import conflicting_pairs, same_element
from verify.engines.explicit import InternalError, check
from verify.search.generators import param_bounds, programs, valuations
from verify.verdicts import CheckOptions, Verdict

from tests.support import oracle

HI = 2

CHUNKS = """\
engines ACT DVE
param K = 3
for k in 0..K {
  ACT part reads x[k] writes stats[k]
}
DVE aggr reads stats[0..K] writes mean
"""


def _waits_at(program, values):
    """(op, F, key) -> threshold value of every wait of the program, per instance."""
    run = oracle.unroll_program(program, values)
    return {(y.op, f, y.key): t for y in run.instances for f, t in y.waits}


def oracle_exactness_problems(program, plan, hi=HI):
    """Exact plan entries against the oracle's brute-force T_min over elements."""
    table = oracle.exact_table(program, param_bounds(program, hi))
    inexact = {(e.op, e.engine) for e in plan.entries if not e.exact}
    planned = threshold_mod.apply_plan(program, plan.entries)
    problems = []
    for values in oracle.all_valuations(param_bounds(program, hi)):
        got = {}
        for (op, f, key), t in _waits_at(planned, values).items():
            got[(op, f, key)] = max(got.get((op, f, key), 0), max(0, t))
        for (op, f), entries in table.items():
            if (op, f) in inexact:
                continue
            for key, need in entries.items():
                if key[: len(program.params)] != tuple(values.items()):
                    continue
                if got.get((op, f, key), 0) != need:
                    problems.append(f"{op} wait {f} at {key}: {got.get((op, f, key), 0)}, oracle T_min {need}")
    return problems


# ------------------------------------------------------------------ language


def test_range_access_round_trips_through_the_printer():
    program = parse(CHUNKS + "for j in 0..K {\n  ACT more reads y[j % 2..j + 1, 0..2 * K], z[if j > 0 then 1 else 0..j]\n}\n")
    text = print_program(program)
    assert parse(text) == program
    assert "stats[0..K]" in text and "y[j % 2..j + 1, 0..2 * K]" in text


def test_a_range_stands_for_every_element_and_an_empty_one_for_none():
    program = parse("engines A B\nparam N\nA w writes a[1..N, 0..2]\nB r reads a[N..N]\n")
    (w, r) = unroll(program, {"N": 3}).instances
    assert sorted(e for e, _ in w.accesses) == [("a", 1, 0), ("a", 1, 1), ("a", 2, 0), ("a", 2, 1)]
    assert r.accesses == ()


def test_partial_chunk_writes_then_one_whole_read_waits_for_the_last_chunk():
    program = parse(CHUNKS)
    out = get_strategy("threshold")(program).program
    assert "wait ACT >= K" in print_program(out)
    assert check(out, param_bounds(out, 3)).verdict == Verdict.BISIMILAR


# ---------------------------------------------------- symbolic vs brute force

_BOUND = st.integers(-1, 4)


@given(st.lists(st.one_of(_BOUND.map(Const), st.tuples(_BOUND, _BOUND)), min_size=1, max_size=2),
       st.lists(st.one_of(_BOUND.map(Const), st.tuples(_BOUND, _BOUND)), min_size=2, max_size=2))
def test_symbolic_overlap_is_element_set_intersection(left, right):
    right = right[: len(left)]
    make = lambda xs: Access("a", tuple(Range(Const(x[0]), Const(x[1])) if isinstance(x, tuple) else x for x in xs))
    a, b = make(left), make(right)
    elements = lambda acc: set(itertools.product(*[
        range(i.lo.value, i.hi.value) if isinstance(i, Range) else [i.value] for i in acc.indices]))
    expected = bool(elements(a) & elements(b))
    assert z3.simplify(same_element(a, {}, b, {})) == z3.BoolVal(expected)


# ------------------------------------------------- generated programs, oracle


@settings(max_examples=60, deadline=None)
@given(programs(ranges=True), st.data())
def test_requirements_with_ranges_equal_the_oracle_minimum(program, data):
    values = data.draw(valuations(program, HI))
    run = oracle.unroll_program(program, values)
    unrolled = unroll(program, values)
    assert [dict(i.accesses).keys() for i in unrolled.instances] == [i.reads | i.writes for i in run.instances]
    table = oracle.exact_table(program, tuple((k, v, v) for k, v in values.items()))
    for y, need in zip(unrolled.instances, requirements(unrolled)):
        key = tuple(values.items()) + y.env
        for f, engine in enumerate(program.engines):
            if engine != y.op.engine:
                assert need[f] == table[(y.op.name, engine)][key], (y.describe(), engine)


def threshold_referee_property(program, plan_fn=threshold_mod.plan_thresholds):
    note(print_program(program))
    try:
        plan = plan_fn(program)
    except Unsupported as err:
        event(f"planner refused: {err}")
        assume(False)
    problems = oracle_exactness_problems(program, plan)
    assert not problems, "\n".join(problems[:5])
    out = threshold_mod.apply_plan(program, plan.entries)
    exact = all(e.exact for e in plan.entries)
    event("plan exact" if exact else "plan conservative")
    result = check(out, param_bounds(program, HI), CheckOptions(property="bisimulation" if exact else "soundness"))
    assert result.holds, f"{result.verdict.value}: {result.witness and result.witness.explanation}"


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(programs(engines=(2, 4), ranges=True))
def test_threshold_with_ranges_is_exact_or_conservative_and_sound(program):
    threshold_referee_property(program)


@pytest.mark.parametrize("strategy", ["barrier", "flags", "tokens"])  # snax-barrier reproduces SNAX's gaps: unsound by design
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(program=programs(engines=(2, 3), ranges=True))
def test_other_strategies_with_ranges_are_sound(strategy, program):
    note(print_program(program))
    out = get_strategy(strategy)(program).program
    result = check(out, param_bounds(program, HI), CheckOptions(property="soundness"))
    assert result.holds, f"{result.verdict.value}: {result.witness and result.witness.explanation}"


# ------------------------------------------------------------------ teeth


def _points_only(x, y):
    """A range-blind conflict test: pairs whose indices are all points."""
    return [(ax, ay) for ax, ay in conflicting_pairs(x, y)
            if not any(isinstance(i, Range) for i in ax.indices + ay.indices)]


def test_teeth_threshold_referee_catches_a_range_blind_planner():
    broken = lambda p: threshold_mod.plan_thresholds(p, _points_only)  # noqa: E731

    def fails(program):
        try:
            threshold_referee_property(program, broken)
        except AssertionError:
            return True
        except Exception:  # noqa: BLE001 (hypothesis's assume inside find)
            return False
        return False

    found = find(programs(engines=(2, 2), ranges=True), fails,
                 settings=settings(max_examples=300, database=None, deadline=None, phases=(Phase.explicit, Phase.generate)))
    assert any(isinstance(i, Range) for line in [found] for i in _all_indices(found))


def _all_indices(program):
    from semantics.ir import ops
    return [i for op in ops(program) for a in op.reads + op.writes for i in a.indices]


# ------------------------------------------------------ the two checkers agree


def engines_agree_property(program):
    from verify.engines import z3_check

    note(print_program(program))
    bounds = param_bounds(program, HI)
    expected = check(program, bounds)
    result = z3_check.check(program, bounds, z3_check.Z3Options())
    assert result.verdict != Verdict.UNKNOWN, result.reason
    assert (result.verdict, result.holds) == (expected.verdict, expected.holds)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(synced=True, ranges=True))
def test_engines_agree_on_generated_programs_with_ranges(program):
    engines_agree_property(program)


def test_teeth_engine_agreement_catches_a_range_blind_z3_encoding(monkeypatch):
    import semantics.symbolic as symbolic
    from verify.engines import z3_potential as zp  # the potential program's dependence (was in z3_machines)

    def range_blind(x, x_env, y, y_env):
        terms = [symbolic.same_element(ax, x_env, ay, y_env) for ax, ay in _points_only(x, y)]
        return z3.Or(*terms) if terms else z3.BoolVal(False)

    monkeypatch.setattr(zp, "conflict", range_blind)

    def fails(program):
        # A disagreement, or the z3 engine's replay of its own witness catching the
        # encoding. Not `unknown`: that depends on the wall clock (a query past its time
        # limit under load), which made the search flaky.
        from verify.engines import z3_check

        bounds = param_bounds(program, HI)
        expected = check(program, bounds)
        try:
            result = z3_check.check(program, bounds, z3_check.Z3Options())
        except InternalError:
            return True
        return result.verdict != Verdict.UNKNOWN and (result.verdict, result.holds) != (expected.verdict, expected.holds)

    # Not find(): it replays the example it found, and whether the broken encoding shows
    # on one program depends on which model Z3 returns (a spurious state raises
    # InternalError, a genuine one agrees), which depends on what Z3 did before: the
    # replay disagreed with the first run in two suite runs (FlakyFailure). The first
    # example caught is kept instead.
    caught = []

    @settings(max_examples=300, database=None, deadline=None, phases=(Phase.generate,),
              suppress_health_check=list(HealthCheck))
    @given(programs(synced=True, engines=(2, 2), ranges=True))
    def search(program):
        if not caught and fails(program):
            caught.append(program)

    search()
    assert caught, "the agreement property never caught the range-blind encoding"
    assert any(isinstance(i, Range) for i in _all_indices(caught[0]))


# ------------------------------------------------------------ MLIR subviews

SUBVIEWS = """
func.func @k(%A : memref<64xi32>, %B : memref<16xi32>, %C : memref<64xi32>) {
  %a = memref.alloc() : memref<16xi32>
  %lo = memref.subview %A[0] [16] [1] : memref<64xi32> to memref<16xi32, strided<[1]>>
  %hi = memref.subview %A[OFFSET] [16] [1] : memref<64xi32> to memref<16xi32, strided<[1], offset: ?>>
  "memref.copy"(%B, %lo) : (memref<16xi32>, memref<16xi32, strided<[1]>>) -> ()
  linalg.generic {indexing_maps = [affine_map<(n) -> (n)>, affine_map<(n) -> (n)>], iterator_types = ["parallel"]} ins(%hi : memref<16xi32, strided<[1], offset: ?>>) outs(%a : memref<16xi32>) {
  ^bb0(%x : i32, %z : i32):
    linalg.yield %x : i32
  }
  "memref.copy"(%A, %C) : (memref<64xi32>, memref<64xi32>) -> ()
  func.return
}
"""


@pytest.mark.parametrize("offset, overlaps", [(16, False), (8, True), (0, True)])
def test_subviews_are_ranges_that_conflict_only_when_they_overlap(offset, overlaps):
    from semantics.mlir.importer import import_text

    program = import_text(SUBVIEWS.replace("OFFSET", str(offset)), "k.mlir")[0].program
    text = print_program(program)
    assert "writes A[0..16]" in text and f"reads A[{offset}..{offset + 16}]" in text
    assert "reads A[0..64]" in text  # the whole buffer, as a full-extent range
    out = get_strategy("threshold")(program).program
    generic = next(op for op in out.body if getattr(op, "engine", None) == "COMPUTE")
    assert bool(generic.waits) == overlaps, print_program(out)
    assert check(out, ()).verdict == Verdict.BISIMILAR
