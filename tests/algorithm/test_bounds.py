"""bounds.decide against brute force: a claim it proves holds at every integer point of
the facts, and a claim it refutes fails at some point. The facts always box the names
in (so brute force over the box sees every point), plus random linear, `%` and `//`
constraints; claims are random comparisons, conjunctions and disjunctions."""

from __future__ import annotations

import itertools

from hypothesis import given, settings, strategies as st

from algorithm.threshold import bounds
from algorithm.threshold.bounds import decide, inequalities_of
from semantics.evaluate import eval_cond
from semantics.ir import And, BinOp, Compare, Const, Not, Or, Var

NAMES = ("a", "b", "c")
BOX = 5  # each name in [-1, BOX)


def _term(draw):
    kind = draw(st.sampled_from(["lin", "lin", "mod", "div"]))
    lin = Const(draw(st.integers(-4, 4)))
    for n in NAMES:
        k = draw(st.integers(-2, 2))
        if k:
            lin = BinOp("+", lin, BinOp("*", Const(k), Var(n)))
    if kind == "mod":
        return BinOp("%", lin, Const(draw(st.integers(1, 3))))
    if kind == "div":
        return BinOp("//", lin, Const(draw(st.integers(1, 3))))
    return lin


@st.composite
def comparisons(draw):
    op = draw(st.sampled_from(["<", "<=", ">", ">=", "==", "!="]))
    return Compare(op, _term(draw), _term(draw))


@st.composite
def claims(draw):
    c = draw(comparisons())
    match draw(st.sampled_from(["plain", "and", "or", "not"])):
        case "and":
            return And(c, draw(comparisons()))
        case "or":
            return Or(c, draw(comparisons()))
        case "not":
            return Not(c)
    return c


def _box():
    return [part for n in NAMES for part in (Compare(">=", Var(n), Const(-1)), Compare("<", Var(n), Const(BOX)))]


def _points(conds):
    for values in itertools.product(range(-1, BOX), repeat=len(NAMES)):
        env = dict(zip(NAMES, values))
        if all(eval_cond(c, env) for c in conds):
            yield env


def _agrees(conds, claim) -> bool:
    """decide's answer is what brute force over the box says (or it answers nothing)."""
    answer = decide(conds, inequalities_of(conds), claim)
    holds = [eval_cond(claim, env) for env in _points(conds)]
    return answer is None or answer == all(holds)


@settings(max_examples=300, deadline=None)
@given(st.lists(comparisons(), max_size=3), claims())
def test_a_decided_claim_agrees_with_every_point_of_the_facts(extra, claim):
    assert _agrees(tuple(_box() + extra), claim)


def test_bound_substitution_proves_a_nested_range_and_a_point_refutes_its_edge():
    # 0 <= j < i < N: j <= N - 2 follows; j <= N - 3 does not (j = N - 2 at i = N - 1).
    conds = (Compare(">=", Var("N"), Const(0)), Compare("<=", Const(0), Var("i")), Compare("<", Var("i"), Var("N")),
             Compare("<=", Const(0), Var("j")), Compare("<", Var("j"), Var("i")))
    forms = inequalities_of(conds)
    assert decide(conds, forms, Compare("<=", Var("j"), BinOp("-", Var("N"), Const(2)))) is True
    assert decide(conds, forms, Compare("<=", Var("j"), BinOp("-", Var("N"), Const(3)))) is False


def test_a_prover_that_rounds_the_wrong_way_is_caught(monkeypatch):
    """A tightening that rounds up (`g S + k >= 0` read as `S + ceil(k / g) >= 0`)
    proves `2x >= 1` from `x >= 0`, false at x = 0: the agreement check catches it."""
    from math import ceil, gcd

    def rounds_up(form):
        g = 0
        for k, v in form.items():
            if k is not None:
                g = gcd(g, int(v))
        if g <= 1:
            return form
        out = {k: v // g for k, v in form.items() if k is not None}
        out[None] = ceil(form.get(None, 0) / g)
        return out

    conds = (*_box(), Compare(">=", Var("a"), Const(0)))
    claim = Compare(">=", BinOp("*", Const(2), Var("a")), Const(1))
    assert _agrees(conds, claim)
    monkeypatch.setattr(bounds, "_tight", rounds_up)
    monkeypatch.setattr(bounds, "_refuted", lambda *args: False)  # the proof alone
    bounds._ge.cache_clear()  # forms made with the right rounding are remembered
    try:
        assert not _agrees(conds, claim)
    finally:
        bounds._ge.cache_clear()
