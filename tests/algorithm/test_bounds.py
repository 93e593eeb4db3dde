"""bounds.decide against brute force: a claim it proves holds at every integer point of
the facts, and a claim it refutes fails at some point. The facts always box the names
in (so brute force over the box sees every point), plus random linear, `%` and `//`
constraints; claims are random comparisons, conjunctions and disjunctions."""

from __future__ import annotations

import itertools

import pytest
import z3
from hypothesis import Phase, given, settings, strategies as st

from algorithm.threshold import bounds
from algorithm.threshold.bounds import decide, inequalities_of
from semantics.evaluate import eval_cond
from semantics.ir import And, BinOp, Compare, Const, Max, Min, Not, Or, Var

NAMES = ("a", "b", "c")
BOX = 5  # each name in [-1, BOX)


def _term(draw):
    kind = draw(st.sampled_from(["lin", "lin", "mod", "div", "min", "max"]))
    lin = Const(draw(st.integers(-4, 4)))
    for n in NAMES:
        k = draw(st.integers(-2, 2))
        if k:
            lin = BinOp("+", lin, BinOp("*", Const(k), Var(n)))
    if kind == "mod":
        return BinOp("%", lin, Const(draw(st.integers(1, 3))))
    if kind == "div":
        return BinOp("//", lin, Const(draw(st.integers(1, 3))))
    if kind in ("min", "max"):
        return (Min if kind == "min" else Max)(lin, _term(draw))
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


def test_a_fact_that_opens_a_cycle_of_eliminations_hides_no_proof():
    """Regression: `j - i >= -1` beside 0 <= j <= i < N made `N - j - 1 >= 0` unproved:
    eliminating i by it and j by `j <= i` again gave `N - j - 2`, `N - j - 3`, ..., each
    a harder form of a goal already being tried, until the step budget ran out before
    the fact `i < N` was tried. A goal no easier than one further up is cut."""
    n, i, j = Var("N"), Var("i"), Var("j")
    conds = (Compare(">=", n, Const(0)), Compare("<=", Const(0), i), Compare("<", i, n), Compare("<=", Const(0), j),
             Compare("<", j, BinOp("+", i, Const(1))))
    claim = Compare(">=", BinOp("-", BinOp("-", n, j), Const(1)), Const(0))
    for extra in ((), (Compare(">=", BinOp("-", j, i), Const(-1)),)):
        assert bounds.proved(inequalities_of(conds + extra), claim)


def test_a_bound_on_a_max_from_above_or_a_min_from_below_is_both_sides_bounded():
    """`N >= max(N - 1, 0)` holds where N >= 0 (each side is at most N); `N >= max(N +
    1, 0)` does not; `min(2 * N, 3) >= 0` does."""
    n = Var("N")
    facts = inequalities_of([Compare(">=", n, Const(0))])
    assert bounds.proved(facts, Compare(">=", n, Max(BinOp("-", n, Const(1)), Const(0))))
    assert not bounds.proved(facts, Compare(">=", n, Max(BinOp("+", n, Const(1)), Const(0))))
    assert bounds.proved(facts, Compare(">=", Min(BinOp("*", Const(2), n), Const(3)), Const(0)))


def test_teeth_a_max_bounded_by_one_side_only_is_caught(monkeypatch):
    """Broken: `L - max(a, b) >= 0` read as `L - a >= 0` alone proves `a >= max(a - 1,
    b)`, false where b > a: the agreement check with brute force catches it."""
    real = bounds._sides

    def one_side(form, depth=3):
        sides = real(form, depth)
        return sides[:1] * len(sides)

    n = Var("a")
    claim = Compare(">=", n, Max(BinOp("-", n, Const(1)), Var("b")))
    assert _agrees(tuple(_box()), claim)
    monkeypatch.setattr(bounds, "_sides", one_side)
    assert not _agrees(tuple(_box()), claim)


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


# ---------------------------------------------------------------- residue classes

PAIR = ("a", "b")


@st.composite
def periodic_terms(draw):
    """Linear forms over a and b, their `//` and `%` by 2 or 4, and products of two
    such (the squares of floor divisions that counts have)."""
    def linear_form():
        out = Const(draw(st.integers(-3, 3)))
        for n in PAIR:
            k = draw(st.integers(-2, 2))
            if k:
                out = BinOp("+", out, BinOp("*", Const(k), Var(n)))
        return out

    def atom():
        kind = draw(st.sampled_from(["lin", "mod", "div"]))
        form = linear_form()
        return form if kind == "lin" else BinOp("%" if kind == "mod" else "//", form, Const(draw(st.sampled_from([2, 4]))))

    term = atom()
    if draw(st.booleans()):
        term = BinOp("*", term, atom())
    return term


@st.composite
def periodic_claims(draw):
    """Comparisons of two such terms, or of one with a small constant (`a % 4 <= 2`
    fails in one residue class only)."""
    right = draw(st.one_of(periodic_terms(), st.integers(0, 3).map(Const)))
    return Compare(draw(st.sampled_from(["<", "<=", ">=", "=="])), draw(periodic_terms()), right)


def _residue_box():
    return [part for n in PAIR for part in (Compare(">=", Var(n), Const(0)), Compare("<", Var(n), Const(9)))]


def _holds_everywhere(conds, claim) -> bool:
    points = (dict(zip(PAIR, values)) for values in itertools.product(range(0, 9), repeat=len(PAIR)))
    return all(eval_cond(claim, env) for env in points if all(eval_cond(c, env) for c in conds))


def residue_proofs_hold(extra, claim):
    conds = tuple(_residue_box() + extra)
    if bounds.by_residues(conds, claim):
        assert _holds_everywhere(conds, claim)


RESIDUE_EXAMPLES = 300  # cheap (about 5 ms each); a skipped class shows within them


@settings(max_examples=RESIDUE_EXAMPLES, deadline=None)
@given(st.lists(periodic_claims(), max_size=2), periodic_claims())
def test_a_claim_proved_by_residue_classes_holds_at_every_point(extra, claim):
    residue_proofs_hold(extra, claim)


def _halves_claim(constant: int = -6):
    """N even and >= 2 (the odd class is excluded by the facts): ((N - 1) // 2)^2 + 3N -
    3((N - 1) // 2) + constant <= (N // 2)^2 + 2N - 3(N // 2), if_else_varying's comparison
    of two counts; k^2 + k - 2 <= k^2 + k for N = 2k at the constant -6, false at -1."""
    n = Var("N")
    half, half_before = BinOp("//", n, Const(2)), BinOp("//", BinOp("-", n, Const(1)), Const(2))

    def count(h, linear, c):
        return BinOp("+", BinOp("-", BinOp("+", BinOp("*", h, h), BinOp("*", Const(linear), n)),
                                BinOp("*", Const(3), h)), Const(c))

    conds = (Compare(">=", n, Const(0)), Compare(">=", n, Const(1)),
             Not(Compare("==", BinOp("%", BinOp("-", n, Const(1)), Const(2)), Const(0))))
    return conds, Compare("<=", count(half_before, 3, constant), count(half, 2, 0))


def test_residue_classes_prove_a_comparison_of_counts_with_squares_of_halves():
    assert bounds.by_residues(*_halves_claim())
    assert not bounds.by_residues(*_halves_claim(-1))


def test_facts_prove_by_residue_classes_what_z3_leaves_unknown():
    """Facts.proves asks the residue classes after Z3's `unknown` (a budget of 1,000
    units leaves this non-linear claim unknown)."""
    from algorithm.threshold import facts as facts_module

    conds, claim = _halves_claim()
    session = facts_module.Session(1_000)
    assert session.check_alone([*session.facts(conds).assertions, z3.Not(session.z(claim))], 1_000)[0] == z3.unknown
    assert session.facts(conds).proves(claim)


def test_teeth_facts_without_the_residue_classes_leave_it_unproved(monkeypatch):
    from algorithm.threshold import facts as facts_module

    monkeypatch.setattr(facts_module, "by_residues", lambda conds, claim: False)
    conds, claim = _halves_claim()
    assert not facts_module.Session(1_000).facts(conds).proves(claim)


def test_teeth_a_residue_proof_that_skips_a_class_is_caught(monkeypatch):
    real = bounds._classes

    def all_but_the_last(periods):
        classes = list(real(periods))
        return classes[:-1]

    monkeypatch.setattr(bounds, "_classes", all_but_the_last)
    check = settings(phases=[Phase.generate], database=None, max_examples=RESIDUE_EXAMPLES)(
        given(st.lists(periodic_claims(), max_size=2), periodic_claims())(residue_proofs_hold))
    with pytest.raises(AssertionError):
        check()
