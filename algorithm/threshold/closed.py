"""The closed-form planner: the thresholds of a flat program (flat.py) by arithmetic.

Rule (plan.py's, specialised): consumer y waits `F >= T` where T counts the F-instances
up to and including the last one y depends on. In a flat program, per producer x on F:
- y in the body at iteration i, x in the body: the last conflicting x-instance is x at
  i - d for the least distance d that conflicts at every i (flat.distance), and exists when
  i >= lo + d. Over all x on F the least d wins, then the latest x in the body; a smaller d
  exists whenever a larger one does, so one candidate decides. Below lo + d, the latest
  conflicting F-op before the loop is the last one (its position, or no wait).
- y after the loop, x in the body: x at i' = hi - 1, or at the latest i' < hi of the one
  residue class mod P whose instances conflict, when i' >= lo.
- y and x outside the loop: a static conflict; an op after the loop outranks the loop,
  which outranks the ops before it.
The count up to x at iteration i' is pre_F + (i' - lo) * n_F + (F-ops before x in the
body) + 1, where pre_F counts the F-ops before the loop and n_F those in the body; after
the loop, trip * n_F replaces the loop part. Upper bounds are written over `HI` and
substituted at the end, so that the concrete check (concrete.py) can vary the trip count
directly. A body with guards takes the same rule per residue class of i modulo the body's
period (guards.GuardedBody): its thresholds, and the counts up to ops after the loop
(which then follow the guards), are found per class and written by forms.py, possibly
against `count(F)`.
"""

from __future__ import annotations

import bisect

import attrs

from semantics.ir import BinOp, Compare, Const, IfExpr, Max, Program, Var
from semantics.simplify import simplify
from semantics.symbolic import conflicting_pairs
from algorithm.threshold.flat import (
    HI, Flat, NotFlat, StaticIndex, accesses as _accesses, body_against_constant, distance, flat_shape, indices,
    static_conflict,
)
from algorithm.threshold.guards import GuardedBody


@attrs.frozen
class ClosedPlan:
    thresholds: dict  # (op name, engine) -> IR over the loop index and HI
    dependence_pairs: int
    distance: int  # the farthest an iteration's sources lie back
    index_cache: dict = attrs.field(eq=False, repr=False)


def _lin(constant: int, *terms) -> object:
    out = Const(constant)
    for coef, expr in terms:
        if coef:
            out = BinOp("+", out, BinOp("*", Const(coef), expr))
    return simplify(out)


class Planner:
    def __init__(self, program: Program, flat: Flat, conflicts, count_registers: bool = True):
        self.program, self.flat, self.conflicts = program, flat, conflicts
        self.count_registers = count_registers
        self.segment, self.position, self.rank = {}, {}, {}
        for name, ops in (("prefix", flat.prefix), ("body", flat.body), ("suffix", flat.suffix)):
            seen: dict = {}
            for n, op in enumerate(ops):
                self.segment[op.name], self.position[op.name] = name, n
                self.rank[op.name] = seen.get(op.engine, 0)
                seen[op.engine] = seen.get(op.engine, 0) + 1
        self.pre = {e: sum(op.engine == e for op in flat.prefix) for e in program.engines}
        self.per_iteration = {e: sum(op.engine == e for op in flat.body) for e in program.engines}
        hi = Var(HI)
        self.trip = simplify(BinOp("-", hi, Const(flat.lo)))
        if flat.hi_min is None or flat.hi_min < flat.lo:
            self.trip = Max(self.trip, Const(0))
        self.index_cache: dict = {}
        self._distances: dict = {}
        self.groups: dict = {}  # buffer -> (buffer, engine, indices, writes, guard) -> body positions
        guards = flat.guards or (None,) * len(flat.body)
        for n, (op, guard) in enumerate(zip(flat.body, guards)):
            for accesses, writes in ((op.reads, False), (op.writes, True)):
                for a in accesses:
                    key = (a.buffer, op.engine, a.indices, writes, guard)
                    group = self.groups.setdefault(a.buffer, {}).setdefault(key, [])
                    if not group or group[-1] != n:
                        group.append(n)
        self.body_accessors: dict = {}  # (buffer, writes) -> body ops
        for op in flat.body:
            for a, writes in _accesses(op):
                group = self.body_accessors.setdefault((a.buffer, writes), [])
                if not group or group[-1] is not op:
                    group.append(op)
        self.engine_of = {op.name: op.engine for op in (*flat.prefix, *flat.body, *flat.suffix)}
        self.distance = 1  # the farthest distance of a dependence in the body, and every period
        self.statics = {"prefix": StaticIndex(self, flat.prefix), "suffix": StaticIndex(self, flat.suffix)}
        self.check_parameter_buffers()
        self.guarded = GuardedBody(self) if flat.guards else None

    def check_parameter_buffers(self) -> None:
        """A buffer written anywhere and accessed at a parameter-dependent index must be
        accessed with the same parameter terms in every dimension by every op: then two of
        its accesses are equal or disjoint for every parameter value, and the element keys
        of the concrete run (flat.Index) are exact. Otherwise whether they alias depends on
        the parameters, and the program is left to the later stages."""
        flat = self.flat
        signatures: dict = {}
        written = set()
        for ops in (flat.prefix, flat.body, flat.suffix):
            for op in ops:
                for a, writes in _accesses(op):
                    dims = self.indices(op, a)
                    signatures.setdefault(a.buffer, set()).add(tuple(d.sym for d in dims))
                    if writes:
                        written.add(a.buffer)
        for buffer in written:
            sigs = signatures[buffer]
            if len(sigs) > 1 and any(any(sig) for sig in sigs):
                raise NotFlat(f"{buffer} is accessed at indices that alias for some parameter values only")

    def indices(self, op, access) -> list:
        return indices(access.indices, self.flat.var if self.segment[op.name] == "body" else None, self.index_cache)

    def pairs_of(self, x, y):
        return [(self.indices(x, ax), self.indices(y, ay)) for ax, ay in self.conflicts(x, y)]

    def count_loop(self, x, at) -> object:
        e, lo = x.engine, self.flat.lo
        return _lin(self.pre[e] + self.rank[x.name] + 1 - lo * self.per_iteration[e], (self.per_iteration[e], at))

    def count_static(self, x, y=None) -> object:
        """The count up to x, outside the loop (y: the consumer, for a guarded body)."""
        e = x.engine
        if self.segment[x.name] == "prefix":
            return Const(self.rank[x.name] + 1)
        if self.guarded:
            return self.guarded.after_body(y, e, None, suffix_op=x)
        return _lin(self.pre[e] + self.rank[x.name] + 1, (self.per_iteration[e], self.trip))

    def latest_static(self, ops, y, engine, before: int | None):
        """The count up to the latest op of `ops` (outside the loop) on `engine` that
        conflicts with y (in the body when `before` is None, else outside it, at that
        position), or None."""
        index = self.statics["prefix" if ops is self.flat.prefix else "suffix"]
        if before is not None and self.conflicts is conflicting_pairs:
            n = index.latest(y, engine, before)
            return None if n is None else self.count_static(ops[n], y)
        for n in reversed(range(len(ops) if before is None else before)):
            x = ops[n]
            if x.engine != engine or not index.shares(x, y):
                continue
            hit = False
            for ix, iy in self.pairs_of(x, y):
                if before is not None:
                    hit = hit or static_conflict(ix, iy)
                    continue
                p, residues = body_against_constant(iy, ix, body_first=True)
                if residues and len(residues) < p:
                    raise NotFlat("a dependence at some iterations only")
                hit = hit or bool(residues)
            if hit:
                return self.count_static(x, y)
        return None

    def distance_of(self, ix: list, iy: list, first: int):
        key = (id(ix), id(iy), first)  # Index lists are cached per access: identity is stable
        if key not in self._distances:
            self._distances[key] = d = distance(ix, iy, first)
            self.distance = max([self.distance, *(f.p for f in (*ix, *iy)), d or 0])
        return self._distances[key]

    def body_candidates(self, y, engine):
        """(x, least distance allowed) for the body ops on `engine` that may hold the last
        conflicting instance: per buffer, index and kind of access, the latest before y
        and the latest after it (the others are earlier instances of the same distance).
        With a conflict relation other than the default, every op on a shared buffer."""
        at = self.position[y.name]
        out = []
        for buffer, writes in {(a.buffer, False) for a in y.reads} | {(a.buffer, True) for a in y.writes}:
            for (b, e, key, x_writes, guard), positions in self.groups.get(buffer, {}).items():
                if e != engine or not (writes or x_writes):
                    continue
                if self.conflicts is not conflicting_pairs:
                    out += [(flat_op, 0 if n < at else 1) for n in positions for flat_op in (self.flat.body[n],)]
                    continue
                k = bisect.bisect_left(positions, at)
                if k:
                    out.append((self.flat.body[positions[k - 1]], 0))
                if positions[-1] > at:
                    out.append((self.flat.body[positions[-1]], 1))
        return out

    def dependence_pairs(self) -> int:
        """(producer op, consumer op) pairs on different engines that may conflict: they
        share a buffer, one of them writing, and when both are outside the loop their
        elements may meet (the count of the general planner's statistics)."""
        total = 0
        every = (*self.flat.prefix, *self.flat.body, *self.flat.suffix)
        order = {op.name: n for n, op in enumerate(every)}
        loop_ops = {op.name for op in self.flat.body}
        for y in every:
            xs = set()
            if y.name in loop_ops:
                for a, writes in _accesses(y):
                    xs |= {x.name for x in self.body_accessors.get((a.buffer, True), ())}
                    if writes:
                        xs |= {x.name for x in self.body_accessors.get((a.buffer, False), ())}
                    for index in self.statics.values():
                        xs |= {x.name for x in index.accessors(a.buffer, writes)}
            else:
                for a, writes in _accesses(y):
                    xs |= {x.name for x in self.body_accessors.get((a.buffer, True), ())}
                    if writes:
                        xs |= {x.name for x in self.body_accessors.get((a.buffer, False), ())}
                    for index in self.statics.values():
                        xs |= {x.name for x in index.meeting(self.indices(y, a), a.buffer, writes)}
            total += sum(1 for x in xs if self.engine_of[x] != y.engine
                         and (order[x] < order[y.name] or (x in loop_ops and y.name in loop_ops)))
        return total

    def threshold(self, y, engine) -> object | None:
        match self.segment[y.name]:
            case "prefix":
                return self.latest_static(self.flat.prefix, y, engine, self.position[y.name])
            case "body":
                return self.guarded.in_body(y, engine) if self.guarded else self._in_body(y, engine)
            case "suffix":
                return self._after_body(y, engine)

    def _in_body(self, y, engine):
        flat = self.flat
        before = self.latest_static(flat.prefix, y, engine, None)
        best = None  # (d, -position, x)
        for x, first in self.body_candidates(y, engine):
            ds = []
            for ix, iy in self.pairs_of(x, y):
                d = self.distance_of(ix, iy, first)
                if d is not None:
                    ds.append(d)
            if ds:
                key = (min(ds), -self.position[x.name], x)
                best = key if best is None or key[:2] < best[:2] else best
        if best is None:
            return before
        d, _, x = best
        i = Var(flat.var)
        count = self.count_loop(x, simplify(BinOp("-", i, Const(d))))
        if d == 0:
            return count
        # Below lo + d the count alone still says the same where it equals the count
        # before the loop, or where both are <= 0 (a wait that always holds).
        c = 0 if before is None else before.value
        values = [simplify(_substitute(count, flat.var, Const(v))) for v in range(flat.lo, flat.lo + d)]
        if all(isinstance(v, Const) and (v.value == c or (v.value <= 0 and c <= 0)) for v in values):
            return count
        return IfExpr(Compare(">=", i, Const(flat.lo + d)), count, Const(c))

    def _after_body(self, y, engine):
        flat = self.flat
        latest = self.latest_static(flat.suffix, y, engine, self.position[y.name])
        if latest is not None:
            return latest
        before = self.latest_static(flat.prefix, y, engine, len(flat.prefix))
        if self.guarded:
            return self.guarded.after_body(y, engine, before)
        chosen = None  # (form, position, x)
        for x in flat.body:
            if x.engine != engine:
                continue
            forms = set()
            for ix, iy in self.pairs_of(x, y):
                p, residues = body_against_constant(ix, iy, body_first=True)
                self.distance = max(self.distance, p)
                if len(residues) == p:
                    forms.add((1, 0))
                elif len(residues) == 1:
                    forms.add((p, residues.pop()))
                elif residues:
                    raise NotFlat("several residue classes conflict")
            if not forms:
                continue
            form = (1, 0) if (1, 0) in forms else forms.pop() if len(forms) == 1 else None
            if form is None or (chosen is not None and chosen[0] != form):
                raise NotFlat("producers of different residue classes")
            chosen = (form, self.position[x.name], x)  # the body in order: the latest wins
        if chosen is None:
            return before
        (p, r), _, x = chosen
        hi = Var(HI)
        last = simplify(BinOp("-", hi, Const(1)))
        if p > 1:
            last = simplify(BinOp("-", last, BinOp("%", BinOp("-", last, Const(r)), Const(p))))
        count = self.count_loop(x, last)
        if p == 1 and flat.t_min >= 1:
            return count
        # Where x has no instance, i' < lo and the count is at most its value at lo - 1:
        # if that is <= 0 and nothing before the loop conflicts, the count alone says it.
        edge = simplify(self.count_loop(x, Const(flat.lo - 1)))
        if before is None and isinstance(edge, Const) and edge.value <= 0:
            return count
        exists = Compare(">=", hi, Const(flat.lo + 1)) if p == 1 else Compare(">=", last, Const(flat.lo))
        return IfExpr(exists, count, before or Const(0))


def _substitute(expr, var: str, value):
    from algorithm.threshold.counting import subst

    return subst(expr, {var: value})


def plan_closed(program: Program, conflicts=conflicting_pairs, count_registers: bool = True) -> tuple[Flat, ClosedPlan]:
    """The thresholds of a flat program, over HI (NotFlat when it is not one);
    `count_registers`: whether a threshold may read `count(F)`."""
    flat = flat_shape(program)
    planner = Planner(program, flat, conflicts, count_registers)
    thresholds = {}
    for y in (*flat.prefix, *flat.body, *flat.suffix):
        for engine in program.engines:
            if engine == y.engine:
                continue
            t = planner.threshold(y, engine)
            if t is None or (isinstance(t, Const) and t.value <= 0):
                continue
            thresholds[(y.name, engine)] = t
    return flat, ClosedPlan(thresholds, planner.dependence_pairs(), planner.distance, planner.index_cache)


def sync_closed(program: Program, conflicts=conflicting_pairs, max_instances: int = 2_000_000,
                count_registers: bool = True):
    """(plan entries, dependence pairs, waits dropped as redundant) of a flat program,
    checked by a concrete run of at most `max_instances` instances (concrete.py); None
    when the program is not flat."""
    from algorithm.threshold.concrete import check_and_reduce
    from algorithm.threshold.plan import PlanEntry

    try:
        flat, plan = plan_closed(program, conflicts, count_registers)
        kept = check_and_reduce(program, flat, plan.thresholds, plan.distance, plan.index_cache, max_instances)
    except NotFlat:
        return None
    entries = [PlanEntry(op, engine, simplify(_substitute(t, HI, flat.hi)), True)
               for (op, engine), t in plan.thresholds.items() if (op, engine) in kept]
    return entries, plan.dependence_pairs, len(plan.thresholds) - len(kept)
