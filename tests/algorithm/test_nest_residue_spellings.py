"""One residue class of a guard with a parameter period, however it is written
(`j % K < 1`, `j % K >= K - 1`, `j % K != K - 1`), is planned by the nest stage exactly,
and its waits stay short: a candidate that exists nowhere the earlier ones are missing
is left out. Expected values come from brute force (tests/support/nest_plans.py)."""

from __future__ import annotations

import pytest

from algorithm.registry import get_strategy
from algorithm.threshold import nest, nest_guards, nest_pieces, reasoning
from semantics.evaluate import arithmetic_ops
from semantics.ir import BinOp, Compare, Const, Op, Var, walk_stmts
from semantics.parser import parse
from semantics.printer import print_expr

from tests.support.nest_plans import problems

SPELLINGS = ["j % K < 1", "1 > j % K", "j % K >= 1", "j % K >= K - 1", "(j + 1) % K > K - 2", "j % K < K - 1",
             "j % K != K - 1"]


def _kernel(guard: str, triangular: bool, otherwise: bool):
    then = "      A w writes x\n"
    branch = f"    if {guard} {{\n{then}    }}" + (" else {\n      A u reads x writes x\n    }" if otherwise else "")
    return parse(f"engines A B\nparam N, K >= 1\nfor i in 0..N {{\n  for j in 0..{'i' if triangular else 'N'} {{\n"
                 f"{branch}\n  }}\n  B r reads x writes z\n  A v reads z\n}}\n")


@pytest.mark.parametrize("guard", SPELLINGS)
@pytest.mark.parametrize("triangular, otherwise", [(True, False), (False, True)])
def test_one_residue_however_written_is_planned_exactly_by_the_nest_stage(guard, triangular, otherwise):
    """Regression: `j % K < 1` left the class ("slope other than +-1") and the general
    stage fell back to barriers; `j % K != K - 1` tied its candidates (two spellings of
    one residue that bounds did not see exclude each other)."""
    program = _kernel(guard, triangular, otherwise)
    nest.check_nest(program)
    assert problems(program, hi=5) == []
    stats = get_strategy("threshold")(program).stats
    assert not stats.conservative and stats.fallback is None and not stats.barriers


def _wait_ops(program) -> int:
    result = get_strategy("threshold")(program)
    return sum(arithmetic_ops(w.threshold) for s in walk_stmts(result.program.body) if isinstance(s, Op)
               for w in s.waits)


@pytest.mark.parametrize("guard", ["j % K != 0", "(j + 1) % K != 0", "j % K != K - 1", "j % (K + 1) != 0"])
def test_a_candidate_missing_wherever_the_earlier_ones_are_is_left_out(guard):
    """In a triangular loop, the last writer of an earlier row is a candidate only where
    the row's own writers are missing: there the period is 1 and none ever runs. Every
    wait is then the engine's count, with no arithmetic (before: pieces of sums of
    floors, over 100 operations)."""
    assert _wait_ops(_kernel(guard, True, False)) == 0


def test_teeth_a_candidate_kept_where_it_never_exists_is_caught(monkeypatch):
    monkeypatch.setattr(nest_pieces, "_missing_where_failed", lambda *_: False)
    assert _wait_ops(_kernel("j % K != 0", True, False)) > 0


def test_a_residue_at_the_top_of_its_period_is_written_at_zero():
    """`u % P == P - k` is `(u + k) % P == 0`: conditions at neighbouring indices then
    share their terms with the counts' floors."""
    g = nest_guards.guard_of(parse("engines A\nparam N, K >= 1\nfor j in 0..N {\n  if j % K == K - 1 {\n"
                                   "    A w writes x\n  }\n}\n").body[0].body[0].cond, True, ["j"])
    assert print_expr(g.cond) == "(j + 1) % K == 0"


def test_two_spellings_of_one_residue_contradict_their_negations():
    """`a != b` is refuted where bounds prove `a == b` (bounds read no `!=` as a fact)."""
    n, k = Var("N"), Var("K")
    t = BinOp("%", BinOp("-", n, Const(1)), k)
    domain = [Compare(">=", n, Const(0)), Compare(">=", k, Const(1))]
    differs = Compare("!=", t, BinOp("-", k, Const(1)))
    equals = Compare("==", BinOp("-", t, k), Const(-1))
    assert reasoning.contradictory([differs, equals], domain, {})
    assert not reasoning.contradictory([differs, Compare("==", BinOp("-", t, k), Const(-2))], domain, {})


def test_a_small_constant_over_a_parameter_divisor_is_taken_one_value_at_a_time():
    """`1 // K` is 1 at K = 1 and 0 above: a product of it is proved in the two cases; a
    fact `1 % K == 0` settles false where K >= 2."""
    k = Var("K")
    claim = Compare("==", BinOp("*", BinOp("-", k, Const(1)), BinOp("//", Const(1), k)), Const(0))
    assert reasoning.proves([Compare(">=", k, Const(1))], claim)
    assert not reasoning.proves([Compare(">=", k, Const(0))], claim)  # (K = 0: no division)
    fact = Compare("==", BinOp("%", Const(1), k), Const(0))
    assert reasoning.proves([Compare(">=", k, Const(1)), fact], Compare("<=", BinOp("*", k, BinOp("//", Const(1), k)), Const(1)))
