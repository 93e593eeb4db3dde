"""The flags and token queues of the counter machine (semantics/machines.py) against
the independent oracle's (tests/support/oracle_peers.py, written from docs/peers.md):
on generated programs with peer clauses (the `flags` and `tokens` strategies' outputs,
and those outputs with one clause dropped or one id changed, so that unsound and
deadlocking programs come up too) the explicit checker's verdict is the oracle's.
A counter machine that ignores `waitflag` must be caught."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import HealthCheck, Phase, event, find, given, note, settings
from hypothesis import strategies as st

from algorithm.registry import get_strategy
from semantics.ir import Const, map_ops, ops
from semantics.machines import Counter
from semantics.printer import print_program
from verify.engines import explicit
from verify.engines.explicit import check
from verify.search.generators import param_bounds, programs
from verify.verdicts import CheckOptions

from tests.support.budget import scaled
from tests.support.oracle_peers import peer_verdict

HI = 1  # every parameter over 0..1: the oracle's naive states stay few


def _perturb(program, pick: int, how: int):
    """`program` with its `pick`-th sync clause dropped (how 0) or its id moved by one
    within 0..1 (how 1); unchanged when it has no clause."""
    clauses = [(op.name, k) for op in ops(program) for k in range(len(op.syncs))]
    if not clauses:
        return program
    name, index = clauses[pick % len(clauses)]

    def change(op):
        if op.name != name:
            return op
        syncs = list(op.syncs)
        if how == 0:
            del syncs[index]
        else:
            sync = syncs[index]
            syncs[index] = attrs.evolve(sync, id=Const(1) if sync.id == Const(0) else Const(0))
        return attrs.evolve(op, syncs=tuple(syncs))

    return attrs.evolve(program, body=map_ops(program.body, change))


@st.composite
def peer_programs(draw):
    program = draw(programs(max_depth=2, engines=(2, 3), max_param=HI))
    synced = get_strategy(draw(st.sampled_from(("flags", "tokens"))))(program).program
    if draw(st.integers(0, 3)):  # mostly perturbed: unsound and deadlocking programs too
        synced = _perturb(synced, draw(st.integers(0, 50)), draw(st.integers(0, 1)))
    return synced


def agrees(program) -> bool:
    bounds = param_bounds(program, HI)
    expected = peer_verdict(program, bounds)
    result = check(program, bounds, CheckOptions(max_states=100_000))
    event(f"oracle verdict {expected}")
    return result.complete and result.verdict.value == expected


@pytest.mark.slow
@scaled(1)  # 60 in the ci profile (~7 s; most examples perturbed, so every verdict occurs)
@given(peer_programs())
def test_counter_machine_flags_and_tokens_agree_with_the_oracle(program):
    note(print_program(program))
    bounds = param_bounds(program, HI)
    expected = peer_verdict(program, bounds)
    result = check(program, bounds, CheckOptions(max_states=100_000))
    event(f"oracle verdict {expected}")
    assert result.complete, result.reason
    assert result.verdict.value == expected, (result.verdict, result.witness and result.witness.explanation)


class CounterIgnoringWaitflag(Counter):
    """A broken counter machine: `waitflag` never blocks (the flag is still cleared)."""

    def _sync_allows(self, state, y):
        saved = self.wait_bits[y]
        self.wait_bits[y] = 0
        try:
            return super()._sync_allows(state, y)
        finally:
            self.wait_bits[y] = saved


def test_teeth_the_oracle_catches_a_counter_machine_ignoring_waitflag(monkeypatch):
    monkeypatch.setattr(explicit, "Counter", CounterIgnoringWaitflag)
    program = find(peer_programs(), lambda p: not agrees(p),
                   settings=settings(database=None, derandomize=True, max_examples=300, deadline=None,
                                     suppress_health_check=list(HealthCheck), phases=(Phase.explicit, Phase.generate)))
    assert any(s.kind == "waitflag" for op in ops(program) for s in op.syncs), print_program(program)
