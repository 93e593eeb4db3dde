"""The nest stage (algorithm/threshold/nest.py) on loop nests: every threshold
it plans is the brute-force T_min at every instance, the output it returns is bisimilar
per the independent oracle, and broken variants of its counts are caught. Expected values
come from the definition (tests/support), never from the planner."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from algorithm.registry import get_strategy
from algorithm.threshold import nest as nest_mod
from algorithm.threshold.options import PlannerOptions
from algorithm.threshold.plan import apply_plan
from algorithm.threshold.reasoning import minus, plus
from semantics.ir import Var
from semantics.errors import Unsupported
from semantics.parser import parse, parse_file
from syncproof import load
from verify.search.generators import param_bounds

from tests.support import oracle
from tests.support.corpus import ROOT
from tests.support.nest_plans import every_threshold, problems

TAKEN = ["kernels/suite/tiled_matmul.sync", "kernels/suite/conv2d_implicit_gemm.sync", "kernels/nested_dynamic.sync",
         "kernels/tile_transpose_2d.sync", "kernels/suite/swiglu_mlp.sync", "kernels/suite/matmul_dynamic_k.sync",
         "tests/data/threshold_cases/six_engines_chain.sync", "tests/data/threshold_cases/zero_trip_sequence.sync",
         "kernels/suite/layernorm.sync", "kernels/triangular_attention.sync",
         "tests/data/threshold_cases/triple_triangle_total.sync"]
# With `if` guards over one loop index (`c % 2 == 0`, `r + 1 < RT`, `i < S`), over an index
# and enclosing ones (`j == i`), or over the parameters; SNAX kernels with ranges over loop indices that no cross-engine pair compares.
GUARDED = ["kernels/suite/rmsnorm.sync", "kernels/suite/long_row_reduce.sync", "kernels/if_else_split.sync",
           "kernels/design_example.sync", "kernels/snax/tiled_add_prefetch.mlir", "kernels/snax/tiled_add_db.mlir",
           "tests/data/threshold_cases/guarded_writer.sync", "tests/data/threshold_cases/barrier_loop_in_branch.sync",
           "tests/data/threshold_cases/else_pins_lower_end.sync", "tests/data/threshold_cases/top_level_if.sync",
           "tests/data/threshold_cases/guarded_masking.sync", "kernels/suite/attention_cte_query_outer.sync"]
# With slots `% (D + 1)`: a period over the parameters (at least 1 for every valuation).
PERIOD_OVER_PARAMETERS = ["kernels/ring_buffer.sync", "kernels/bugs/ring_off_by_one.sync",
                          "tests/data/threshold_cases/ring_prefetch_runtime_depth.sync"]
# Indexed by the position of an iteration in a rectangular pair of loops (`(m * NT + n) % 2`).
FLATTENED = ["tests/data/threshold_cases/flat_index_double_buffer.sync", "tests/data/repro/gemm_psum_if.sync"]
# Causal guards (`i >= 2 * j`: an inner range that is empty from some outer index on, so an
# earlier outer iteration's latest instance lies at a cap), and ranges over the index of a
# small constant loop (`s[r * H..(r + 1) * H]` for r in 0..2).
CAUSAL = ["tests/data/nest/causal_cap.sync", "tests/data/threshold_cases/causal_guard_outer_tile.sync",
          "tests/data/threshold_cases/symbolic_coefficient_range.sync"]
# A periodic slot against a plain index (`a[i % 2]` against `a[k]`): one case per value.
PERIODIC_AGAINST_POINT = ["tests/data/nest/periodic_against_point.sync"]
# Two producers of one level whose order depends on the point (`A and B` first).
TIED = ["tests/data/nest/tied_producers.sync"]
# Regressions: bugs the stage had, each a kernel of its own.
REGRESSIONS = ["tests/data/nest/empty_range_writer.sync", "tests/data/nest/causal_guard_range_bound.sync"]
# Taken too, with more parameters than brute force affords here (their outputs are judged
# by tests/algorithm/test_sync_outputs.py: bisimilar over the bounds, proved for all values).
TAKEN_LARGE = ["kernels/suite/matmul_fully_optimized.sync", "kernels/suite/flash_attention_causal.sync"]


@pytest.mark.parametrize("path", TAKEN + GUARDED + PERIOD_OVER_PARAMETERS + FLATTENED + CAUSAL + PERIODIC_AGAINST_POINT
                         + TIED + REGRESSIONS)
def test_kernels_in_the_nest_class_are_planned_exactly(path):
    program = load(str(ROOT / path))
    entries, _, _ = nest_mod.sync_nest(program, PlannerOptions())
    assert problems(program) == []
    assert oracle.verdict(apply_plan(program, entries), param_bounds(program, 3)) == oracle.BISIMILAR


@pytest.mark.parametrize("path", TAKEN_LARGE)
def test_larger_kernels_are_taken_by_the_nest_stage(path):
    program = parse_file(str(ROOT / path))
    entries, _, _ = nest_mod.sync_nest(program, PlannerOptions())
    assert oracle.verdict(apply_plan(program, entries), param_bounds(program, 1)) == oracle.BISIMILAR


def test_the_strategy_takes_the_nest_stage_and_asks_no_solver(monkeypatch):
    """tiled_matmul is planned by the nest stage: the general stage is never entered."""
    import algorithm.threshold.pipeline as pipeline

    def refuse(*_):
        raise AssertionError("the general stage ran")

    monkeypatch.setitem(pipeline.STAGES, "general", refuse)
    result = get_strategy("threshold")(parse_file(str(ROOT / "kernels/suite/tiled_matmul.sync")))
    assert result.stats.waits == 8 and not result.stats.conservative


def test_the_stage_reports_progress_and_can_be_stopped_at_each_op(monkeypatch):
    """Like the general stage, the nest stage passes the pipeline's checkpoint before each
    op (progress lines, and `--timeout`'s LimitReached raised from it)."""
    import algorithm.threshold.pipeline as pipeline

    seen = []
    monkeypatch.setattr(pipeline, "checkpoint", [seen.append])
    program = parse_file(str(ROOT / "kernels/suite/tiled_matmul.sync"))
    nest_mod.plan_nest(program)
    assert [s for s in seen if s.startswith("threshold stage 'nest', op")] == [
        f"threshold stage 'nest', op {name} ({n}/5)" for n, name in enumerate(["ld_lhsT", "ld_rhs", "mm", "evac", "store"], 1)]

    class Stop(Exception):
        pass

    def stop(where):
        if "op mm" in where:
            raise Stop(where)

    monkeypatch.setattr(pipeline, "checkpoint", [stop])
    with pytest.raises(Stop):
        nest_mod.plan_nest(program)


def test_programs_outside_the_class_are_left_to_the_later_stages():
    for path in ["tests/data/threshold_cases/scaled_index.sync",
                 "kernels/dma_trigger.sync", "tests/data/threshold_cases/disjunctive_guard.sync",
                 "kernels/suite/transpose_parity_evac.sync"]:
        with pytest.raises(Unsupported):
            nest_mod.plan_nest(load(str(ROOT / path)))


def test_a_bound_with_min_over_an_enclosing_index_is_in_the_class():
    """A triangular bound `min(i, M)` (the class check once raised AttributeError on its
    atom): planned by the stage, exactly."""
    program = parse_file(str(ROOT / "tests/data/threshold_cases/clamped_triangular.sync"))
    nest_mod.check_nest(program)
    assert nest_mod.sync_nest(program, PlannerOptions()) is not None
    assert problems(program, hi=4) == []


def test_a_period_over_parameters_that_may_be_below_one_is_left_to_the_later_stages():
    """`i % (D - 1)` divides by 0 at D = 1 (and floors toward a negative period below):
    only a period at least 1 for every valuation is in the class."""
    text = "engines A B\nparam N, D >= {}\nfor i in 0..N {{\n  A w writes a[i % (D - 1)]\n  B r reads a[i % (D - 1)]\n}}\n"
    with pytest.raises(Unsupported):
        nest_mod.check_nest(parse(text.format(0)))
    program = parse(text.format(2))
    nest_mod.check_nest(program)
    assert problems(program) == []


def test_a_flattened_position_one_iteration_off_is_caught(monkeypatch):
    """Teeth for the flattened kernels above: a gap built at the position before the
    latest instance's is a wrong threshold."""
    from algorithm.threshold import nest_candidates
    from semantics.ir import Const

    real = nest_candidates.rejoined
    monkeypatch.setattr(nest_candidates, "rejoined", lambda gap, width, value: real(gap, width, minus(value, Const(1))))
    assert all(problems(load(str(ROOT / path))) for path in FLATTENED)


def test_a_cap_one_past_the_last_outer_iteration_with_instances_is_caught(monkeypatch):
    """Teeth for the causal kernels: an outer index capped one iteration later than the
    last whose inner range holds an instance is a wrong threshold."""
    from algorithm.threshold import nest_candidates
    from semantics.ir import Const

    real = nest_candidates.Nest._caps
    monkeypatch.setattr(nest_candidates.Nest, "_caps", lambda *a: [(plus(cap, Const(1)), holds) for cap, holds in real(*a)])
    assert problems(load(str(ROOT / "tests/data/nest/causal_cap.sync")))


class _EveryResidueAtTheCap(nest_mod.Nest):
    """The stage with a periodic index at a cap always taken one way per residue."""

    split_at_cap = property(lambda self: True, lambda self, value: None)


@pytest.mark.parametrize("path", ["tests/data/nest/causal_cap.sync", "tests/data/threshold_cases/causal_guard_outer_tile.sync"])
@pytest.mark.parametrize("counts", [None, _EveryResidueAtTheCap], ids=["cheaper", "per-residue"])
def test_a_periodic_index_at_a_cap_is_exact_either_way(path, counts):
    """`k[j % 2]` at the causal cap: `cap - (cap - j) % 2`, or one piece per residue of
    `cap - j` (the stage keeps the cheaper); both are the brute-force thresholds."""
    assert problems(load(str(ROOT / path)), counts=counts) == []


def test_a_range_bounding_the_inner_index_of_a_flattened_pair_is_left_to_the_later_stages():
    """Regression: the bound a range put on a flattened pair's inner index was dropped
    with that index (the pair is one index): an exact-looking wait A >= 2 where T_min is
    0. Such a program leaves the class."""
    program = load(str(ROOT / "tests/data/nest/range_on_flattened_inner.sync"))
    with pytest.raises(Unsupported):
        nest_mod.plan_nest(program)


def test_a_periodic_slot_against_a_plain_index_with_a_case_missing_is_caught(monkeypatch):
    """Teeth for PERIODIC_AGAINST_POINT: only the first value's case (`k == 0`) leaves the
    reader of `a[1]` without its wait."""
    from algorithm.threshold import nest_candidates

    real = nest_candidates.equation

    def first_case(*args):
        found = real(*args)
        return ("cases", found[1][:1]) if isinstance(found, tuple) and found[0] == "cases" else found

    monkeypatch.setattr(nest_candidates, "equation", first_case)
    assert problems(load(str(ROOT / PERIODIC_AGAINST_POINT[0])))


def test_tied_producers_waiting_for_the_earlier_of_the_two_is_caught(monkeypatch):
    """Teeth for TIED: where both producers' instances exist, the later one (the smaller
    gap) is the last conflicting one; the larger gap is a wait too short."""
    import attrs
    from semantics.ir import Max

    from algorithm.threshold import nest_order

    real = nest_order._both

    def earlier(cands, domain, lowers):
        out, apart = real(cands, domain, lowers)
        return [attrs.evolve(c, gap=Max(c.gap.left, c.gap.right)) if c not in cands else c for c in out], apart

    monkeypatch.setattr(nest_order, "_both", earlier)
    assert problems(load(str(ROOT / TIED[0])))


def test_a_sum_split_one_iteration_off_is_caught(monkeypatch):
    """Teeth for the sums over a causal range: the then-part of a split sum one iteration
    too long is a wrong count."""
    from algorithm.threshold import nest_counts
    from semantics.ir import BinOp, Const, Max, Min

    real = nest_counts._summed

    def shifted(body, start, stop, facts=()):
        if isinstance(stop, (Min, Max)) or isinstance(start, (Min, Max)):  # (a part of a split sum)
            stop = BinOp("+", stop, Const(1)) if isinstance(stop, (Min, Max)) else stop
        return real(body, start, stop, facts)

    monkeypatch.setattr(nest_counts, "_summed", shifted)
    assert problems(load(str(ROOT / "tests/data/nest/causal_cap.sync")))


IN_ORDER = ["kernels/suite/tiled_matmul.sync", "kernels/suite/swiglu_mlp.sync", "tests/data/repro/gemm_psum_if.sync"]


def _every_wait_to_the_proofs(monkeypatch):
    import importlib

    irredundant = importlib.import_module("algorithm.threshold.irredundant")
    monkeypatch.setattr(irredundant, "shown_necessary", lambda *_: set())


@pytest.mark.parametrize("path", IN_ORDER)
def test_in_order_sources_from_the_stage_drop_only_redundant_waits(monkeypatch, path):
    """The redundancy proofs take the in-order sources (earlier instances on y's engine)
    from the stage's candidates, and what an instance's completion guarantees of its own
    engine from the stage's counts; with no wait shown needed by a run first, every wait
    goes to the proofs, and the output is still bisimilar."""
    _every_wait_to_the_proofs(monkeypatch)
    program = load(str(ROOT / path))
    entries, _, _ = nest_mod.sync_nest(program, PlannerOptions())
    assert oracle.verdict(apply_plan(program, entries), param_bounds(program, 2)) == oracle.BISIMILAR


def test_teeth_an_in_order_source_that_has_not_completed_is_caught(monkeypatch):
    """Broken: y's own current instance given as completed before it (so every
    requirement of y looks implied): the test above fails on its kernels."""
    from algorithm.threshold.irredundant import Source
    from algorithm.threshold.reasoning import TRUE

    _every_wait_to_the_proofs(monkeypatch)
    monkeypatch.setattr(nest_mod, "in_order_sources", lambda nest, y, same, tops: [
        Source(y, TRUE, {l.var: Var(l.var) for l in y.loops}, None)])
    for path in IN_ORDER:
        program = load(str(ROOT / path))
        entries, _, _ = nest_mod.sync_nest(program, PlannerOptions())
        assert oracle.verdict(apply_plan(program, entries), param_bounds(program, 2)) != oracle.BISIMILAR, path


def test_teeth_an_instance_counted_as_completed_too_early_is_caught(monkeypatch):
    """Broken: an op's own engine counted one instance further than it has completed
    (what the redundancy proofs take z's completion to guarantee)."""
    from algorithm.threshold.reasoning import plus
    from semantics.ir import Const

    _every_wait_to_the_proofs(monkeypatch)
    real = nest_mod.completed_before
    monkeypatch.setattr(nest_mod, "completed_before", lambda nest, z, engine: plus(real(nest, z, engine), Const(1)))
    caught = []
    for path in IN_ORDER:
        program = load(str(ROOT / path))
        entries, _, _ = nest_mod.sync_nest(program, PlannerOptions())
        caught.append(oracle.verdict(apply_plan(program, entries), param_bounds(program, 2)) != oracle.BISIMILAR)
    assert any(caught)


def test_an_op_that_never_runs_keeps_no_wait():
    """Regression (tests/data/nest/never_run_reader.sync): the reader under a guard no
    valuation satisfies kept its wait; only the reader after the loop waits. The dead
    code pass takes the reader out first; the nest stage's redundancy proofs alone drop
    its wait too (a guard bounds cannot refute reaches them)."""
    from semantics.ir import Op, walk_stmts
    from algorithm.threshold.options import PlannerOptions

    program = load(str(ROOT / "tests/data/nest/never_run_reader.sync"))
    result = get_strategy("threshold")(program)
    waits = {op.name: op.waits for op in walk_stmts(result.program.body) if isinstance(op, Op)}
    assert result.stats.waits == 1 and waits["last"] and not waits["r"]
    entries, _, dropped = nest_mod.sync_nest(program, PlannerOptions())
    assert [e.op for e in entries] == ["last"] and dropped == 1


# ---------------------------------------------------------------- generated nests

ENGINES = ["E0", "E1", "E2"]
OUTER = ["i % 2", "(i + 1) % 2", "i", "0", "1", "0..2", "0..M", None, "(i + N) % 2", "i % (M + 1)", "1..M"]
INNER = ["j % 2", "(j + 1) % 2", "j", "0", "0..M", None, "(j + M) % 2", "(i + j) % 2", "(j + 1) % (N + 1)",
         "(i * M + j) % 2", "i * M + j"]
OUTER_GUARDS = ["i % 2 == 0", "i == 0", "i >= 1", "i + 1 < N", "i < M", "N > 1", "i % (M + 1) == M"]
INNER_GUARDS = ["j % 2 == 1", "j == 0", "j >= 1", "j + 1 < M", "i % 2 == 0", "j == i", "j < i", "j >= i", "j >= 2 * i",
                "2 * i + 1 > j", "j % (M + 1) == 0", "(j + 1) % (N + 1) == N", "j % (M + 1) != 0", "j % (M + 1) < 1",
                "j % (M + 1) >= M", "j % (N + 1) != N"]


@st.composite
def nests(draw):
    """Two-deep nests, rectangular or triangular (`0..i`: empty at i = 0), the outer one
    from 0 or 1 (`1..N`: empty at N <= 1), the inner one from 0 or M: ops before, inside and after the inner
    loop, and after the nest, some under an `if` (with or without `else`; periods over
    the parameters among the guards, however written: `j % (M + 1) == 0`, `j % (M + 1) <
    1`); inner bounds clamped too (`0..min(i + 1, M)`); indices over one loop index, or
    with a parameter or the outer index beside it."""
    engines = ENGINES[:draw(st.integers(2, 3))]
    buffers = ["a", "b"]
    lines = ["engines " + " ".join(engines), f"param N >= {draw(st.integers(0, 1))}",
             f"param M >= {draw(st.integers(0, 1))}"]
    count = [0]

    def guarded(indent, indices, guards):
        """An op, or an `if` on one loop index (or the parameters) with an op in each
        branch (the `else` one optional)."""
        if not draw(st.booleans()):
            return op(indent, indices)
        text = f"{indent}if {draw(st.sampled_from(guards))} {{\n{op(indent + '  ', indices)}\n{indent}}}"
        if draw(st.booleans()):
            text += f" else {{\n{op(indent + '  ', indices)}\n{indent}}}"
        return text

    def op(indent, indices):
        count[0] += 1
        def access():
            index = draw(st.sampled_from(indices))
            return draw(st.sampled_from(buffers)) + ("[0]" if index is None else f"[{index}]")
        reads = draw(st.lists(st.builds(access), max_size=2))
        writes = draw(st.lists(st.builds(access), min_size=0 if reads else 1, max_size=1))
        text = f"{indent}{draw(st.sampled_from(engines))} o{count[0]}"
        text += (" reads " + ", ".join(reads)) if reads else ""
        text += (" writes " + ", ".join(writes)) if writes else ""
        return text

    lines.append(f"for i in {draw(st.sampled_from(['0', '1']))}..N {{")
    lines += [guarded("  ", OUTER, OUTER_GUARDS) for _ in range(draw(st.integers(0, 2)))]
    lines.append(f"  for j in {draw(st.sampled_from(['0..M', '0..i + 1', '0..M + i', '0..i', 'M..M + i + 1', '0..min(i + 1, M)', '0..max(i, M)']))} {{")
    lines += [guarded("    ", OUTER + INNER, INNER_GUARDS) for _ in range(draw(st.integers(1, 3)))]
    lines.append("  }")
    lines += [guarded("  ", OUTER, OUTER_GUARDS) for _ in range(draw(st.integers(0, 2)))]
    lines.append("}")
    lines += [op("", ["0", "1", "0..M", "0..2", None]) for _ in range(draw(st.integers(0, 1)))]
    return parse("\n".join(lines) + "\n")


@settings(max_examples=60, deadline=None)
@given(program=nests())
def test_generated_nests_are_planned_exactly(program):
    """Every threshold is T_min, also written in closed form (no `count(F)` register: the
    sums themselves); the stage's output (after irredundancy) is bisimilar."""
    from algorithm.threshold.plan import Plan, PlanEntry
    from tests.support.exactness import exactness_problems

    try:
        every_threshold(program)
    except Unsupported:
        return  # outside the class: the general planner's tests cover it
    assert problems(program, hi=3) == []
    closed, _ = nest_mod.plan_nest(program, count_registers=False)
    assert exactness_problems(program, Plan([PlanEntry(op, engine, t, True) for op, engine, t, *_ in closed]), hi=3) == []
    entries, _, _ = nest_mod.sync_nest(program, PlannerOptions())
    assert oracle.verdict(apply_plan(program, entries), param_bounds(program, 3)) == oracle.BISIMILAR


RANGES = ["r * (M // 2)..(r + 1) * (M // 2)", "r..r + 1", "2 * r..2 * r + 2", "0..M", "r * M..r * M + M"]


@st.composite
def small_loop_ranges(draw):
    """A writer of points under a causal guard (or none), a loop of 2 or 3 iterations
    whose op reads and writes ranges over its index, and a reader of points or ranges."""
    engines = ENGINES[:draw(st.integers(2, 3))]
    engine = lambda: draw(st.sampled_from(engines))  # noqa: E731
    buffer = lambda: draw(st.sampled_from(["p", "q"]))  # noqa: E731
    guard = draw(st.sampled_from([None, "j >= 2 * i", "j >= i", "i >= 1"]))
    point = draw(st.sampled_from(["j", "j % 2", "0", "1", "i % 2"]))
    writer = f"{engine()} w writes {buffer()}[{point}]"
    lines = ["engines " + " ".join(engines), f"param N >= {draw(st.integers(0, 1))}",
             f"param M >= {draw(st.integers(0, 2))}", "for i in 0..N {", "  for j in 0..M {",
             f"    if {guard} {{\n      {writer}\n    }}" if guard else f"    {writer}", "  }",
             f"  for r in 0..{draw(st.sampled_from([2, 3]))} {{",
             f"    {engine()} x reads {buffer()}[{draw(st.sampled_from(RANGES))}] writes {buffer()}[{draw(st.sampled_from(RANGES))}]",
             "  }", "  for k in 0..M {",
             f"    {engine()} y reads {buffer()}[{draw(st.sampled_from(['k', 'k % 2', '0..M', '0..2']))}]", "  }", "}"]
    return parse("\n".join(lines) + "\n")


@settings(max_examples=60, deadline=None)
@given(program=small_loop_ranges())
def test_generated_ranges_over_a_small_loop_are_planned_exactly(program):
    """Ranges over a small loop's index taken one value at a time, and ranges that bound a
    free point index, beside causal guards: every threshold is T_min (1,500 draws of this
    generator found the cap ignoring a range's bound: tests/data/nest/causal_guard_range_bound.sync)."""
    try:
        every_threshold(program)
    except Unsupported:
        return
    assert problems(program, hi=3) == []


class _OneIterationLess(nest_mod.Nest):
    """Broken: an earlier iteration counts one loop body of instances less."""

    def before(self, stmts, steps, env, engine):
        out = super().before(stmts, steps, env, engine)
        step = steps[0]
        if hasattr(step.stmt, "var") and step.stmt.var in env and env[step.stmt.var] != Var(step.stmt.var):
            out = minus(out, self.instances(step.stmt.body, engine))
        return out


class _NoOuterLevels(nest_mod.Nest):
    """Broken: only the innermost common loop's earlier iterations are candidates."""

    def candidates(self, x, y, pair, engine):
        return super().candidates(x, y, pair, engine)[:2]


class _GuardIgnoredInCounts(nest_mod.Nest):
    """Broken: an `if` counts its `then` branch's instances in every iteration."""

    def instances(self, stmts, engine):
        from semantics.ir import If

        out = super().instances(stmts, engine)
        for stmt in stmts:
            if isinstance(stmt, If):
                out = minus(out, minus(super().instances(stmt.else_, engine), super().instances(stmt.then, engine)))
        return out


class _GuardIgnoredInCandidates(nest_mod.Nest):
    """Broken: a producer's guards are ignored when its latest instance is chosen."""

    def __init__(self, *args):
        super().__init__(*args)
        self.guards = {name: [] for name in self.guards}


@pytest.mark.parametrize("broken", [_OneIterationLess, _NoOuterLevels, _GuardIgnoredInCounts, _GuardIgnoredInCandidates])
def test_broken_nest_counts_are_caught(broken):
    def wrong(path) -> bool:
        try:
            return bool(problems(load(str(ROOT / path)), broken))
        except (Unsupported, KeyError):
            return False  # (declining, or a broken count that cannot be built, is not a wrong threshold)

    caught = [path for path in TAKEN + GUARDED if wrong(path)]
    assert caught, f"{broken.__name__} passed every check"


def _failed_parity_facts():
    """Facts where `m % 2 == i % 2` failed (written `!=`, which bounds do not read) and
    the latest earlier index of parity m % 2, `i - 1 - (i - 1 - m) % 2`, is below 0."""
    from semantics.ir import BinOp, Compare, Const, Var

    i, m = Var("i"), Var("m")
    return [Compare(">=", i, Const(0)), Compare(">=", m, Const(0)),
            Compare(">=", BinOp("%", BinOp("-", BinOp("-", i, Const(1)), m), Const(2)), i),
            Compare("!=", BinOp("%", m, Const(2)), BinOp("%", i, Const(2)))], i


def test_a_failed_parity_equation_is_read_one_residue_class_at_a_time():
    """`(i - 1 - m) % 2` is 0 where `m % 2 != i % 2`: with the fact, i <= 0 follows (each
    class of i and m mod 2); without it, it does not. (tests/data/threshold_cases/
    dead_code.sync: `v`'s wait drops the condition where its count is 0.)"""
    from semantics.ir import BinOp, Compare, Const
    from algorithm.threshold.reasoning import proves

    facts, i = _failed_parity_facts()
    claim = Compare("<=", BinOp("*", Const(2), i), Const(0))
    assert proves(facts, claim) and not proves(facts[:-1], claim)


def test_the_residue_classes_of_a_failed_parity_equation_are_needed(monkeypatch):
    """Teeth: without the split by residue classes the claim is not proved."""
    from semantics.ir import BinOp, Compare, Const
    from algorithm.threshold import reasoning

    monkeypatch.setattr(reasoning, "by_residues", lambda conds, claim: False)
    facts, i = _failed_parity_facts()
    assert not reasoning.proves(facts, Compare("<=", BinOp("*", Const(3), i), Const(0)))


def test_a_wait_needed_only_where_a_loop_is_empty_is_shown_needed_by_a_concrete_run():
    """matmul_fully_optimized's pack waits on POOL (the memset of its tile) only where the
    K loop is empty (KB = 0): among its six parameters, the valuation with KB at its
    least value and the others at 2 shows it, so no redundancy proof is tried. With no
    parameter below 1 no valuation shows it."""
    from algorithm.threshold.irredundant import shown_necessary
    from algorithm.threshold.options import PlannerOptions
    from algorithm.threshold.plan import PlanEntry

    program = load(str(ROOT / "kernels/suite/matmul_fully_optimized.sync"))
    entries = [PlanEntry(op, engine, t, True) for op, engine, t, _, _ in nest_mod.plan_nest(program)[0]]
    assert ("pack", "POOL") in shown_necessary(program, entries, PlannerOptions())
    assert ("pack", "POOL") not in shown_necessary(program, entries, PlannerOptions(necessity_values=(1, 2, 3)))
