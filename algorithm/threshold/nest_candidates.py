"""Candidates of the nest stage (nest.py): for a consumer y and a producer x on F, the
latest instance of x before y that conflicts with it, level by level, as a condition
over y's indices and the gap B of F-instances between it and y (module docstring of
nest.py: the rule; nest_guards.py: guards)."""

from __future__ import annotations

import attrs

from semantics.context import Site, common_depth, static_order
from semantics.ir import And, BinOp, Compare, Const, For, Min, Range, Var, walk_expr
from semantics.simplify import simplify
from algorithm.threshold.facts import subst
from algorithm.threshold.flat import Index
from algorithm.threshold.nest_counts import Counts, body_of
from algorithm.threshold.nest_flattened import Q, R, flattened, joint_name, rejoined
from algorithm.threshold.nest_guards import Guard, decided, holds_at, never, parity_square_free
from algorithm.threshold.reasoning import (
    FALSE, TRUE, NotNest, conjunction, conjuncts, minus, negated, plus, product, proves, refuted, residue, settled,
)


@attrs.frozen
class Candidate:
    key: tuple  # program order between candidates of one consumer: larger is later
    condition: object  # over y's loop indices and the parameters
    gap: object  # B: the F-instances strictly between the instance and y
    site: Site  # the producer
    values: dict = attrs.field(eq=False)  # its loop indices, over y's (irredundant.Source)
    facts: tuple = ()  # what else holds where it exists (its index at least its lower bound)

UNROLLED = 4  # a free index a range reads: taken one value at a time up to this many values


class Nest(Counts):
    """The counts and candidates of one program of the class."""

    def __init__(self, program, found: dict[str, Site], *args):
        super().__init__(program, found, *args)
        self._index: dict = {}

    # ------------------------------------------------------------ candidates

    def _witnessed(self, y: Site, loop, constraint, exists, to_end: bool) -> bool:
        """Whether an existence condition holds wherever y runs: the free index is
        bounded by its loop's end and y's own index of an equal loop range satisfies its
        congruence, or bounds decide it."""
        if constraint is not None and constraint[0] == "mod" and isinstance(constraint[1], Var) \
                and not self.over_indices(loop):
            mine = next((l for l in y.loops if l.var == constraint[1].name), None)
            if to_end and mine is not None and simplify(mine.lo) == simplify(loop.lo) \
                    and simplify(mine.hi) == simplify(loop.hi) and exists.op == ">=":
                return True
        return proves(self.domain(y), exists)

    def _range_equation(self, x: Site, y: Site, ix, iy, pinned: set, loops: dict):
        """A dimension where a side is a range (over parameters and loop indices): the
        condition over y's indices (or FALSE) under which the two meet, None when they
        always do, ("within", u, low, high) where x's free index u must lie in low .. high
        (part of its range), NotNest where x's range reads a free index."""
        if isinstance(ix, Range) and any(isinstance(n, Var) and n.name in loops and n.name not in pinned
                                         for e in (ix.lo, ix.hi) for n in walk_expr(e)):
            raise NotNest("a range over a free loop index")
        if isinstance(ix, Range) and isinstance(iy, Range):  # (two ranges meet where both hold an element)
            return settled(And(And(Compare("<", ix.lo, iy.hi), Compare("<", iy.lo, ix.hi)),
                               And(Compare("<", ix.lo, ix.hi), Compare("<", iy.lo, iy.hi))))
        if isinstance(ix, Range):
            return settled(And(Compare("<=", ix.lo, iy), Compare("<", iy, ix.hi)))
        moving = sorted({n.name for n in walk_expr(ix) if isinstance(n, Var) and n.name in loops and n.name not in pinned})
        if not moving:
            return settled(And(Compare("<=", iy.lo, ix), Compare("<", ix, iy.hi)))
        if len(moving) > 1:
            raise NotNest("a point index over two free loop indices against a range")
        loop = loops[moving[0]]  # x's free index u: u + c over its whole range must lie in y's
        offset = minus(ix, Var(loop.var))
        if any(isinstance(n, Var) and n.name == loop.var for n in walk_expr(offset)):
            raise NotNest("a range against an index of slope other than 1")
        inside = self.domain(y)
        if proves(inside, Compare("<=", iy.lo, plus(loop.lo, offset))) and \
                proves(inside, Compare("<=", plus(loop.hi, offset), iy.hi)):
            return None
        return ("within", loop.var, minus(iy.lo, offset), minus(minus(iy.hi, offset), Const(1)))

    def _pinned_equation(self, ix, iy, names: set):
        """x's index (over common loop indices at y's values and parameters) equals y's:
        TRUE or FALSE where both are periodic in one loop index (`names`: the index's, None
        where it reads a parameter) or constant and the residues decide it, else the
        equation."""
        import math

        y_names = {n.name for n in walk_expr(iy) if isinstance(n, Var)}
        var = next(iter(names), None) if names else None
        if names is not None and len(names) <= 1 and y_names <= ({var} if var else set()):
            fx, fy = self.index(ix, var), self.index(iy, var)
            if fx.a == fy.a:
                seen = {fx(r) == fy(r) for r in range(math.lcm(fx.p, fy.p))}
                if len(seen) == 1:
                    return TRUE if seen.pop() else FALSE
        ix, iy = simplify(ix), simplify(iy)
        if isinstance(ix, BinOp) and isinstance(iy, BinOp) and ix.op == iy.op == "%" and ix.right == iy.right \
                and not isinstance(ix.right, Const) and isinstance(minus(ix.left, iy.left), Const):
            k = abs(minus(ix.left, iy.left).value)  # (equal residues: P divides k, P >= 1)
            return TRUE if k == 0 else settled(Compare("==", ix.right, Const(1))) if k == 1 else \
                settled(Compare("==", BinOp("%", Const(k), ix.right), Const(0)))
        equation = settled(Compare("==", ix, iy))
        return FALSE if never(equation) else equation

    def index(self, expr, var):
        key = (expr, var)
        if key not in self._index:
            self._index[key] = Index(expr, var)
        return self._index[key]

    def candidates(self, x: Site, y: Site, pair, engine: str | None) -> list[Candidate]:
        """x's latest instances before y that meet it, one or more per level, latest level
        first; engine None: without their gaps (Const(0): instances only)."""
        depth = common_depth(x, y)
        common = x.trail[:depth]
        levels = []
        if static_order(x, y) == "before":
            levels.append(None)  # the same iterations of every common loop
        levels += [j for j in reversed(range(depth)) if isinstance(common[j].stmt, For)]
        out = []
        for j in levels:
            out += self._unrolled(x, y, pair, engine, depth, common, j)
        return out

    def _unrolled(self, x: Site, y: Site, pair, engine, depth, common, j) -> list[Candidate]:
        """The candidates at level j; where x's range index reads a free index of a loop of
        a few constant iterations (`p[r * H..(r + 1) * H]` for r in 0..2), one set of
        candidates per value of that index, the largest first."""
        import itertools

        pinned = {s.stmt.var for s in (common if j is None else common[:j]) if isinstance(s.stmt, For)}
        loops = {l.var: l for l in x.loops}
        read = sorted({n.name for ix in pair[0].indices if isinstance(ix, Range) for e in (ix.lo, ix.hi)
                       for n in walk_expr(e) if isinstance(n, Var) and n.name in loops and n.name not in pinned})
        spans = [(simplify(loops[v].lo), simplify(loops[v].hi)) for v in read]
        if not read or any(not (isinstance(lo, Const) and isinstance(hi, Const)) or hi.value - lo.value > UNROLLED
                           for lo, hi in spans):
            return self._candidates(x, y, pair, engine, depth, common, j)  # (NotNest there where x's range reads one)
        out = []
        for values in itertools.product(*(range(hi.value - 1, lo.value - 1, -1) for lo, hi in spans)):
            out += self._candidates(x, y, pair, engine, depth, common, j, dict(zip(read, map(Const, values))))
        return out

    def _candidates(self, x: Site, y: Site, pair, engine, depth, common, j, fixed=None) -> list[Candidate]:
        """The candidate at level j (None: the same iterations), as the ways its
        conditions go (exclusive; one where every choice is decided)."""
        ax, ay = pair
        fixed = fixed or {}
        pinned = {s.stmt.var for s in (common if j is None else common[:j]) if isinstance(s.stmt, For)} | set(fixed)
        loops = {l.var: l for l in x.loops}
        free = [l.var for l in x.loops if l.var not in pinned]  # outermost first
        if fixed:
            ax = attrs.evolve(ax, indices=tuple(Range(subst(ix.lo, fixed), subst(ix.hi, fixed)) if isinstance(ix, Range)
                                                else subst(ix, fixed) for ix in ax.indices))
        diverging = None if j is None else common[j].stmt.var
        conds, constraint, joints, within = [], {}, {}, {}
        for ix, iy in zip(ax.indices, ay.indices):
            if isinstance(ix, Range) or isinstance(iy, Range):
                found = self._range_equation(x, y, ix, iy, pinned, loops)
                if found is None:
                    continue
                if isinstance(found, tuple):  # (x's free index within part of its range)
                    within.setdefault(found[1], []).append(found[2:])
                    continue
                if found == FALSE:
                    return []
                conds.append(found)
                continue
            names = {n.name for n in walk_expr(ix) if isinstance(n, Var)}
            moving = [v for v in free if v in names]
            if not moving:
                conds.append(self._pinned_equation(ix, iy, names if names <= set(loops) else None))
                continue
            if len(moving) > 1:  # (the position of a rectangular pair of loops, or NotNest)
                outer, inner, width, ix = flattened(ix, moving, loops, x.loops, self.domain(y))
                names, moving = {joint_name(outer)}, [joint_name(outer)]
                if joints.get(outer, (inner, width)) != (inner, width):
                    raise NotNest("two flattenings of one loop index")
                joints[outer] = (inner, width)
            var = moving[0]
            y_names = {n.name for n in walk_expr(iy) if isinstance(n, Var)}
            plain = names == {var} and len(y_names) <= 1 and y_names <= {l.var for l in y.loops}
            new = self._equation(ix, iy, var) if plain else _offset_equation(ix, iy, var)
            if new is None:
                return []
            if new == "any":
                continue
            if constraint.get(var, new) != new:
                raise NotNest("two equations on one loop index")
            constraint[var] = new
        guards: dict = {}
        for g in self.guards[x.op.name]:
            if not isinstance(g, Guard):
                conds.append(g)  # over the parameters
            elif g.var in pinned:
                conds.append(holds_at(g, fixed.get(g.var, Var(g.var))))
            else:
                guards.setdefault(g.var, []).append(g)
        inside = self.domain(y)
        states = [({v: fixed.get(v, Var(v)) for v in pinned}, conds, [])]
        inners = {inner for inner, _ in joints.values()}
        capped: set = set()  # inner free indices whose outer index took a cap (_caps)
        if any(v in constraint or v in guards for outer, (inner, _) in joints.items() for v in (outer, inner)):
            raise NotNest("a flattened pair of loop indices with an equation or a guard of its own")
        for var in free:
            if var in inners:
                continue
            loop, largest = loops[var], var == diverging
            if var in joints:  # (the pair's position, as one index from 0)
                inner, width = joints[var]
                top = Var(var) if var == diverging else None
                loop = For(joint_name(var), Const(0), product(width, top or loop.hi), ())
                var, largest = joint_name(var), False
            reading = [v for v in free[free.index(var) + 1:] if var in self._reads(guards.get(v, ()), loops)] \
                if var in free else []  # (inner free indices whose guards read this one)
            following = []
            for env, cs, fs in states:
                caps = [c for v in reading for c in self._caps(y, var, loops[v], v == diverging, env, constraint.get(v),
                                                             guards.get(v, ()), [*inside, *cs], loops)]
                capped |= set(reading) if caps else set()
                following += [(env | {var: value}, cs + more, fs + facts) for value, more, facts in self._largest(
                    y, loop, largest, env, constraint.get(var), guards.get(var, ()), [*inside, *cs], loops,
                    caps=caps, lows=[low for low, _ in within.get(var, ())], highs=[high for _, high in within.get(var, ())],
                    capped=var in capped)]
            states = following
        out = []
        for x_env, cs, facts in states:
            for outer, (inner, width) in joints.items():  # the pair at Q, R while the gap is built
                x_env = x_env | {outer: Q, inner: R}
            if joints and any(isinstance(n, Var) and n in (Q, R) for c in (*cs, *facts) for n in walk_expr(c)):
                raise NotNest("a condition over a flattened pair of loop indices")
            cs = [c for c in (k for c in cs for k in conjuncts(settled(c))) if c != TRUE and not proves(inside, c)]
            for c in list(cs):  # (one the others imply: `k >= 2` beside `k >= 3`)
                if len(cs) > 1 and proves([*inside, *(d for d in cs if d is not c)], c):
                    cs.remove(c)
            condition = conjunction(*cs)  # (index equations kept above read pinned names only: y's)
            guarded = self.guards[x.op.name] or self.guards[y.op.name]  # (what refutes a condition without guards: bounds above)
            if condition == FALSE or guarded and any(refuted([*inside, *cs[:k], *cs[k + 1:]], c) for k, c in enumerate(cs)):
                continue
            gap = self._gap(x, y, engine, depth, common, j, x_env) if engine is not None else Const(0)
            values = {l.var: x_env[l.var] for l in x.loops}
            for outer, (inner, width) in joints.items():
                position = x_env[joint_name(outer)]
                gap = rejoined(gap, width, position)
                values |= {outer: simplify(BinOp("//", position, width)), inner: simplify(BinOp("%", position, width))}
            key = (depth, 0) if j is None else (j, 1)
            gap = parity_square_free(decided(gap, [*inside, condition])) if engine is not None else gap
            out.append(Candidate(key, condition, gap, x, values, tuple(facts)))
        return out

    def _equation(self, ix, iy, var):
        """x's index over its free index `var` equals y's: ("mod", r, p) (var % p == r %
        p), ("at", e) (var == e), "any" (always), None (never), or NotNest."""
        fx = self.index(ix, var)
        y_names = [n.name for n in walk_expr(iy) if isinstance(n, Var)]
        y_var = y_names[0] if y_names else None
        if fx.a == 0:
            if y_var is not None:
                shift = _shift(fx, self.index(iy, y_var))
                if shift is None:
                    raise NotNest("periodic indices that meet at some residues only")
                return ("mod", simplify(BinOp("+", Var(y_var), Const(shift))) if shift else Var(y_var), fx.p)
            value = simplify(iy).value
            residues = [r for r in range(fx.p) if fx.base[r] == value]
            if not residues:
                return None
            if len(residues) == fx.p:
                return "any"
            if len(residues) > 1:
                raise NotNest("an index equation with several residues")
            return ("mod", Const(residues[0]), fx.p)
        if fx.p == 1 and fx.a in (1, -1):
            return ("at", simplify(BinOp("*", Const(fx.a), BinOp("-", iy, Const(fx.base[0])))))
        raise NotNest("an index of slope other than +-1")

    def _largest(self, y: Site, loop, diverging: bool, env: dict, constraint, guards, inside, loops=None,
                 caps=(), capped=False, lows=(), highs=()) -> list:
        """[(value, conditions, facts)]: the largest value of a free index (its loop at
        `loop`, the enclosing ones at `env`) that its equation and guards allow, with the
        conditions under which it exists. An enclosing free index took its largest value
        without looking inside, so where a guard reads one (`j == i`) the conditions must
        hold at v + 1 wherever they hold at v (else NotNest)."""
        var = loop.var
        outer = {n.name for g in guards if g.bound is not None for n in walk_expr(g.bound)
                 if isinstance(n, Var) and loops and n.name in loops and n.name != var and env.get(n.name) != n}
        if outer and not capped:
            self._check_monotone(y, loop, diverging, env, constraint, guards, inside, loops, outer)
        guards = [attrs.evolve(g, bound=simplify(subst(g.bound, env))) if g.bound is not None else g for g in guards]
        lo = simplify(loop.lo)
        ub = minus(Var(var), Const(1)) if diverging else minus(subst(loop.hi, env), Const(1))
        lowers, uppers, at, mod, conds = [lo, *lows], [ub, *highs], None, None, []
        match constraint:
            case ("mod", r, p):
                mod = (r, p)
            case ("at", e):
                at = e
        if mod is not None and not isinstance(mod[1], int) and (at is not None or guards):
            raise NotNest("a period over parameters beside a guard on its index")
        for g in guards:
            match g.op:
                case ">=":
                    lowers.append(g.bound)
                case "<=":
                    uppers.append(g.bound)
                case "==":
                    at, conds = (g.bound, conds) if at is None else (at, [*conds, Compare("==", at, g.bound)])
                case "!=" if simplify(g.bound) == lo:
                    lowers.append(plus(lo, Const(1)))
                case "!=" if simplify(g.bound) == minus(subst(loop.hi, env), Const(1)):
                    uppers.append(minus(g.bound, Const(1)))
                case "mod" if len(g.residues) == g.period:
                    pass
                case "mod" if not g.residues:
                    return []
                case "mod" if len(g.residues) == 1:
                    (rho,) = g.residues
                    if mod is None:
                        mod = (Const(rho), g.period)
                    elif mod[1] % g.period == 0:  # the equation's residue decides the guard
                        conds.append(holds_at(g, mod[0]))
                    elif g.period % mod[1] == 0:  # the guard's residue decides the equation
                        conds.append(holds_at(attrs.evolve(g, period=mod[1], residues=frozenset({rho % mod[1]})), mod[0]))
                        mod = (Const(rho), g.period)
                    else:
                        raise NotNest("a guard and an index equation of unrelated periods")
                case _:
                    raise NotNest("a guard that leaves a loop index several ranges")
        ways = [(ub, [])]
        for bound in uppers[1:]:
            ways = [w for top, cs in ways for w in _smaller(top, bound, [*inside, *cs], cs)]
        for cap, holds in caps:  # (the top where an inner index has a value there, else the cap)
            ways = [w for top, cs in ways for w in _capped(top, cap, settled(holds(top)), [*inside, *cs], cs)]
        out = []
        for top, cs in ways:
            facts = []
            if at is not None:
                value = at
                exists = [*(Compare(">=", at, low) for low in lowers), Compare("<=", at, top)]
                if mod is not None:
                    exists.append(holds_at(Guard(var, "mod", residues=frozenset({0}), period=mod[1]), minus(at, mod[0])))
            elif mod is not None:  # (a constant residue: the least value >= low of it is at most top)
                value = minus(top, residue(minus(top, mod[0]), mod[1], inside))
                least = [plus(low, residue(minus(mod[0], low), mod[1], inside)) for low in lowers]
                exists = [Compare(">=", top, e) if isinstance(e, Const) else Compare(">=", value, low)
                          for e, low in zip(least, lowers)]
                facts = [Compare(">=", value, low) for low in lowers]
            else:
                value = top
                plain = len(lowers) == 1 and len(uppers) == 1
                exists = [] if plain and self.over_indices(loop) and not diverging else [Compare(">=", top, low) for low in lowers]
            if not guards:
                exists = [e for e in exists if not self._witnessed(y, loop, constraint, e, not diverging)]
            out.append((value, [*conds, *cs, *exists], facts))
        return out

    @staticmethod
    def _reads(guards, loops) -> set:
        """The loop indices the guards' bounds read."""
        return {n.name for g in guards if g.bound is not None for n in walk_expr(g.bound)
                if isinstance(n, Var) and n.name in loops}

    def _caps(self, y, u, loop, diverging, env, constraint, guards, inside, loops) -> list:
        """Upper bounds on the free index u from an inner free index whose guards read it
        (`i >= 16 * j`): none where the inner index has a value at u + 1 wherever it has one
        at u (_check_monotone); else its conditions of existence, each linear in u with a
        negative coefficient (`QT - 1 - 16 * u >= 0`), hold exactly up to `u <= cap`, so u
        takes its largest value up to the least cap. [(cap, the condition at a value)], or
        NotNest."""
        from semantics.simplify import expr, linear

        if self._reads(guards, loops) - {u} - set(env):
            raise NotNest("a guard over two free loop indices whose inner one may have no value")
        try:
            self._check_monotone(y, loop, diverging, env, constraint, guards, inside, loops, {u})
            return []
        except NotNest:
            pass
        sym = Var(f"#{u}")
        ranges = [Compare(">=", sym, subst(loops[u].lo, env)), Compare("<", sym, subst(loops[u].hi, env))]
        ways = self._largest(y, loop, diverging, env | {u: sym}, constraint, guards, [*inside, *ranges], loops,
                             capped=True)
        if len(ways) != 1:
            raise NotNest("a guard over two free loop indices whose inner one may have no value")
        out = []
        for c in ways[0][1]:
            c = settled(c)
            if c == TRUE or not any(n == sym for n in walk_expr(c)):
                continue
            form = linear(BinOp("-", c.left, c.right)) if isinstance(c, Compare) and c.op == ">=" else None
            a = form.pop((sym,), 0) if form is not None else 0
            if not (type(a) is int and a < 0) or any(type(v) is not int for v in form.values()) \
                    or any(k is not None and any(n == sym for x in k for n in walk_expr(x)) for k in form):
                raise NotNest("a guard over two free loop indices whose inner one may have no value")
            rest = expr(form)  # a * u + rest >= 0: u <= floor(rest / -a)
            out.append((rest if a == -1 else simplify(BinOp("//", rest, Const(-a))),
                        lambda value, c=c: subst(c, {sym.name: value})))
        return out

    def _check_monotone(self, y, loop, diverging, env, constraint, guards, inside, loops, outer):
        symbols = {v: Var(f"#{v}") for v in sorted(outer)}
        ranges = [c for v, sym in symbols.items() for c in (Compare(">=", sym, subst(loops[v].lo, env)),
                                                             Compare("<", sym, subst(loops[v].hi, env)))]
        ways = self._largest(y, loop, diverging, env | symbols, constraint, guards, [*inside, *ranges])
        for _, conds, _ in ways:
            for sym in symbols.values():
                step = {sym.name: plus(sym, Const(1))}
                where = [*inside, *ranges, *conds, Compare("<", plus(sym, Const(1)), subst(loops[sym.name[1:]].hi, env))]
                if not all(proves(where, settled(subst(c, step))) for c in conds):
                    raise NotNest("a guard over two free loop indices whose inner one may have no value")

    def _gap(self, x: Site, y: Site, engine, depth, common, j, x_env):
        """B: the F-instances strictly between x at `x_env` and y."""
        y_env = {l.var: Var(l.var) for l in y.loops}
        if j is None:
            stmts = self.program.body if depth == 0 else body_of(common[-1])
            start, lead = depth, Const(0)
        else:
            loop = common[j].stmt
            stmts, start = loop.body, j + 1
            lead = self.iterations(loop, Var(loop.var), y_env, engine, start=x_env[loop.var])
        return plus(lead, minus(minus(self.before(stmts, y.trail[start:], y_env, engine),
                                      self.before(stmts, x.trail[start:], x_env, engine)), Const(1)))


def _offset_equation(ix, iy, var):
    """x's index over its free index `var` beside fixed names (common indices at y's
    values, parameters) equals y's: `(a * var + E) % p == G % p` is ("mod", a * (G - E), p),
    and `a * var + E == G` is ("at", a * (G - E)), for a = +-1; else NotNest."""
    from semantics.simplify import expr, linear

    ix, iy = simplify(ix), simplify(iy)
    modular = isinstance(ix, BinOp) and ix.op == "%" and (isinstance(ix.right, Const) and ix.right.value > 0 or not any(
        isinstance(n, Var) and n.name == var for n in walk_expr(ix.right)))  # (a divisor over parameters: >= 1, check_nest)
    lin = linear(ix.left if modular else ix)
    a = lin.pop((Var(var),), 0)
    rest = expr(lin)
    if a not in (1, -1) or any(isinstance(n, Var) and n.name == var for n in walk_expr(rest)):
        raise NotNest("an index of slope other than +-1 beside other names")
    if not modular:
        return ("at", simplify(BinOp("*", Const(a), BinOp("-", iy, rest))))
    p = ix.right.value if isinstance(ix.right, Const) else ix.right
    if isinstance(iy, BinOp) and iy.op == "%" and simplify(iy.right) == ix.right:
        target = iy.left
    elif isinstance(iy, Const) and 0 <= iy.value and (iy.value == 0 or isinstance(p, int) and iy.value < p):
        target = iy
    else:
        raise NotNest("a periodic index against one of another period")
    return ("mod", simplify(BinOp("*", Const(a), BinOp("-", target, rest))), p)


def _capped(top, cap, holds, facts, cs) -> list:
    """[(the largest value, conditions)] of an index at most `top` and at most `cap`,
    where `holds` (the condition `top <= cap`, as its inner index's existence) may go
    either way: top where it holds, else the cap."""
    if proves(facts, holds):
        return [(top, cs)]
    if refuted(facts, holds):
        return [(cap, cs)]
    return [(top, [*cs, holds]), (cap, [*cs, settled(negated(holds))])]


def _smaller(a, b, facts, cs) -> list:
    """[(the smaller of a and b, conditions)]: the one bounds prove smaller, else `min(a, b)`."""
    if proves(facts, Compare("<=", a, b)):
        return [(a, cs)]
    if proves(facts, Compare("<=", b, a)):
        return [(b, cs)]
    return [(simplify(Min(a, b)), cs)]


def _shift(fx: Index, fy: Index) -> int | None:
    """s when fx(u) == fy(w) exactly where u % p == (w + s) % p (p: fx's period), for
    fx periodic in u and fy periodic in w; else None."""
    import math

    if fy.a != 0 or fy.range is not None:
        return None
    span = math.lcm(fx.p, fy.p)
    found = None
    for w in range(span):
        residues = [r for r in range(fx.p) if fx.base[r] == fy(w)]
        if len(residues) != 1:
            return None
        s = (residues[0] - w) % fx.p
        if found is not None and s != found:
            return None
        found = s
    return found
