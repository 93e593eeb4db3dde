"""The nest stage on triangular loops that may be empty (`for j in 0..i`, empty at i =
0): a producer's latest instance in such a loop exists only where the loop's range at
the chosen enclosing indices is not empty, and the counts over the enclosing loop sum
the quasi-polynomials such loops give (`(i + 1) // 2` indices of one parity below i).
Expected values come from brute force (tests/support), never from the planner."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from algorithm.registry import get_strategy
from algorithm.threshold import nest as nest_mod
from algorithm.threshold.live import live_program
from algorithm.threshold.nest_counts import Counts
from algorithm.threshold.nest_guards import Guard, count_where
from algorithm.threshold.options import PlannerOptions
from algorithm.threshold.nest_counts import power_sum
from semantics.errors import Unsupported
from semantics.evaluate import eval_expr
from semantics.ir import BinOp, Const, Var
from semantics.parser import parse
from syncproof import load

from tests.support.nest_plans import problems
from tests.support.corpus import ROOT

POSSIBLY_EMPTY = ["tests/data/threshold_cases/nested_three.sync", "tests/data/threshold_cases/triple_triangle.sync",
                  "tests/data/repro/threshold_slow_nested_ifs.sync"]


def _live(path):
    program = load(str(ROOT / path))
    live = live_program(program)
    return program if live is None else live.program


@pytest.mark.parametrize("path", POSSIBLY_EMPTY)
def test_triangular_loops_empty_at_the_first_outer_iteration_are_planned_exactly(path, monkeypatch):
    """Every threshold is T_min, and the strategy never enters the general stage."""
    import algorithm.threshold.pipeline as pipeline

    assert problems(_live(path)) == []

    def refuse(*_):
        raise AssertionError("the general stage ran")

    monkeypatch.setitem(pipeline.STAGES, "general", refuse)
    assert not get_strategy("threshold")(load(str(ROOT / path))).stats.conservative


def test_teeth_a_loop_that_may_be_empty_taken_for_never_empty_is_caught(monkeypatch):
    """Broken: the latest instance in a triangular loop is taken to exist wherever its
    enclosing indices do (the consumer after the middle loop of nested_three waits on a
    multiply that never ran at j = 0)."""
    monkeypatch.setattr(Counts, "never_empty", lambda self, loop, loops: True)
    assert problems(_live("tests/data/threshold_cases/nested_three.sync")) != []


def test_a_loop_bound_that_may_fall_below_its_lower_bound_is_left_to_the_later_stages():
    """`for j in 0..i - 1` has a bound below 0 at i = 0: the counts (HI - LO per entry)
    would be negative there."""
    program = parse("engines A B\nparam N\nfor i in 0..N {\n  for j in 0..i - 1 {\n    A w writes x\n  }\n"
                    "  B r reads x\n}\n")
    with pytest.raises(Unsupported):
        nest_mod.check_nest(program)
    assert nest_mod.sync_nest(program, PlannerOptions()) is None


T = Var("t")
PERIODIC = st.builds(lambda op, s, c, p: BinOp(op, BinOp("+", BinOp("*", Const(s), T), Var(c)), Const(p)),
                     st.sampled_from(["//", "%"]), st.sampled_from([1, -1]), st.sampled_from(["N", "M"]),
                     st.integers(1, 5))


def _sum_matches(summed, body) -> list:
    """The points (a, z, N, M) where `summed(body, a, z)` is not the sum of the body over
    t = a .. z - 1 (brute force)."""
    formula = summed(body, Var("a"), Var("z"))
    bad = []
    for a in range(-7, 6, 3):
        for z in range(a, a + 11):
            for n, m in ((0, 0), (3, -2), (-5, 7), (9, 4)):
                env = {"N": n, "M": m}
                want = sum(eval_expr(body, {**env, "t": t}) for t in range(a, z))
                if eval_expr(formula, {**env, "a": a, "z": z}) != want:
                    bad.append((a, z, n, m))
    return bad


@settings(max_examples=40, deadline=None)
@given(atom=PERIODIC, coefficient=st.sampled_from([Const(1), Const(3), Var("N")]), plain=st.sampled_from([0, 1, 2]))
def test_sums_of_floors_and_residues_over_a_loop_index_are_exact(atom, coefficient, plain):
    """sum over t of `c * (s * t + e) // p` (or `% p`) plus a polynomial in t, for any
    integers a <= z, N, M: power_sum's closed form against the sum itself."""
    body = BinOp("+", BinOp("*", coefficient, atom), BinOp("*", Const(plain), T))
    assert _sum_matches(lambda b, a, z: power_sum(b, "t", a, z), body) == []


def test_teeth_a_floor_summed_as_an_exact_division_is_caught():
    """Broken: the sum of `(t + N) // 2` taken as the sum of (t + N) / 2, halved once."""
    from semantics.simplify import simplify

    body = BinOp("//", BinOp("+", T, Var("N")), Const(2))
    broken = lambda b, a, z: simplify(BinOp("//", power_sum(BinOp("+", T, Var("N")), "t", a, z), Const(2)))  # noqa: E731
    assert _sum_matches(broken, body) != []


@pytest.mark.parametrize("period, residues", [(2, {0}), (2, {1}), (3, {1, 2}), (4, {3})])
def test_the_count_of_a_residue_class_in_a_range_is_exact(period, residues):
    """count_where of `u % p` in r-set over u = s .. t - 1, against counting (any s <= t)."""
    g = Guard("u", "mod", residues=frozenset(residues), period=period)
    formula = count_where(g, Var("s"), Var("t"))
    for s in range(-9, 9):
        for t in range(s, s + 12):
            assert eval_expr(formula, {"s": s, "t": t}) == sum(1 for u in range(s, t) if u % period in residues)
