"""Periodic guards in a flat loop body, and the thresholds of such a body by arithmetic.

A flat body (flat.py) may hold `if` statements, nested or with `else`, whose branches hold
only ops and whose conditions are *periodic* in the loop index i: comparisons of two
expressions of i built as indices are (constants, `+`, `-`, `*` by a constant, `%` by a
positive constant) whose difference has no linear part, such as `i % 2 == 0` or
`(i + 1) % 3 != 2`, combined with `and`, `or`, `not`. A comparison with a linear part
(`i < S`, `i >= 1`) holds on a prefix or a suffix of the iterations only: the program
is left to the later stages. An op's *guard* is the conjunction of the conditions around
it (negated in an `else` branch): a set of residues of i modulo its period, at which the
op runs. The body's *period* L is the lcm of the guards' periods and of every index
modulus of the body; guards and conflict patterns repeat with period L.

Per consumer y at an iteration i of residue r = i mod L (one where y runs) and engine F:
- producer x in the body: x at i - d runs and conflicts with y at i or not for the whole
  class of i, so the least such d_x(r) >= first (0 when x precedes y in the body, else
  1) is found by trying one period of d (plus the reach of a linear index, as in
  flat.distance). Over the producers on F the least d wins, then the latest in the body:
  every other conflicting instance lies further back. The last conflicting F-instance is
  x_r at i - d_r when i >= lo + d_r; before that, and on a class without producer, it is
  the latest F-op before the loop that conflicts with y at r (a constant count, or none).
- the count up to x at iteration j >= lo is pre_F + N_F(j) + (F-ops before x in the body
  whose guard holds at j) + 1, where N_F(j), the F-instances of iterations lo..j-1, is
  q_F per full period plus those of the partial one (q_F: the F-instances of one period).
  So on each class T(i) is affine with slope q_F / L from lo + d_r on, constant on a class
  without producer: quasi-affine, and written by forms.py, which proves its expression
  equal to T at every i >= lo by evaluating it at the points this module gives.
- y after the loop, at upper bound hi: the latest instance of each producer x at some
  i' < hi of a residue where x runs and conflicts with y, i' >= lo; the latest of them
  (then the latest in the body) is the last one, else the latest op before the loop. As
  a function of hi it is quasi-affine too, from hi = lo + L on.
`count(F)` at y (the engine-count register) is pre_F + N_F(i) + the F-ops before y in the
body that run at i (after the loop: N_F(max(hi, lo)) and the F-ops of the suffix before
y), quasi-affine with the same slope: forms.py may write T as `count(F) - c`.
The concrete run (concrete.py) checks every threshold again at every instance of its window.
"""

from __future__ import annotations

import math

import attrs

from semantics.evaluate import eval_cond, eval_expr
from semantics.ir import And, Barrier, Compare, If, Not, Op, Or, Range
from algorithm.threshold.flat import (
    MAX_PERIOD, NotFlat, body_against_constant, check_index, joint_period, overlaps, period,
)
from algorithm.threshold.forms import Fitter, Point


@attrs.frozen
class Guard:
    period: int
    residues: frozenset  # the residues of i mod period at which the op runs

    def holds(self, i: int) -> bool:
        return i % self.period in self.residues


def holds(guard: Guard | None, i: int) -> bool:
    return guard is None or guard.holds(i)


def guard_of(cond, var: str) -> Guard:
    """The residues at which a periodic condition holds, or NotFlat."""
    exprs = []

    def visit(c):
        match c:
            case Compare(left=a, right=b):
                for e in (a, b):
                    check_index(e, var, frozenset())
                exprs.append((a, b))
            case And(left=a, right=b) | Or(left=a, right=b):
                visit(a)
                visit(b)
            case Not(operand=a):
                visit(a)
            case _:
                raise NotFlat("a condition that is not periodic in the loop index")

    visit(cond)
    p = 1
    for a, b in exprs:
        p = math.lcm(p, period(a), period(b))
    if p > MAX_PERIOD:
        raise NotFlat(f"a guard of period {p} (over {MAX_PERIOD})")
    for a, b in exprs:  # no linear part: the difference repeats with period p
        if eval_expr(a, {var: p}) - eval_expr(b, {var: p}) != eval_expr(a, {var: 0}) - eval_expr(b, {var: 0}):
            raise NotFlat("a condition that is not periodic in the loop index")
    return Guard(p, frozenset(r for r in range(p) if eval_cond(cond, {var: r})))


def _conjoin(g: Guard | None, h: Guard) -> Guard:
    if g is None:
        return h
    p = math.lcm(g.period, h.period)
    return Guard(p, frozenset(r for r in range(p) if g.holds(r) and h.holds(r)))


def loop_body(loop) -> tuple[list, tuple]:
    """The loop's ops in program order and their guards (() when no op has one)."""
    ops, guards = [], []

    def visit(body, guard, nested: bool):
        for stmt in body:
            match stmt:
                case Barrier() if not nested:
                    continue
                case Op():
                    ops.append(stmt)
                    guards.append(guard)
                case If():
                    g = guard_of(stmt.cond, loop.var)
                    visit(stmt.then, _conjoin(guard, g), True)
                    visit(stmt.else_, _conjoin(guard, Guard(g.period, frozenset(range(g.period)) - g.residues)), True)
                case _:
                    raise NotFlat("a nested statement other than an if of ops")

    visit(loop.body, None, False)
    guards = [None if g is not None and len(g.residues) == g.period else g for g in guards]
    return ops, (tuple(guards) if any(g is not None for g in guards) else ())


def body_period(body, guards) -> int:
    """L: the lcm of the guards' periods and of the body's index moduli (1 without guards)."""
    if not guards:
        return 1
    p = 1
    for g in guards:
        p = math.lcm(p, g.period if g else 1)
    for op in body:
        for access in (*op.reads, *op.writes):
            for index in access.indices:
                if not isinstance(index, Range):
                    p = math.lcm(p, period(index))
    if p > MAX_PERIOD:
        raise NotFlat(f"a guarded body of period {p} (over {MAX_PERIOD})")
    return p


class GuardedBody:
    """The thresholds of a flat program whose body has guards (the planner's `in_body` and
    `after_body` there)."""

    def __init__(self, planner):
        self.planner = planner
        flat = self.flat = planner.flat
        self.L, self.lo = flat.period, flat.lo
        self.guard = {op.name: g for op, g in zip(flat.body, flat.guards)}
        engines = planner.program.engines
        # before[name][e][t]: the e-ops before `name` in the body that run at iterations ≡ t
        self.before: dict = {}
        running = {e: [0] * self.L for e in engines}
        for op, g in zip(flat.body, flat.guards):
            self.before[op.name] = {e: list(running[e]) for e in engines}
            for t in range(self.L):
                running[op.engine][t] += holds(g, t)
        self.partial = {}  # e -> F-instances of iterations lo .. lo + t - 1, t in 0..L
        for e in engines:
            acc = [0]
            for t in range(self.L):
                acc.append(acc[-1] + running[e][(self.lo + t) % self.L])
            self.partial[e] = acc
        self.suffix_before = {}
        seen = {e: 0 for e in engines}
        for op in flat.suffix:
            self.suffix_before[op.name] = dict(seen)
            seen[op.engine] += 1

    def iterations(self, e, j: int) -> int:
        """N_F(j): the e-instances of iterations lo..j-1."""
        if j <= self.lo:
            return 0
        n, t = divmod(j - self.lo, self.L)
        return n * self.partial[e][self.L] + self.partial[e][t]

    def count_at(self, x, j: int) -> int:
        e = x.engine
        return self.planner.pre[e] + self.iterations(e, j) + self.before[x.name][e][j % self.L] + 1

    def slope(self, e) -> tuple[int, int]:
        return self.partial[e][self.L], self.L

    # ---------------------------------------------------------------- y in the body

    def in_body(self, y, engine):
        planner, L, lo = self.planner, self.L, self.lo
        gy = self.guard[y.name]
        residues = [r for r in range(L) if holds(gy, r)]
        if not residues:
            return None
        best: dict = {}  # r -> (d, -position, x)
        for x, first in planner.body_candidates(y, engine):
            gx, pairs = self.guard[x.name], planner.pairs_of(x, y)
            steps = L
            for ix, iy in pairs:
                joint_period(ix, iy)
                for fx, fy in zip(ix, iy):
                    if fx.range is None and fx.a:
                        steps = max(steps, (fx.bound() + fy.bound()) // abs(fx.a) + 1 + L)
            for r in residues:
                for d in range(first, first + steps + 1):
                    if holds(gx, r - d) and any(overlaps(ix, r - d, iy, r) for ix, iy in pairs):
                        key = (d, -planner.position[x.name])
                        if r not in best or key < best[r][:2]:
                            best[r] = (*key, x)
                        break
        before = self._prefix_by_residue(y, engine, residues)
        if not best and not any(before.values()):
            return None
        reach = max((d for d, _, _ in best.values()), default=0)
        planner.distance = max(planner.distance, L, reach)
        start, steady = lo, lo + reach

        def point(i):
            r = i % L
            if r in best and i - best[r][0] >= lo:
                value = self.count_at(best[r][2], i - best[r][0])
            else:
                value = before[r]
            register = planner.pre[engine] + self.iterations(engine, i) + self.before[y.name][engine][r]
            return Point(i, value, register)

        return self._fit(planner.flat.var, engine, start, steady, gy, point)

    def _prefix_by_residue(self, y, engine, residues) -> dict:
        """Per residue, the count up to the latest op before the loop that conflicts with
        y there (0: none)."""
        planner, out = self.planner, {}
        index = planner.statics["prefix"]
        for n in reversed(range(len(self.flat.prefix))):
            x = self.flat.prefix[n]
            if x.engine != engine or not index.shares(x, y):
                continue
            for ix, iy in planner.pairs_of(x, y):
                p, hits = body_against_constant(iy, ix, body_first=True)
                for r in residues:
                    if r not in out and r % p in hits:
                        out[r] = planner.count_static(x).value
            if len(out) == len(residues):
                break
        return {r: out.get(r, 0) for r in residues}

    # ---------------------------------------------------------------- y after the loop

    def after_body(self, y, engine, before, suffix_op=None):
        """`before`: the count up to the latest conflicting op before the loop (None: none).
        With `suffix_op` (an op after the loop on `engine`, y itself or before it): the
        count up to it, as a function of the upper bound."""
        from algorithm.threshold.flat import HI

        planner, flat, L, lo = self.planner, self.flat, self.L, self.lo
        hits = []  # (position, x, residues at which x runs and conflicts with y)
        for n, x in enumerate(flat.body):
            if x.engine != engine or suffix_op is not None:
                continue
            rs = set()
            for ix, iy in planner.pairs_of(x, y):
                p, conflicting = body_against_constant(ix, iy, body_first=True)
                rs |= {r for r in range(L) if r % p in conflicting and holds(self.guard[x.name], r)}
            if rs:
                hits.append((n, x, rs))
        b = 0 if before is None else before.value
        if not hits and suffix_op is None:
            return before
        planner.distance = max(planner.distance, L)
        # hi takes every value from hi_min on; with no least value, the points below lo
        # follow one constant (the loop runs zero times): forms.py checks two per class.
        start = flat.hi_min if flat.hi_min is not None else lo - L
        steady = max(lo + L, start)
        suffix_before = self.suffix_before[y.name][engine]

        def point(hi):
            last = None  # (iteration, position, x)
            for n, x, rs in hits:
                for i in range(hi - 1, max(hi - 1 - L, lo - 1), -1):
                    if i % L in rs:
                        if last is None or (i, n) > last[:2]:
                            last = (i, n, x)
                        break
            value = b if last is None else self.count_at(last[2], last[0])
            register = planner.pre[engine] + self.iterations(engine, max(hi, lo)) + suffix_before
            if suffix_op is not None:
                value = planner.pre[engine] + self.iterations(engine, max(hi, lo)) + planner.rank[suffix_op.name] + 1
            return Point(hi, value, register)

        return self._fit(HI, engine, start, steady, None, point, below=flat.hi_min is None)

    def _fit(self, var, engine, start, steady, guard, point, below: bool = False):
        L = self.L
        units = [(point(v),) for v in range(start, steady) if holds(guard, v)]
        units += [(point(v), point(v + L)) for v in range(steady, steady + L) if holds(guard, v)]
        if below:  # each class below `start`: two points, the nearer first
            units += [(point(v), point(v - L)) for v in range(start - L, start) if holds(guard, v)]
        expr = Fitter(var, engine, L, self.slope(engine), start, steady, units, self.planner.count_registers).fit()
        if expr is None:
            raise NotFlat("a guarded threshold beyond the forms of forms.py")
        return expr
