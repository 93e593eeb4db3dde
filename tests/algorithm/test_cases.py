"""The second case analysis's two tools (algorithm/threshold/cases.py), against brute
force: the cases of a piecewise index cover every point exactly once with the index's
own value, and every condition the projection derives is implied by the existence of
the eliminated indices. Both only guide guesses that Z3 then proves; these tests hold
that the guidance means what it says (tests/data/threshold_cases/ hold the plans it
makes exact: causal_guard_outer_tile, symbolic_coefficient_range, piecewise_max_index,
clamped_previous_index)."""

from __future__ import annotations

from algorithm.threshold.options import PlannerOptions

import itertools

import attrs
import pytest
from hypothesis import given, strategies as st

import algorithm.threshold.cases as cases
from algorithm.threshold.cases import piecewise_cases, project
from semantics.evaluate import EvalError, eval_cond, eval_expr
from semantics.ir import Access, BinOp, Compare, Const, Max, Not, Var
from semantics.parser import parse
from verify.search.generators import expressions

NAMES = ("i", "N")
POINTS = [dict(zip(NAMES, values)) for values in itertools.product(range(-3, 6), repeat=len(NAMES))]


def _value(node, env):
    try:
        return eval_expr(node, env)
    except EvalError:
        return None


def _holds(conds, env) -> bool | None:
    try:
        return all(eval_cond(c, env) for c in conds)
    except EvalError:
        return None


def piecewise_problems(index) -> list[str]:
    split = piecewise_cases(Access("b", (index,)), PlannerOptions().max_cases)
    if split is None:
        return []
    problems = []
    for env in POINTS:
        want = _value(index, env)
        if want is None:
            continue
        holding = []
        for conds, access in split:
            hit = _holds(conds, env)
            if hit is None:
                break
            if hit:
                holding.append(_value(access.indices[0], env))
        else:
            if holding != [want]:
                problems.append(f"at {env}: index {want}, the cases that hold give {holding}")
    return problems


@given(expressions(names=NAMES, max_depth=3))
def test_piecewise_cases_cover_each_point_once_with_its_value(index):
    assert piecewise_problems(index) == []


def test_piecewise_cases_split_max_and_if():
    index = parse("kernel k\nengines A B\nparam N\nfor i in 0..N {\n  A w writes b[max(i, 1)]\n}\n").body[0].body[0] \
        .writes[0].indices[0]
    split = piecewise_cases(Access("b", (index,)), PlannerOptions().max_cases)
    assert [access.indices[0] for _, access in split] == [Var("i"), Const(1)]
    assert piecewise_cases(Access("b", (BinOp("+", Var("i"), Const(1)),)), 8) is None  # nothing to split


def test_piecewise_check_catches_overlapping_cases(monkeypatch):
    # A broken split (max's second case `a <= b` instead of `a < b`): the point a == b
    # is in both cases.
    lift = cases._lift

    def broken(node):
        out = lift(node)
        if isinstance(node, Max):
            out = [(conds[:-1] + (attrs.evolve(conds[-1], op="<=") if conds[-1].op == "<" else conds[-1],), piece)
                   for conds, piece in out]
        return out

    monkeypatch.setattr(cases, "_lift", broken)
    assert piecewise_problems(Max(Var("i"), Const(1)))


def projection_problems(constraints, eliminate, derive=project) -> list[str]:
    """Each derived condition must hold wherever some values of `eliminate` satisfy
    every constraint (brute force over a box)."""
    derived = derive(constraints, eliminate)
    problems = []
    for env in POINTS:
        feasible = False
        for values in itertools.product(range(-4, 8), repeat=len(eliminate)):
            full = {**env, **dict(zip(eliminate, values))}
            if _holds(constraints, full):
                feasible = True
                break
        if not feasible:
            continue
        for c in derived:
            if _holds([c], env) is False:
                problems.append(f"at {env}: {c} is derived but some {eliminate} satisfy {constraints}")
    return problems


affine = st.builds(lambda a, b, k: BinOp("+", BinOp("*", Const(a), Var("i")), BinOp("+", BinOp("*", Const(b), Var("N")), Const(k))),
                   st.integers(-2, 2), st.integers(-2, 2), st.integers(-3, 3))


@given(st.lists(st.tuples(st.sampled_from(["<", "<=", ">", ">=", "=="]), st.integers(-3, 3), affine), min_size=1, max_size=4))
def test_projected_conditions_are_implied(rows):
    # constraints `m * v op e` over i, N, with v eliminated
    constraints = [Compare(op, BinOp("*", Const(m), Var("v")), e) for op, m, e in rows]
    assert projection_problems(constraints, ["v"]) == []


def test_projection_finds_the_causal_guard_bound():
    # exists i in [0, Q): i >= 16 * j   =>   16 * j < Q, i.e. j <= (Q - 1) // 16
    constraints = [Compare("<=", Const(0), Var("v")), Compare("<", Var("v"), Var("N")),
                   Compare(">=", Var("v"), BinOp("*", Const(16), Var("i")))]
    derived = project(constraints, ["v"])
    for env in POINTS:  # with unit coefficients on v the projection is exact
        possible = any(0 <= v < env["N"] and v >= 16 * env["i"] for v in range(-4, 8))
        assert all(eval_cond(c, env) for c in derived) == possible, env


def test_projection_check_catches_a_wrong_combination():
    # A broken projection that derives `hi <= lo` instead of `lo < hi` (each condition negated).
    def broken(constraints, eliminate):
        return [Not(c) for c in project(constraints, eliminate)]

    constraints = [Compare("<=", Const(0), Var("v")), Compare("<", Var("v"), Var("N"))]
    assert projection_problems(constraints, ["v"]) == []
    assert projection_problems(constraints, ["v"], derive=broken)


SECOND_ANALYSIS_CASES = ["causal_guard_outer_tile", "symbolic_coefficient_range", "piecewise_max_index",
                         "clamped_previous_index"]


@pytest.mark.parametrize("name", SECOND_ANALYSIS_CASES)
def test_second_analysis_makes_these_cases_exact(monkeypatch, name):
    """Each case is planned exactly, and only thanks to the second analysis: with
    plan.second_chance switched off some wait of it falls back to conservative. (That
    the exact plan is also right is test_threshold.py's brute-force comparison, which
    runs over every case file.)"""
    import algorithm.threshold.plan as plan_mod
    from algorithm.threshold import plan_thresholds
    from semantics.parser import parse_file
    from tests.support.corpus import CASES_DIR

    program = parse_file(str(CASES_DIR / f"{name}.sync"))
    assert all(e.exact for e in plan_thresholds(program).entries)
    monkeypatch.setattr(plan_mod, "second_chance", lambda *args, **kwargs: None)
    assert not all(e.exact for e in plan_thresholds(program).entries), "the case does not need the second analysis"


@pytest.mark.parametrize("op", ["<", "<=", ">", ">=", "!="])
def test_negated_comparison_means_the_negation(op):
    """The second analysis reads `not (a op b)` as `negated(a op b)`: equal on every
    pair of small integers."""
    from algorithm.threshold.candidates import negated

    c = Compare(op, Var("i"), Var("N"))
    for env in POINTS:
        assert eval_cond(negated(c), env) == (not eval_cond(c, env)), env


@pytest.mark.parametrize("name", ["else_pins_lower_end", "else_of_disjunction"])
def test_else_branches_are_read_as_the_comparisons_they_mean_by_the_first_analysis(monkeypatch, name):
    """An else branch's guard is read with its negation pushed to the comparisons
    (`not j > 0` is `j <= 0`; `not (i < 0 or j >= 2)` is `i >= 0` and `j < 2`): these
    cases are exact without the second analysis."""
    import algorithm.threshold.plan as plan_mod
    from algorithm.threshold import plan_thresholds
    from semantics.parser import parse_file
    from tests.support.corpus import CASES_DIR

    monkeypatch.setattr(plan_mod, "second_chance", lambda *args, **kwargs: None)
    program = parse_file(str(CASES_DIR / f"{name}.sync"))
    assert all(e.exact for e in plan_thresholds(program).entries)
