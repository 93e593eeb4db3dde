"""Loops whose upper bound is a `min` or `max` of affine non-decreasing bounds
(`for k in 0..min(i + 1, M)`) in the nest stage: counts summed each way of the choice,
proofs by bounds each way of it. Expected values come from brute force
(tests/support/nest_plans.py)."""

from __future__ import annotations

import pytest

from algorithm.registry import get_strategy
from algorithm.threshold import nest, nest_counts, reasoning
from semantics.evaluate import arithmetic_ops
from semantics.ir import BinOp, Compare, Const, Max, Min, Op, Var, walk_stmts
from semantics.parser import parse

from tests.support.nest_plans import problems


def _kernel(bound: str, guard: str | None, read: str = "x[0..M]"):
    write = {"x[0..M]": "x[k]", "x": "x", "x[i % 2]": "x[k % 2]"}[read]
    body = f"      A w writes {write}\n" if guard is None else f"      if {guard} {{\n        A w writes {write}\n      }}\n"
    return parse(f"engines A B\nparam N, M >= 0\nparam K >= 1\nfor i in 0..N {{\n  for k in 0..{bound} {{\n{body}"
                 f"  }}\n  B r reads {read} writes z\n  A v reads z\n}}\n")


BOUNDS = ["min(i + 1, M)", "min(i, M)", "max(i, M)", "max(min(i + 1, M), 1)"]


@pytest.mark.parametrize("bound, guard, read", [
    *((b, g, r) for b in BOUNDS for g, r in ((None, "x[0..M]"), ("k >= 1", "x"))),
    *((b, g, r) for b in BOUNDS[:3] for g, r in (("k % K == 0", "x"), ("k % 2 == 0", "x[i % 2]")))])
def test_a_clamped_loop_bound_is_planned_exactly_by_the_nest_stage(bound, guard, read):
    program = _kernel(bound, guard, read)
    nest.check_nest(program)
    assert problems(program, hi=4) == []


def _closed_form_problems(program) -> list[str]:
    """Where the stage's closed forms (no `count(F)` register: the sums themselves) differ
    from T_min."""
    from algorithm.threshold.plan import Plan, PlanEntry
    from tests.support.exactness import exactness_problems

    planned, _ = nest.plan_nest(program, count_registers=False)
    return exactness_problems(program, Plan([PlanEntry(op, engine, t, True) for op, engine, t, *_ in planned]), hi=4)


@pytest.mark.parametrize("bound", BOUNDS[:3])
@pytest.mark.parametrize("guard", [None, "k % K == 0"])
def test_sums_over_a_clamped_loop_are_exact(bound, guard):
    assert _closed_form_problems(_kernel(bound, guard, "x")) == []


def test_a_parameter_period_under_a_clamped_bound_no_longer_falls_back():
    """Regression: `for k in 0..min(i + 1, M) { if k % K == 0 ...` fell back to barriers
    (the general stage cannot sum floors by K under a clamp)."""
    stats = get_strategy("threshold")(_kernel("min(i + 1, M)", "k % K == 0", "x")).stats
    assert stats.fallback is None and not stats.barriers and not stats.conservative


@pytest.mark.parametrize("bound", ["max(i, M)", "min(i + 1, M)", "min(i, M)"])
def test_a_wait_where_no_writer_precedes_needs_no_else(bound):
    """Where the loop is empty at i = 0 the count is 0 there too: the wait is the
    engine's count, as the general stage writes it."""
    result = get_strategy("threshold")(_kernel(bound, None, "x"))
    assert sum(arithmetic_ops(w.threshold) for s in walk_stmts(result.program.body) if isinstance(s, Op)
               for w in s.waits) == 0


def test_teeth_a_choice_summed_the_wrong_way_is_caught(monkeypatch):
    """Broken: each `min` summed as a `max` (the choice's branches swapped)."""
    from semantics.ir import IfExpr, map_expr

    def swapped(body, mentions):
        return map_expr(body, lambda n: IfExpr(Compare("<=", n.left, n.right), n.right, n.left)
                        if isinstance(n, (Min, Max)) and mentions(n) else n)

    monkeypatch.setattr(nest_counts, "_as_choices", swapped)
    assert _closed_form_problems(_kernel("min(i + 1, M)", "k % K == 0", "x")) != []


def test_bounds_take_each_way_of_a_min():
    m = Var("M")
    facts = [Compare(">=", m, Const(0))]
    zero = Min(Const(0), m)
    assert reasoning.proves(facts, Compare("==", zero, Const(0)))
    assert not reasoning.proves([], Compare("==", zero, Const(0)))
    square = BinOp("*", Min(Const(0), BinOp("+", m, Const(1))), Min(Const(0), BinOp("+", m, Const(1))))
    assert reasoning.proves(facts, Compare("<=", BinOp("+", square, BinOp("*", Const(2), zero)), Const(0)))
    assert reasoning.proves(facts, Compare(">=", Max(Var("i"), m), Const(0)))
