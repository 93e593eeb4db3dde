"""Counts of a program of the nest stage's class (nest.py): the F-instances before a
point of a loop nest as polynomials of the loop indices and parameters, `if`-expressions
where a guard decides a count (nest_guards.py), and what holds where an op runs."""

from __future__ import annotations

import functools

from semantics.context import Site, static_order
from semantics.ir import BinOp, Compare, Const, For, If, IfExpr, Iters, Program, Var, walk_expr
from semantics.simplify import expr, linear, simplify
from semantics.symbolic import conflicting_pairs
from algorithm.threshold.facts import domain_conds, param_bounds, subst
from algorithm.threshold.nest_floors import folded_floors
from algorithm.threshold.nest_guards import Guard, count_where, guard_of, holds_at
from algorithm.threshold.reasoning import NotNest, minus, plus, product, proves

SUMMED = "#t"  # the index a sum over a loop's iterations runs over (no kernel name has "#")


class Counts:
    """The counts of one program of the class, and what holds where its ops run."""

    def __init__(self, program: Program, found: dict[str, Site], conflicts=conflicting_pairs):
        self.program, self.sites, self.conflicts = program, found, conflicts
        self._n: dict = {}
        self._before_y: dict = {}
        self._sums: dict = {}  # (body, start, stop, the loop's lower bound) -> its sum
        self.params = param_bounds(program.params)
        self.param_names = frozenset(p.name for p in program.params)
        self.guards = {name: _guards(site) for name, site in found.items()}

    def domain(self, y: Site) -> list:
        """What holds where y runs: the parameters' bounds, its loops' ranges, its guards
        (also in the spelling bounds can use: `u % p == r`, `e % m >= 1`); built once per
        op (a fresh list: callers extend it)."""
        key = ("domain", y.op.name)
        if key not in self._before_y:
            self._before_y[key] = self._domain(y)
        return list(self._before_y[key])

    def lowers(self, y: Site) -> dict:
        """The least value of each parameter and of each of y's loop indices."""
        return {p.name: p.lower for p in self.program.params} | {
            l.var: simplify(l.lo).value for l in y.loops if isinstance(simplify(l.lo), Const)}

    def _domain(self, y: Site) -> list:
        out = [*self.params, *domain_conds(y)]
        for g in self.guards[y.op.name]:
            if not isinstance(g, Guard):
                out.append(g)  # (over the parameters: `e % m >= 1` for `not e % m == 0`)
            elif g.op == "!mod":
                out.append(holds_at(g, Var(g.var)))
            elif g.op == "mod" and len(g.residues) == 1:
                out.append(holds_at(g, Var(g.var)))
                lo = next(simplify(l.lo) for l in y.loops if l.var == g.var)  # its least value
                if isinstance(lo, Const) and isinstance(g.period, int):
                    out.append(Compare(">=", Var(g.var), Const(lo.value + (min(g.residues) - lo.value) % g.period)))
        return out

    def over_indices(self, loop) -> bool:
        """Whether the loop's upper bound reads an enclosing loop's index (triangular)."""
        return any(isinstance(n, Var) and n.name not in self.param_names for n in walk_expr(loop.hi))

    def never_empty(self, loop, loops) -> bool:
        """Whether a loop runs at least once wherever it is reached, by bounds over the
        parameters and the ranges of the loops around it (`loops`: the op's, by index,
        outermost first); a triangular loop `for j in 0..i` is empty at i = 0."""
        key = ("never empty", id(loop))
        if key not in self._before_y:
            around = []
            for var, l in (loops or {}).items():
                if l is loop:
                    break
                around += [Compare("<=", l.lo, Var(var)), Compare("<", Var(var), l.hi)]
            else:
                around = None  # (not among them: a flattened pair's loop)
            self._before_y[key] = around is not None and proves([*self.params, *around],
                                                                 Compare(">=", loop.hi, plus(loop.lo, Const(1))))
        return self._before_y[key]

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
        body = subst(self.instances(loop.body, engine), {**env, loop.var: Var(SUMMED)})
        start = loop.lo if start is None else start
        key = (body, start, upto, loop.lo)  # (the same sums recur across candidates and pieces)
        if key not in self._sums:
            self._sums[key] = _summed(body, start, upto, [*self.params, Compare(">=", Var(SUMMED), loop.lo)])
        return self._sums[key]

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
            total = plus(total, self.before(body_of(step), rest, env, engine))
        return simplify(total)

    def before_y(self, y: Site, engine: str):
        """The F-instances before y in program order, over y's indices (built once)."""
        key = ("closed", y.op.name, engine)
        if key not in self._before_y:
            y_env = {l.var: Var(l.var) for l in y.loops}
            self._before_y[key] = folded_floors(self.before(self.program.body, y.trail, y_env, engine), self.params)
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


def body_of(step):
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


def _summed(body, start, stop, facts=()):
    """The sum of the body's count over the index #t = start .. stop - 1 (start <= stop):
    Faulhaber's sums for its polynomial part, `count_where` for a part under a guard on
    #t, and the range split where the condition of an `if` whose branches also vary with
    #t changes (`_split`). `facts`: what holds of the parameters."""
    mentions = lambda e: any(isinstance(n, Var) and n.name == SUMMED for n in walk_expr(e))  # noqa: E731
    try:
        return _sum_of(body, start, stop, facts, mentions)
    except NotNest:
        chosen = _as_choices(body, mentions)  # (a loop bound `min(i + 1, M)`: the sum each way of it)
        if chosen == body:
            raise
    width = minus(stop, start)
    if isinstance(width, Const) and width.value <= 4:  # (a few values: each in turn)
        return simplify(functools.reduce(lambda a, b: BinOp("+", a, b),
                                         [subst(body, {SUMMED: plus(start, Const(k))}) for k in range(width.value)],
                                         Const(0)))
    tops = {a for mono in linear(chosen) for a in mono or () if isinstance(a, IfExpr)}
    inner = next((n for n in walk_expr(chosen) if isinstance(n, IfExpr) and n not in tops and mentions(n.cond)
                  and not any(isinstance(m, IfExpr) for m in walk_expr(n.cond))), None)
    if inner is not None:  # (a choice inside a term or a condition, `(min(#t + 1, M) + K - 1) // K`)
        return _split(chosen, inner, start, stop, facts)
    return _sum_of(chosen, start, stop, facts, mentions)


def _sum_of(body, start, stop, facts, mentions):
    plain, total = {}, Const(0)
    for mono, coef in linear(body).items():
        guarded = [a for a in mono or () if isinstance(a, IfExpr) and mentions(a.cond)]
        if not guarded:
            plain[mono] = coef
            continue
        atom = guarded[0]
        rest = expr({tuple(a for a in mono if a is not atom) or None: coef})
        if len(guarded) > 1 or any(mentions(e) for e in (rest, atom.then, atom.else_)):
            return _split(body, atom, start, stop, facts)
        g = guard_of(atom.cond, True, (SUMMED,))
        count = count_where(g, start, stop)
        total = plus(total, product(rest, plus(product(atom.else_, minus(stop, start)),
                                               product(minus(atom.then, atom.else_), count))))
    poly = expr(plain)
    if mentions(poly):
        return plus(total, power_sum(poly, SUMMED, start, stop))
    return plus(total, product(minus(stop, start), poly))


def _as_choices(body, mentions):
    """The body with each `min(a, b)` and `max(a, b)` that varies with #t written as the
    choice `if a <= b then a else b` (`if a >= b ...`), which `_split` sums."""
    from semantics.ir import Max, Min, map_expr

    def choice(n):
        if isinstance(n, (Min, Max)) and mentions(n):
            return IfExpr(Compare("<=" if isinstance(n, Min) else ">=", n.left, n.right), n.left, n.right)
        return n

    return map_expr(body, choice)


def _split(body, atom, start, stop, facts):
    """The sum of a body with an `if c then a else b` whose branches vary with #t: c
    linear in #t is `#t <= m - 1` or `#t >= m` (a floor division by #t's coefficient), so
    the sum is the then-branch's over one part of start .. stop - 1 and the else-branch's
    over the other, the point m clamped to the range; a side bounds prove empty, or
    equal to the other where c decides it, is not split off."""
    from semantics.ir import Max, Min, map_expr

    from algorithm.threshold.nest_guards import decided
    from algorithm.threshold.reasoning import negated, proves, refuted

    t = Var(SUMMED)
    where = [*facts, Compare("<=", start, t), Compare("<", t, stop)]
    c = atom.cond
    replaced = lambda value: simplify(map_expr(body, lambda n: value if n == atom else n))  # noqa: E731
    if proves(where, c) or proves([*where, negated(c)], Compare("==", decided(atom.then, [*where, negated(c)]),
                                                                  decided(atom.else_, [*where, negated(c)]))):
        return _summed(replaced(atom.then), start, stop, facts)
    if refuted(where, c) or proves([*where, c], Compare("==", decided(atom.then, [*where, c]),
                                                        decided(atom.else_, [*where, c]))):
        return _summed(replaced(atom.else_), start, stop, facts)
    if not isinstance(c, Compare) or c.op not in (">=", "<=", ">", "<"):
        raise NotNest("a count under a guard that varies with its loop index")
    form = linear(BinOp("-", c.left, c.right))
    a = form.pop((t,), 0)
    if type(a) is not int or a == 0 or any(type(v) is not int for v in form.values()) \
            or any(k is not None and any(isinstance(n, Var) and n.name == SUMMED for x in k for n in walk_expr(x))
                   for k in form):
        raise NotNest("a count under a guard that varies with its loop index")
    rest = expr(form)  # c: a * #t + rest op 0
    strict = c.op in (">", "<")
    if c.op in ("<=", "<"):
        a, rest = -a, product(Const(-1), rest)  # c: a * #t + rest >= 0 (or > 0)
    bound = minus(Const(1), rest) if strict else product(Const(-1), rest)  # c: a * #t >= bound
    if a > 0:  # #t >= ceil(bound / a) = (bound - 1) // a + 1 (the floor of a cap, nest_candidates): the then-part lies above
        point = bound if a == 1 else plus(simplify(BinOp("//", minus(bound, Const(1)), Const(a))), Const(1))
        first, second = atom.else_, atom.then
    else:  # #t <= floor(bound / a) = floor(-bound / -a): the then-part lies below point
        point = plus(Const(1), product(Const(-1), bound) if a == -1 else
                     simplify(BinOp("//", product(Const(-1), bound), Const(-a))))
        first, second = atom.then, atom.else_
    ordered = [*facts, Compare("<=", start, stop)]
    if proves(ordered, Compare("<=", point, start)):
        point = start
    elif proves(ordered, Compare(">=", point, stop)):
        point = stop
    else:
        if not proves(ordered, Compare(">=", point, start)):
            point = simplify(Max(start, point))
        if not proves(ordered, Compare("<=", point, stop)):
            point = simplify(Min(stop, point))
    return plus(_summed(replaced(first), start, point, facts), _summed(replaced(second), point, stop, facts))


def power_sum(poly, var: str, start, stop):
    """sum of poly over var = start .. stop - 1 (poly a polynomial of degree <= 3 in var),
    exact: Faulhaber's sums, 12 times over, divided once."""
    from fractions import Fraction

    from semantics.simplify import expr, linear

    def times(*factors):
        out = Const(1)
        for f in factors:
            out = BinOp("*", out, f)
        return out

    def f12(k, n):  # 12 * sum of i**k over i = 0 .. n - 1
        m = BinOp("-", n, Const(1))
        return {0: times(Const(12), n), 1: times(Const(6), n, m), 2: times(Const(2), m, n, BinOp("-", times(Const(2), n), Const(1))),
                3: times(Const(3), n, m, n, m)}[k]

    total: dict = {}
    for mono, coef in linear(poly).items():
        atoms = () if mono is None else mono
        k = sum(1 for a in atoms if a == Var(var))
        periodic = [a for a in atoms if a != Var(var) and any(isinstance(n, Var) and n.name == var for n in walk_expr(a))]
        if k > 3 or periodic and (k or len(periodic) > 1):
            raise NotNest("a count that is not a polynomial of degree <= 3 in a loop index")
        rest = [a for a in atoms if a != Var(var) and a not in periodic]
        summed = _periodic_sum12(periodic[0], var, start, stop, f12) if periodic else \
            BinOp("-", f12(k, stop), f12(k, start))
        # (the coefficient, a fraction where the body is a sum formula, kept exact: never
        # written as a division of its own, which would round it)
        part = linear(times(*rest, summed))
        for m, c in part.items():
            total[m] = total.get(m, 0) + Fraction(coef) * c / 12
    return simplify(expr({m: c for m, c in total.items() if c != 0}))


def _periodic_sum12(atom, var: str, start, stop, f12):
    """12 * the sum of `(s * var + c) // p` or `(s * var + c) % p` (s = 1 or -1, p a
    constant or an expression over the parameters, >= 1) over var = start .. stop - 1, exact for any integers start <= stop:
    with F(n) = sum of u // p over u = 0 .. n - 1 = q * n - p * q * (q + 1) / 2 for q =
    n // p (F(n + 1) - F(n) = n // p for every integer n), the floors sum to F(stop + c) -
    F(start + c) (s = 1) or F(c - start + 1) - F(c - stop + 1) (s = -1), and e % p = e -
    p * (e // p)."""
    from semantics.simplify import expr, linear

    if not (isinstance(atom, BinOp) and atom.op in ("//", "%")) or isinstance(atom.right, Const) and atom.right.value < 1:
        raise NotNest("a count that is not a polynomial of degree <= 3 in a loop index")
    # (a divisor over the parameters is at least 1: the class check proved it of every
    # guard period and index divisor, the only ones a count meets)
    p = atom.right if not isinstance(atom.right, Const) else Const(atom.right.value)
    form = linear(atom.left)
    s = form.pop((Var(var),), 0)
    if s not in (1, -1) or any(k is not None and any(isinstance(n, Var) and n.name == var for a in k for n in walk_expr(a))
                               for k in form):
        raise NotNest("a count that is not a polynomial of degree <= 3 in a loop index")
    c = expr(form)

    def f(n):  # 12 * F(n)
        q = BinOp("//", n, p)
        return BinOp("-", BinOp("*", Const(12), BinOp("*", q, n)),
                     BinOp("*", BinOp("*", Const(6), p), BinOp("*", q, BinOp("+", q, Const(1)))))

    if s == 1:
        floors = BinOp("-", f(BinOp("+", stop, c)), f(BinOp("+", start, c)))
    else:
        floors = BinOp("-", f(BinOp("+", BinOp("-", c, start), Const(1))), f(BinOp("+", BinOp("-", c, stop), Const(1))))
    if atom.op == "//":
        return floors
    plain = BinOp("+", BinOp("*", Const(s), BinOp("-", f12(1, stop), f12(1, start))),
                  BinOp("*", Const(12), BinOp("*", c, BinOp("-", stop, start))))
    return BinOp("-", plain, BinOp("*", p, floors))
