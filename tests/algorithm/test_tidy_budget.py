"""The tidy budget (PlannerOptions.tidy_rlimit): simplifying a threshold under the facts
at its op spends at most that many Z3 resource units; a rewrite it cannot afford is
skipped, and the threshold stays the brute-force minimum in a longer form."""

from __future__ import annotations

import pytest

import algorithm.threshold.plan as threshold_mod
from algorithm.threshold.facts import Session
from algorithm.threshold.options import PlannerOptions
from algorithm.threshold.thresholds import tidy_threshold
from semantics.ir import BinOp, Compare, Const, Max, Var
from semantics.parser import parse_file
from verify.timing.scheduler import arithmetic_ops

from tests.support.corpus import CASES, CORPUS
from tests.support.exactness import exactness_problems

KERNELS = [p for p in CORPUS + CASES if p.stem in ("ring_buffer", "triangular_attention", "if_else_split",
                                                   "inner_loop_max_lower_bound_sum")]


def _threshold_arithmetic(plan) -> int:
    return sum(arithmetic_ops(e.threshold) for e in plan.entries if e.threshold is not None)


@pytest.mark.parametrize("path", KERNELS, ids=lambda p: p.stem)
def test_thresholds_planned_with_no_tidy_budget_are_still_the_brute_force_minimum(path):
    program = parse_file(str(path))
    untidied = threshold_mod.plan_thresholds(program, options=PlannerOptions(tidy_rlimit=0))
    assert not exactness_problems(program, untidied)


def test_the_tidy_budget_changes_only_the_form():
    """Teeth for the test above: with no budget, ring_buffer's thresholds are longer
    (the rewrites were skipped, so the test planned something else than the default)."""
    program = parse_file(str(next(p for p in CORPUS if p.stem == "ring_buffer")))
    tidy = threshold_mod.plan_thresholds(program)
    untidied = threshold_mod.plan_thresholds(program, options=PlannerOptions(tidy_rlimit=0))
    assert _threshold_arithmetic(untidied) > _threshold_arithmetic(tidy)


def _tidy_spending(cap=10**12):
    """The Z3 units a tidy of a non-linear threshold spends under a cap, and its largest
    single check (units are counted inside capped stretches only)."""
    session = Session(PlannerOptions().facts_rlimit)
    n, i = Var("N"), Var("i")
    facts = session.facts([Compare(">=", n, Const(0)), Compare(">=", i, Const(0)), Compare("<", i, n)])
    # Each `max` is decided by a non-linear fact (i * (N + k) <= N * (N + k) for i < N),
    # which bounds cannot prove and no point refutes: Z3 decides each one.
    t = Const(0)
    for k in range(8):
        t = BinOp("+", t, Max(BinOp("*", i, BinOp("+", n, Const(k))), BinOp("*", n, BinOp("+", n, Const(k)))))
    checks = []
    check = session.check

    def spy(solver):  # a spy on our own accounting: each check's units
        before = session.units
        result = check(solver)
        checks.append(session.units - before)
        return result

    session.check = spy
    before = session.units
    with session.capped(cap):
        tidy_threshold(t, facts)
    assert session.cap is None, "the cap ends with its stretch"
    assert facts.proves(Compare("<", i, n)), "outside the stretch a claim is answered again"
    return session.units - before, max(checks, default=0)


def test_a_capped_stretch_spends_at_most_its_units_and_one_check_more():
    free, largest = _tidy_spending()
    assert free > largest, "the uncapped tidy makes several checks (so a cap has something to cut)"
    cap = free // 3
    capped, _ = _tidy_spending(cap)
    assert capped < free
    assert capped <= cap + largest


def test_units_read_are_z3_s_own_rlimit_count():
    """`counted` reads the statistic from the end of Z3's list (it is near there): the
    same number z3.Statistics reports, for a linear and a non-linear check."""
    import z3

    from algorithm.threshold.facts import counted

    ctx = z3.Context()
    x, y = z3.Int("x", ctx), z3.Int("y", ctx)
    for claim in (x + y > 3, x * y + x * x == 7):
        solver = z3.SimpleSolver(ctx=ctx)
        solver.add(claim, x > 0, y > 0)
        solver.check()
        assert counted(solver) == solver.statistics().get_key_value("rlimit count") > 0
