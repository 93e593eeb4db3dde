"""Small-step semantics behind one machine interface (DESIGN.md section 2).

A machine has `initial()`, `enabled(state)` (the labels it may take),
`step(state, label)` (for an enabled label) and `final(state)`. States are
immutable tuples of ints, one per engine, so any checker, timing model or search
can run any machine unchanged.

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
"""

from __future__ import annotations

from typing import Hashable, NamedTuple, Protocol

from .sequential import Instance, Unrolled, producers, requirements

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


class Reference:
    """State: per engine, 2 * (instances completed) + (1 if one is in flight)."""

    def __init__(self, unrolled: Unrolled):
        self.unrolled = unrolled
        self.streams = tuple(tuple(i for i in s if i >= 0) for s in unrolled.streams)
        self.need = requirements(unrolled)
        self.engine_of = tuple(i.engine for i in unrolled.instances)

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
                if all((state[f] >> 1) >= t for f, t in enumerate(need) if t):
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
        return [x for x in producers(self.unrolled, instance) if (state[x.engine] >> 1) <= x.local]


class Counter:
    """State: per engine, 2 * (position in its stream, barriers included) + (1 if busy)."""

    def __init__(self, unrolled: Unrolled):
        self.unrolled = unrolled
        self.streams = unrolled.streams
        self.engine_of = tuple(i.engine for i in unrolled.instances)
        self.waits = tuple(i.waits for i in unrolled.instances)
        # since[e][pos]: instances of e completed since the last barrier, when e is at pos.
        self.since = []
        for stream in self.streams:
            counts, count = [], 0
            for item in stream:
                counts.append(count)
                count = 0 if item < 0 else count + 1
            counts.append(count)
            self.since.append(tuple(counts))

    def initial(self) -> tuple[int, ...]:
        return self._pass_barriers((0,) * len(self.streams))

    def counter(self, state, engine: int) -> int:
        return self.since[engine][state[engine] >> 1]

    def enabled(self, state) -> tuple[Label, ...]:
        labels = []
        since = self.since
        for engine, value in enumerate(state):
            pos = value >> 1
            stream = self.streams[engine]
            if value & 1:
                labels.append(Label(COMPLETE, stream[pos]))
            elif pos < len(stream):
                y = stream[pos]
                if y >= 0 and all(since[f][state[f] >> 1] >= t for f, t in self.waits[y]):
                    labels.append(Label(ISSUE, y))
        return tuple(labels)

    def step(self, state, label: Label) -> tuple[int, ...]:
        engine = self.engine_of[label.instance]
        state = state[:engine] + (state[engine] + 1,) + state[engine + 1:]
        if label.kind == COMPLETE:
            state = self._pass_barriers(state)
        return state

    def _pass_barriers(self, state) -> tuple[int, ...]:
        # When every engine stands (idle) at a barrier, all pass it together.
        while state and all(
            not (v & 1) and (v >> 1) < len(s) and s[v >> 1] < 0 for v, s in zip(state, self.streams)
        ):
            state = tuple(v + 2 for v in state)
        return state

    def final(self, state) -> bool:
        return all(value == 2 * len(s) for value, s in zip(state, self.streams))

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
