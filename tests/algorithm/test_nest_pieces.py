"""The nest stage's thresholds made short (algorithm/threshold/nest_pieces.py): every
threshold of tests/data/nest/guarded_lower_end.sync is T_min (brute force), and each is
one register with no arithmetic; the broken variants of the rules that make them so
leave a longer chain (each rule checked to matter). flash_attention_causal's recorded
output (tests/data/sync_outputs) holds the clamp's effect."""

from __future__ import annotations

import pytest

from algorithm.registry import get_strategy
from algorithm.threshold import nest_order, nest_pieces
from semantics.evaluate import arithmetic_ops
from semantics.ir import Op, walk_stmts
from syncproof import load

from tests.support.nest_plans import problems
from tests.support.corpus import ROOT

KERNEL = "tests/data/nest/guarded_lower_end.sync"


def _arithmetic() -> dict:
    synced = get_strategy("threshold")(load(str(ROOT / KERNEL))).program
    return {(op.name, w.engine): arithmetic_ops(w.threshold)
            for op in walk_stmts(synced.body) if isinstance(op, Op) for w in op.waits}


def test_a_guard_on_a_loop_s_lower_end_leaves_waits_of_one_register():
    assert problems(load(str(ROOT / KERNEL))) == []
    assert _arithmetic() == {("ld", "PE"): 1, ("mac", "LD"): 0, ("mac", "ACT"): 0, ("post", "PE"): 0}


def _no_drop(monkeypatch):
    """Broken: a piece whose count is the last piece's where it applies is kept."""
    real = nest_pieces.proves_where
    monkeypatch.setattr(nest_pieces, "proves_where", lambda claim, *rest: claim.op != "==" and real(claim, *rest))


def _no_lexicographic_order(monkeypatch):
    """Broken: two instances of one producer are ordered by their gaps alone."""
    monkeypatch.setattr(nest_order, "_later", lambda a, b, facts: 0)


@pytest.mark.parametrize("broken, wait", [(_no_drop, ("post", "PE")), (_no_lexicographic_order, ("mac", "ACT"))])
def test_teeth_each_rule_shortens_a_wait(monkeypatch, broken, wait):
    broken(monkeypatch)
    assert _arithmetic()[wait] > 0


def test_teeth_a_count_s_min_not_taken_each_way_keeps_an_else_0(monkeypatch):
    """Broken: proofs by bounds read a count's `min`/`max` as atoms (not each way it
    goes) when a piece's `else 0` is tried away: flash_attention_causal's ld_q waits on
    DVE with a longer chain than its recorded output's (`... else if j >= 1 then ...
    else 0`)."""
    from semantics.parser import parse_file

    from algorithm.threshold import reasoning

    def ld_q(program) -> int:
        return next(arithmetic_ops(w.threshold) for op in walk_stmts(program.body) if isinstance(op, Op)
                    and op.name == "ld_q" for w in op.waits if w.engine == "DVE")

    recorded = parse_file(str(ROOT / "tests/data/sync_outputs/suite__flash_attention_causal.sync.threshold.sync"))
    # Proofs are remembered per process: none from before may answer for the broken rule,
    # and none made under it may outlive the test.
    reasoning._remembered.cache_clear()
    monkeypatch.setattr(reasoning, "each_way_of_a_choice", lambda facts, claim: False)
    try:
        broken = get_strategy("threshold")(load(str(ROOT / "kernels/suite/flash_attention_causal.sync"))).program
    finally:
        reasoning._remembered.cache_clear()
    assert ld_q(broken) > ld_q(recorded)
