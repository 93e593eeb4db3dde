"""The one cost function synchronized programs are compared by.

A synchronized program is good when it is verified (bisimilar to the reference, or sound
where its strategy reports conservative waits), deterministic for its input, and no worse
than before under this cost. The cost compares, in order:
1. conservative waits (sound but not exact);
2. barriers;
3. waits;
4. the run-time arithmetic of its thresholds, as the timing model charges it, counted
   statically on the program as given: the operations of each wait threshold as written
   (verify/timing/scheduler.py `arithmetic_ops`; `iters(v)`, `count(F)` and loop
   registers are atoms: the tracked counts' updates are not arithmetic of the threshold,
   and the timing model charges them in 5), plus per loop register its own operations
   (`register_ops`): `max(1, arithmetic_ops(init))` to set it (at least one instruction)
   and, when it has a step (a literal `step 0` is none), `1 + arithmetic_ops(step)` to
   advance it. So moving a
   sub-expression of k >= 1 operations from a threshold into a register's init costs the
   same, a register several thresholds share costs less than its expression in each,
   and a stepped register costs its add (its run-time counts, per entry and back-edge,
   are in 5);
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
from semantics.evaluate import arithmetic_ops
from semantics.registers import register_ops, registers_of
from verify.timing.scheduler import load_profile
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
    """The cost of a synchronized program (its strategy reports `conservative`), counted
    on the program as given (with its loop registers)."""
    stmts = list(walk_stmts(program.body))
    waits = [w for s in stmts if isinstance(s, Op) for w in s.waits]
    return Cost(conservative, sum(isinstance(s, Barrier) for s in stmts), len(waits),
                arithmetic(program), cycles(program, profile))


def arithmetic(program: Program) -> int:
    """Component 4: the operations of every wait threshold as written, plus every loop
    register's (`register_ops`: setting it, and advancing it when it has a step)."""
    thresholds = sum(arithmetic_ops(w.threshold) for s in walk_stmts(program.body) if isinstance(s, Op)
                     for w in s.waits)
    return thresholds + sum(sum(register_ops(reg)) for _, reg in registers_of(program).values())


def cycles(program: Program, profile: str = DEFAULT_PROFILE) -> float | None:
    """Simulated cycles at `valuation(program)`; the run keeps the registers (`unroll`
    inlines them for the machine and keeps the program as given for the timing model)."""
    values = valuation(program)
    try:
        count_instances(program, values, MAX_INSTANCES)
        return simulate_unrolled(unroll(program, values, limit=MAX_INSTANCES), load_profile(profile)).cycles
    except (UnrollLimit, SyncproofError):  # too large, a deadlock or a run-time error: not timed
        return None
