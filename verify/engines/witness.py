"""Counterexamples: the shortest trace to a failing state of the product of the
reference and counter machines, and what fails there, in words. Every engine builds its
witness here (the Z3 engine after replaying its decoded trace on the Python machines)."""

from __future__ import annotations

from semantics.machines import Label, counter_range_violation, describe_label
from verify.verdicts import SEVERITY, ValuationResult, Verdict, Witness


def range_check(unrolled) -> ValuationResult | None:
    """An unsound result when a semaphore value or a threshold of this valuation leaves
    the signed 32-bit range (part of soundness, docs/design.md "Counter increments")."""
    why = counter_range_violation(unrolled)
    if why is None:
        return None
    witness = Witness(Verdict.UNSOUND, unrolled, (), (), (f"32-bit range: {why}",))
    return ValuationResult(Verdict.UNSOUND, 0, witness, frozenset({Verdict.UNSOUND}))


def trace_to(parent: dict, state) -> tuple[Label, ...]:
    """The labels from the initial state to `state` in a breadth-first parent map."""
    labels = []
    while parent[state] is not None:
        state, label = parent[state]
        labels.append(label)
    return tuple(reversed(labels))


def witness_of(first, unrolled, ref, ctr, parent) -> Witness | None:
    if not first:
        return None
    verdict = max(first, key=SEVERITY.__getitem__)
    state, labels = first[verdict]
    return explain(verdict, unrolled, ref, ctr, state, labels, trace_to(parent, state))


def explain(verdict: Verdict, unrolled, ref, ctr, state, labels, trace: tuple[Label, ...]) -> Witness:
    """The witness of `verdict` in the product `state` (r, c), reached by `trace`, where
    `labels` are the issue labels the two machines disagree on there (engines that do not
    keep a parent map, such as the happens-before engine, call this directly)."""
    r, c = state
    lines = []
    engines = unrolled.program.engines
    if verdict == Verdict.UNSOUND and ctr.error(c):
        last = trace[-1:]
        who = f" when {describe_label(unrolled, last[0])}" if last else ""
        lines.append(f"hardware error: {ctr.error(c)}{who}")
    for label in labels:
        y = unrolled.instances[label.instance]
        name = f"{engines[y.engine]}.{y.describe()}"
        if verdict == Verdict.UNSOUND:
            for x in ref.missing_producers(r, y):
                lines.append(f"{name} issued before its producer {engines[x.engine]}.{x.describe()} "
                             f"({engines[x.engine]} instance #{x.local}) completed")
            for n, (f, t) in enumerate(y.waits):
                wait = y.op.waits[n]
                lines.append(f"  its wait {wait.engine} >= {t} (line {wait.loc.line if wait.loc else '?'}) "
                             f"held: C[{engines[f]}] = {ctr.counter(c, f)}")
            for kind, other, ident in y.syncs:
                if kind in ("waitflag", "pop"):
                    lines.append(f"  its {kind} {engines[other]}:{ident} held (line {y.op.loc.line if y.op.loc else '?'}): "
                                 f"an earlier signal of {engines[other]} satisfied it")
            if not y.waits and not any(k in ("waitflag", "pop") for k, _, _ in y.syncs):
                lines.append(f"  {name} has no wait clause")
        else:
            blocked = ctr.blocking_waits(c, y)
            barrier = ctr.at_barrier(c, y.engine)
            if barrier is not None:
                loc = unrolled.barriers[barrier]
                waiting = [engines[e] for e in range(len(engines)) if ctr.at_barrier(c, e) is None]
                where = f"the barrier of line {loc.line}" if loc else f"barrier #{barrier + 1} of the synchronized program"
                lines.append(f"the reference may issue {name}, but {engines[y.engine]} is held at {where}"
                             f" until {', '.join(waiting)} "
                             f"{'arrives' if len(waiting) == 1 else 'arrive'}")
            for why in ctr.blocking_syncs(c, y):
                lines.append(f"the reference may issue {name} (every producer has completed), but {why}")
            for n, f, value in blocked:
                wait = y.op.waits[n]
                lines.append(f"the reference may issue {name} (every producer has completed), but its wait "
                             f"{wait.engine} >= {y.waits[n][1]} (line {wait.loc.line if wait.loc else '?'}) "
                             f"blocks it: C[{engines[f]}] = {value}")
    if verdict == Verdict.DEADLOCK:
        lines.insert(0, "no engine can take a step, and not every engine has finished")
    return Witness(verdict, unrolled, tuple(trace), tuple(labels), tuple(lines))
