"""Explicit-state checking: breadth-first exploration of the product of the
reference and counter machines over all interleavings, per parameter valuation.

Both machines are deterministic per label, so the product's reachable states are
those reached by traces both machines accept. In each such state the issue labels
enabled in one machine are compared with the other's:
- the counter program enables an issue the reference does not: unsound (the
  instance would start before a producer completed);
- the reference enables an issue the counter program blocks: over-synchronized;
- the counter program can take no step and is not finished: deadlock;
- the counter program reaches a hardware error (a 1-bit flag set while already set,
  docs/peers.md): unsound, like an early issue, since the hardware's behaviour is
  then undefined.
Breadth-first order makes every reported trace a shortest one.
"""

from __future__ import annotations

from collections import deque

from semantics.ir import Program
from semantics.machines import COMPLETE, ISSUE, Counter, Reference
from semantics.sequential import Unrolled
from verify.engines.valuations import check_valuations, valuations  # noqa: F401 (valuations: imported from here by callers)
from verify.engines.witness import witness_of
from verify.verdicts import (  # noqa: F401 (InternalError: raised here, and imported from here by callers)
    SEVERITY, CheckOptions, CheckResult, EngineName, InternalError, ValuationResult, Verdict,
)


def explore(unrolled: Unrolled, options: CheckOptions = CheckOptions(), deadline: float | None = None,
            on_progress=None) -> ValuationResult:
    """Explore one valuation; stops at the first unsound state (nothing is more severe)."""
    ref, ctr = Reference(unrolled), Counter(unrolled)
    start = (ref.initial(), ctr.initial())
    parent: dict = {start: None}
    queue = deque([start])
    first: dict[Verdict, tuple] = {}
    explored = 0
    while queue:
        state = queue.popleft()
        explored += 1
        if explored % 20000 == 0:
            if on_progress:
                on_progress(explored)
            if deadline is not None and options.clock() > deadline:
                return ValuationResult(Verdict.UNKNOWN, explored, witness_of(first, unrolled, ref, ctr, parent),
                                       frozenset(first), reason="time limit reached")
        r, c = state
        if ctr.error(c):
            first[Verdict.UNSOUND] = (state, ())
            return ValuationResult(Verdict.UNSOUND, explored, witness_of(first, unrolled, ref, ctr, parent),
                                   frozenset(first))
        ref_labels = ref.enabled(r)
        ctr_labels = ctr.enabled(c)
        ref_set = set(ref_labels)
        ctr_set = set(ctr_labels)
        unsound = tuple(l for l in ctr_labels if l not in ref_set)
        if unsound:
            if any(l.kind != ISSUE for l in unsound):
                raise InternalError(f"only the counter machine may complete {unsound} in state {state}")
            first[Verdict.UNSOUND] = (state, unsound)
            return ValuationResult(Verdict.UNSOUND, explored, witness_of(first, unrolled, ref, ctr, parent),
                                   frozenset(first))
        blocked = tuple(l for l in ref_labels if l not in ctr_set)
        if blocked:
            if any(l.kind == COMPLETE for l in blocked):
                raise InternalError(f"only the reference may complete {blocked} in state {state}")
            first.setdefault(Verdict.OVER_SYNCHRONIZED, (state, blocked))
            if not ctr_labels and not ctr.final(c):
                first.setdefault(Verdict.DEADLOCK, (state, blocked))
        for label in ctr_labels:
            successor = (ref.step(r, label), ctr.step(c, label))
            if successor not in parent:
                parent[successor] = (state, label)
                queue.append(successor)
        if len(parent) > options.max_states:
            return ValuationResult(Verdict.UNKNOWN, explored, witness_of(first, unrolled, ref, ctr, parent),
                                   frozenset(first), reason=f"state limit of {options.max_states} reached")
    worst = max(first, key=SEVERITY.__getitem__, default=Verdict.BISIMILAR)
    return ValuationResult(worst, explored, witness_of(first, unrolled, ref, ctr, parent), frozenset(first))


def check(program: Program, bounds: tuple[tuple[str, int, int], ...], options: CheckOptions = CheckOptions()) -> CheckResult:
    """Check `program` (its own waits and barriers) against the reference for every
    valuation within `bounds` (name, lo, hi inclusive), in the loop every per-valuation
    engine shares (verify/engines/valuations.py)."""
    return check_valuations(program, bounds, options, explore, EngineName.EXPLICIT)
