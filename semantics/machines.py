"""Small-step semantics behind one machine interface (docs/design.md section 2).

A machine has `initial()`, `enabled(state)` (the labels it may take),
`step(state, label)` (for an enabled label) and `final(state)`. States are
immutable tuples of ints, one per engine (then the peer primitives' state, see
`Counter`), so any checker, timing model or search can run any machine unchanged.

Both machines run every engine's projection of the program in order, one instance
at a time: an engine issues its next instance when its machine allows, and later
completes it. Labels are `issue(y)` and `complete(y)` for instances y.

- `Reference` (the specification): y may issue iff every instance it depends on
  has completed. Because an engine completes its instances in order, that is
  "for every engine F, F has completed at least T_min(y, F) instances". Waits and
  barriers are ignored: they are synchronization, not computation.
- `Counter` (compiled code): y may issue iff C[F] >= t for each of its waits, where
  C[F] counts F's completions since the last barrier. A barrier is in every
  engine's stream; engines reaching it block until all have reached it (an engine
  only moves on after completing its instance, so nothing is in flight then), and
  then all pass together with the counters reset. Passing is not a visible step:
  it happens as soon as the last engine arrives.
  Peer primitives (docs/peers.md) extend its state, only for programs that use them:
  1-bit flags per (engine -> engine, id) and token counts per (engine -> engine,
  queue). `waitflag`/`pop` are part of the issue (the flag must be set, the queue
  non-empty; issuing clears / pops), and an instance that will `push` onto a full
  queue does not issue (the hardware blocks the pusher). `setflag`/`push` act at the
  completion. Setting a flag that is already set is a hardware error on Ascend: the
  machine goes to an error state (no step enabled; `error(state)` says why) and the
  checker reports it as unsound.
  On a DMA op `E x via Q` the channels' own end is the queue Q: the trigger (on E)
  waits for / pops from channels F -> Q at its issue, and the transfer (on Q) sets /
  pushes on channels Q -> G at its completion (docs/peers.md, "DMA ops"); a transfer
  that would push onto a full queue does not issue.
"""

from __future__ import annotations

from typing import Hashable, NamedTuple, Protocol

from semantics.ir import FLAG_IDS, INT32_MAX, INT32_MIN, TOKEN_DEPTH, increments
from semantics.sequential import Instance, Unrolled, producers, requirements

ISSUE = "issue"
COMPLETE = "complete"


class Label(NamedTuple):
    kind: str  # ISSUE or COMPLETE
    instance: int  # index of the instance in program order


class Machine(Protocol):
    def initial(self) -> Hashable: ...

    def enabled(self, state) -> tuple[Label, ...]: ...

    def step(self, state, label: Label) -> Hashable: ...

    def final(self, state) -> bool: ...


def describe_label(unrolled: Unrolled, label: Label) -> str:
    instance = unrolled.instances[label.instance]
    engine = unrolled.program.engines[instance.engine]
    return f"{label.kind} {engine}.{instance.describe()}"


def _trigger_links(unrolled: Unrolled, streams) -> tuple:
    """Per instance: None, or for a DMA transfer (engine, p): its trigger is item p of
    that engine's stream in `streams`, and the transfer may issue once the engine has
    moved past it (the trigger completed)."""
    where = {item: (engine, pos) for engine, stream in enumerate(streams) for pos, item in enumerate(stream)}
    return tuple(where[i.trigger] if i.trigger >= 0 else None for i in unrolled.instances)


class Reference:
    """State: per engine, 2 * (stream items completed) + (1 if one is in flight).

    DMA ops (`via Q`, docs/design.md "DMA triggered by a compute engine"): the trigger, on
    its engine's stream, may issue once every producer of its transfer has completed (the
    only place a transfer can be synchronized is its trigger); the transfer, on Q's
    stream, once its trigger has completed. Triggers do not count: `count[e][p]` is the
    number of counted instances among the first p items of e's stream."""

    def __init__(self, unrolled: Unrolled):
        self.unrolled = unrolled
        self.streams = tuple(tuple(i for i in s if i >= 0) for s in unrolled.streams)
        self.need = requirements(unrolled)
        self.engine_of = tuple(i.engine for i in unrolled.instances)
        self.has_triggers = any(i.is_trigger for i in unrolled.instances)
        self.count = self.after = None
        if self.has_triggers:
            need = list(self.need)
            for inst in unrolled.instances:
                if inst.is_trigger:
                    need[inst.index], need[inst.transfer] = need[inst.transfer], (0,) * len(self.streams)
            self.need = tuple(need)
            self.after = _trigger_links(unrolled, self.streams)
            self.count = tuple(_counted_prefix(unrolled, s) for s in self.streams)

    def completed(self, state, engine: int) -> int:
        """Counted instances of `engine` completed in `state` (triggers excluded)."""
        done = state[engine] >> 1
        return self.count[engine][done] if self.count is not None else done

    def initial(self) -> tuple[int, ...]:
        return (0,) * len(self.streams)

    def enabled(self, state) -> tuple[Label, ...]:
        labels = []
        for engine, value in enumerate(state):
            done = value >> 1
            stream = self.streams[engine]
            if value & 1:
                labels.append(Label(COMPLETE, stream[done]))
            elif done < len(stream):
                y = stream[done]
                need = self.need[y]
                if self.count is None:
                    if all((state[f] >> 1) >= t for f, t in enumerate(need) if t):
                        labels.append(Label(ISSUE, y))
                elif all(self.count[f][state[f] >> 1] >= t for f, t in enumerate(need) if t) \
                        and (self.after[y] is None or (state[self.after[y][0]] >> 1) > self.after[y][1]):
                    labels.append(Label(ISSUE, y))
        return tuple(labels)

    def step(self, state, label: Label) -> tuple[int, ...]:
        # issue: idle -> busy; complete: busy -> idle at the next instance.
        engine = self.engine_of[label.instance]
        return state[:engine] + (state[engine] + 1,) + state[engine + 1:]

    def final(self, state) -> bool:
        return all(value == 2 * len(s) for value, s in zip(state, self.streams))

    def missing_producers(self, state, instance: Instance) -> list[Instance]:
        """The producers of `instance` that have not completed in `state`."""
        if instance.is_trigger:
            instance = self.unrolled.instances[instance.transfer]
        return [x for x in producers(self.unrolled, instance) if self.completed(state, x.engine) <= x.local]


def _counted_prefix(unrolled: Unrolled, stream) -> tuple[int, ...]:
    counts, count = [0], 0
    for item in stream:
        count += 0 if unrolled.instances[item].is_trigger else 1
        counts.append(count)
    return tuple(counts)


class Counter:
    """State: per engine, 2 * (position in its stream, barriers included) + (1 if busy);
    then, only if the program uses peer primitives, the set flags as one bit mask
    (negative: the error state, -1 - the flag set twice) and one count per token queue."""

    def __init__(self, unrolled: Unrolled):
        self.unrolled = unrolled
        self.streams = unrolled.streams
        self.engines = len(unrolled.streams)
        self.engine_of = tuple(i.engine for i in unrolled.instances)
        self.waits = tuple(i.waits for i in unrolled.instances)
        self._compile_syncs(unrolled)
        # since[e][pos]: C[e] when e is at pos: its instances completed since the last
        # barrier, times e's increment (triggers of DMA ops do not count).
        self.increments = increments(unrolled.program)
        self.since = []
        instances = unrolled.instances
        for stream, step in zip(self.streams, self.increments):
            counts, count = [], 0
            for item in stream:
                counts.append(count)
                count = 0 if item < 0 else count + (0 if instances[item].is_trigger else step)
            counts.append(count)
            self.since.append(tuple(counts))
        self.has_triggers = any(i.is_trigger for i in instances)
        self.after = _trigger_links(unrolled, self.streams) if self.has_triggers else None

    def _compile_syncs(self, unrolled: Unrolled) -> None:
        """Per instance: the flag bits it waits for / sets, and its pops / pushes as
        (queue slot, count). Queues get state slots in order of first use."""
        n = self.engines
        queues: dict = {}
        self.wait_bits, self.set_bits, self.pops, self.pushes = [], [], [], []
        for inst in unrolled.instances:
            wait_bits, set_bits, pops, pushes = 0, [], {}, {}
            own = inst.channel_end(unrolled)  # a trigger waits on its queue's channels
            for kind, other, ident in inst.syncs:
                if kind == "waitflag":
                    wait_bits |= 1 << self.flag_index(other, own, ident)
                elif kind == "setflag":
                    set_bits.append(self.flag_index(own, other, ident))
                else:
                    key = (other, own, ident) if kind == "pop" else (own, other, ident)
                    slot = queues.setdefault(key, n + 1 + len(queues))
                    table = pops if kind == "pop" else pushes
                    table[slot] = table.get(slot, 0) + 1
            self.wait_bits.append(wait_bits)
            self.set_bits.append(tuple(set_bits))
            self.pops.append(tuple(pops.items()))
            self.pushes.append(tuple(pushes.items()))
        self.queues = tuple(queues)  # (from engine, to engine, queue id), by slot - n - 1
        self.has_syncs = any(i.syncs for i in unrolled.instances)

    def flag_index(self, source: int, target: int, ident: int) -> int:
        return (source * self.engines + target) * FLAG_IDS + ident

    def flag_name(self, index: int) -> str:
        engines = self.unrolled.program.engines
        pair, ident = divmod(index, FLAG_IDS)
        source, target = divmod(pair, self.engines)
        return f"{engines[source]}->{engines[target]}:{ident}"

    def initial(self) -> tuple[int, ...]:
        extra = (0,) * (1 + len(self.queues)) if self.has_syncs else ()
        return self._pass_barriers((0,) * len(self.streams) + extra)

    def counter(self, state, engine: int) -> int:
        return self.since[engine][state[engine] >> 1]

    def error(self, state) -> str | None:
        """Why the state is a hardware error (a flag set while set), or None."""
        if self.has_syncs and state[self.engines] < 0:
            return f"flag {self.flag_name(-1 - state[self.engines])} set while already set"
        return None

    def _sync_allows(self, state, y: int) -> bool:
        flags = state[self.engines]
        if self.wait_bits[y] & ~flags:
            return False
        if any(state[slot] < count for slot, count in self.pops[y]):
            return False
        return all(state[slot] + count <= TOKEN_DEPTH for slot, count in self.pushes[y])

    def enabled(self, state) -> tuple[Label, ...]:
        if self.has_syncs and state[self.engines] < 0:
            return ()  # the error state: the checker reports it
        labels = []
        since = self.since
        for engine in range(self.engines):
            value = state[engine]
            pos = value >> 1
            stream = self.streams[engine]
            if value & 1:
                labels.append(Label(COMPLETE, stream[pos]))
            elif pos < len(stream):
                y = stream[pos]
                if y >= 0 and all(since[f][state[f] >> 1] >= t for f, t in self.waits[y]) \
                        and (not self.has_syncs or self._sync_allows(state, y)) \
                        and (self.after is None or self.after[y] is None
                             or (state[self.after[y][0]] >> 1) > self.after[y][1]):
                    labels.append(Label(ISSUE, y))
        return tuple(labels)

    def step(self, state, label: Label) -> tuple[int, ...]:
        engine = self.engine_of[label.instance]
        state = state[:engine] + (state[engine] + 1,) + state[engine + 1:]
        if self.has_syncs:
            state = self._sync_step(state, label)
        if label.kind == COMPLETE:
            state = self._pass_barriers(state)
        return state

    def _sync_step(self, state, label: Label) -> tuple[int, ...]:
        y, n = label.instance, self.engines
        values = list(state)
        if label.kind == ISSUE:
            values[n] &= ~self.wait_bits[y]
            for slot, count in self.pops[y]:
                values[slot] -= count
        else:
            for bit in self.set_bits[y]:
                if values[n] >> bit & 1:
                    values[n] = -1 - bit
                    return tuple(values)
                values[n] |= 1 << bit
            for slot, count in self.pushes[y]:
                values[slot] += count
        return tuple(values)

    def _pass_barriers(self, state) -> tuple[int, ...]:
        # When every engine stands (idle) at a barrier, all pass it together.
        n = self.engines
        while n and all(
            not (v & 1) and (v >> 1) < len(s) and s[v >> 1] < 0 for v, s in zip(state, self.streams)
        ):
            state = tuple(v + 2 for v in state[:n]) + state[n:]
        return state

    def final(self, state) -> bool:
        return all(value == 2 * len(s) for value, s in zip(state, self.streams))

    def blocking_syncs(self, state, instance: Instance) -> list[str]:
        """The flag and token clauses of `instance` that keep it from issuing in `state`."""
        if not self.has_syncs:
            return []
        engines, y, out = self.unrolled.program.engines, instance.index, []
        for kind, other, ident in instance.syncs:
            if kind == "waitflag" and not state[self.engines] >> self.flag_index(
                    other, instance.channel_end(self.unrolled), ident) & 1:
                out.append(f"waitflag {engines[other]}:{ident}: the flag is not set")
        for table, word in ((self.pops[y], "pop"), (self.pushes[y], "push")):
            for slot, count in table:
                source, target, q = self.queues[slot - self.engines - 1]
                have = state[slot]
                if (word == "pop" and have < count) or (word == "push" and have + count > TOKEN_DEPTH):
                    out.append(f"{word} on queue {engines[source]}->{engines[target]}:{q} holding {have} "
                               f"token(s) (depth {TOKEN_DEPTH})")
        return out

    def at_barrier(self, state, engine: int) -> int | None:
        """The barrier number engine stands at, if any."""
        value = state[engine]
        pos = value >> 1
        stream = self.streams[engine]
        if not value & 1 and pos < len(stream) and stream[pos] < 0:
            return -1 - stream[pos]
        return None

    def blocking_waits(self, state, instance: Instance) -> list[tuple[int, int, int]]:
        """The waits of `instance` that do not hold in `state`: (wait number, engine, counter value)."""
        return [
            (n, f, self.counter(state, f))
            for n, (f, t) in enumerate(instance.waits)
            if self.counter(state, f) < t
        ]


def counter_range_violation(unrolled: Unrolled) -> str | None:
    """Why some semaphore value or wait threshold of the counter program leaves the signed
    32-bit range [-2^31, 2^31 - 1] in this valuation (docs/design.md, "Counter
    increments"), or None. Counters only grow between barriers, so the largest value a
    counter reaches is its count at the end of a barrier segment."""
    program = unrolled.program
    steps = increments(program)
    ctr = Counter(unrolled) if max(steps, default=1) * len(unrolled.instances) > INT32_MAX else None
    for engine, since in enumerate(ctr.since if ctr is not None else ()):
        top = max(since)
        if top > INT32_MAX:
            step = ctr.increments[engine]
            return (f"counter C[{program.engines[engine]}] reaches {top} ({top // step} completions x increment "
                    f"{step}) between barriers, above the signed 32-bit maximum {INT32_MAX}")
    for inst in unrolled.instances:
        for n, (engine, value) in enumerate(inst.waits):
            if not INT32_MIN <= value <= INT32_MAX:
                wait = inst.op.waits[n]
                line = wait.loc.line if wait.loc else "?"
                return (f"the threshold of {program.engines[inst.engine]}.{inst.describe()}'s wait "
                        f"{wait.engine} >= ... (line {line}) is {value}, outside the signed 32-bit range "
                        f"[{INT32_MIN}, {INT32_MAX}]")
    return None
