"""The exactness check of candidates (algorithm/threshold/candidates.py) on a ring whose
depth is a parameter: a candidate whose slot simplifies to the consumer's own is not
asked whether it meets it, and one whose slot does not is still refuted (the
simplification leaves out only conditions that are true)."""

from __future__ import annotations

from algorithm.threshold import candidates as candidates_module
from algorithm.threshold.candidates import Candidate, prove_candidates
from algorithm.threshold.context import Context
from semantics.ir import BinOp, Compare, Const, Var
from semantics.parser import parse
from semantics.symbolic import conflicting_pairs

RING = parse("""kernel ring
engines LD PE
param N, D
for i in 0..N {
  LD load writes a[i % (D + 1)]
  PE mm reads a[i % (D + 1)]
}
""")


def _answer(back):
    """prove_candidates' answer for the single candidate 'mm at i - back' of load at i."""
    ctx = Context(RING)
    x, y = ctx.sites["mm"], ctx.sites["load"]
    (pair,) = conflicting_pairs(x.op, y.op)
    earlier = BinOp("-", Var("i"), back)
    candidate = Candidate(Compare(">=", earlier, Const(0)), {"i": earlier}, 0)
    return prove_candidates(ctx.session, RING, x, y, pair, [candidate], soundness_only=True)


def test_the_slot_read_depth_plus_one_iterations_back_is_a_conflicting_instance():
    assert _answer(BinOp("+", Var("D"), Const(1))) is None


def test_the_slot_read_one_iteration_back_is_refuted():
    # mm at i - 1 reads slot (i - 1) % (D + 1): another slot than load's at i unless D = 0.
    assert _answer(Const(1)) is not None


def test_teeth_a_check_that_never_asks_whether_the_slot_meets_is_caught(monkeypatch):
    monkeypatch.setattr(candidates_module, "_meets", lambda *args: [])
    assert _answer(Const(1)) is None  # the wrong slot passes: the test above fails
