"""Flat programs: the class the closed-form planner (closed.py) plans by arithmetic.

A program is *flat* when its top level is ops around at most one `for` loop whose body
holds ops and `if` statements of ops (nested or with `else`) with conditions periodic in
the loop index (guards.py); the loop's lower bound is a constant and its upper bound an
expression of parameters; outside the loop every index is affine in the parameters (a
constant when it has no parameter) or a constant range, and inside it a point index is
built from the loop index, constants, `+`, `-`, `*` by a constant and `%` by a positive
constant (a range index has constant bounds). Such an index satisfies f(i + P) = f(i) +
a * P for P the lcm of its moduli: it is linear plus P-periodic. Two accesses at indices
with equal parameter terms are equal or disjoint for every parameter value; a written
buffer accessed at other parameter-dependent indices aliases for some values only, and is
left to the later stages. Barriers outside the loop and at the top of its body are
dropped (as every threshold output drops them); a barrier under an `if`, DMA queues, peer
clauses and replicas take the general planner (plan.py).

The rule of plan.py (wait until the producer engine F has completed the instances up to
the last conflicting one) then reduces to arithmetic, per consumer y and engine F. In a
body without guards:
- y in the body at iteration i, producer x in the body: with equal linear parts, x at
  i - d conflicts with y for every i, for none, or for some (then the program is not flat:
  the general planner takes it). The last conflicting x-instance is at the least such d
  that conflicts for every i (d >= 0 when x precedes y in the body, else d >= 1), and it
  exists when i >= lo + d. Among all producers on F the least d wins, then the latest in
  the body; where it does not exist (i < lo + d), the latest conflicting op before the
  loop is the last one.
- y after the loop, x in the body: the last conflicting x-instance is at i' = hi - 1, or at
  the latest i' < hi of the one residue class mod P that conflicts, when i' >= lo.
- ops outside the loop conflict or not, statically.
Counts are positions: the F-ops before the loop, n_F per iteration, the F-ops of the
segment before x, plus one. A body with guards takes the same rule per residue of i
modulo the body's period (guards.py), its thresholds written by forms.py.

Nothing here is taken on trust. concrete.py runs the program concretely over a window of
trip counts, computes every instance's minimal threshold from the dependence definition
(the last conflicting instance per engine and buffer element), checks each closed form
against it, and decides which waits are redundant; the window runs until the run is
periodic, after which every quantity it compares grows by the same amount per period.
A program that leaves the class or fails a check is planned by the general planner.
"""

from __future__ import annotations

import bisect
import functools
import math

import attrs

from semantics.errors import Unsupported
from semantics.ir import Barrier, BinOp, Const, For, Iters, Neg, Op, Program, Range, Var, walk_expr
from semantics.evaluate import eval_expr
from semantics.simplify import linear, simplify

HI = "#hi"  # the loop's upper bound, abstracted while planning and checking
# Periods are checked one value at a time, and the concrete run covers a few of them:
# longer ones are left to the general planner.
MAX_PERIOD = 64


class NotFlat(Unsupported):
    """The program leaves the flat class (internal: the general planner takes it)."""


@attrs.frozen
class Flat:
    prefix: tuple  # ops before the loop
    body: tuple  # the loop's ops
    suffix: tuple  # ops after the loop
    var: str | None
    lo: int
    hi: object  # IR over parameters
    t_min: int  # the fewest iterations any valid parameter valuation gives
    hi_min: int | None  # the least upper bound any valid valuation gives (None: unknown)
    guards: tuple = ()  # per body op, its guard (guards.Guard) or None; () when no op has one
    period: int = 1  # with guards, the lcm of their periods and the body's index moduli; else 1


def flat_shape(program: Program) -> Flat:
    """The program's flat shape, or NotFlat."""
    if program.queues:
        raise NotFlat("DMA queues")
    prefix, suffix, loop = [], [], None
    for stmt in program.body:
        match stmt:
            case Barrier():
                continue
            case Op():
                (suffix if loop is not None else prefix).append(stmt)
            case For() if loop is None:
                loop = stmt
            case _:
                raise NotFlat("more than one loop, or an if")
    body, guards = [], ()
    if loop is not None:
        from algorithm.threshold.guards import body_period, loop_body

        body, guards = loop_body(loop)
        lo = simplify(loop.lo)
        if not isinstance(lo, Const):
            raise NotFlat("a loop lower bound that is not a constant")
        params = {p.name for p in program.params}
        if any(isinstance(n, Iters) or (isinstance(n, Var) and n.name not in params) for n in walk_expr(loop.hi)):
            raise NotFlat("a loop upper bound over more than parameters")
    params = frozenset(p.name for p in program.params)
    for ops, var in ((prefix, None), (body, loop.var if loop else None), (suffix, None)):
        for op in ops:
            if op.replica is not None or op.syncs or op.queue is not None:
                raise NotFlat("peer clauses, queues or replicas")
            for access in (*op.reads, *op.writes):
                for index in access.indices:
                    check_index(index, var, params if var is None else frozenset())
    if loop is None:
        return Flat(tuple(prefix), (), (), None, 0, Const(0), 0, 0)
    hi_min = least_bound(program, loop.hi)
    t_min = 0 if hi_min is None else max(0, hi_min - lo.value)
    return Flat(tuple(prefix), tuple(body), tuple(suffix), loop.var, lo.value, loop.hi, t_min, hi_min, guards,
                body_period(body, guards))


@functools.lru_cache(maxsize=4096)
def check_index(index, var: str | None, params: frozenset) -> None:
    if params and not isinstance(index, Range) and _affine_in(index, params) is not None:
        return
    if isinstance(index, Range):
        if not (isinstance(simplify(index.lo), Const) and isinstance(simplify(index.hi), Const)):
            raise NotFlat("a range with bounds that are not constants")
        return
    for node in walk_expr(index):
        match node:
            case Const() | Neg():
                continue
            case Var(name=name) if name == var:
                continue
            case BinOp(op="+" | "-"):
                continue
            case BinOp(op="*", left=a, right=b) if isinstance(simplify(a), Const) or isinstance(simplify(b), Const):
                continue
            case BinOp(op="%", right=b) if isinstance(simplify(b), Const) and simplify(b).value > 0:
                continue
        raise NotFlat("an index that is not linear plus periodic in the loop index")


def _affine_in(index, params: frozenset) -> tuple | None:
    """(((parameter, coefficient), ...) sorted, constant) when the index is affine in the
    parameters, else None."""
    terms, constant = [], 0
    for key, coef in linear(index).items():
        if not isinstance(coef, int):
            return None
        if key is None:
            constant = coef
        elif len(key) == 1 and isinstance(key[0], Var) and key[0].name in params:
            terms.append((key[0].name, coef))
        else:
            return None
    return tuple(sorted(t for t in terms if t[1])), constant


def least_bound(program: Program, hi) -> int | None:
    """The least value of hi over valid valuations when every coefficient of its linear
    form is non-negative (then hi grows with each parameter, from its lower bound)."""
    if any(coef < 0 for key, coef in linear(hi).items() if key is not None):
        return None
    return eval_expr(hi, {p.name: p.lower for p in program.params})


# ---------------------------------------------------------------- indices


def period(expr) -> int:
    out = 1
    for node in walk_expr(expr):
        if isinstance(node, BinOp) and node.op == "%":
            out = math.lcm(out, simplify(node.right).value)
    return out


def indices(access_indices: tuple, var: str | None, cache: dict) -> list:
    """The Index of each of an access's indices, one object per distinct index tuple (so
    that results keyed by them are shared between ops)."""
    key = (access_indices, var)
    if key not in cache:
        cache[key] = [Index(ix, var) for ix in access_indices]
    return cache[key]


class Index:
    """One access index as a function of the loop index (a constant outside the loop).
    Outside the loop an index may be affine in the parameters: its value is then the
    hashable (terms, constant) of its linear form, `sym` its terms. Two such indices with
    equal terms are equal or disjoint for every parameter value; any other comparison
    with one depends on the parameters (overlaps raises NotFlat)."""

    sym = ()

    def __init__(self, index, var: str | None):
        self.range = None
        if var is None and not isinstance(index, Range) and any(isinstance(n, Var) for n in walk_expr(index)):
            form = _affine_in(index, frozenset(n.name for n in walk_expr(index) if isinstance(n, Var)))
            if form is None:
                raise NotFlat("an index that is not affine in the parameters")
            self.sym, self.const = form
            self.p, self.a, self.base = 1, 0, [form if self.sym else self.const]
            return
        if isinstance(index, Range):
            self.range = (simplify(index.lo).value, simplify(index.hi).value)
            self.p, self.a = 1, 0
            return
        self.p = period(index)
        if self.p > MAX_PERIOD:
            raise NotFlat(f"an index of period {self.p} (over {MAX_PERIOD})")
        self.base = [eval_expr(index, {var: r} if var else {}) for r in range(self.p + 1)]
        self.a = (self.base[self.p] - self.base[0]) // self.p  # f(i + P) = f(i) + a * P
        del self.base[self.p]

    def __call__(self, i: int):
        if self.sym:
            return self.base[0]
        r = i % self.p
        return self.base[r] + self.a * (i - r)

    def values(self, i: int):
        if self.sym:
            return (self.base[0],)
        if self.range is not None:
            return range(*self.range)
        v = self(i)
        return range(v, v + 1)

    def bound(self) -> int:
        """max |f(i) - a * i| over a period (0 for a range)."""
        return 0 if self.range else max(abs(self(i) - self.a * i) for i in range(self.p))


def overlaps(ax: list, i_x: int, ay: list, i_y: int) -> bool:
    some = False  # a parameter-dependent index decides some dimension for some values only
    for fx, fy in zip(ax, ay):
        if fx.sym or fy.sym:
            if fx.sym == fy.sym and fx.const != fy.const:
                return False
            some = some or fx.sym != fy.sym
            continue
        vx, vy = fx.values(i_x), fy.values(i_y)
        if not (vx.start < vy.stop and vy.start < vx.stop and len(vx) and len(vy)):
            return False
    if some:
        raise NotFlat("accesses that alias for some parameter values only")
    return True


def _pattern(ax: list, ay: list, shift: int, p: int) -> bool | None:
    """Whether x at i - shift and y at i conflict: True for every i, False for none,
    None for some (the pattern has period p in i)."""
    seen = {overlaps(ax, i - shift, ay, i) for i in range(p)}
    return seen.pop() if len(seen) == 1 else None


def joint_period(ax: list, ay: list) -> int:
    out = 1
    for fx, fy in zip(ax, ay):
        if fx.range is None and fy.range is None:
            if fx.a != fy.a:
                raise NotFlat("indices with different linear parts")
        elif (fx.range is None and fx.a) or (fy.range is None and fy.a):
            raise NotFlat("a linear index against a range")
        out = math.lcm(out, fx.p, fy.p)
    return out


def distance(ax: list, ay: list, first: int) -> int | None:
    """The least d >= first such that x at i - d conflicts with y at i for every i; None
    when none does for any i. Both accesses are in the body."""
    p = joint_period(ax, ay)
    steps = p
    for fx, fy in zip(ax, ay):
        if fx.range is None and fx.a:  # |f_x(i - d) - f_y(i)| >= |a| d - bounds: no zero beyond
            steps = max(steps, (fx.bound() + fy.bound()) // abs(fx.a) + 1 + p)
    for d in range(first, first + steps + 1):
        match _pattern(ax, ay, d, p):
            case True:
                return d
            case None:
                raise NotFlat("a dependence at some iterations only")
    return None


def static_conflict(ax: list, ay: list) -> bool:
    return overlaps(ax, 0, ay, 0)


def body_against_constant(body_side: list, const_side: list, body_first: bool) -> tuple[int, set]:
    """The residues r mod P of the loop index at which the body access conflicts with an
    access outside the loop."""
    p = joint_period(body_side, const_side)
    for f in body_side:
        if f.range is None and f.a:
            raise NotFlat("a linear index against one outside the loop")
    hits = {r for r in range(p) if (overlaps(body_side, r, const_side, 0) if body_first
                                    else overlaps(const_side, 0, body_side, r))}
    return p, hits


def accesses(op):
    return [(a, False) for a in op.reads] + [(a, True) for a in op.writes]


class StaticIndex:
    """The accesses of the ops of one segment outside the loop, by buffer and, for point
    accesses, by element: the latest op conflicting with a point access is a lookup,
    so a long straight-line program costs its accesses, not its pairs of ops."""

    def __init__(self, planner, ops):
        self.planner, self.ops = planner, ops
        self.points: dict = {}  # (buffer, element) -> (engine, writes) -> positions
        self.ranges: dict = {}  # buffer -> [(position, op, writes, indices)] (range accesses)
        self.by_buffer: dict = {}  # buffer -> {op names}
        self.ops_of: dict = {}  # (buffer, writes) -> [ops]
        for n, op in enumerate(ops):
            for a, writes in accesses(op):
                dims = planner.indices(op, a)
                self.by_buffer.setdefault(a.buffer, set()).add(op.name)
                group = self.ops_of.setdefault((a.buffer, writes), [])
                if not group or group[-1] is not op:
                    group.append(op)
                if any(d.range is not None for d in dims):
                    self.ranges.setdefault(a.buffer, []).append((n, op, writes, dims))
                else:
                    key = (a.buffer, tuple(d(0) for d in dims))
                    self.points.setdefault(key, {}).setdefault((op.engine, writes), []).append(n)

    def shares(self, x, y) -> bool:
        names = [self.by_buffer.get(a.buffer, ()) for a in (*y.reads, *y.writes)]
        return any(x.name in group for group in names)

    def accessors(self, buffer, writes: bool) -> list:
        out = list(self.ops_of.get((buffer, True), ()))
        return out + list(self.ops_of.get((buffer, False), ())) if writes else out

    def meeting(self, dims, buffer, writes: bool) -> list:
        """The ops whose accesses to `buffer` may meet the static access `dims` (one of
        the two writing)."""
        if any(d.range is not None for d in dims):
            return self.accessors(buffer, writes)
        out = []
        for (engine, x_writes), positions in self.points.get((buffer, tuple(d(0) for d in dims)), {}).items():
            if writes or x_writes:
                out += [self.ops[n] for n in positions]
        for n, op, x_writes, x_dims in self.ranges.get(buffer, ()):
            if (writes or x_writes) and len(x_dims) == len(dims) and overlaps(x_dims, 0, dims, 0):
                out.append(op)
        return out

    def latest(self, y, engine, before: int) -> int | None:
        """The position of the latest op before `before` on `engine` that conflicts with
        the static op y, or None."""
        best = -1
        for a, writes in accesses(y):
            dims = self.planner.indices(y, a)
            if any(d.range is not None for d in dims):
                for n, op in enumerate(self.ops[:before]):
                    if n > best and op.engine == engine and any(
                            (writes or x_writes) and a.buffer == b.buffer and len(b.indices) == len(dims)
                            and overlaps(self.planner.indices(op, b), 0, dims, 0) for b, x_writes in accesses(op)):
                        best = n
                continue
            table = self.points.get((a.buffer, tuple(d(0) for d in dims)), {})
            for x_writes in ((True, False) if writes else (True,)):
                positions = table.get((engine, x_writes), ())
                k = bisect.bisect_left(positions, before)
                if k and positions[k - 1] > best:
                    best = positions[k - 1]
            for n, op, x_writes, x_dims in self.ranges.get(a.buffer, ()):
                if (n < before and n > best and op.engine == engine and (writes or x_writes)
                        and len(x_dims) == len(dims) and overlaps(x_dims, 0, dims, 0)):
                    best = n
        return best if best >= 0 else None
