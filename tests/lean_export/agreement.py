"""The gate of the Lean definitions: the mirror (lean_mirror.py, lean_machines.py), run
on the program term the export emitted, against the reference semantics
(semantics/sequential.py and semantics/machines.py), valuation by valuation.

Agreement on one valuation: the two unrollings agree on whether it is valid (the mirror's
`ok` is false exactly where `unroll` raises an EvalError), on the 32-bit range
(`inInt32Range` against `counter_range_violation`), and in every state the Python
Reference machine reaches the mirror's `refEnabled` (the T_min route) and
`refEnabledSpec` (the definition) enable its labels, and `refStepFn` gives its
successors; likewise `ctrEnabled` / `ctrStepFn` in every state the Python Counter
reaches (barriers passed at the same points).
"""

from __future__ import annotations

import itertools
from collections import deque

import attrs

from semantics.errors import EvalError
from semantics.machines import Counter, Reference, counter_range_violation
from semantics.sequential import unroll as python_unroll

from tests.lean_export.lean_machines import Machines
from tests.lean_export.lean_mirror import unroll as lean_unroll


@attrs.frozen
class Agreement:
    valuations: int  # valid valuations compared
    invalid: int  # valuations both sides reject
    states: int  # machine states compared (reference and counter)
    disagreement: str | None  # the first difference, in words
    capped: bool = False  # some valuation had more states than the cap: not compared in full


def bounded_valuations(params, max_param: int = 2):
    """Every valuation with each parameter in lower..max(max_param, lower) (`params`:
    the emitted `[(name, lower), ...]`)."""
    ranges = [range(lower, max(max_param, lower) + 1) for _, lower in params]
    for values in itertools.product(*ranges):
        yield [(name, value) for (name, _), value in zip(params, values)]


def _reachable(machine, cap: int):
    start = machine.initial()
    seen, queue = {start}, deque([start])
    while queue:
        state = queue.popleft()
        labels = machine.enabled(state)
        successors = [(label, machine.step(state, label)) for label in labels]
        yield state, labels, successors
        for _, nxt in successors:
            if nxt not in seen:
                if len(seen) >= cap:
                    raise _Capped
                seen.add(nxt)
                queue.append(nxt)


class _Capped(Exception):
    pass


def _labels(labels) -> set:
    return {(kind, inst) for kind, inst in labels}


def compare_valuation(program, term, valuation, cap: int) -> tuple[int, str | None]:
    """(states compared, first disagreement) for one valuation; raises _Capped."""
    u = lean_unroll(term, valuation)
    try:
        unrolled = python_unroll(program, dict(valuation))
    except EvalError:
        return 0, None if not u.ok else f"{valuation}: Python rejects the valuation, the Lean unrolling is ok"
    if not u.ok:
        return 0, f"{valuation}: the Lean unrolling fails where Python's succeeds"
    m = Machines(u)
    if m.inInt32Range() != (counter_range_violation(unrolled) is None):
        return 0, f"{valuation}: inInt32Range differs from counter_range_violation"
    need, states = m.needTable(), 0
    ref, ctr = Reference(unrolled), Counter(unrolled)
    if m.refInit() != ref.initial() or m.ctrInit() != ctr.initial():
        return 0, f"{valuation}: initial states differ"
    for state, labels, successors in _reachable(ref, cap):
        states += 1
        if _labels(m.refEnabled(need, state)) != _labels(labels):
            return states, f"{valuation}: refEnabled {m.refEnabled(need, state)} != Reference {labels} at {state}"
        if _labels(m.refEnabledSpec(state)) != _labels(labels):
            return states, f"{valuation}: refEnabledSpec {m.refEnabledSpec(state)} != Reference {labels} at {state}"
        for label, nxt in successors:
            if m.refStepFn(state, tuple(label)) != nxt:
                return states, f"{valuation}: refStepFn differs after {label} at {state}"
    for state, labels, successors in _reachable(ctr, cap):
        states += 1
        if _labels(m.ctrEnabled(state)) != _labels(labels):
            return states, f"{valuation}: ctrEnabled {m.ctrEnabled(state)} != Counter {labels} at {state}"
        for label, nxt in successors:
            if m.ctrStepFn(state, tuple(label)) != nxt:
                return states, f"{valuation}: ctrStepFn differs after {label} at {state}"
    return states, None


def agree(program, term, max_param: int = 2, cap: int = 1_000_000) -> Agreement:
    """Compare on every valuation within the bounds; stop at the first disagreement.
    `program` is the synchronized program (semantics.ir) that `term` was printed from."""
    valuations = invalid = states = 0
    capped = False
    for valuation in bounded_valuations(term["params"], max_param):
        try:
            n, why = compare_valuation(program, term, valuation, cap)
        except _Capped:
            capped = True
            continue
        states += n
        if why is not None:
            return Agreement(valuations, invalid, states, why, capped)
        if n:
            valuations += 1
        else:
            invalid += 1
    return Agreement(valuations, invalid, states, None, capped)
