"""The second half of the mirror (lean_mirror.py): dependence, T_min, the reference and
counter machines, the 32-bit range and the bounded checker of
lean_export/lean/Syncproof/{Semantics,Check}.lean, one method per Lean definition under
its Lean name, over one `Unrolled` (the Lean functions all take `u` first). What
depends on `u` only is computed once and cached, which changes no value: `dependsOn`,
`refStream`, the producers of each instance (the `x` with `dependsOn u z x`), each
instance's position in its engine's stream (an instance appears once in its stream, so
"in the first k items" is "position < k"), and the prefix counts behind `countedDone`
and `since` (one pass over the stream, the same folds).
States are tuples of naturals, labels `(kind, inst)`.
"""

from __future__ import annotations

from tests.lean_export.lean_mirror import Unrolled, nth_opt, nthD

INT32_MIN, INT32_MAX = -2147483648, 2147483647  # int32Min, int32Max


def overlaps(r1, r2):
    if not r1 and not r2:
        return True
    if not r1 or not r2:
        return False
    (a, b), (c, d) = r1[0], r2[0]
    return a < b and c < d and a < d and c < b and overlaps(r1[1:], r2[1:])


def conflict(x, y):
    return any(any(bw[0][0] == bw2[0][0] and overlaps(bw[0][1], bw2[0][1]) and (bw[1] or bw2[1])
                   for bw2 in x.accesses) for bw in y.accesses)


def sameReplica(x, y):
    return x.replica is not None and y.replica is not None and x.replica == y.replica


class Machines:
    def __init__(self, u: Unrolled):
        self.u = u
        self._deps: dict = {}
        self._streams: dict = {}
        self._producers: dict = {}
        self._ref_pos: dict = {}
        self._ctr_pos: dict = {}
        self._counted: dict = {}
        self._since: dict = {}

    # ------------------------------------------------------- dependence, T_min

    def dependsOn(self, y, x):
        key = (y, x)
        if key not in self._deps:
            iy, ix = nth_opt(self.u.insts, y), nth_opt(self.u.insts, x)
            self._deps[key] = (iy is not None and ix is not None and x < y and ix.engine != iy.engine
                               and not sameReplica(ix, iy) and conflict(ix, iy))
        return self._deps[key]

    def tmin(self, y, f):
        acc = 0
        for x in range(y):
            ix = nth_opt(self.u.insts, x)
            if ix is not None and ix.engine == f and self.dependsOn(y, x):
                acc = ix.localIdx + 1 if acc < ix.localIdx + 1 else acc
        return acc

    def engineCount(self):
        return len(self.u.streams)

    def needTable(self):
        return [[self.tmin(y, f) for f in range(self.engineCount())] for y in range(len(self.u.insts))]

    def engineOf(self, y):
        i = nth_opt(self.u.insts, y)
        return 0 if i is None else i.engine

    def countedInst(self, x):
        i = nth_opt(self.u.insts, x)
        return False if i is None else i.counted

    def guarded(self, y):
        i = nth_opt(self.u.insts, y)
        if i is None:
            return y
        if i.transfer is not None:
            return i.transfer
        return None if i.trigger is not None else y

    def triggerOf(self, y):
        i = nth_opt(self.u.insts, y)
        return None if i is None else i.trigger

    # ------------------------------------------------------------- reference

    def refStream(self, e):
        if e not in self._streams:
            self._streams[e] = [it[1] for it in nthD(self.u.streams, e, ()) if it[0] == "inst"]
        return self._streams[e]

    def completedRef(self, s, x):
        e = self.engineOf(x)
        if e not in self._ref_pos:
            self._ref_pos[e] = {i: pos for pos, i in enumerate(self.refStream(e))}
        pos = self._ref_pos[e].get(x)
        return pos is not None and pos < nthD(s, e, 0) // 2

    def countedDone(self, s, e):
        if e not in self._counted:  # counted instances among the first k, for every k
            counts = [0]
            for i in self.refStream(e):
                counts.append(counts[-1] + 1 if self.countedInst(i) else counts[-1])
            self._counted[e] = counts
        counts = self._counted[e]
        return counts[min(nthD(s, e, 0) // 2, len(counts) - 1)]

    def triggerDoneRef(self, s, y):
        t = self.triggerOf(y)
        return True if t is None else self.completedRef(s, t)

    def producersDone(self, s, y):
        z = self.guarded(y)
        if z is None:
            return True
        if z not in self._producers:
            self._producers[z] = [x for x in range(z) if self.dependsOn(z, x)]
        return all(self.completedRef(s, x) for x in self._producers[z])

    def refInit(self):
        return tuple(0 for _ in self.u.streams)

    def needOf(self, need, y):
        z = self.guarded(y)
        return [] if z is None else nthD(need, z, [])

    def _ref_labels(self, s, ready):
        out = []
        for e in range(self.engineCount()):
            v = nthD(s, e, 0)
            y = nth_opt(self.refStream(e), v // 2)
            if y is None:
                continue
            if v % 2 == 1:
                out.append(("complete", y))
            elif ready(y):
                out.append(("issue", y))
        return out

    def refEnabled(self, need, s):
        return self._ref_labels(s, lambda y: all(
            nthD(self.needOf(need, y), f, 0) <= self.countedDone(s, f) for f in range(self.engineCount()))
            and self.triggerDoneRef(s, y))

    def refEnabledSpec(self, s):
        return self._ref_labels(s, lambda y: self.producersDone(s, y) and self.triggerDoneRef(s, y))

    def refStepFn(self, s, label):
        return bump(s, self.engineOf(label[1]))

    # --------------------------------------------------------------- counter

    def countStep(self, inc, c, it):
        if it[0] == "barrier":
            return 0
        return c + inc if self.countedInst(it[1]) else c

    def since(self, inc, stream, pos):
        c = 0
        for it in stream[:pos]:
            c = self.countStep(inc, c, it)
        return c

    def counterValue(self, s, f):
        if f not in self._since:  # `since` at every position of f's stream
            inc, stream = nthD(self.u.incs, f, 1), nthD(self.u.streams, f, ())
            self._since[f] = [self.since(inc, stream, pos) for pos in range(len(stream) + 1)]
        values = self._since[f]
        return values[min(nthD(s, f, 0) // 2, len(values) - 1)]

    def instWaits(self, y):
        i = nth_opt(self.u.insts, y)
        return () if i is None else i.waits

    def completedCtr(self, s, x):
        e = self.engineOf(x)
        if e not in self._ctr_pos:
            self._ctr_pos[e] = {it[1]: pos for pos, it in enumerate(nthD(self.u.streams, e, ())) if it[0] == "inst"}
        pos = self._ctr_pos[e].get(x)
        return pos is not None and pos < nthD(s, e, 0) // 2

    def triggerDoneCtr(self, s, y):
        t = self.triggerOf(y)
        return True if t is None else self.completedCtr(s, t)

    def allAtBarrier(self, s):
        return all(nthD(s, e, 0) % 2 == 0 and nth_opt(nthD(self.u.streams, e, ()), nthD(s, e, 0) // 2) == ("barrier",)
                   for e in range(self.engineCount()))

    def passBarriers(self, s):  # passBarriersFuel with fuel = length of stream 0
        for _ in range(len(nthD(self.u.streams, 0, ()))):
            if not self.allAtBarrier(s):
                break
            s = tuple(v + 2 for v in s)
        return s

    def ctrInit(self):
        return self.passBarriers(tuple(0 for _ in self.u.streams))

    def ctrEnabled(self, s):
        out = []
        for e in range(self.engineCount()):
            v = nthD(s, e, 0)
            it = nth_opt(nthD(self.u.streams, e, ()), v // 2)
            if it is None or it[0] != "inst":
                continue
            y = it[1]
            if v % 2 == 1:
                out.append(("complete", y))
            elif all(t <= self.counterValue(s, f) for f, t in self.instWaits(y)) and self.triggerDoneCtr(s, y):
                out.append(("issue", y))
        return out

    def ctrStepFn(self, s, label):
        s2 = bump(s, self.engineOf(label[1]))
        return s2 if label[0] == "issue" else self.passBarriers(s2)

    # ------------------------------------------------------------ 32-bit range

    def maxCounter(self, f):
        inc, acc = nthD(self.u.incs, f, 1), (0, 0)
        for it in nthD(self.u.streams, f, ()):
            c = self.countStep(inc, acc[0], it)
            acc = (c, c if acc[1] < c else acc[1])
        return acc[1]

    def inInt32Range(self):
        return all(self.maxCounter(f) <= INT32_MAX for f in range(self.engineCount())) and all(
            INT32_MIN <= t <= INT32_MAX for i in self.u.insts for _, t in i.waits)

    # ------------------------------------------------------------------ check

    def stateOk(self, need, st):
        r = self.refEnabled(need, st[0])
        return sameLabels(r, self.ctrEnabled(st[1])) and sameLabels(r, self.refEnabledSpec(st[0]))

    def fuelFor(self):
        acc = 1
        for s in self.u.streams:
            acc *= 2 * len(s) + 1
        return acc + 1

    def explore(self, need, fuel, queue, visited):
        """Breadth-first with fuel, as the Lean recursion (a loop here)."""
        queue, visited = list(queue), set(visited)
        while True:
            if fuel == 0:
                return False
            if not queue:
                return True
            fuel -= 1
            st, queue = queue[0], queue[1:]
            if not self.stateOk(need, st):
                return False
            for label in self.ctrEnabled(st[1]):
                nxt = (self.refStepFn(st[0], label), self.ctrStepFn(st[1], label))
                if nxt not in visited:
                    queue.append(nxt)
                    visited.add(nxt)


def sameLabels(a, b):
    return all(l in b for l in a) and all(l in a for l in b)


def bump(s, n):
    return tuple(a + 1 if i == n else a for i, a in enumerate(s))


def check(p: dict, v) -> bool:
    """`check p v`: valid, in the 32-bit range, and the bounded exploration succeeds."""
    from tests.lean_export.lean_mirror import unroll

    u = unroll(p, list(v))
    m = Machines(u)
    start = (m.refInit(), m.ctrInit())
    return u.ok and m.inInt32Range() and m.explore(m.needTable(), m.fuelFor(), [start], [start])
