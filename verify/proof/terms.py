"""The terms and witnesses of the all-values proof (verify/proof/prove.py).

`Terms` gives Z3 terms of one program: local indices, `iters` and `count` (closed forms from
verify/proof/counts.py) and wait thresholds at a symbolic instance. The witness functions
propose candidate loop indices for the existential parts of the obligations: an
instance's own iteration and the ones just before it, solutions of index equations,
first and last iterations, and candidates shaped like a lexicographic maximum (the
last producer).
"""

from __future__ import annotations

import z3

from semantics.context import Site, common_depth, sites
from semantics.ir import (
    And, BinOp, Compare, Const, Count, For, If, Iters, Op, Program, Range, Var, count_key, index_exprs, walk_expr,
    walk_stmts,
)
from semantics.simplify import expr as simplified, linear, simplify
from semantics.registers import inline_registers
from semantics.symbolic import conflicting_pairs, instance_env, param_env, py_mod, to_z3

from verify.engines.deadline import NO_DEADLINE, Deadline
from verify.proof.counts import Counter, template, to_z3 as count_z3
from verify.proof.queues import steps


class Terms:
    """Z3 terms of one program: local indices, `iters`, thresholds at an instance."""

    def __init__(self, program: Program, ctx: z3.Context, deadline: Deadline = NO_DEADLINE,
                 counter: Counter | None = None):
        program = inline_registers(program)  # thresholds read registers by their values
        self.program = program
        self.ctx = ctx  # every term of the proof lives in the proof's own context
        # Every obligation builds its terms through env/local/threshold: polling there
        # bounds the time between two polls by one term (verify/engines/deadline.py).
        self.deadline = deadline
        # The counts are Z3-free (sympy): a counter may serve several provers of the program.
        self.counter = Counter(program, deadline) if counter is None else counter
        self.templates: dict = {}  # the counts' terms in this context (counts.py `to_z3`)
        self.params = param_env(program, ctx)
        self.steps = steps(program)  # what a completion adds, per engine or queue
        self.sites = sites(program)
        # Divisors over parameters only (a[i % (D + 1)] reuses a slot D + 1 iterations later).
        names = set(self.params)
        self.moduli = [n.right for n in expressions(program) if isinstance(n, BinOp) and n.op in ("%", "//")
                       and not isinstance(n.right, Const)
                       and all(isinstance(v, Const) or (isinstance(v, Var) and v.name in names)
                               for v in walk_expr(n.right) if isinstance(v, (Var, Const, Iters)))]

    def warm(self) -> None:
        """Make now, in this context, the terms of every count the counter has built
        (verify/proof/jobs.py: a worker's prover, whose copies answer its jobs)."""
        for pieces in self.counter.built():
            template(pieces, self.counter.atoms, self.ctx, self.templates)

    def env(self, site: Site, tag: str) -> dict:
        self.deadline.check()
        return instance_env(site, tag, self.params, self.ctx)

    def local(self, site: Site, engine: str, env: dict):
        """F-instances before the instance of `site` at `env` (its local index on F
        when it runs on F; a queue's transfers count on the queue, triggers nowhere)."""
        self.deadline.check()
        return count_z3(self.counter.before(site, ("engine", engine)), env, self.counter.atoms, self.ctx, self.templates)

    def threshold(self, site: Site, engine: str, env: dict):
        """max(0, thresholds of the site's waits on engine), or None without waits."""
        self.deadline.check()
        waits = [w for w in site.op.waits if w.engine == engine]
        if not waits:
            return None
        terms = [to_z3(w.threshold, env, self._iters(site, w.threshold, env), ctx=self.ctx) for w in waits]
        best = z3.IntVal(0, self.ctx)
        for t in terms:
            best = z3.If(t > best, t, best)
        return best

    def wait_term(self, site: Site, wait, env: dict):
        self.deadline.check()
        return to_z3(wait.threshold, env, self._iters(site, wait.threshold, env), ctx=self.ctx)

    def _iters(self, site: Site, node, env: dict) -> dict:
        """The tracked values a threshold reads: `iters(v)` (the iterations of v begun) and
        `count(F)` (F's local index: the F-instances before the site's instance)."""
        names = {n.var for n in walk_expr(node) if isinstance(n, Iters)}
        tracked = {v: count_z3(self.counter.before(site, ("loop", v)), env, self.counter.atoms, self.ctx, self.templates)
                   for v in names}
        for engine in sorted({n.engine for n in walk_expr(node) if isinstance(n, Count)}):
            tracked[count_key(engine)] = self.local(site, engine, env)
        return tracked


def loop_steps(site: Site) -> list:
    return [s for s in site.trail[:-1] if isinstance(s.stmt, For)]


def shared_loops(a: Site, b: Site) -> set:
    depth = common_depth(a, b)
    return {s.stmt.var for s in a.trail[:depth] if isinstance(s.stmt, For)}


def index_solutions(target: Site, other: Site, other_env: dict, ctx: z3.Context) -> dict:
    """Values of target's loop variables that make one of its accesses name the same
    element as an access of `other`: from indices `v`, `v + c`, `v - c`. Against a
    range `lo..hi` of `other`, the range's first and last elements (the extreme
    instances that touch it); a range index of the target's own proposes nothing.
    Candidates only: every obligation checks what it is given."""
    out: dict[str, list] = {}
    loop_vars = {s.stmt.var for s in loop_steps(target)}
    for at, ao in conflicting_pairs(target.op, other.op) + [
            (a, b) for b, a in conflicting_pairs(other.op, target.op)]:
        for it, io in zip(at.indices, ao.indices):
            if isinstance(io, Range):
                values = [to_z3(io.lo, other_env, ctx=ctx), to_z3(io.hi, other_env, ctx=ctx) - 1]
            else:
                values = [to_z3(io, other_env, ctx=ctx)]
            for value in values:
                match it:
                    case Var(name=v) if v in loop_vars:
                        out.setdefault(v, []).append(value)
                    case BinOp(op="+", left=Var(name=v), right=Const(value=c)) if v in loop_vars:
                        out.setdefault(v, []).append(value - c)
                    case BinOp(op="-", left=Var(name=v), right=Const(value=c)) if v in loop_vars:
                        out.setdefault(v, []).append(value + c)
    return out


def witnesses(terms: Terms, target: Site, anchors: list[tuple[Site, dict]], depth: int, limit: int,
              narrow: bool = False) -> list[dict]:
    """Candidate loop-index assignments for an instance of `target`: for each of its
    loops, the anchors' own iteration and up to `depth` before it (shared loops), the
    solutions of index equations with the anchors' accesses, and the loop's first and
    last iterations. `narrow`: a loop shared with an anchor takes the anchors' own
    iterations only, another one the solutions only, where there are any (the instance
    a chain goes through is usually named by its accesses: matmul_fully_optimized's
    `pack` between `accum` and `zero`, 2 candidates instead of 48)."""
    solutions: dict[str, list] = {}
    for site, env in anchors:
        for v, values in index_solutions(target, site, env, terms.ctx).items():
            solutions.setdefault(v, []).extend(values)
    combos = [dict(terms.params)]
    for step in loop_steps(target):
        loop = step.stmt
        grown = []
        for env in combos:
            terms.deadline.check()
            options = []
            for site, anchor_env in anchors:
                if loop.var in shared_loops(target, site):
                    options += [anchor_env[loop.var] - d for d in range(1 if narrow else depth + 1)]
                    options += [o for b in (anchor_env[loop.var], anchor_env[loop.var] - 1)
                                for o in residue_lasts(terms, target, loop.var, env, b)]
                    if not narrow:
                        options += [anchor_env[loop.var] - to_z3(m, terms.params, ctx=terms.ctx)
                                    for m in terms.moduli]
            if not (narrow and options):
                options += solutions.get(loop.var, [])
            if not (narrow and options):
                options += [to_z3(loop.lo, env, ctx=terms.ctx), to_z3(loop.hi, env, ctx=terms.ctx) - 1]
            grown += [{**env, loop.var: o} for o, _ in _distinct((o, None) for o in options)]
        combos = grown[:limit]
    return combos


def _distinct(options) -> list:
    """(term, tag) pairs with the terms simplified, the first of equal terms kept."""
    out = []
    for value, tag in options:
        value = z3.simplify(value)
        if not any(value.eq(v) for v, _ in out):
            out.append((value, tag))
    return out


def last_candidates(terms: Terms, x: Site, y: Site, iy: dict, depth: int, limit: int = 256,
                    narrow: bool = False) -> list[dict]:
    """Candidates for the last instance of x before y's instance, shaped like a
    lexicographic maximum: while every outer loop shared with y is at y's own
    iteration, the next one is at y's iteration or up to `depth` before it; below
    the first loop that is earlier, every loop is at one of its last `depth`
    iterations. Index-equation solutions are tried everywhere. `narrow`: a loop that
    has index-equation solutions takes only those (when the access names the element
    through that loop's index, the last producer has it at a solution): far fewer
    candidates (matmul_fully_optimized's `zero` after `pack`: 3 instead of 192)."""
    solutions = index_solutions(x, y, iy, terms.ctx)
    shared = shared_loops(x, y)
    free = free_loops(x, y) if narrow else set()
    out = []

    def grow(steps, env, tight):
        terms.deadline.check()
        if len(out) >= limit:
            return
        if not steps:
            out.append(env)
            return
        loop = steps[0].stmt
        options = []
        if narrow and not (tight and loop.var in shared):
            if solutions.get(loop.var):
                values = solutions[loop.var]
            elif loop.var in free:  # any of its iterations is a producer when one is: the last
                values = [to_z3(loop.hi, env, ctx=terms.ctx) - 1]
            else:
                values = []
            if values:
                for value, _ in _distinct((o, None) for o in values):
                    grow(steps[1:], {**env, loop.var: value}, False)
                return
        if tight and loop.var in shared:
            options += [(iy[loop.var] - d, d == 0) for d in range(depth + 1)]
            # The last iteration up to y's whose guard `(v + e) % P == r` holds (P over
            # the parameters: `k % K == 0`, blocked accumulation's first step).
            options += [(o, False) for b in (iy[loop.var], iy[loop.var] - 1)
                        for o in residue_lasts(terms, x, loop.var, env, b)]
            options += [(iy[loop.var] - to_z3(m, terms.params, ctx=terms.ctx), False) for m in terms.moduli]
            for bound in guard_bounds(terms, x, loop.var, env):  # the last earlier iteration x runs in
                latest = z3.If(bound < iy[loop.var], bound, iy[loop.var] - 1)
                options += [(latest - d, False) for d in range(depth + 1)]
        else:
            last = to_z3(loop.hi, env, ctx=terms.ctx) - 1
            options += [(last - d, False) for d in range(depth)]
            options.append((to_z3(loop.lo, env, ctx=terms.ctx), False))
            # The last iteration whose guard holds at the inner loops' index solutions
            # (flash attention's `mupd` before `fexp` at row i2: j = min(i2 // 16, JT - 1)).
            for bound in guard_bounds(terms, x, loop.var, env, solutions, every=False):
                options.append((z3.If(bound < last, bound, last), False))
            options += [(o, False) for o in residue_lasts(terms, x, loop.var, env, last)]
        options += [(o, False) for o in solutions.get(loop.var, [])]
        for value, still in _distinct(options):
            grow(steps[1:], {**env, loop.var: value}, still)

    try:
        grow(loop_steps(x), dict(terms.params), True)
    finally:
        del grow  # a recursive closure is a reference cycle: its terms would wait for the collector
    return out


def guard_bounds(terms: Terms, site: Site, var: str, env: dict, solutions: dict | None = None,
                 every: bool = True) -> list:
    """Upper bounds on the site's loop `var` from its guards: a guard `a * v - c * var +
    r >= 0` taken (a, c positive constants, v an inner loop of the site, r free of inner
    loops) holds for some v only if var <= (a * (hi_v - 1) + r) // c. Terms over `env`
    (the values of the loops outside `var`). Flash attention's causal guard `i >= 16 * j`
    bounds the K/V tiles j that run any query tile: j <= (QT - 1) // 16. `solutions`
    (inner loop -> index-equation solutions): also the bound at each solution s of v,
    (a * s + r) // c; `every`: also the bound over every v (at hi_v - 1)."""
    loops = [loop.var for loop in site.loops]
    if var not in loops:
        return []
    inner = set(loops[loops.index(var) + 1:])
    his = {loop.var: loop.hi for loop in site.loops}
    out = []
    for diff in _taken_differences(site):
        form = linear(diff)  # monomial -> coefficient (semantics/simplify.py)
        c = form.get((Var(var),))
        if not isinstance(c, int) or c >= 0:
            continue
        for v in sorted(inner):
            a = form.get((Var(v),))
            rest = simplified({k: co for k, co in form.items() if k not in ((Var(var),), (Var(v),))})
            if not isinstance(a, int) or a <= 0 or _reads(rest) & (inner | {var}) or _reads(his[v]) & inner:
                continue
            values = [to_z3(his[v], env, ctx=terms.ctx) - 1] if every else []
            values += (solutions or {}).get(v, [])
            out += [(a * value + to_z3(rest, env, ctx=terms.ctx)) / -c for value in values]
    return out


def residue_lasts(terms: Terms, site: Site, var: str, env: dict, bound) -> list:
    """The largest value of the site's loop `var` up to `bound` (a Z3 term) that each
    taken guard `(var + e) % P == r` allows, P over the parameters, e and r over `env`:
    bound - (bound + e - r) % P. (A constant period needs none: the last few
    iterations hold a witness.)"""
    out = []
    for c in _taken(site):
        if not isinstance(c, Compare) or c.op != "==":
            continue
        for side, other in ((c.left, c.right), (c.right, c.left)):
            if not (isinstance(side, BinOp) and side.op == "%") or isinstance(simplify(side.right), Const):
                continue
            form = linear(side.left)  # monomial -> coefficient
            if form.get((Var(var),)) != 1 or any(Var(var) in k for k in form if k and k != (Var(var),)) \
                    or not (_reads(side.left) - {var} | _reads(side.right) | _reads(other)) <= set(env):
                continue
            e = simplify(BinOp("-", side.left, Var(var)))
            period = to_z3(side.right, env, ctx=terms.ctx)
            residue = to_z3(BinOp("-", e, other), env, ctx=terms.ctx)
            out.append(bound - py_mod(bound + residue, period))
    return out


def _taken(site: Site) -> list:
    """The conjuncts of the site's taken `then` guards, left to right."""
    def conjuncts(cond) -> list:
        match cond:
            case And(left=left, right=right):
                return conjuncts(left) + conjuncts(right)
        return [cond]

    return [c for guard, branch in site.guards if branch for c in conjuncts(guard.cond)]


def _taken_differences(site: Site) -> list:
    """Expressions d, one per comparison the site's guards require (conjuncts of taken
    `then` branches), each comparison equivalent to d >= 0 over the integers."""
    found = []
    for c in _taken(site):
        match c:
            case Compare(op=">=" | ">" as op, left=left, right=right):
                found.append(BinOp("-", left, right) if op == ">=" else BinOp("-", BinOp("-", left, right), Const(1)))
            case Compare(op="<=" | "<" as op, left=left, right=right):
                found.append(BinOp("-", right, left) if op == "<=" else BinOp("-", BinOp("-", right, left), Const(1)))
    return found


def _reads(node) -> set[str]:
    return {n.name for n in walk_expr(node) if isinstance(n, Var)}


def free_loops(site: Site, other: Site) -> set[str]:
    """The site's loop variables that its accesses conflicting with `other`'s, its
    guards and its loop bounds do not read: whether an instance of the site conflicts
    with one of `other` does not depend on them."""
    accesses = [a for a, _ in conflicting_pairs(site.op, other.op)]
    used = {n.name for a in accesses for i in a.indices for e in index_exprs(i) for n in walk_expr(e)
            if isinstance(n, Var)}
    for step in site.trail[:-1]:
        match step.stmt:
            case If(cond=cond):
                used |= {n.name for n in walk_expr(cond) if isinstance(n, Var)}
            case For(lo=lo, hi=hi):
                used |= {n.name for b in (lo, hi) for n in walk_expr(b) if isinstance(n, Var)}
    return {loop.var for loop in site.loops} - used


def lex_le(site: Site, a: dict, b: dict, ctx: z3.Context):
    """a's instance of `site` comes no later than b's: loop indices, lexicographically."""
    out = z3.BoolVal(True, ctx)
    for loop in reversed(site.loops):
        v = loop.var
        out = z3.Or(a[v] < b[v], z3.And(a[v] == b[v], out))
    return out


def depth(program: Program) -> int:
    """How many iterations back a witness may sit: the largest modulus of a
    multi-buffered access (a[i % k] reuses a slot k iterations later), at least 2. From
    the accesses' indices alone: a threshold's `(QT - 1) // 16` is not a buffer rotation."""
    moduli = [n.right.value for op in walk_stmts(program.body) if isinstance(op, Op)
              for a in op.reads + op.writes for i in a.indices for e in index_exprs(i) for n in walk_expr(e)
              if isinstance(n, BinOp) and n.op in ("%", "//") and isinstance(n.right, Const)]
    return max([2] + moduli)


def op_expressions(op: Op) -> list:
    """An op's index expressions (a range's two bounds) and wait thresholds."""
    return [e for a in op.reads + op.writes for i in a.indices for e in index_exprs(i)] + [w.threshold for w in op.waits]


def expressions(program: Program):
    """Every expression and condition node of the program."""
    for stmt in walk_stmts(program.body):
        match stmt:
            case Op():
                roots = op_expressions(stmt)
            case For():
                roots = [stmt.lo, stmt.hi]
            case If():
                roots = [stmt.cond]
            case _:
                roots = []
        for root in roots:
            yield from walk_expr(root)
