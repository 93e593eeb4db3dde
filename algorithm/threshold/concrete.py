"""The concrete check of a closed plan, and its irredundancy: a run of the flat program.

The program runs in program order over a window of trip counts. Per instance it keeps:
- its requirement R[F]: 1 + the local index of the last conflicting F-instance, from the
  dependence definition (the last write, or the last access, of each buffer element by
  each engine); every closed threshold must equal it (or be <= 0 where R[F] = 0);
- its guarantee H: the counts that must have been reached when it issues, in any execution
  that enforces every requirement: the in-order predecessor's guarantee and count, and for
  each F, the guarantee of the F-instance that R[F] names (whose completion implies its own
  requirements held when it issued), with R[F] itself.
A wait (y, F) is redundant when, at every instance of y with R[F] > 0, the guarantee of
the predecessor or of the instance one of y's other kept waits names already reaches R[F]:
then the remaining waits and in-order execution enforce it, and the program stays exact.
The guarantees do not depend on which waits are dropped (they follow the requirements), so
the waits of one op are decided from its own instances only.

The window. Let L be the body's period (flat.Flat.period: the lcm of the guards' periods
and of the index moduli; 1 without guards) and n_F the F-instances of one period of
iterations (every iteration runs the same ops when L = 1; with guards, iteration i runs
the ops whose guards hold at i mod L, so iterations i and i + L run the same ops).
Compared with the same op a period earlier, each component of the body's requirements and
guarantees becomes either constant or growing by n_F once every source lies inside the
loop (after the longest distance): with guards the last conflicting instance of an
instance at i lies a distance back that depends on i mod L only, so the count it names
grows by n_F per period (without guards, by n_F per iteration: one distance for every i).
A growing term feeding a constant one would overtake it within (its constant + 1)
periods, so a pattern of such deltas that repeats period after period for
L * (margin + 2 * distance) iterations holds for ever. The closed thresholds repeat in
the same way: their moduli divide L and their comparisons with constants are decided
within the distance (forms.py), so one that equals R at every instance of the window
equals it at every later one. The ops after the loop follow the last iterations,
periodically in the trip count (with period L); for an upper bound below lo the loop
runs zero times and every op after it sees one state: bounds down to 3 L below lo (or to
the least bound) are checked, and below them the closed forms over the bound are
constant, or non-decreasing and at most 0 (closed.py), or, with guards, affine on each
class mod L (forms.py, which checks two points of each class there), so they hold too.
The run stops once the pattern holds, and gives up (the general planner takes the
program) past its instance budget.
"""

from __future__ import annotations

import itertools
from collections import ChainMap, deque

from semantics.compiled import compile_expr
from semantics.ir import Count, count_key, walk_expr
from algorithm.threshold.flat import HI, Flat, NotFlat, indices

PRED = -1  # the in-order predecessor as a source


class Disagreement(NotFlat):
    """A closed threshold differs from the run's requirement (a planner defect)."""


class Run:
    def __init__(self, program, flat: Flat, thresholds: dict, index_cache: dict):
        self.engines = {e: n for n, e in enumerate(program.engines)}
        self.E = len(program.engines)
        self.flat = flat
        self.count = [0] * self.E
        self.guarantees = [[] for _ in range(self.E)]  # per engine, per local index
        self.last_write: dict = {}
        self.last_access: dict = {}
        self.covers: dict = {}  # (op, F) -> set of frozensets of sources that reach R[F]
        self.waits: dict = {}  # op -> [(F index, compiled threshold, engine name)]
        self.registers = set()  # ops with a threshold that reads `count(F)`
        for (name, engine), t in thresholds.items():
            self.waits.setdefault(name, []).append((self.engines[engine], compile_expr(t), engine))
            if any(isinstance(n, Count) for n in walk_expr(t)):
                self.registers.add(name)
        self.count_keys = [count_key(e) for e in program.engines]
        self.accesses = {}
        for ops, var in ((flat.prefix, None), (flat.body, flat.var), (flat.suffix, None)):
            for op in ops:
                self.accesses[op.name] = (
                    [(a.buffer, indices(a.indices, var, index_cache)) for a in op.reads],
                    [(a.buffer, indices(a.indices, var, index_cache)) for a in op.writes])

    @staticmethod
    def elements(buffer, dims, i):
        if all(d.range is None for d in dims):
            return [(buffer, tuple(d(i) for d in dims))]
        return [(buffer, e) for e in itertools.product(*(d.values(i) for d in dims))]

    def issue(self, op, i: int, env: dict, last_write=None, last_access=None):
        """Run one instance; returns (R, H)."""
        lw = self.last_write if last_write is None else last_write
        la = self.last_access if last_access is None else last_access
        me = self.engines[op.engine]
        E = self.E
        R = [0] * E
        reads, writes = self.accesses[op.name]
        touched_r = [k for b, dims in reads for k in self.elements(b, dims, i)]
        touched_w = [k for b, dims in writes for k in self.elements(b, dims, i)]
        for table, keys in ((lw, touched_r), (la, touched_w)):
            for key in keys:
                seen = table.get(key)
                if seen is not None:
                    for f in range(E):
                        if f != me and seen[f] + 1 > R[f]:
                            R[f] = seen[f] + 1
        sources = {}
        if self.count[me]:
            h = list(self.guarantees[me][self.count[me] - 1])
            h[me] = max(h[me], self.count[me])
            sources[PRED] = h
        for f in range(E):
            if R[f]:
                h = list(self.guarantees[f][R[f] - 1])
                h[f] = max(h[f], R[f])
                sources[f] = h
        H = tuple(max((h[f] for h in sources.values()), default=0) for f in range(E))
        planned = {f: (t, name) for f, t, name in self.waits.get(op.name, ())}
        counts = dict(zip(self.count_keys, self.count)) if op.name in self.registers else None
        for f in range(E):
            if f == me:
                continue
            if f in planned:
                value = planned[f][0](env, counts)
                if (value != R[f]) if R[f] else (value > 0):
                    raise Disagreement(f"{op.name} waits {planned[f][1]} >= {value} at {env}, needs {R[f]}")
            elif R[f]:
                raise Disagreement(f"{op.name} has no wait on engine {f} at {env}, needs {R[f]}")
            if R[f]:
                cover = frozenset(g for g, h in sources.items() if g != f and h[f] >= R[f])
                self.covers.setdefault((op.name, f), set()).add(cover)
        for key in touched_r:
            self._slot(la, key)[me] = self.count[me]
        for key in touched_w:
            self._slot(lw, key)[me] = self.count[me]
            self._slot(la, key)[me] = self.count[me]
        self.guarantees[me].append(H)
        self.count[me] += 1
        return R, H

    def _slot(self, table, key) -> list:
        """The per-engine entry of one element, copied on first write when `table` is a
        ChainMap over the loop's tables (the ops after the loop run on a copy)."""
        if isinstance(table, ChainMap):
            own = table.maps[0]
            slot = own.get(key)
            if slot is None:
                seen = table.maps[1].get(key)
                slot = own[key] = list(seen) if seen is not None else [-1] * self.E
            return slot
        slot = table.get(key)
        if slot is None:
            slot = table[key] = [-1] * self.E
        return slot

    def suffix(self, t: int, hi_values):
        """The ops after the loop at trip count t, on a copy of the state."""
        for hi in hi_values:
            saved = (list(self.count), [len(g) for g in self.guarantees])
            lw, la = ChainMap({}, self.last_write), ChainMap({}, self.last_access)
            out = [self.issue(op, 0, {HI: hi}, lw, la) for op in self.flat.suffix]
            self.count = saved[0]
            for g, n in zip(self.guarantees, saved[1]):
                del g[n:]
        return out


def check_and_reduce(program, flat: Flat, thresholds: dict, distance: int, index_cache: dict | None = None,
                     max_instances: int = 2_000_000) -> set:
    """The (op, engine) waits of the closed plan that stay; Disagreement when a closed
    threshold is not the run's requirement, NotFlat when the run does not settle."""
    run = Run(program, flat, thresholds, {} if index_cache is None else index_cache)
    for op in flat.prefix:
        run.issue(op, 0, {})
    if flat.var is not None:
        _loop(run, program, flat, distance, max_instances)
    kept = set(thresholds)
    by_op: dict = {}
    for name, engine in thresholds:
        by_op.setdefault(name, {})[run.engines[engine]] = engine
    for op in (*flat.prefix, *flat.body, *flat.suffix):
        names = by_op.get(op.name, {})
        mine = sorted(names)
        live = set(mine)
        for f in mine:
            rest = live - {f}
            dropped = [g for g in mine if g not in live]
            if all(_covered(run.covers.get((op.name, g), ()), rest | {PRED}) for g in [f, *dropped]):
                live = rest
        kept -= {(op.name, names[f]) for f in mine if f not in live}
    return kept


def _covered(covers, allowed: set) -> bool:
    return all(cover & allowed for cover in covers)


def _loop(run: Run, program, flat: Flat, distance: int, max_instances: int) -> None:
    """`distance`: the farthest an iteration's sources lie back (at least one period of
    every index, and one iteration)."""
    lag = flat.period
    guards = flat.guards or (None,) * len(flat.body)
    runs = lambda g, i: g is None or g.holds(i)
    n = [sum(op.engine == e and runs(g, i) for op, g in zip(flat.body, guards) for i in range(lag))
         for e in program.engines]  # instances per period
    margin = distance + len(flat.prefix) + 3
    below = flat.hi_min is None or flat.hi_min < flat.lo  # an upper bound below lo is possible
    least = flat.lo - 3 * lag if flat.hi_min is None else max(flat.hi_min, flat.lo - 3 * lag)
    hi_of = lambda t: [flat.lo + t] if t or not below else list(range(flat.lo, least - 1, -1))
    if flat.t_min == 0:
        run.suffix(0, hi_of(0))
    history, deltas, steady, k = deque(maxlen=lag), deque(maxlen=lag), 0, 0
    budget = max_instances // max(1, len(flat.body) + len(flat.suffix))
    while True:
        i = flat.lo + k
        now = [run.issue(op, i, {flat.var: i}) for op, g in zip(flat.body, guards) if runs(g, i)]
        k += 1
        if k >= flat.t_min:
            run.suffix(k, hi_of(k))
        if len(history) == lag:  # compared with the same point of the previous period
            delta = _deltas(history[0], now, n)
            steady = steady + 1 if delta is not None and len(deltas) == lag and delta == deltas[0] else 0
            deltas.append(delta)
        history.append(now)
        if k > distance and steady >= lag * (margin + 2 * distance):
            return
        if k > budget:
            raise NotFlat("the run did not settle within its budget")


def _deltas(previous, now, n):
    """Per component: 'growing' by n_F, or constant; None when neither."""
    out = []
    for (r0, h0), (r1, h1) in zip(previous, now):
        for f, step in enumerate(n):
            for a, b in ((r0[f], r1[f]), (h0[f], h1[f])):
                if b == a:
                    out.append(0)
                elif b - a == step:
                    out.append(1)
                else:
                    return None
    return tuple(out)
