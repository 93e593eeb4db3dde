"""The happens-before engine: exact verdicts for programs synchronized by waits and
barriers only (no flags, no tokens), in O(events x engines) time and memory per
parameter valuation (the argument: docs/happens-before.md).

For one valuation the counter machine is a partial order of events: issue(y) and
complete(y) for every instance y, and one event per barrier. Edges: each engine's
stream order (issue(y) -> complete(y) -> the engine's next item); a barrier follows
every engine's last event before it and precedes every engine's next item; a wait
`F >= t` of y in barrier segment s (t >= 1) makes the k-th counted completion of F in
segment s precede issue(y), k = ceil(t / increment(F)), and makes issue(y) impossible
when F completes fewer than k counted instances in that segment. DMA queues
(docs/happens-before.md, "DMA queues"): a queue is an engine; a DMA op's trigger
(on its engine, not counted) precedes its transfer (on the queue), an edge like a wait's;
the reference holds a trigger for its transfer's producers. The reachable counter states are exactly the down-closed
event sets that contain every barrier whose predecessors they contain ("eager
barriers"), so every question about reachable states becomes a question about the
least such set holding some events, answered with vector clocks.

A vector clock, a "frontier" here, is a counter-machine state without peer parts:
per engine, 2 * (position in its stream, barriers included) + (1 if busy). The clock
of an event is the state of the least reachable set holding it, so "event x precedes
event e" is one comparison, and the frontier's label count is the length of every
trace reaching that state.

Verdicts (most severe first), each with the least state showing it, which has the
length of the explicit engine's breadth-first (shortest) trace:
- unsound: some issue(y) happens while the completion of y's last producer on some
  engine does not precede it; state: everything before issue(y);
- deadlock: some event never happens; state: every event that happens;
- over-synchronized: for some y, the least state holding y's reference prerequisites
  (the completion of y's engine's previous instance and of its last producer on each
  engine), closed under eager barriers, misses a predecessor of issue(y).
"""

from __future__ import annotations

import attrs

from semantics.errors import UsageError
from semantics.ir import Program, increments, peer_clause
from semantics.machines import COMPLETE, ISSUE, Counter, Label, Reference
from semantics.sequential import Unrolled, requirements

from verify.engines.explicit import InternalError
from verify.engines.valuations import check_valuations
from verify.engines.witness import explain
from verify.verdicts import CheckOptions, CheckResult, EngineName, ValuationResult, Verdict, Witness

ENGINE = EngineName.HAPPENS_BEFORE
NEVER = -1  # a wait source that does not exist: the waiting issue never happens


@attrs.frozen
class Layout:
    """Where every instance and barrier sits in the engines' streams."""

    engines: int
    position: tuple[int, ...]  # per instance: position in its engine's stream
    segment: tuple[int, ...]  # per instance: number of barriers before it
    # per engine, per local index: the instance (counted ones only: a DMA trigger has none)
    local_instance: tuple[tuple[int, ...], ...]
    segment_start: tuple[tuple[int, ...], ...]  # per engine, per segment (and one past): first local index
    barrier_at: tuple[tuple[int, ...], ...]  # per barrier, per engine: stream position
    barrier_run_end: tuple[int, ...]  # per barrier: the last of the barriers that follow it back to back
    labels_before: tuple[tuple[int, ...], ...]  # per engine, per stream position p: labels in stream[:p]
    previous: tuple[int, ...] = ()  # per instance: the instance before it in its stream (DMA triggers too), or -1
    increment: tuple[int, ...] = ()  # per engine: what one counted completion adds to its counter


def layout(unrolled: Unrolled) -> Layout:
    n_engines, n_barriers = len(unrolled.streams), len(unrolled.barriers)
    position = [0] * len(unrolled.instances)
    segment = [0] * len(unrolled.instances)
    previous = [-1] * len(unrolled.instances)
    local_instance, segment_start, labels_before = [], [], []
    barrier_at = [[0] * n_engines for _ in range(n_barriers)]
    for engine, stream in enumerate(unrolled.streams):
        locals_, starts, before, seen, last = [], [0], [0], 0, -1
        for pos, item in enumerate(stream):
            if item < 0:
                barrier_at[-1 - item][engine] = pos
                starts.append(len(locals_))
            else:
                position[item], segment[item], previous[item], last = pos, len(starts) - 1, last, item
                if not unrolled.instances[item].is_trigger:  # a DMA trigger does not count
                    locals_.append(item)
                seen += 2
            before.append(seen)
        starts.append(len(locals_))
        local_instance.append(tuple(locals_))
        segment_start.append(tuple(starts))
        labels_before.append(tuple(before))
    run_end = list(range(n_barriers))
    for b in range(n_barriers - 2, -1, -1):
        if all(barrier_at[b + 1][f] == barrier_at[b][f] + 1 for f in range(n_engines)):
            run_end[b] = run_end[b + 1]
    return Layout(n_engines, tuple(position), tuple(segment), tuple(local_instance), tuple(segment_start),
                  tuple(tuple(b) for b in barrier_at), tuple(run_end), tuple(labels_before), tuple(previous),
                  increments(unrolled.program))


def wait_sources(unrolled: Unrolled, lay: Layout) -> tuple[tuple[int, ...], ...]:
    """Per instance y: the instances whose completion its waits make precede issue(y)
    (the k-th counted completion of F since y's barrier, k = ceil(t / increment(F)):
    C[F] >= t exactly then), NEVER for a threshold F never reaches; for a DMA transfer,
    its trigger (the transfer issues once its trigger completed)."""
    out = []
    for y in unrolled.instances:
        sources = [y.trigger] if y.trigger >= 0 else []
        seg = lay.segment[y.index]
        for f, t in y.waits:
            if t <= 0:
                continue
            local = lay.segment_start[f][seg] + -(-t // lay.increment[f]) - 1
            sources.append(lay.local_instance[f][local] if local < lay.segment_start[f][seg + 1] else NEVER)
        out.append(tuple(sources))
    return tuple(out)


def pass_barriers(frontier: list[int], lay: Layout, unrolled: Unrolled) -> list[int]:
    """The least state holding `frontier` in which no barrier is waiting to be passed:
    when every engine stands idle at the same barrier, all pass it (and the barriers
    right behind it) together."""
    stream = unrolled.streams[0] if lay.engines else ()
    v = frontier[0] if lay.engines else 1
    pos = v >> 1
    if v & 1 or pos >= len(stream) or stream[pos] >= 0:
        return frontier
    b = -1 - stream[pos]
    if any(frontier[f] != 2 * at for f, at in enumerate(lay.barrier_at[b])):
        return frontier
    return [2 * at + 2 for at in lay.barrier_at[lay.barrier_run_end[b]]]


@attrs.frozen
class Clocks:
    """The happens-before order of one valuation, as vector clocks."""

    issue: tuple[tuple[int, ...] | None, ...]  # per instance: clock of issue(y); None: never happens
    order: tuple[Label, ...]  # the labels that happen, in a topological order
    stuck: tuple[int, ...]  # the state holding every event that happens (final unless deadlock)
    events: int  # events that happen, barriers included


def clocks(unrolled: Unrolled, lay: Layout, sources) -> Clocks:
    """Vector clocks of every event that happens (Kahn's algorithm, one engine at a time)."""
    n = lay.engines
    streams, position, engine_of = unrolled.streams, lay.position, [i.engine for i in unrolled.instances]
    issue: list = [None] * len(unrolled.instances)
    start = pass_barriers([0] * n, lay, unrolled)
    cursor = [v >> 1 for v in start]
    current = [start] * n  # per engine: the clock of its last event
    events = len(unrolled.barriers) - sum(1 for b in lay.barrier_at if n and b[0] >= cursor[0])
    arrived = [0] * len(unrolled.barriers)
    standing = [False] * n  # arrived at the barrier at its cursor
    waiting: dict[int, list[int]] = {}
    order: list[Label] = []
    work = list(range(n))
    while work:
        e = work.pop()
        stream = streams[e]
        while cursor[e] < len(stream) and not standing[e]:
            item = stream[cursor[e]]
            if item < 0:
                b = -1 - item
                arrived[b] += 1
                standing[e] = True
                if arrived[b] == n:  # the last engine arrives: all pass together
                    clock = [max(c[f] for c in current) for f in range(n)]
                    for f, at in enumerate(lay.barrier_at[b]):
                        clock[f] = 2 * at + 2
                        cursor[f] = at + 1
                        standing[f] = False
                    current = [clock] * n
                    events += 1
                    work.extend(f for f in range(n) if f != e)
                continue
            blocked = next((x for x in sources[item] if x == NEVER or cursor[engine_of[x]] <= position[x]), None)
            if blocked is not None:
                if blocked != NEVER:
                    waiting.setdefault(blocked, []).append(e)
                break
            clock = list(current[e])
            for x in sources[item]:
                fx, done = engine_of[x], 2 * position[x] + 2
                if clock[fx] >= done:
                    continue  # complete(x) precedes already, and so does all of its down-set
                clock = [a if a >= b else b for a, b in zip(clock, issue[x])]
                clock[fx] = done
            pos = cursor[e]
            clock[e] = 2 * pos + 1
            issue[item] = tuple(clock)
            clock[e] = 2 * pos + 2
            current[e] = clock
            order.append(Label(ISSUE, item))
            order.append(Label(COMPLETE, item))
            events += 2
            cursor[e] = pos + 1
            work.extend(waiting.pop(item, ()))
    return Clocks(tuple(issue), tuple(order), tuple(2 * c for c in cursor), events)


def label_count(frontier, lay: Layout) -> int:
    """The number of labels (issues and completions) in the state `frontier`: the length
    of every trace that reaches it."""
    return sum(lay.labels_before[f][v >> 1] + (v & 1) for f, v in enumerate(frontier))


def completed(frontier, lay: Layout, x: int, engine: int) -> bool:
    """Does the state `frontier` hold the completion of instance x (of `engine`)?"""
    return frontier[engine] >= 2 * lay.position[x] + 2


def join_completions(frontier: list[int], instances, dag: Clocks, lay: Layout, engine_of) -> list[int]:
    """The least state holding `frontier` and the completion of every instance given."""
    for x in instances:
        frontier = [a if a >= b else b for a, b in zip(frontier, dag.issue[x])]
        fx, done = engine_of[x], 2 * lay.position[x] + 2
        if frontier[fx] < done:
            frontier[fx] = done
    return frontier


def last_producers(y, need, lay: Layout) -> list[tuple[int, int]]:
    """(instance, engine) of y's last producer on every other engine (by T_min; `need`
    is the reference's: a DMA trigger's is its transfer's)."""
    return [(lay.local_instance[f][t - 1], f) for f, t in enumerate(need) if t and f != y.engine]


def reference_needs(unrolled: Unrolled):
    """T_min per instance as the reference machine reads it (semantics.machines.Reference):
    a DMA trigger waits for its transfer's producers, the transfer for none (its trigger
    is a wait source, `wait_sources`)."""
    return Reference(unrolled).need if any(i.is_trigger for i in unrolled.instances) else requirements(unrolled)


Finding = tuple  # (trace length, verdict, frontier)


def find_unsound(unrolled: Unrolled, lay: Layout, dag: Clocks, need) -> Finding | None:
    """The least state in which some issue(y) is enabled before a producer of y completed."""
    best = None
    for y in unrolled.instances:
        clock = dag.issue[y.index]
        if clock is None or all(completed(clock, lay, x, f) for x, f in last_producers(y, need[y.index], lay)):
            continue
        frontier = list(clock)
        frontier[y.engine] -= 1  # everything before issue(y)
        length = label_count(frontier, lay)
        if best is None or length < best[0]:
            best = (length, Verdict.UNSOUND, frontier)
    return best


def find_over_synchronized(unrolled: Unrolled, lay: Layout, dag: Clocks, sources, need,
                           close=pass_barriers) -> Finding | None:
    """The least state in which the reference may issue some y that the counter machine
    blocks. Assumes every event happens and nothing is unsound."""
    best = None
    engine_of = [i.engine for i in unrolled.instances]
    start = close([0] * lay.engines, lay, unrolled)
    position, issue = lay.position, dag.issue

    def precedes(x: int, r: int) -> bool:  # complete(x) <= complete(r)
        fx = engine_of[x]
        done = issue[r][fx] if fx != engine_of[r] else 2 * position[r] + 2
        return done >= 2 * position[x] + 2

    for y in unrolled.instances:
        prerequisites = [x for x, _ in last_producers(y, need[y.index], lay)]
        if lay.previous[y.index] >= 0:  # the engine's previous instance (a DMA trigger too)
            prerequisites.append(lay.previous[y.index])
        if y.trigger >= 0:  # a DMA transfer: the reference also waits for its trigger
            prerequisites.append(y.trigger)
        pos = position[y.index]
        after_barrier = pos > 0 and unrolled.streams[y.engine][pos - 1] < 0
        if not after_barrier and all(any(precedes(x, r) for r in prerequisites) for x in sources[y.index]):
            continue  # every predecessor of issue(y) is below a prerequisite: the common case, no join
        least = close(join_completions(start, prerequisites, dag, lay, engine_of), lay, unrolled)
        if least[y.engine] < 2 * lay.position[y.index] or any(
                not completed(least, lay, x, engine_of[x]) for x in sources[y.index]):
            length = label_count(least, lay)
            if best is None or length < best[0]:
                best = (length, Verdict.OVER_SYNCHRONIZED, least)
    return best


def decide(unrolled: Unrolled, sources_of=wait_sources, close=pass_barriers, needs_of=reference_needs,
           passed=lambda: False) -> ValuationResult:
    """The verdict of one valuation, with a shortest witness. `sources_of`, `close` and
    `needs_of` are the rules of the construction (the tests swap in broken ones to see
    them caught). `passed()` is asked between the steps: once it is true the answer is
    unknown (a time limit)."""
    lay = layout(unrolled)
    sources = sources_of(unrolled, lay)
    if passed():
        return _TIME_LIMIT
    dag = clocks(unrolled, lay, sources)
    need = needs_of(unrolled)
    if passed():
        return _TIME_LIMIT
    finding = find_unsound(unrolled, lay, dag, need)
    if finding is None and any(v < 2 * len(s) for v, s in zip(dag.stuck, unrolled.streams)):
        finding = (label_count(dag.stuck, lay), Verdict.DEADLOCK, list(dag.stuck))
    if finding is None:
        if passed():
            return _TIME_LIMIT
        finding = find_over_synchronized(unrolled, lay, dag, sources, need, close)
    if finding is None:
        return ValuationResult(Verdict.BISIMILAR, dag.events, None, frozenset())
    _, verdict, frontier = finding
    return ValuationResult(verdict, dag.events, witness(unrolled, lay, dag, verdict, frontier),
                           frozenset({verdict}))


def witness(unrolled: Unrolled, lay: Layout, dag: Clocks, verdict: Verdict, frontier) -> Witness:
    """The witness in the explicit engine's words: the machines are asked what they
    enable in the state (a cross-check: they must disagree there), and the trace is the
    topological order restricted to the state."""
    ref, ctr = Reference(unrolled), Counter(unrolled)
    c = tuple(frontier)
    r = tuple(lay.labels_before[f][v >> 1] + (v & 1) for f, v in enumerate(c))
    ref_labels, ctr_labels = ref.enabled(r), ctr.enabled(c)
    if verdict == Verdict.UNSOUND:
        failing = tuple(l for l in ctr_labels if l not in set(ref_labels))
    else:
        failing = tuple(l for l in ref_labels if l not in set(ctr_labels))
        if verdict == Verdict.DEADLOCK and (ctr_labels or ctr.final(c)):
            failing = ()
    if not failing:
        raise InternalError(f"the happens-before engine finds a {verdict.value} state {c} that the machines "
                            f"do not show at {dict(unrolled.valuation)}")
    engine_of = [i.engine for i in unrolled.instances]
    trace = tuple(l for l in dag.order
                  if c[engine_of[l.instance]] >= 2 * lay.position[l.instance] + (1 if l.kind == ISSUE else 2))
    return explain(verdict, unrolled, ref, ctr, (r, c), failing, trace)


def decide_valuation(unrolled: Unrolled, options: CheckOptions, deadline: float | None = None,
                     on_progress=None) -> ValuationResult:
    """One valuation, in the shape `check_valuations` calls: unknown when `deadline` (on
    `options.clock`) passes before it or between the steps of `decide`."""
    if deadline is None:
        return decide(unrolled)
    passed = lambda: options.clock() >= deadline  # noqa: E731
    return _TIME_LIMIT if passed() else decide(unrolled, passed=passed)


_TIME_LIMIT = ValuationResult(Verdict.UNKNOWN, 0, None, frozenset(), reason="time limit reached")


def check(program: Program, bounds: tuple[tuple[str, int, int], ...], options: CheckOptions = CheckOptions(),
          fan_out=None) -> CheckResult:
    """Check `program` (waits and barriers only) for every valuation within `bounds`,
    smallest first, with the result `verify.explicit.check` gives."""
    clause = peer_clause(program)
    if clause is not None:
        raise UsageError(f"the happens-before engine does not handle '{clause.kind}' clauses "
                         f"(line {clause.loc.line if clause.loc else '?'}); use --engine explicit")
    return check_valuations(program, bounds, options, decide_valuation, ENGINE, fan_out)
