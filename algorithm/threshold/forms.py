"""Small expressions for the thresholds of guarded flat bodies (guards.py).

Such a threshold is a function T of one integer variable v (the loop index, or the loop's
upper bound for an op after the loop) that is *quasi-affine with period L*: on each
residue class of v mod L it is affine from some point K on (the count of a fixed op a
fixed number of iterations back grows by the same number of instances every period),
and takes given values on [start, K). This module writes T as a small expression built
from a few templates, and proves the expression equal to T by evaluation:

- a floor form `(a * v + k) // m + c` whose slope a / m is T's, q / L (the instances of
  the engine per period), reduced, with 0 <= k < m; or a constant c;
- `count(F) + c`: the engine-count register at y, itself quasi-affine with period L;
- `if C then E1 else E2`, C one of `v % m == r` (m dividing L) or `v >= k`
  (start < k <= K), E1 and E2 templates, nested at most three deep.

Every template is affine on each class of v mod L from K on, and below `start` (its
moduli divide L, and its comparisons with constants are decided there): the reduced
floor form `(a * v + k) // m` with m dividing L is, on v = r + L t, floor((a r + k) / m)
+ (a L / m) t. Two functions affine on one class agree on it once they agree at two of
its points. So an expression is accepted when it equals T at each single point given
(those of [start, K) where the op runs) and at both points of each pair (two points of
one class, K or later; or below `start`, where T is constant). Where T is 0 (no
conflicting instance: a wait there always holds) any value <= 0 will do: at a single
point the value is checked; on a pair both values are <= 0 and the farther one is at
most the nearer one, so the affine expression stays <= 0 along the whole class.

The search returns the expression of fewest run-time operations (as verify/cost.py
counts them: an `if` costs one, its condition and its costlier branch) among those of at
most two nested ifs, else of three; the first found on ties (leaves before splits; the
constant, then floor forms, then the register); None when none fits.
"""

from __future__ import annotations

import math

import attrs

from semantics.ir import BinOp, Compare, Const, Count, IfExpr, Var

MAX_DEPTH = 3


@attrs.frozen
class Point:
    v: int
    value: int  # T(v); 0 when there is no conflicting instance (then any value <= 0)
    register: int  # count(F) at y at v


@attrs.frozen
class _Cond:
    cost: int
    expr: object
    test: object  # v -> bool


@attrs.frozen
class _Found:
    cost: int
    expr: object


def _plus(expr, c: int):
    return expr if c == 0 else BinOp("+", expr, Const(c)) if c > 0 else BinOp("-", expr, Const(-c))


class Fitter:
    def __init__(self, var: str, engine: str, period: int, slope: tuple[int, int], start: int, steady: int,
                 units: list, count_register: bool = True):
        self.v, self.engine, self.units = Var(var), engine, tuple(units)
        g = math.gcd(*slope)
        num, den = slope[0] // g, slope[1] // g
        # leaves: (base cost, builder, g(point)); V = g + c
        self.leaves = [(0, lambda c: Const(c), lambda p: 0)]
        for k in range(den if num else 0):
            term = self.v if num == 1 else BinOp("*", Const(num), self.v)
            term = term if k == 0 else BinOp("+", term, Const(k))
            term = term if den == 1 else BinOp("//", term, Const(den))
            cost = (num != 1) + (k != 0) + (den != 1)
            self.leaves.append((cost, lambda c, term=term: _plus(term, c),
                                lambda p, num=num, k=k, den=den: (num * p.v + k) // den))
        if count_register:  # off where the register would count from another start (algorithm/barrier.py)
            self.leaves.append((0, lambda c: _plus(Count(engine), c), lambda p: p.register))
        self.leaves.sort(key=lambda leaf: leaf[0])  # stable: the order above on ties
        self.conds = [_Cond(1, Compare(">=", self.v, Const(k)), lambda v, k=k: v >= k)
                      for k in range(start + 1, steady + 1)]
        for m in range(2, period + 1):
            if period % m == 0:
                self.conds += [_Cond(2, Compare("==", BinOp("%", self.v, Const(m)), Const(r)),
                                     lambda v, m=m, r=r: v % m == r) for r in range(m)]
        self.conds.sort(key=lambda c: c.cost)
        # the units a condition holds at, as a bit mask (a set of units is one)
        self.masks = [sum(1 << n for n, unit in enumerate(self.units) if c.test(unit[0].v)) for c in self.conds]
        self._leaf_memo: dict = {}
        self._memo: dict = {}

    def fit(self):
        ids = (1 << len(self.units)) - 1
        found = self._search(ids, MAX_DEPTH - 1, math.inf) or self._search(ids, MAX_DEPTH, math.inf)
        return None if found is None else found.expr

    def _leaf(self, mask: int) -> _Found | None:
        if mask in self._leaf_memo:
            return self._leaf_memo[mask]
        ids = [n for n in range(len(self.units)) if mask >> n & 1]
        best = None
        for cost, build, g in self.leaves:
            if best is not None and cost >= best.cost:
                break
            c = self._constant(ids, g)
            if c is not None and (best is None or cost + (c != 0) < best.cost):
                best = _Found(cost + (c != 0), build(c))
        self._leaf_memo[mask] = best
        return best

    def _constant(self, ids: list, g) -> int | None:
        """The c closest to 0 with g + c meeting every unit's constraint, or None."""
        exact, upper = None, math.inf
        for n in ids:
            unit = self.units[n]
            for p in unit:
                if p.value:
                    c = p.value - g(p)
                    if exact is not None and c != exact:
                        return None
                    exact = c
                else:
                    upper = min(upper, -g(p))
            if len(unit) == 2 and not unit[0].value and not unit[1].value and g(unit[1]) > g(unit[0]):
                return None  # rising along a class where any value <= 0 will do
            if len(unit) == 2 and (unit[0].value == 0) != (unit[1].value == 0):
                return None
        if exact is not None:
            return exact if exact <= upper else None
        return min(0, upper)

    def _search(self, ids: int, depth: int, limit) -> _Found | None:
        """The cheapest expression of at most `depth` nested ifs for the units `ids` (a
        mask), when it costs less than `limit`; else None."""
        key = (ids, depth)
        if key in self._memo:
            found, tried = self._memo[key]
            if found is not None:
                return found if found.cost < limit else None
            if tried >= limit:
                return None
        best = self._leaf(ids)
        best = best if best is not None and best.cost < limit else None
        if depth:
            bound = limit if best is None else best.cost
            seen = set()
            for cond, mask in zip(self.conds, self.masks):
                if 1 + cond.cost >= bound:
                    break
                yes, no = ids & mask, ids & ~mask
                if not yes or not no or yes in seen:
                    continue
                seen |= {yes, no}
                inner = bound - 1 - cond.cost
                then = self._search(yes, depth - 1, inner)
                if then is None:
                    continue
                else_ = self._search(no, depth - 1, inner)
                if else_ is None:
                    continue
                cost = 1 + cond.cost + max(then.cost, else_.cost)
                best, bound = _Found(cost, IfExpr(cond.expr, then.expr, else_.expr)), cost
        self._memo[key] = (best, limit)
        return best
