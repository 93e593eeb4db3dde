"""The event-time ("partial order") encoding of the product of the two machines.

Instead of unrolling k interleaved steps, every potential instance y gets an issue
time I(y) and a completion time D(y), every potential barrier b a pass time B(b)
(integers), and a single time point T stands for a reachable product state: the
state after every event with time < T. Constraints, for existing items:

1. 1 <= I(y) < D(y): an instance completes after it issues.
2. Along each engine's counter stream (instances and barriers, static order = stream
   order), an item starts after the previous existing item ended.
3. B(b) = the latest end of the items before b in any stream: all engines pass b
   together, in the same step as the completion that brought the last one there
   (the machines pass barriers as part of that complete; leading barriers pass at 0).
4. If I(y) < T: issue(y) is enabled, in both machines, in the state made of the events
   strictly before I(y). That state is built from the times (`state_at`) and the
   enabledness is decided by the mirrored step rules of verify/engines/z3_machines.py, the
   same functions the step-by-step encoding uses.
5. The state at T shows a finding (unsound, deadlock, over-synchronized), again by the
   mirrored rules.

Why this is the set of reachable product states. (Run -> times) Number the labels of a
run 1, 2, ...; a barrier pass gets the number of the complete that triggered it (0 for
leading barriers); T is one more than the run's length; events the run has not taken
get distinct times after T in static order, which satisfies 1-3, and 4 only speaks of
events before T. (Times -> run) Sort the events before T by time, completions before
issues at equal times. Each engine's events are strictly ordered by 1-2. An issue at
time t was enabled on the events strictly before t; the events tied with it are other
engines' issues (which change no counter and no completion) and completions (which only
raise counters, complete producers and complete DMA triggers, on which a transfer
waits: enabledness is monotone in them within one barrier epoch), and no barrier pass ties with an issue (3 puts B(b) at or after the
ends before b, strictly before the starts after it). A barrier pass is placed right
after the last completion it waits for (3), where the counter machine passes it too.
So the sorted events are a run of both machines ending in the state at T.

DMA queues are engines of the potential program (their streams hold their transfers and
every barrier), so 1-3 hold for them as for any engine: FIFO per queue, and a barrier
passes once the queues drained.

No depth bound is involved: one query covers every reachable state of every valuation
within the bounds, so an `unsat` answer is complete.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import z3

from semantics.machines import COMPLETE, ISSUE

from verify.engines import z3_machines as zm
from verify.engines.deadline import NO_DEADLINE, Deadline


@attrs.frozen(eq=False)
class Timeline:
    issue: tuple  # per potential instance (by number): Int
    complete: tuple
    passed: tuple  # per potential barrier: Int
    facts: tuple


def timeline(pp: zm.PotentialProgram) -> Timeline:
    issue = tuple(z3.Int(f"I{y.number}") for y in pp.instances)
    complete = tuple(z3.Int(f"D{y.number}") for y in pp.instances)
    passed = tuple(z3.Int(f"B{b.number}") for b in pp.barriers)
    facts = []
    for y in pp.instances:
        facts.append(z3.Implies(y.exists, z3.And(1 <= issue[y.number], issue[y.number] < complete[y.number])))
    # before[b][e]: the latest end among existing items before barrier b in engine e's stream.
    before = [[None] * len(pp.program.engines) for _ in pp.barriers]
    for e, stream in enumerate(pp.counter_streams):
        latest = z3.IntVal(0)
        for n, item in enumerate(stream):
            if isinstance(item, zm.PotentialInstance):
                start, end = issue[item.number], complete[item.number]
                facts.append(z3.Implies(item.exists, latest < start))
            else:
                start = end = passed[item.number]
                before[item.number][e] = latest
            cursor = z3.Int(f"end{e}_{n}")  # named, so later items share the term
            facts.append(cursor == z3.If(item.exists, end, latest))
            latest = cursor
    for b in pp.barriers:
        ends = before[b.number]
        last = ends[0]
        for end in ends[1:]:
            last = z3.If(end > last, end, last)
        facts.append(z3.Implies(b.exists, passed[b.number] == last))
    return Timeline(issue, complete, passed, tuple(facts))


class _LazyState(Sequence):
    """A symbolic state whose per-engine (position, busy) terms are built on first use:
    an issue's enabledness reads only a few engines."""

    def __init__(self, size, build):
        self._size, self._build, self._cache = size, build, {}

    def __len__(self):
        return self._size

    def __getitem__(self, engine):
        if isinstance(engine, slice):
            return tuple(self[e] for e in range(self._size)[engine])
        if engine < 0:
            engine += self._size
        if not 0 <= engine < self._size:
            raise IndexError(engine)
        if engine not in self._cache:
            self._cache[engine] = self._build(engine)
        return self._cache[engine]

    def __add__(self, other):
        return tuple(self) + tuple(other)


def _busy(pp, tl, engine, t):
    return z3.Or(*[z3.And(y.exists, tl.issue[y.number] < t, t <= tl.complete[y.number])
                   for y in pp.reference_streams[engine]])


def _count(bits):
    return z3.Sum(*bits) if len(bits) > 1 else (bits[0] if bits else z3.IntVal(0))


def counter_state_at(pp: zm.PotentialProgram, tl: Timeline, t) -> Sequence:
    """The counter machine's state after the events strictly before t."""
    def build(e):
        ends = [z3.If(z3.And(item.exists, (tl.complete[item.number] if isinstance(item, zm.PotentialInstance)
                                           else tl.passed[item.number]) < t), 1, 0)
                for item in pp.counter_streams[e]]
        return _count(ends), _busy(pp, tl, e, t)
    return _LazyState(len(pp.program.engines), build)


def reference_state_at(pp: zm.PotentialProgram, tl: Timeline, t) -> Sequence:
    """The reference machine's state after the events strictly before t."""
    def build(e):
        ends = [z3.If(z3.And(y.exists, tl.complete[y.number] < t), 1, 0) for y in pp.reference_streams[e]]
        return _count(ends), _busy(pp, tl, e, t)
    return _LazyState(len(pp.program.engines), build)


def issues_enabled(pp: zm.PotentialProgram, tl: Timeline, horizon, deadline: Deadline = NO_DEADLINE) -> list:
    """Constraint 4: every issue before `horizon` was enabled in both machines (the loop
    polls `deadline`: each instance builds terms over whole streams)."""
    facts = []
    for y in pp.instances:
        deadline.check()
        at = tl.issue[y.number]
        enabled = z3.And(zm.counter_issue_enabled(pp, counter_state_at(pp, tl, at), y),
                         zm.reference_issue_enabled(pp, reference_state_at(pp, tl, at), y))
        facts.append(z3.Implies(z3.And(y.exists, at < horizon), enabled))
    return facts


def schedule(pp: zm.PotentialProgram, tl: Timeline, model: z3.ModelRef, horizon) -> list:
    """The run a model describes: (kind, potential instance) for every event before
    the horizon, sorted by time, completions first at equal times."""
    def value(term):
        return model.eval(term, model_completion=True)

    end = value(horizon).as_long()
    events = []
    for y in pp.instances:
        if not z3.is_true(value(y.exists)):
            continue
        for kind, time, order in ((ISSUE, tl.issue[y.number], 1), (COMPLETE, tl.complete[y.number], 0)):
            at = value(time).as_long()
            if at < end:
                events.append((at, order, y.number, kind, y))
    events.sort(key=lambda event: event[:3])
    return [(kind, y) for _, _, _, kind, y in events]
