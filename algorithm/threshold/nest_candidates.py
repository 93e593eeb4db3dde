"""Candidates of the nest stage (nest.py): for a consumer y and a producer x on F, the
latest instance of x before y that conflicts with it, level by level, as a condition
over y's indices and the gap B of F-instances between it and y (module docstring of
nest.py: the rule; nest_equations.py: index equations; nest_guards.py: guards)."""

from __future__ import annotations

import attrs

from semantics.context import Site, common_depth, static_order
from semantics.ir import BinOp, Compare, Const, For, Min, Range, Var, walk_expr
from semantics.simplify import simplify
from algorithm.threshold.facts import subst
from algorithm.threshold.flat import Index
from algorithm.threshold.nest_counts import Counts, body_of
from algorithm.threshold.nest_equations import equation, offset_equation, pinned_equation, range_equation
from algorithm.threshold.nest_flattened import Q, R, flattened, joint_name, rejoined
from algorithm.threshold.nest_floors import folded_floors
from algorithm.threshold.nest_guards import Guard, decided, holds_at, parity_square_free
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
    # The loop index of an instance below the top its index equation allows, where a guard
    # with a parameter period fails at the top: never a piece of its own (nest_pieces:
    # only where candidates later than any such instance exist); None for any other.
    below: str | None = None

def _constrain(constraint: dict, var: str, new) -> None:
    """Record an equation on a free loop index; a second, different one leaves the class."""
    if constraint.get(var, new) != new:
        raise NotNest("two equations on one loop index")
    constraint[var] = new


BELOW = Var("#below")  # (a fact `#below == u` marks a way below the top of u: Candidate.below)
UNROLLED = 4  # a free index a range reads: taken one value at a time up to this many values


class Nest(Counts):
    """The counts and candidates of one program of the class."""

    def __init__(self, program, found: dict[str, Site], *args):
        super().__init__(program, found, *args)
        self._index: dict = {}
        # A free index of a constant period at a cap (`_largest`): its value `cap - (cap -
        # r) % p` (False), or one way per residue of the cap with the value `cap - k`
        # (True; simpler gaps, more pieces). `residues_at_cap` says a candidate met one.
        self.split_at_cap = False
        self.residues_at_cap = False

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

        pinned, loops = _pinned(common, j), {l.var: l for l in x.loops}
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

    def _candidates(self, x: Site, y: Site, pair, engine, depth, common, j, fixed=None, case=None) -> list[Candidate]:
        """The candidate at level j (None: the same iterations), as the ways its
        conditions go (exclusive; one where every choice is decided). `case`: (dimension,
        (condition, equation)) taken for an index equation of several cases."""
        ax, ay = pair
        fixed = fixed or {}
        pinned = _pinned(common, j) | set(fixed)
        loops = {l.var: l for l in x.loops}
        free = [l.var for l in x.loops if l.var not in pinned]  # outermost first
        if fixed:
            ax = attrs.evolve(ax, indices=tuple(Range(subst(ix.lo, fixed), subst(ix.hi, fixed)) if isinstance(ix, Range)
                                                else subst(ix, fixed) for ix in ax.indices))
        diverging = None if j is None else common[j].stmt.var
        conds, constraint, joints, within = [], {}, {}, {}
        for dim, (ix, iy) in enumerate(zip(ax.indices, ay.indices)):
            if isinstance(ix, Range) or isinstance(iy, Range):
                found = range_equation(self, x, y, ix, iy, pinned, loops)
                if found is None:
                    continue
                if isinstance(found, tuple) and found[0] == "mod":  # (one residue of x's free index)
                    _, var, r, p = found
                    _constrain(constraint, var, ("mod", r, p))
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
                conds.append(pinned_equation(self, ix, iy, names if names <= set(loops) else None))
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
            new = equation(self, ix, iy, var) if plain else offset_equation(ix, iy, var)
            if isinstance(new, tuple) and new[0] == "cases":  # (one set of candidates per case)
                if case is None:
                    return [c for way in new[1] for c in self._candidates(x, y, pair, engine, depth, common, j, fixed,
                                                                          (dim, way))]
                if case[0] != dim:
                    raise NotNest("two index equations of several cases")
                conds.append(case[1][0])
                new = case[1][1]
            if new is None:
                return []
            if new == "any":
                continue
            _constrain(constraint, var, new)
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
        if any(v in constraint or v in guards or v in within for outer, (inner, _) in joints.items() for v in (outer, inner)):
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
                                                             guards.get(v, ()), [*inside, *cs], loops, within.get(v, ()))]
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
            below = next((f.right.name for f in facts if isinstance(f, Compare) and f.left == BELOW), None)
            facts = [f for f in facts if not (isinstance(f, Compare) and f.left == BELOW)]
            gap = self._gap(x, y, engine, depth, common, j, x_env) if engine is not None and below is None else Const(0)
            values = {l.var: x_env[l.var] for l in x.loops}
            for outer, (inner, width) in joints.items():
                position = x_env[joint_name(outer)]
                gap = rejoined(gap, width, position)
                values |= {outer: simplify(BinOp("//", position, width)), inner: simplify(BinOp("%", position, width))}
            key = (depth, 0) if j is None else (j, 1)
            gap = parity_square_free(decided(gap, [*inside, condition])) if engine is not None else gap
            out.append(Candidate(key, condition, gap, x, values, tuple(facts), below))
        return out

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
            self._check_monotone(y, loop, diverging, env, constraint, guards, inside, loops, outer, lows, highs)
        guards = [attrs.evolve(g, bound=simplify(subst(g.bound, env))) if g.bound is not None else g for g in guards]
        lo = simplify(loop.lo)
        ub = minus(Var(var), Const(1)) if diverging else minus(subst(loop.hi, env), Const(1))
        lowers, uppers, at, mod, conds = [lo, *lows], [ub, *highs], None, None, []
        others = []  # guards `not u % P == e`
        beyond = []  # guards with a parameter period beside an index equation (a way below the top)
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
                case "!mod":  # (every residue of P but one: the top, else the one below it)
                    if at is not None:
                        conds.append(holds_at(g, at))
                    else:
                        others.append(g)
                case "mod" if not isinstance(g.period, int) and (mod is not None or at is not None):
                    beyond.append(g)
                case "mod" if not isinstance(g.period, int):  # (`u % P == e`, P over the parameters)
                    (rho,) = g.residues
                    mod = (rho, g.period)
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
        at_cap = set()  # ways whose top is a cap of the residue's value (each residue of the cap a way)
        if caps and mod is not None and isinstance(mod[1], int) and mod[1] <= 4 \
                and any(top in {cap for cap, _ in caps} for top, _ in ways):
            self.residues_at_cap = True
        if self.split_at_cap and caps and mod is not None and isinstance(mod[1], int) and mod[1] <= 4:
            split = []
            for top, cs in ways:
                if top not in {cap for cap, _ in caps}:
                    split.append((top, cs))
                    continue
                for k in range(mod[1]):
                    at_cap.add(len(split))
                    split.append((minus(top, Const(k)), [*cs, settled(Compare(
                        "==", BinOp("%", minus(top, mod[0]), Const(mod[1])), Const(k)))]))
            ways = split
        if others and (mod is not None or at is not None):
            beyond, others = beyond + others, []
        if len(beyond) > 1 or beyond and var in (joint_name(v) for v in loops or ()):
            raise NotNest("guards with a period over the parameters beside an index equation")
        below = set()  # ways whose top is one below a top that the guards exclude (its existence asked)
        for g in others:  # u % P != r: the top where it holds there, else the one below it where P >= 2
            # (with P = 1 no value holds it)
            split = []
            for top, cs in ways:
                split.append((top, [*cs, holds_at(g, top)]))
                below.add(len(split))
                split.append((minus(top, Const(1)), [*cs, settled(negated(holds_at(g, top))),
                                                     settled(Compare(">=", g.period, Const(2)))]))
            ways = split
        out = []
        for n, (top, cs) in enumerate(ways):
            facts = []
            if at is not None:
                value = at
                exists = [*(Compare(">=", at, low) for low in lowers), Compare("<=", at, top)]
                if mod is not None:
                    exists.append(holds_at(Guard(var, "mod", residues=frozenset({0}), period=mod[1]), minus(at, mod[0])))
            elif mod is not None:  # (a constant residue: the least value >= low of it is at most top)
                value = top if n in at_cap else minus(top, residue(minus(top, mod[0]), mod[1], inside))
                least = [plus(low, residue(minus(mod[0], low), mod[1], inside)) for low in lowers]
                exists = [Compare(">=", top, e) if isinstance(e, Const) else Compare(">=", value, low)
                          for e, low in zip(least, lowers)]
                facts = [Compare(">=", value, low) for low in lowers]
            else:
                value = top
                plain = len(lowers) == 1 and len(uppers) == 1
                exists = [] if plain and n not in below and self.over_indices(loop) and not diverging \
                    and self.never_empty(loop, loops) else [Compare(">=", top, low) for low in lowers]
            if not guards:
                exists = [e for e in exists if not self._witnessed(y, loop, constraint, e, not diverging)]
            out.append((value, [*conds, *cs, *exists], facts))
        for g in beyond:  # (at the top where it holds there; below it, an instance no later candidate may place)
            out = [w for value, cs, facts in out for w in (
                (value, [*cs, holds_at(g, value)], facts),
                (value, [*cs, settled(negated(holds_at(g, value)))], [*facts, Compare("==", BELOW, Var(var))]))]
        return out

    @staticmethod
    def _reads(guards, loops) -> set:
        """The loop indices the guards' bounds read."""
        return {n.name for g in guards if g.bound is not None for n in walk_expr(g.bound)
                if isinstance(n, Var) and n.name in loops}

    def _caps(self, y, u, loop, diverging, env, constraint, guards, inside, loops, within=()) -> list:
        """Upper bounds on the free index u from an inner free index whose guards read it
        (`i >= 16 * j`): none where the inner index has a value at u + 1 wherever it has one
        at u (_check_monotone); else its conditions of existence, each linear in u with a
        negative coefficient (`QT - 1 - 16 * u >= 0`), hold exactly up to `u <= cap`, so u
        takes its largest value up to the least cap. [(cap, the condition at a value)], or
        NotNest. `within`: the inner index's bounds from ranges, (low, high) pairs."""
        from semantics.simplify import expr, linear

        bounds = [low for low, _ in within], [high for _, high in within]
        if self._reads(guards, loops) - {u} - set(env):
            raise NotNest("a guard over two free loop indices whose inner one may have no value")
        symbols, ranges, ways = self._symbolic(y, loop, diverging, env, constraint, guards, inside, loops, {u}, *bounds)
        if self._monotone(env, inside, loops, symbols, ranges, ways):
            return []
        sym = symbols[u]
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

    def _check_monotone(self, y, loop, diverging, env, constraint, guards, inside, loops, outer, lows=(), highs=()):
        symbols, ranges, ways = self._symbolic(y, loop, diverging, env, constraint, guards, inside, loops, outer, lows,
                                               highs)
        if not self._monotone(env, inside, loops, symbols, ranges, ways):
            raise NotNest("a guard over two free loop indices whose inner one may have no value")

    def _symbolic(self, y, loop, diverging, env, constraint, guards, inside, loops, outer, lows=(), highs=()):
        """(symbols, their ranges, the ways of `_largest`) of the inner index with the
        enclosing free indices `outer` symbolic (`#j`)."""
        symbols = {v: Var(f"#{v}") for v in sorted(outer)}
        ranges = [c for v, sym in symbols.items() for c in (Compare(">=", sym, subst(loops[v].lo, env)),
                                                             Compare("<", sym, subst(loops[v].hi, env)))]
        ways = self._largest(y, loop, diverging, env | symbols, constraint, guards, [*inside, *ranges], lows=lows,
                             highs=highs)
        return symbols, ranges, ways

    @staticmethod
    def _monotone(env, inside, loops, symbols, ranges, ways) -> bool:
        """Whether each way's conditions, holding at a symbolic index, hold at it plus one."""
        for _, conds, _ in ways:
            for sym in symbols.values():
                step = {sym.name: plus(sym, Const(1))}
                where = [*inside, *ranges, *conds, Compare("<", plus(sym, Const(1)), subst(loops[sym.name[1:]].hi, env))]
                if not all(proves(where, settled(subst(c, step))) for c in conds):
                    return False
        return True

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
        return folded_floors(plus(lead, minus(minus(self.before(stmts, y.trail[start:], y_env, engine),
                                                    self.before(stmts, x.trail[start:], x_env, engine)), Const(1))),
                             self.params)


def _pinned(common, j) -> set:
    """The common loop indices a candidate at level j keeps at y's values (None: all)."""
    return {s.stmt.var for s in (common if j is None else common[:j]) if isinstance(s.stmt, For)}


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
