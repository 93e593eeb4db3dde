"""The independent oracle's flags and token queues (docs/peers.md section 2), written
from the document, not from semantics/machines.py (nothing of semantics.machines,
semantics.sequential, verify/ or algorithm/ is imported).

The counter program's state grows by the set flags, a frozenset of
(from engine, to engine, id), the token counts, a sorted tuple of
((from engine, to engine, queue), count) with zero counts left out, and the flag
whose double set put the machine in the error state (None: no error):

- an instance may issue when its counter waits hold, every flag it `waitflag`s is set,
  every queue it `pop`s holds as many tokens as it pops, and every queue it `push`es
  has room for its pushes (depth 8, `TOKEN_DEPTH`); issuing clears those flags and
  takes those tokens;
- its completion sets the flags it `setflag`s (one already set: the error state, in
  which nothing is enabled and the finding is `unsound`) and pushes its tokens;
- barriers reset the counters only; flags and tokens left at the end are no error;
- the reference ignores the clauses.
"""

from __future__ import annotations

from semantics.ir import TOKEN_DEPTH

from tests.support.oracle import (
    DEADLOCK, OVER_SYNCHRONIZED, UNSOUND, Product, all_valuations, shortest, unroll_program, worst,
)


def _count(syncs, kind: str) -> dict:
    counts: dict = {}
    for k, engine, ident in syncs:
        if k == kind:
            counts[(engine, ident)] = counts.get((engine, ident), 0) + 1
    return counts


class PeerProduct(Product):
    """`Product` with flags and token queues; a state is
    (positions, busy, counters, completed, flags, queues, error)."""

    def initial(self):
        return super().initial() + (frozenset(), (), None)

    def _peer_ready(self, inst, flags, queues: dict) -> bool:
        me = inst.engine
        for (other, ident), _ in _count(inst.syncs, "waitflag").items():
            if (other, me, ident) not in flags:
                return False
        for (other, q), n in _count(inst.syncs, "pop").items():
            if queues.get((other, me, q), 0) < n:
                return False
        for (other, q), n in _count(inst.syncs, "push").items():
            if queues.get((me, other, q), 0) + n > TOKEN_DEPTH:
                return False
        return True

    def observe(self, state):
        pos, busy, counters, completed, flags, queues, error = state
        if error is not None:
            return set(), set(), set(), False
        counter_issue, reference_issue, completes, final = super().observe((pos, busy, counters, completed))
        table = dict(queues)
        counter_issue = {y for y in counter_issue if self._peer_ready(self.run.instances[y], flags, table)}
        return counter_issue, reference_issue, completes, final

    def findings(self, state) -> set[str]:
        if state[-1] is not None:
            return {UNSOUND}
        return super().findings(state)

    def step(self, state, kind: str, y: int):
        pos, busy, counters, completed, flags, queues, error = state
        inst = self.run.instances[y]
        me = inst.engine
        counter_issue, _, completes, _ = self.observe(state)
        table = dict(queues)
        if kind == "issue":
            assert y in counter_issue, f"issue {y} is not enabled"
            k = self.number[me]
            base = (pos, busy[:k] + (True,) + busy[k + 1:], counters, completed)
            for (other, ident), _ in _count(inst.syncs, "waitflag").items():
                flags = flags - {(other, me, ident)}
            for (other, q), n in _count(inst.syncs, "pop").items():
                table[(other, me, q)] -= n
        else:
            assert y in completes, f"complete {y} is not enabled"
            k = self.number[me]
            p2 = pos[:k] + (pos[k] + 1,) + pos[k + 1:]
            b2 = busy[:k] + (False,) + busy[k + 1:]
            c2 = counters[:k] + (counters[k] + 1,) + counters[k + 1:]
            p2, c2 = self._normalize(p2, b2, c2)
            base = (p2, b2, c2, completed | {y})
            for k, other, ident in inst.syncs:
                if k == "setflag":
                    if (me, other, ident) in flags:
                        error = (me, other, ident)
                        break
                    flags = flags | {(me, other, ident)}
            for (other, q), n in _count(inst.syncs, "push").items():
                table[(me, other, q)] = table.get((me, other, q), 0) + n
        queues = tuple(sorted((k, v) for k, v in table.items() if v))
        return base + (flags, queues, error)


def peer_verdict(program, bounds) -> str:
    """The oracle verdict of `program` with its flags and token queues, for every
    valuation within `bounds`, with the DESIGN precedence."""
    findings: set[str] = set()
    for values in all_valuations(bounds):
        findings |= set(shortest(unroll_program(program, values), PeerProduct))
        if UNSOUND in findings:
            break
    return worst(findings)


__all__ = ["PeerProduct", "peer_verdict", "DEADLOCK", "OVER_SYNCHRONIZED", "UNSOUND"]
