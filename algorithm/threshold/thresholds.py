"""The threshold of one wait as an expression: the count of producer-engine instances
up to a candidate (`candidate_count`, in the cheapest of several exact forms), the
count before the consumer (`count_before_y`, the conservative fallback), and the
tidying of the result under the facts at the consumer (`tidied`, `tidy_threshold`,
`closed_iters`), and the assembly of the producers' parts into one threshold
(`max_of`, `later_producers_first`) with its run-time arithmetic (`operators`)."""

from __future__ import annotations


from semantics.context import Site, common_depth, static_order
from semantics.ir import (
    BinOp, Compare, Const, Count, For, If, IfExpr, Iters, Max, Min, Neg, Not, Var, index_exprs, map_expr,
)
from algorithm.threshold.candidates import Candidate, conjoin
from algorithm.threshold.context import Context, body_at, iters_facts, iters_vars
from algorithm.threshold.counting import Facts, Unsupported, count_upto, full_count, loop_target
from semantics.printer import print_expr
from semantics.simplify import simplify


def _iters_count(ctx: "Context", y: Site, x_site: Site, facts: Facts):
    """Instances of x_site's op before y (program order), from tracked counts; x_site
    is in the top-level statement that holds y."""
    program = ctx.program
    depth = common_depth(x_site, y)
    loop_steps = [n for n, s in enumerate(x_site.trail[:-1]) if isinstance(s.stmt, For)]
    if not loop_steps:
        if static_order(x_site, y) != "before":
            return Const(0)
        guards = [g.cond if b else Not(g.cond) for g, b in x_site.guards]
        return simplify(IfExpr(conjoin(guards), Const(1), Const(0))) if guards else Const(1)
    inner = loop_steps[-1]
    if any(isinstance(s.stmt, If) for s in x_site.trail[inner + 1:-1]):
        env = {p.name: Var(p.name) for p in program.params}
        values = {l.var: Var(l.var) for l in y.loops}
        return count_upto(program.body, env, y.trail, values, frozenset([x_site.op.name]), facts, ctx.prefix)
    loop = x_site.trail[inner].stmt
    current = inner < depth and static_order(x_site, y) == "after"
    return simplify(BinOp("-", Iters(loop.var), Const(1 if current else 0)))


def count_before_y(ctx: "Context", y: Site, targets: list[Site], facts: Facts):
    """F-instances before y: the top-level statements before y's in closed form, and
    the ops of y's own top-level statement from tracked counts."""
    key = (y.op.name, id(targets), facts._key)
    hit = ctx.before.get(key)
    if hit is not None and hit[0] is targets:
        return hit[1]
    top = y.trail[0].index
    names = ctx.names(targets)
    total = ctx.prefix.before(top, names)
    for x_site in ctx.in_statement(targets, top):
        total = BinOp("+", total, _iters_count(ctx, y, x_site, facts))
    result = simplify(total)
    ctx.before[key] = (targets, result)
    return result


def candidate_count(ctx: "Context", x: Site, y: Site, candidate: Candidate, targets: list[Site], facts: Facts):
    """F-instances up to and including the candidate, in the cheaper of two exact forms:
    counted from the program start (closed form over loop indices), or counted back
    from y (tracked counts at y minus the instances between the candidate and y)."""
    program = ctx.program
    names = ctx.names(targets)
    at_facts = facts.with_(candidate.condition)
    forms = []
    closed = None
    try:
        env = {p.name: Var(p.name) for p in program.params}
        closed = simplify(BinOp("+", count_upto(program.body, env, x.trail, candidate.values, names, at_facts, ctx.prefix), Const(1)))
        forms.append(closed)
    except Unsupported:
        pass
    depth = candidate.depth
    body = body_at(program, y.trail, depth)
    env = {p.name: Var(p.name) for p in program.params}
    for step in y.trail[:depth]:
        if isinstance(step.stmt, For):
            env[step.stmt.var] = Var(step.stmt.var)
    y_values = {l.var: Var(l.var) for l in y.loops}
    try:
        span = _constant_distance_span(x, y, candidate, env, names, facts, at_facts, y_values)
        if span is not None:
            before_y = count_before_y(ctx, y, targets, facts)
            forms.append(simplify(BinOp("-", before_y, span)))
    except Unsupported:
        pass
    try:
        upto_x = count_upto(body, env, x.trail[depth:], candidate.values, names, at_facts, ctx.prefix)
        upto_y = count_upto(body, env, y.trail[depth:], y_values, names, facts, ctx.prefix)
        before_y = count_before_y(ctx, y, targets, facts)
        forms.append(simplify(BinOp("+", BinOp("-", before_y, BinOp("-", upto_y, upto_x)), Const(1))))
    except Unsupported:
        if not forms:
            raise
    return min(forms, key=_cost), closed


MAX_UNROLLED_DISTANCE = 8


def _constant_distance_span(x: Site, y: Site, candidate: Candidate, env, names, facts, at_facts, y_values):
    """Instances strictly between the candidate and y when the candidate lies a
    constant d iterations back in a common loop: the rest of its iteration, the d - 1
    whole iterations in between and y's iteration up to y; no sum over a range, so
    per-iteration counts need no closed-form sum (e.g. `0..min(i, M)` inner loops)."""
    depth = candidate.depth
    loop = y.trail[depth].stmt
    if not isinstance(loop, For) or depth >= len(x.trail) - 1 or x.trail[depth].stmt is not loop:
        return None
    var = loop.var
    from algorithm.threshold.counting import tidy

    distance = tidy(BinOp("-", Var(var), candidate.values[var]), at_facts)
    if not isinstance(distance, Const) or not 1 <= distance.value <= MAX_UNROLLED_DISTANCE:
        return None
    at = lambda value: {**env, var: value}
    u = candidate.values[var]
    after_x = BinOp("-", BinOp("-", full_count(loop.body, at(u), names, at_facts),
                               count_upto(loop.body, at(u), x.trail[depth + 1:], candidate.values, names, at_facts)),
                    Const(1))
    between = Const(0)
    for back in range(1, distance.value):
        value = simplify(BinOp("-", Var(var), Const(back)))
        between = BinOp("+", between, full_count(loop.body, at(value), names, at_facts))
    head = count_upto(loop.body, at(Var(var)), y.trail[depth + 1:], y_values, names, facts)
    return simplify(BinOp("+", BinOp("+", after_x, between), head))


def never_before(x: Site, y: Site) -> bool:
    """x comes after y in their common body and no loop encloses both: every x-instance
    follows every y-instance in program order."""
    depth = common_depth(x, y)
    return static_order(x, y) == "after" and not any(isinstance(s.stmt, For) for s in x.trail[:depth])


def every_earlier_instance_conflicts(ctx: "Context", y: Site, targets: list[Site]) -> bool:
    """Every F-instance before y conflicts with y, whatever the parameters and loop
    indices: each op of F (`targets`) never precedes y, or one of its accesses and one
    of y's, one writing, always touch a common element (a scalar, or equal constant
    indices). Then the last conflicting F-instance before y is the last F-instance
    before y, and y's exact threshold is `count(F)` itself (for a queue, in the
    transfer view the planner plans: its transfers, algorithm/queues.py)."""
    return all(never_before(x, y) or any(_always_meet(ax, ay) for ax, ay in ctx.conflicts(x.op, y.op))
               for x in targets)


def _always_meet(a, b) -> bool:
    """Two accesses of one buffer touch a common element at every pair of instances."""
    def bounds(index):
        parts = [simplify(e) for e in index_exprs(index)]
        if not all(isinstance(e, Const) for e in parts):
            return None
        lo = parts[0].value
        return (lo, parts[1].value) if len(parts) == 2 else (lo, lo + 1)

    for i, j in zip(a.indices, b.indices):
        bi, bj = bounds(i), bounds(j)
        if bi is None or bj is None or not (bi[0] < bj[1] and bj[0] < bi[1] and bi[0] < bi[1] and bj[0] < bj[1]):
            return False
    return a.buffer == b.buffer and len(a.indices) == len(b.indices)


def counted_form(ctx: "Context", y: Site, engine: str, targets: list[Site], facts: Facts, threshold):
    """The threshold with each branch written against the engine-count register where
    that is less run-time arithmetic: a branch value t at y is `count(F) - (B - t)`, B the
    count of F-instances before y (`count_before_y`, the value `count(F)` has at y by
    definition), so the rewrite is an identity at every instance of y. Where t counts up
    to an instance a fixed distance back, B - t is a constant or a short affine term, and
    the branch becomes one subtraction from a register the engines keep as an induction
    variable (docs/language.md, `count(F)`). Where every earlier F-instance conflicts
    with y (`every_earlier_instance_conflicts`), the exact threshold is `count(F)`
    whatever its closed form: no term to compare. None where no branch gets cheaper."""
    register = Count(engine)
    if _cost(register)[1:] < _cost(threshold)[1:] and every_earlier_instance_conflicts(ctx, y, targets):
        return register
    try:
        before = closed_iters(ctx, y, count_before_y(ctx, y, targets, facts))
    except Unsupported:
        return None
    closed_loops = _closed_loop_counts(ctx, y, facts)

    def rewrite(node):
        match node:
            case IfExpr(cond=c, then=a, else_=b):
                return IfExpr(c, rewrite(a), rewrite(b))
            case Max(left=a, right=b) | Min(left=a, right=b):
                return type(node)(rewrite(a), rewrite(b))
            case Const(value=v) if v <= 0:
                return node
        distance = simplify(BinOp("-", before, node))
        if iters_vars(distance):  # tracked counts that did not cancel: compare closed forms
            distance = simplify(_subst_iters(distance, closed_loops(iters_vars(distance))))
        alternative = simplify(BinOp("-", register, distance))
        return alternative if _cost(alternative)[1:] < _cost(node)[1:] else node

    try:
        counted = rewrite(threshold)
    finally:
        del rewrite  # a recursive closure is a reference cycle: freed at once, not by the collector
    ctx.keep(facts)
    return counted if counted != threshold else None


def _closed_loop_counts(ctx: "Context", y: Site, facts: Facts):
    """iters(v) at y in closed form (where counting gives one), for the loops asked."""
    params = {p.name: Var(p.name) for p in ctx.program.params}
    values = {l.var: Var(l.var) for l in y.loops}
    known: dict = {}

    def closed(wanted) -> dict:
        for var in sorted(wanted - known.keys()):
            try:
                known[var] = count_upto(ctx.program.body, params, y.trail, values,
                                        frozenset([loop_target(var)]), facts, ctx.prefix)
            except Unsupported:
                known[var] = Iters(var)
        return {var: known[var] for var in wanted}

    return closed


def _cost(node) -> tuple:
    """Run-time cost of a threshold: polynomial degree first, then operations."""
    from semantics.printer import print_expr

    def degree(n) -> int:
        match n:
            case BinOp(op="*", left=a, right=b):
                return degree(a) + degree(b)
            case BinOp(left=a, right=b) | Min(left=a, right=b) | Max(left=a, right=b):
                return max(degree(a), degree(b))
            case Neg(operand=a):
                return degree(a)
            case IfExpr(then=a, else_=b):
                return max(degree(a), degree(b))
            case Var() | Iters() | Count():
                return 1
        return 0

    text = print_expr(node)
    try:
        depth = degree(node)
    finally:
        del degree  # a recursive closure is a reference cycle
    return (depth, sum(text.count(op) for op in ("+", "-", "*", "//", "%", "min", "max", "if")), len(text))


def closed_iters(ctx: "Context", y: Site, node):
    """Replace iters(v) of a loop that runs at most once (no enclosing loop) by its
    closed form at y: v - lo + 1 inside the loop, the trip count after it, 0 before it."""
    wanted = iters_vars(node)
    if not wanted:
        return node
    inside = {s.stmt.var for s in y.trail if isinstance(s.stmt, For)}
    top = ctx.top_loops
    env = {}
    for var in wanted:
        if var not in top:
            continue
        index, loop = top[var]
        if var in inside:
            env[var] = BinOp("+", BinOp("-", Var(var), loop.lo), Const(1))
        elif index < y.trail[0].index:
            env[var] = Max(Const(0), BinOp("-", loop.hi, loop.lo))
        else:
            env[var] = Const(0)
    return _subst_iters(node, env)


def _subst_iters(node, env):
    match node:
        case Iters(var=var):
            return env.get(var, node)
        case Const() | Var() | Count():
            return node
        case BinOp(op=op, left=a, right=b):
            return BinOp(op, _subst_iters(a, env), _subst_iters(b, env))
        case Neg(operand=a):
            return Neg(_subst_iters(a, env))
        case Min(left=a, right=b) | Max(left=a, right=b):
            return type(node)(_subst_iters(a, env), _subst_iters(b, env))
        case IfExpr(cond=c, then=a, else_=b):
            return IfExpr(c, _subst_iters(a, env), _subst_iters(b, env))
    raise TypeError(node)


def tidy_threshold(t, facts: Facts):
    """Simplify a threshold; values <= 0 all mean 'always holds', so they merge."""
    from algorithm.threshold.counting import tidy

    t = tidy(t, facts)
    if facts.proves(Compare("<=", t, Const(0))):
        return Const(0)
    t = _push_into_branches(t)
    match t:
        case IfExpr(cond=c, then=a, else_=b):
            yes, no = facts.with_(c), facts.with_(Not(c))
            a, b = tidy_threshold(a, yes), tidy_threshold(b, no)
            if no.proves(Compare("==", a, b)) or (no.proves(_at_most_0(a)) and no.proves(_at_most_0(b))):
                return a
            if yes.proves(Compare("==", a, b)) or (yes.proves(_at_most_0(a)) and yes.proves(_at_most_0(b))):
                return b
            return IfExpr(c, a, b)
        case Max(left=a, right=b):
            a, b = tidy_threshold(a, facts), tidy_threshold(b, facts)
            if facts.proves(Compare("<=", a, b)) or facts.proves(_at_most_0(a)):
                return b
            if facts.proves(Compare("<=", b, a)) or facts.proves(_at_most_0(b)):
                return a
            if isinstance(a, IfExpr) and isinstance(b, IfExpr) and a.cond == b.cond:
                # max(if c then p else q, if c then r else s) = if c then max(p, r) else max(q, s)
                return tidy_threshold(IfExpr(a.cond, Max(a.then, b.then), Max(a.else_, b.else_)), facts)
            for one, other in ((a, b), (b, a)):  # max(k, if c then p else q) = if c then max(k, p) else max(k, q)
                if isinstance(other, IfExpr) and not isinstance(one, IfExpr):
                    return tidy_threshold(IfExpr(other.cond, Max(one, other.then), Max(one, other.else_)), facts)
            return Max(a, b)
    return t


def _at_most_0(t):
    return Compare("<=", t, Const(0))


def _push_into_branches(t):
    """rest + (if c then a else b)  =>  if c then rest + a else rest + b. A linear form
    with fractions (an exact division, `(5 * h - h * h - 2) // 2`, h an `if`) is an
    integer as a whole but its parts need not be, and a part written alone would be
    floored: there the `if` is replaced in the whole threshold, in each branch."""
    from semantics.simplify import expr as lin_expr, linear

    lin = linear(t)
    if any(type(c) is not int for c in lin.values()):
        ites = {a for k in lin if k is not None for a in k if isinstance(a, IfExpr)}
        if len(ites) != 1:
            return t
        (ite,) = ites
        return IfExpr(ite.cond, *(simplify(map_expr(t, lambda n, by=by: by if n == ite else n))
                                  for by in (ite.then, ite.else_)))
    branches = [(k, c) for k, c in lin.items() if k is not None and len(k) == 1 and isinstance(k[0], IfExpr)]
    if len(branches) != 1 or len(lin) == 1 and abs(branches[0][1]) == 1:
        return t
    (mono, coef), = branches
    rest = lin_expr({k: c for k, c in lin.items() if k != mono})
    ite = mono[0]
    scale = lambda e: BinOp("*", Const(coef), e)
    return IfExpr(ite.cond, simplify(BinOp("+", rest, scale(ite.then))), simplify(BinOp("+", rest, scale(ite.else_))))


def tidied(ctx, y: Site, facts, threshold, units: int | None = None):
    """The threshold simplified under the facts at y, with at most `units` Z3 units
    (default: the options' `tidy_rlimit`) spent on it (a rewrite it cannot afford is
    skipped: the threshold stays equal, with more arithmetic)."""
    threshold = closed_iters(ctx, y, threshold)
    with ctx.session.capped(ctx.options.tidy_rlimit if units is None else units):
        return tidy_threshold(threshold, iters_facts(ctx, y, facts, threshold))


def max_of(parts):
    parts = iter(parts)
    out = next(parts)
    for part in parts:
        out = Max(out, part)
    return out


OPERATORS = (" + ", " - ", " * ", " // ", " % ", "min(", "max(", "if ")


def operators(threshold) -> int:
    """The operators of the printed threshold: the arithmetic an engine does per wait
    instance (the measure tests/algorithm/test_sync_outputs.py judges outputs by)."""
    text = print_expr(threshold)
    return sum(text.count(op) for op in OPERATORS)


def later_producers_first(parts):
    """The max of the producers' parts, (top-level statement index, part) in program
    order. Each part is `if c1 then n1 else if c2 then n2 ... else 0`: the count up to
    the candidate whose condition holds. A producer whose top-level statement comes
    after those of all the parts before it has all its instances after all of theirs,
    and a count up to an instance grows with program order: where one of its
    conditions holds, its part is the max, and elsewhere it is 0. So its chain's final
    `else 0` takes the max so far, and no `max` is left for Z3 to resolve (e.g.
    suite/ring_allreduce: `max(if s % 2 == 0 then 1 else 0, if s >= 1 then s + 1 else 0)`
    tidies, chained, to `s + 1`). Parts in one top-level statement stay under a max."""
    out, last = None, -1
    for index, part in parts:
        if out is None:
            out = part
        elif index > last and _ends_in_zero(part):
            out = _else_of_chain(part, out)
        else:
            out = Max(out, part)
        last = max(last, index)
    return out


def _ends_in_zero(part) -> bool:
    while isinstance(part, IfExpr):
        part = part.else_
    return part == Const(0)


def _else_of_chain(part, tail):
    if isinstance(part, IfExpr):
        return IfExpr(part.cond, part.then, _else_of_chain(part.else_, tail))
    return tail
