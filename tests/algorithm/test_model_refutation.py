"""Refutation by Z3's models: a claim Z3 found false under some facts leaves its model
(a point where the facts hold and the claim does not); a later claim, under the same
facts or under others that hold at that point, that is false there is answered without
Z3, with the answer Z3 gives."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

import algorithm.threshold.facts as facts_mod
from algorithm.threshold.facts import Session
from algorithm.threshold.options import PlannerOptions
from semantics.ir import BinOp, Compare, Const, Var

N, I = Var("N"), Var("i")
CONDS = [Compare(">=", N, Const(10)), Compare(">=", I, Const(0)), Compare("<", I, N)]


def _session():
    return Session(PlannerOptions().facts_rlimit)


def _z3_only(monkeypatch):
    """Every claim goes past the solver-free procedures (bounds.decide, a stand-in that
    decides nothing), so what reaches Z3 is counted; returns the list of Z3 checks."""
    monkeypatch.setattr(facts_mod, "decide", lambda conds, forms, claim: None)
    asked = []
    check_alone = Session.check_alone

    def counting(self, assertions, rlimit):
        asked.append(len(assertions))
        return check_alone(self, assertions, rlimit)

    monkeypatch.setattr(Session, "check_alone", counting)
    return asked


def test_a_claim_false_at_an_earlier_model_is_refuted_without_z3(monkeypatch):
    asked = _z3_only(monkeypatch)
    facts = _session().facts(CONDS)
    assert facts.proves(Compare("<", I, Const(3))) is False  # Z3: sat (i can be 3..N-1)
    assert len(asked) == 1
    # Every point with i >= 3 also has i >= 2: Z3's model refutes `i < 2` at once.
    assert facts.proves(Compare("<", I, Const(2))) is False
    assert len(asked) == 1
    # A true claim still goes to Z3 (no point refutes it), and is proved.
    assert facts.proves(Compare("<", I, N)) is True
    assert len(asked) == 2


def test_a_model_of_other_facts_refutes_only_where_these_facts_hold(monkeypatch):
    asked = _z3_only(monkeypatch)
    session = _session()
    session.facts(CONDS).proves(Compare("<", I, Const(3)))  # its model has i >= 3
    # Other facts (i below 3 only): the first model is no point of them; Z3 is asked.
    other = session.facts([*CONDS, Compare("<", I, Const(3))])
    assert other.proves(Compare("<", I, Const(2))) is False
    assert len(asked) == 2
    # Facts the first model satisfies (a weaker set): it refutes there too.
    weaker = session.facts(CONDS[1:])
    assert weaker.proves(Compare("<", I, Const(3))) is False
    assert len(asked) == 2


@pytest.mark.parametrize("point, refutes", [
    (({"N": 12, "i": 5}, {}), True),    # the facts hold, `i < 3` does not
    (({"N": 4, "i": 5}, {}), False),    # `N >= 10` and `i < N` fail: not a point of the facts
    (({"N": 12, "i": 1}, {}), False),   # the claim holds there
    (({"i": 5}, {}), False),            # N unbound: decides nothing
])
def test_a_point_refutes_only_where_every_fact_holds_and_the_claim_does_not(point, refutes):
    facts = _session().facts(CONDS)
    assert facts._refutes(point, Compare("<", I, Const(3))) is refutes


def test_a_point_where_a_fact_divides_by_zero_decides_nothing():
    m = Var("M")
    facts = _session().facts([Compare("==", BinOp("%", I, m), Const(0))])
    assert facts._refutes(({"i": 4, "M": 0}, {}), Compare("<", I, Const(3))) is False
    assert facts._refutes(({"i": 4, "M": 2}, {}), Compare("<", I, Const(3))) is True


_exprs = st.builds(lambda a, b, c: BinOp("+", BinOp("*", Const(a), I), BinOp("*", Const(b), N)) if c else
                   BinOp("*", BinOp("+", I, Const(a)), BinOp("+", N, Const(b))),
                   st.integers(-3, 3), st.integers(-3, 3), st.booleans())
_claims = st.builds(lambda op, e, k: Compare(op, e, Const(k)), st.sampled_from(["<", "<=", ">=", ">", "==", "!="]),
                    _exprs, st.integers(-20, 60))


_facts = st.lists(st.sampled_from([*CONDS, Compare(">=", I, Const(5)), Compare("<", I, Const(20)),
                                    Compare("==", BinOp("%", I, Const(3)), Const(1)),
                                    Compare("<=", BinOp("*", I, I), BinOp("*", Const(4), N))]),
                  min_size=1, max_size=5, unique=True)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_facts, _claims), min_size=2, max_size=8))
def test_answers_with_remembered_models_equal_z3s_answers_alone(asked):
    """Each claim under its facts in one session (models remembered across claims and
    facts) and in a fresh session (Z3 alone, no model) gets the same answer."""
    shared = _session()
    for conds, claim in asked:
        assert shared.facts(conds).proves(claim) == _session().facts(conds).proves(claim)
