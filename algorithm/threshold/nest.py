"""Loop nests: the thresholds of a program of loop nests by arithmetic, no solver.

Class (`check_nest`): no `if`, DMA queue, peer clause or replica (barriers are dropped, as
every threshold output drops them); each loop `for v in LO..HI` has a constant LO and an
HI either over parameters only, at least LO for every valid valuation (the loop runs HI -
LO times wherever it is reached), or affine in the parameters and the enclosing loops'
indices and above LO wherever it is reached (a triangular nest: never empty, so the
latest instance below takes the largest value of each index in turn); each access index
is a point index built from at most one loop variable of the op's loops and constants,
linear plus periodic in it (flat.Index), with no parameter, or a range over parameters.

Rule (plan.py's): y at iteration w waits `F >= T`, T the number of F-instances up to and
including the last one that conflicts with y. With B the F-instances strictly between
that instance and y, T = count(F) - B. The candidates for the last conflicting instance of
a producer x, latest first:
- x in the same iterations of all loops common to x and y, when x precedes y in their
  innermost body; then
- for j from the innermost common loop out: x in an earlier iteration u_j < w_j of common
  loop j and the same iterations of the loops around it.
Every other loop index of the candidate (x's own loops, the common loops inside j) is free
in its range, and each index equation constrains one of them alone: a congruence `u % p ==
r` (periodic indices of equal values up to a shift) or an equation `u == e` (an index of
slope +-1). In a nest the instances in program order are ordered lexicographically by
their loop indices, and a larger index leaves the loops inside it a range that holds the
smaller one's (bounds non-decreasing in enclosing indices), so the latest instance takes
the largest allowed value of each free index in turn: `ub - (ub - r) % p`, `e`, or the
range's end. The candidate exists when each value
lies in its range and the equations that involve no free index hold. Its B is
(the F-instances of loop j's iterations u_j .. w_j - 1) + (those of its body before y) -
(those before x) - 1, each count a polynomial of the indices and parameters (a sum over
a triangular loop by Faulhaber's formulas, `power_sum`).
A candidate nearer y in the list is later in program order, whichever producer it is of;
producers whose candidates tie at one level are ordered by their B where `bounds` decides
it, else the program is left to the general stage.

Where a candidate does not exist, the next one is tried. Consecutive candidates whose
counts agree where the earlier one is missing (`v >= LO + 1` fails: v = LO) merge, and a
last candidate whose count is <= 0 where none exists needs no `else 0`. Each threshold is
written in the cheapest of three equal forms: over the loop indices and parameters,
against `iters`, or against `count(F)`.
"""

from __future__ import annotations

import attrs

from semantics.context import Site, common_depth, sites, static_order
from semantics.errors import Unsupported
from semantics.ir import And, BinOp, Compare, Const, Count, For, If, IfExpr, Iters, Min, Program, Range, Var, walk_expr
from semantics.simplify import expr, linear, simplify
from semantics.symbolic import conflicting_pairs
from algorithm.threshold.facts import domain_conds, param_bounds, subst
from algorithm.threshold.flat import Index, check_index, least_bound
from algorithm.threshold.nest_guards import Guard, count_where, decided, guard_of, holds_at
from algorithm.threshold.nest_pieces import chooser, each, piece_forms, threshold_of, written
from algorithm.threshold.reasoning import (  # noqa: F401  (NotNest: the stage's exception, raised here)
    FALSE, TRUE, NotNest, conjunction, minus, plus, power_sum, product, proves, refuted, settled,
)

_SUMMED = "#t"  # the index a sum over a loop's iterations runs over (no kernel name has "#")








def check_nest(program: Program) -> dict[str, Site]:
    """The program's sites when it is in the stage's class (module docstring), else NotNest."""
    if program.queues:
        raise NotNest("DMA queues")
    params = {p.name for p in program.params}
    found = sites(program)

    def visit(body, around):
        for stmt in body:
            if isinstance(stmt, If):
                guard_of(stmt.cond, True, around)  # (NotNest unless a guard of the class)
                visit(stmt.then, around)
                visit(stmt.else_, around)
            if isinstance(stmt, For):
                if not isinstance(simplify(stmt.lo), Const):
                    raise NotNest("a loop lower bound that is not a constant")
                names = {n.name for n in walk_expr(stmt.hi) if isinstance(n, Var)}
                if any(isinstance(n, (Iters, Count)) for n in walk_expr(stmt.hi)):
                    raise NotNest("a loop upper bound over tracked counts")
                if not names <= params:
                    # A bound over enclosing indices: affine, and above LO wherever reached.
                    # Non-decreasing in each index: a larger enclosing index gives a range that
                    # holds the smaller one's, so the latest instance takes the largest index.
                    form = linear(stmt.hi)
                    if not names <= params | set(around) or any(type(c) is not int for c in form.values()) \
                            or any(k is not None and (len(k) > 1 or not isinstance(k[0], Var)) for k in form) \
                            or any(c < 0 for k, c in form.items() if k is not None and k[0].name in around):
                        raise NotNest("a loop upper bound that is not affine and non-decreasing in the indices")
                    where = [Compare(">=", Var(p.name), Const(p.lower)) for p in program.params]
                    where += [c for l in around.values() for c in (Compare("<=", l.lo, Var(l.var)), Compare("<", Var(l.var), l.hi))]
                    if not proves(where, Compare(">=", stmt.hi, plus(stmt.lo, Const(1)))):
                        raise NotNest("a loop bound over enclosing indices that may leave it empty")
                else:
                    least = least_bound(program, stmt.hi) if names else simplify(stmt.hi).value
                    if least is None or least < simplify(stmt.lo).value:
                        raise NotNest("a loop that may have an upper bound below its lower bound")
                visit(stmt.body, {**around, stmt.var: stmt})

    visit(program.body, {})
    del visit
    for site in found.values():
        op = site.op
        if op.replica is not None or op.syncs or op.queue is not None:
            raise NotNest("peer clauses, queues or replicas")
        loop_vars = {l.var for l in site.loops}
        for access in (*op.reads, *op.writes):
            for index in access.indices:
                if isinstance(index, Range):
                    bounds = {n.name for e in (index.lo, index.hi) for n in walk_expr(e) if isinstance(n, Var)}
                    if not bounds <= params | loop_vars or any(isinstance(n, (Iters, Count)) for e in (index.lo, index.hi)
                                                               for n in walk_expr(e)):
                        raise NotNest("a range over more than parameters and loop indices")
                    continue
                names = {n.name for n in walk_expr(index) if isinstance(n, Var)}
                if len(names) > 1 or not names <= loop_vars:
                    raise NotNest("an index over parameters or more than one loop variable")
                check_index(index, next(iter(names), None), frozenset())
    return found


@attrs.frozen
class Candidate:
    key: tuple  # program order between candidates of one consumer: larger is later
    condition: object  # over y's loop indices and the parameters
    gap: object  # B: the F-instances strictly between the instance and y
    origin: int  # candidates of one origin are the ways one instance's conditions go: exclusive
    site: Site  # the producer
    values: dict = attrs.field(eq=False)  # its loop indices, over y's (irredundant.Source)
    facts: tuple = ()  # what else holds where it exists (its index at least its lower bound)


class Nest:
    """The counts and candidates of one program of the class."""

    def __init__(self, program: Program, found: dict[str, Site], conflicts=conflicting_pairs):
        self.program, self.sites, self.conflicts = program, found, conflicts
        self._n: dict = {}
        self._index: dict = {}
        self._before_y: dict = {}
        self.params = param_bounds(program.params)
        self.param_names = frozenset(p.name for p in program.params)
        self.guards = {name: _guards(site) for name, site in found.items()}
        self._origins = 0

    def domain(self, y: Site) -> list:
        """What holds where y runs: the parameters' bounds, its loops' ranges, its guards
        (also in the spelling bounds can use: `u % p == r`, `e % m >= 1`)."""
        out = [*self.params, *domain_conds(y)]
        for g in self.guards[y.op.name]:
            if not isinstance(g, Guard):
                out.append(g)  # (over the parameters: `e % m >= 1` for `not e % m == 0`)
            elif g.op == "mod" and len(g.residues) == 1:
                out.append(holds_at(g, Var(g.var)))
                lo = next(simplify(l.lo).value for l in y.loops if l.var == g.var)  # its least value
                out.append(Compare(">=", Var(g.var), Const(lo + (min(g.residues) - lo) % g.period)))
        return out

    def over_indices(self, loop) -> bool:
        """Whether the loop's upper bound reads an enclosing loop's index (triangular)."""
        return any(isinstance(n, Var) and n.name not in self.param_names for n in walk_expr(loop.hi))

    # ------------------------------------------------------------ counts

    def instances(self, stmts, engine: str):
        """F-instances of one execution of the statements: a polynomial of the parameters
        and of the indices of the loops around them (a triangular bound reads those)."""
        key = (id(stmts), engine)
        if key not in self._n:
            total = Const(0)
            for stmt in stmts:
                if isinstance(stmt, For):
                    total = plus(total, self.iterations(stmt, stmt.hi, {}, engine))
                elif isinstance(stmt, If):
                    a, b = self.instances(stmt.then, engine), self.instances(stmt.else_, engine)
                    total = plus(total, a if a == b else IfExpr(stmt.cond, a, b))
                elif getattr(stmt, "engine", None) == engine:
                    total = plus(total, Const(1))
            self._n[key] = (stmts, total)
        return self._n[key][1]

    def iterations(self, loop, upto, env: dict, engine: str, start=None):
        """F-instances of the loop's iterations start..upto-1 (start: its lower bound), the
        loops around it at their values in `env` (names it lacks stay symbolic). The values
        are over y's names, which may be the loop's own: the sum runs over a fresh one."""
        body = subst(self.instances(loop.body, engine), {**env, loop.var: Var(_SUMMED)})
        start = loop.lo if start is None else start
        return _summed(body, start, upto)

    def before(self, stmts, steps, env: dict, engine: str):
        """F-instances of the statements' execution before the point `steps` leads to,
        with each loop index around and on the way at its value in `env`."""
        step, rest = steps[0], steps[1:]
        total = subst(self.instances(stmts[:step.index], engine), env)
        if isinstance(step.stmt, For):
            loop = step.stmt
            total = plus(total, plus(self.iterations(loop, env[loop.var], env, engine),
                                     self.before(loop.body, rest, env, engine)))
        elif isinstance(step.stmt, If):
            total = plus(total, self.before(_body(step), rest, env, engine))
        return simplify(total)

    def before_y(self, y: Site, engine: str):
        """The F-instances before y in program order, over y's indices (built once)."""
        key = ("closed", y.op.name, engine)
        if key not in self._before_y:
            y_env = {l.var: Var(l.var) for l in y.loops}
            self._before_y[key] = self.before(self.program.body, y.trail, y_env, engine)
        return self._before_y[key]

    def iters_count(self, y: Site, engine: str):
        """The F-instances before y, against the tracked iteration counts (built once)."""
        key = ("iters", y.op.name, engine)
        if key not in self._before_y:
            self._before_y[key] = self._iters_count(y, engine)
        return self._before_y[key]

    def _iters_count(self, y: Site, engine: str):
        if any(x.op.engine == engine and x.guards for x in self.sites.values()):
            return None  # (an op under a guard runs in some iterations of its loop only)
        total = Const(0)
        enclosing = {id(l) for l in y.loops}
        for x in self.sites.values():
            if x.op.engine != engine:
                continue
            if not x.loops:
                total = plus(total, Const(1 if static_order(x, y) == "before" else 0))
                continue
            loop = x.loops[-1]
            term = Iters(loop.var)
            if id(loop) in enclosing and static_order(x, y) != "before":
                term = BinOp("-", term, Const(1))
            total = plus(total, term)
        return total

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
        always do, NotNest where a free index of x would have to lie in part of its range
        or x's range reads one."""
        if isinstance(ix, Range) and any(isinstance(n, Var) and n.name in loops and n.name not in pinned
                                         for e in (ix.lo, ix.hi) for n in walk_expr(e)):
            raise NotNest("a range over a free loop index")
        if isinstance(ix, Range) and isinstance(iy, Range):
            return settled(And(Compare("<", ix.lo, iy.hi), Compare("<", iy.lo, ix.hi)))
        if isinstance(ix, Range):
            return settled(And(Compare("<=", ix.lo, iy), Compare("<", iy, ix.hi)))
        names = [n.name for n in walk_expr(ix) if isinstance(n, Var)]
        if not names or names[0] in pinned:
            return settled(And(Compare("<=", iy.lo, ix), Compare("<", ix, iy.hi)))
        loop = loops[names[0]]  # x's free index u: u + c over its whole range must lie in y's
        offset = minus(ix, Var(loop.var))
        if any(isinstance(n, Var) and n.name == loop.var for n in walk_expr(offset)):
            raise NotNest("a range against an index of slope other than 1")
        inside = self.domain(y)
        if proves(inside, Compare("<=", iy.lo, plus(loop.lo, offset))) and \
                proves(inside, Compare("<=", plus(loop.hi, offset), iy.hi)):
            return None
        raise NotNest("a range that holds part of a free index's range")

    def _pinned_equation(self, ix, iy, var):
        """x's index (over a common loop index at y's value, or constant) equals y's: TRUE or
        FALSE where both are periodic in that one index (or constant) and the residues
        decide it, else the equation."""
        import math

        y_names = {n.name for n in walk_expr(iy) if isinstance(n, Var)}
        if y_names <= ({var} if var else set()):
            fx, fy = self.index(ix, var), self.index(iy, var)
            if fx.a == fy.a:
                seen = {fx(r) == fy(r) for r in range(math.lcm(fx.p, fy.p))}
                if len(seen) == 1:
                    return TRUE if seen.pop() else FALSE
        return settled(Compare("==", ix, iy))

    def index(self, expr, var):
        key = (expr, var)
        if key not in self._index:
            self._index[key] = Index(expr, var)
        return self._index[key]

    def candidates(self, x: Site, y: Site, pair, engine: str) -> list[Candidate]:
        depth = common_depth(x, y)
        common = x.trail[:depth]
        levels = []
        if static_order(x, y) == "before":
            levels.append(None)  # the same iterations of every common loop
        levels += [j for j in reversed(range(depth)) if isinstance(common[j].stmt, For)]
        out = []
        for j in levels:
            out += self._candidates(x, y, pair, engine, depth, common, j)
        return out

    def _candidates(self, x: Site, y: Site, pair, engine, depth, common, j) -> list[Candidate]:
        """The candidate at level j (None: the same iterations), as the ways its
        conditions go (exclusive; one where every choice is decided)."""
        ax, ay = pair
        pinned = {s.stmt.var for s in (common if j is None else common[:j]) if isinstance(s.stmt, For)}
        loops = {l.var: l for l in x.loops}
        free = [l.var for l in x.loops if l.var not in pinned]  # outermost first
        diverging = None if j is None else common[j].stmt.var
        conds, constraint = [], {}
        for ix, iy in zip(ax.indices, ay.indices):
            if isinstance(ix, Range) or isinstance(iy, Range):
                found = self._range_equation(x, y, ix, iy, pinned, loops)
                if found is None:
                    continue
                if found == FALSE:
                    return []
                conds.append(found)
                continue
            names = [n.name for n in walk_expr(ix) if isinstance(n, Var)]
            var = names[0] if names else None
            if var is None or var in pinned:
                conds.append(self._pinned_equation(ix, iy, var))
                continue
            new = self._equation(ix, iy, var)
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
                conds.append(holds_at(g, Var(g.var)))
            else:
                guards.setdefault(g.var, []).append(g)
        inside = self.domain(y)
        states = [({v: Var(v) for v in pinned}, conds, [])]
        for var in free:
            states = [(env | {var: value}, cs + more, fs + facts) for env, cs, fs in states
                      for value, more, facts in self._largest(y, loops[var], var == diverging, env, constraint.get(var),
                                                              guards.get(var, ()), [*inside, *cs], loops)]
        out = []
        self._origins += 1
        for x_env, cs, facts in states:
            cs = [c for c in (settled(c) for c in cs) if c != TRUE and not proves(inside, c)]
            condition = conjunction(*cs)  # (index equations kept above read pinned names only: y's)
            if condition == FALSE or any(refuted([*inside, *cs[:k], *cs[k + 1:]], c) for k, c in enumerate(cs)):
                continue
            gap = self._gap(x, y, engine, depth, common, j, x_env)
            values = {l.var: x_env[l.var] for l in x.loops}
            key = (depth, 0) if j is None else (j, 1)
            gap = decided(gap, [*inside, condition])
            out.append(Candidate(key, condition, gap, self._origins, x, values, tuple(facts)))
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

    def _largest(self, y: Site, loop, diverging: bool, env: dict, constraint, guards, inside, loops=None) -> list:
        """[(value, conditions, facts)]: the largest value of a free index (its loop at
        `loop`, the enclosing ones at `env`) that its equation and guards allow, with the
        conditions under which it exists. An enclosing free index took its largest value
        without looking inside, so where a guard reads one (`j == i`) the conditions must
        hold at v + 1 wherever they hold at v (else NotNest)."""
        var = loop.var
        outer = {n.name for g in guards if g.bound is not None for n in walk_expr(g.bound)
                 if isinstance(n, Var) and loops and n.name in loops and n.name != var and env.get(n.name) != n}
        if outer:
            self._check_monotone(y, loop, diverging, env, constraint, guards, inside, loops, outer)
        guards = [attrs.evolve(g, bound=simplify(subst(g.bound, env))) if g.bound is not None else g for g in guards]
        lo = simplify(loop.lo)
        ub = minus(Var(var), Const(1)) if diverging else minus(subst(loop.hi, env), Const(1))
        lowers, uppers, at, mod, conds = [lo], [ub], None, None, []
        match constraint:
            case ("mod", r, p):
                mod = (r, p)
            case ("at", e):
                at = e
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
        out = []
        for top, cs in ways:
            facts = []
            if at is not None:
                value = at
                exists = [*(Compare(">=", at, low) for low in lowers), Compare("<=", at, top)]
                if mod is not None:
                    exists.append(holds_at(Guard(var, "mod", residues=frozenset({0}), period=mod[1]), minus(at, mod[0])))
            elif mod is not None:  # (a constant residue: the least value >= low of it is at most top)
                value = minus(top, BinOp("%", BinOp("-", top, mod[0]), Const(mod[1])))
                least = [plus(low, BinOp("%", BinOp("-", mod[0], low), Const(mod[1]))) for low in lowers]
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
            stmts = self.program.body if depth == 0 else _body(common[-1])
            start, lead = depth, Const(0)
        else:
            loop = common[j].stmt
            stmts, start = loop.body, j + 1
            lead = self.iterations(loop, Var(loop.var), y_env, engine, start=x_env[loop.var])
        return plus(lead, minus(minus(self.before(stmts, y.trail[start:], y_env, engine),
                                      self.before(stmts, x.trail[start:], x_env, engine)), Const(1)))


def _smaller(a, b, facts, cs) -> list:
    """[(the smaller of a and b, conditions)]: one way where bounds decide it, else both."""
    if proves(facts, Compare("<=", a, b)):
        return [(a, cs)]
    if proves(facts, Compare("<=", b, a)):
        return [(b, cs)]
    return [(simplify(Min(a, b)), cs)]


def _body(step):
    """The statements inside a trail step: a loop's body, or the branch of an `if` taken."""
    if isinstance(step.stmt, For):
        return step.stmt.body
    return step.stmt.then if step.branch else step.stmt.else_


def _guards(site: Site) -> list:
    """The guards on the site's instances (nest_guards.guard_of), outermost first."""
    out, around = [], []
    for step in site.trail[:-1]:
        if isinstance(step.stmt, For):
            around.append(step.stmt.var)
        else:
            out.append(guard_of(step.stmt.cond, step.branch, around))
    return out


def _summed(body, start, stop):
    """The sum of the body's count over the index #t = start .. stop - 1: Faulhaber's sums
    for its polynomial part, `count_where` for a part under a guard on #t."""
    mentions = lambda e: any(isinstance(n, Var) and n.name == _SUMMED for n in walk_expr(e))  # noqa: E731
    plain, total = {}, Const(0)
    for mono, coef in linear(body).items():
        guarded = [a for a in mono or () if isinstance(a, IfExpr) and mentions(a.cond)]
        if not guarded:
            plain[mono] = coef
            continue
        atom = guarded[0]
        rest = expr({tuple(a for a in mono if a is not atom) or None: coef})
        if len(guarded) > 1 or any(mentions(e) for e in (rest, atom.then, atom.else_)):
            raise NotNest("a count under a guard that varies with its loop index")
        g = guard_of(atom.cond, True, (_SUMMED,))
        count = count_where(g, start, stop)
        total = plus(total, product(rest, plus(product(atom.else_, minus(stop, start)),
                                               product(minus(atom.then, atom.else_), count))))
    poly = expr(plain)
    if mentions(poly):
        return plus(total, power_sum(poly, _SUMMED, start, stop))
    return plus(total, product(minus(stop, start), poly))


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


def plan_nest(program: Program, conflicts=conflicting_pairs, count_registers: bool = True, counts=None,
              untracked: frozenset = frozenset()):
    """(entries (op, engine, threshold), dependence pairs) of a nest of the class, or
    NotNest. `counts`: the Nest class (tests pass broken ones)."""
    found = check_nest(program)
    nest = (counts or Nest)(program, found, conflicts)
    by_buffer: dict = {}
    for site in found.values():
        for buffer in {a.buffer for a in site.op.reads + site.op.writes}:
            by_buffer.setdefault(buffer, []).append(site)
    planned, pairs = [], 0
    from algorithm.threshold.pipeline import checkpoint  # (here: pipeline imports this module)

    for n, y in enumerate(found.values()):
        checkpoint[0](f"threshold stage 'nest', op {y.op.name} ({n + 1}/{len(found)})")
        for engine in program.engines:
            if engine == y.op.engine:
                continue
            cands, producers = [], set()
            for buffer in sorted({a.buffer for a in y.op.reads + y.op.writes}):
                for x in by_buffer.get(buffer, ()):
                    if x.op.engine != engine or x.op.name in producers:
                        continue
                    found_pairs = conflicts(x.op, y.op)
                    if found_pairs:
                        producers.add(x.op.name)
                    for pair in found_pairs:
                        cands += nest.candidates(x, y, pair, engine)
            pairs += len(producers)
            pieces = threshold_of(nest, y, engine, cands)
            if pieces is None:
                continue
            before = nest.before_y(y, engine)
            closed = written([(p.conditions, each(p.gap, lambda g: [minus(before, g)])) for p in pieces],
                             lambda forms: forms[0])
            if isinstance(closed, Const) and closed.value <= 0:
                continue
            forms = [(p.conditions, piece_forms(nest, y, engine, p, count_registers, untracked)) for p in pieces]
            planned.append((y.op.name, engine, forms, closed, tuple((c.site, c) for c in cands)))
    choice = chooser([f for _, _, pieces, _, _ in planned for _, forms in pieces
                       for f in (forms[1:] if forms[0] == "max" else [forms])])
    return [(op, engine, written(pieces, choice), closed, sources)
            for op, engine, pieces, closed, sources in planned], pairs


def sync_nest(program: Program, options, only: frozenset | None = None, untracked: frozenset = frozenset()):
    """(plan entries, dependence pairs, waits dropped as redundant) of a nest of the class,
    or None (the later stages plan it). Waits that a concrete run does not show needed
    go to the general stage's redundancy proofs (irredundant.py), which may drop them.
    `only`: the ops whose waits may be dropped (irredundant's); `untracked`: loops whose
    `iters` no threshold may read (compose.py's stand-in loops)."""
    from algorithm.threshold.irredundant import irredundant, shown_necessary
    from algorithm.threshold.plan import Plan, PlanEntry

    try:
        planned, pairs = plan_nest(program, options.conflicts, options.count_registers, untracked=untracked)
    except Unsupported:
        return None
    entries = [PlanEntry(op, engine, t, True, sources=sources, closed=closed)
               for op, engine, t, closed, sources in planned]
    necessary = shown_necessary(program, entries, options)
    if necessary == {(e.op, e.engine) for e in entries}:
        return entries, pairs, 0
    kept, dropped = irredundant(program, Plan(entries), options.conflicts, only=only, options=options,
                                necessary=necessary)
    return kept, pairs, dropped
