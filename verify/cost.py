"""The one cost function synchronized programs are compared by.

A synchronized program is good when it is verified (bisimilar to the reference, or sound
where its strategy reports conservative waits), deterministic for its input, and no worse
than before under this cost. The cost compares, in order:
1. conservative waits (sound but not exact);
2. barriers;
3. waits;
4. the run-time arithmetic of its thresholds, as the timing model charges it (the
   operations of each threshold expression, verify/timing/scheduler.py `arithmetic_ops`;
   `iters(v)` and `count(F)` are atoms: the registers' updates are not arithmetic of the
   threshold, and the timing model charges them in 5);
5. the simulated cycles on the default profile, at the kernel's default parameter values
   (parameters without a default take their lower bound, at least 4).
Costs order lexicographically: a program is worse when it is worse in one of these and
better in none before it.
"""

from __future__ import annotations

import attrs

from semantics.errors import SyncproofError
from semantics.ir import Barrier, Op, Program, walk_stmts
from semantics.sequential import UnrollLimit, count_instances, unroll
from verify.timing.scheduler import arithmetic_ops, load_profile
from verify.timing.scheduler import simulate as simulate_unrolled

DEFAULT_PROFILE = "trainium"
MAX_INSTANCES = 200_000  # a run larger than this is not timed: its cycles are left out (None)


@attrs.frozen(order=True)
class Cost:
    conservative: int
    barriers: int
    waits: int
    arithmetic: int
    cycles: float | None  # None: not simulated (too large, or no valuation)

    def worse_than(self, other: Cost) -> str | None:
        """Which component makes this cost worse than `other` (the first that differs,
        when it is higher here), or None when it is no worse."""
        for field in attrs.fields(Cost):
            mine, theirs = getattr(self, field.name), getattr(other, field.name)
            if mine is None or theirs is None or mine == theirs:
                continue
            return f"{field.name} {theirs} -> {mine}" if mine > theirs else None
        return None


def valuation(program: Program) -> dict[str, int]:
    return {p.name: p.default if p.default is not None else max(p.lower, 4) for p in program.params}


def cost_of(program: Program, conservative: int = 0, profile: str = DEFAULT_PROFILE) -> Cost:
    """The cost of a synchronized program (its strategy reports `conservative`)."""
    stmts = list(walk_stmts(program.body))
    waits = [w for s in stmts if isinstance(s, Op) for w in s.waits]
    return Cost(conservative, sum(isinstance(s, Barrier) for s in stmts), len(waits),
                sum(arithmetic_ops(w.threshold) for w in waits), cycles(program, profile))


def cycles(program: Program, profile: str = DEFAULT_PROFILE) -> float | None:
    values = valuation(program)
    try:
        count_instances(program, values, MAX_INSTANCES)
        return simulate_unrolled(unroll(program, values, limit=MAX_INSTANCES), load_profile(profile)).cycles
    except (UnrollLimit, SyncproofError):  # too large, a deadlock or a run-time error: not timed
        return None
