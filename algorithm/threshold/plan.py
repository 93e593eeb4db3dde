"""`threshold`: the barrier-free algorithm.

Rule. For every op y and every other engine F, y waits `F >= T(y, F)` where T is
the minimal threshold of docs/design.md section 2: 1 + the engine-local index of the last
F-instance y depends on, i.e. the number of F-instances up to and including that
producer in program order. No barrier is emitted; input waits and barriers are
replaced.

How T is built, per producer op x on F and conflicting access pair (x, y):
1. Candidates for the last conflicting x-instance before y, latest first: x in the
   same iteration of all common loops (when x precedes y in their body), then x in an
   earlier iteration of the innermost common loop, then of the next outer one, ... For
   each, the loop indices not fixed by y are chosen as the latest ones allowed by the
   loop ranges, the guards and the index equations (an equality `u = e`, a
   congruence `u % m == r` or a bound), and the candidate carries the exact condition
   under which that instance exists and conflicts.
2. Z3 proves the case analysis over unbounded parameters and indices: each
   candidate, when its condition holds, is a conflicting instance before y, and no
   conflicting x-instance lies after it (or exists at all when no condition holds).
   If Z3 cannot prove it (or answers unknown), the pair is not exact and the threshold
   falls back to "every earlier F-instance" (sound and deadlock-free, reported).
3. The count up to the candidate: F-instances before the start of the body that
   y and the candidate share (from tracked counts, `iters`, or 0 at the top level)
   plus the closed-form count inside that body (algorithm/threshold/counting.py), plus one.
4. T = max over producers and pairs, each `if cond1 then count1 else if ... else 0`,
   simplified under the facts at y (a threshold <= 0 holds anyway, so branches that
   are <= 0 merge).

Run-time cost (Trainium-like engines): each engine keeps one register per loop for
`iters(v)`, incremented at every iteration start (all engines evaluate every loop
bound, so every engine can). A wait evaluates its threshold expression with the
current loop indices and those registers, then compares against the semaphore:
the cost is one compare plus the arithmetic operations of the printed expression.
"""

from __future__ import annotations

import attrs
import z3

from semantics.context import Site, common_depth, sites, static_order
from semantics.ir import (
    BinOp, Compare, Const, For, If, IfExpr, Iters, Max, Min, Neg, Not, Program, Var, Wait, map_ops,
)
from semantics.symbolic import conflicting_pairs, domain
from algorithm.threshold.candidates import Candidate, candidates_of, conjoin, prove_candidates  # noqa: F401 (used by irredundant)
from algorithm.threshold.counting import Facts, PrefixCounts, Session, Unsupported, count_upto, full_count, loop_target
from algorithm.threshold.facts import RENEW_AFTER_OPS
from semantics.simplify import simplify


@attrs.frozen
class PlanEntry:
    op: str
    engine: str  # producer engine F
    threshold: object  # IR expression; None: not countable (the op needs a local barrier)
    exact: bool
    note: str | None = None
    # For the irredundancy pass: the candidate producer instances (site, candidate),
    # and the same threshold over loop indices and parameters only (no iters), if any.
    sources: tuple = ()
    closed: object = None


@attrs.define
class Plan:
    entries: list = attrs.Factory(list)
    dependence_pairs: int = 0  # static (producer op, consumer op) pairs with a possible dependence
    # The solver session the plan was made in; the passes over the plan (irredundancy,
    # barrier regions) continue in it, so that their queries meet the plan's memo.
    session: object = attrs.field(default=None, eq=False, repr=False)


def body_at(program: Program, trail, depth: int):
    if depth == 0:
        return program.body
    step = trail[depth - 1]
    if isinstance(step.stmt, For):
        return step.stmt.body
    return step.stmt.then if step.branch else step.stmt.else_


class Context:
    """Per-program lookups shared by every (op, engine) pair."""

    def __init__(self, program: Program, conflicts=conflicting_pairs, session: Session | None = None):
        self.program = program
        self.session = session or Session()  # all solver state of this pass
        self.conflicts = conflicts  # the access-pair relation enforced (a hook for broken test strategies)
        self.sites = sites(program)
        self.by_engine = {e: [s for s in self.sites.values() if s.op.engine == e] for e in program.engines}
        self.by_buffer: dict[str, list[Site]] = {}
        for site in self.sites.values():
            for buffer in {a.buffer for a in site.op.reads + site.op.writes}:
                self.by_buffer.setdefault(buffer, []).append(site)
        self.prefix = PrefixCounts(program, self.session)
        # Loop variable -> (statement index, loop) for the program's top-level loops.
        self.top_loops = {stmt.var: (index, stmt) for index, stmt in enumerate(program.body) if isinstance(stmt, For)}
        self.order = {name: n for n, name in enumerate(self.sites)}
        self._names: dict = {}
        self._tops: dict = {}
        # count_before_y's memo: (op, id(targets), facts key) -> count. Facts keys are Z3
        # term ids, valid within one Z3 context: cleared when the session renews it.
        self.before: dict = {}

    def names(self, targets: list[Site]) -> frozenset:
        """The op names of a target list (one of `by_engine`'s lists), built once."""
        hit = self._names.get(id(targets))
        if hit is None or hit[0] is not targets:
            hit = self._names[id(targets)] = (targets, frozenset(t.op.name for t in targets))
        return hit[1]

    def in_statement(self, targets: list[Site], top: int) -> list[Site]:
        """The sites of a target list inside top-level statement `top` (indexed once
        per list: scanning the list per op would make the work quadratic)."""
        hit = self._tops.get(id(targets))
        if hit is None or hit[0] is not targets:
            index: dict[int, list[Site]] = {}
            for site in targets:
                index.setdefault(site.trail[0].index, []).append(site)
            hit = self._tops[id(targets)] = (targets, index)
        return hit[1].get(top, [])

    def producers(self, y: Site, engine: str):
        """(x, access pair) for ops x on `engine` that may conflict with y."""
        seen, out = set(), []
        for buffer in sorted({a.buffer for a in y.op.reads + y.op.writes}):
            for x in self.by_buffer.get(buffer, ()):
                if x.op.engine == engine and x.op.name not in seen:
                    seen.add(x.op.name)
                    out += [(x, pair) for pair in self.conflicts(x.op, y.op)]
        return sorted(out, key=lambda xp: self.order[xp[0].op.name])


def site_facts(ctx: "Context", y: Site) -> Facts:
    """Parameters at or above their lower bounds, and y's loop ranges and guards."""
    session, program = ctx.session, ctx.program
    env = {p.name: session.var(p.name) for p in program.params}
    for loop in y.loops:
        env[loop.var] = session.var(loop.var)
    return session.facts([env[p.name] >= p.lower for p in program.params] + domain(y, env, session.ctx))


def iters_facts(ctx: "Context", y: Site, facts: Facts, node) -> Facts:
    """The facts plus what is known of each tracked count `node` mentions, at y
    (its closed form where one exists, else its sign)."""
    wanted = sorted(_iters_vars(node))
    if not wanted:
        return facts
    params = {p.name: Var(p.name) for p in ctx.program.params}
    values = {l.var: Var(l.var) for l in y.loops}
    inside = {l.var for l in y.loops}
    extra = []
    for var in wanted:
        extra.append(facts.session.iters(var) >= (1 if var in inside else 0))
        try:
            count = count_upto(ctx.program.body, params, y.trail, values, frozenset([loop_target(var)]), facts, ctx.prefix)
            extra.append(facts.session.iters(var) == facts.z(count))
        except Unsupported:
            pass
    return facts.with_(*extra)


def _iters_vars(node) -> set:
    match node:
        case Iters(var=var):
            return {var}
        case Const() | Var():
            return set()
        case Neg(operand=a) | Not(operand=a):
            return _iters_vars(a)
        case IfExpr(cond=c, then=a, else_=b):
            return _iters_vars(c) | _iters_vars(a) | _iters_vars(b)
        case _:
            return _iters_vars(node.left) | _iters_vars(node.right)


# --------------------------------------------------------------- counting


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
    ctx.before[key] = (targets, result, facts.assertions)  # the assertions stay alive while their ids are keys
    return result


def _candidate_count(ctx: "Context", x: Site, y: Site, candidate: Candidate, targets: list[Site], facts: Facts):
    """F-instances up to and including the candidate, in the cheaper of two exact forms:
    counted from the program start (closed form over loop indices), or counted back
    from y (tracked counts at y minus the instances between the candidate and y)."""
    program = ctx.program
    names = ctx.names(targets)
    at_facts = facts.with_(facts.z(candidate.condition))
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
            case Var() | Iters():
                return 1
        return 0

    text = print_expr(node)
    return (degree(node), sum(text.count(op) for op in ("+", "-", "*", "//", "%", "min", "max", "if")), len(text))


def closed_iters(ctx: "Context", y: Site, node):
    """Replace iters(v) of a loop that runs at most once (no enclosing loop) by its
    closed form at y: v - lo + 1 inside the loop, the trip count after it, 0 before it."""
    wanted = _iters_vars(node)
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
        case Const() | Var():
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
    if facts.proves(facts.z(t) <= 0):
        return Const(0)
    t = _push_into_branches(t)
    match t:
        case IfExpr(cond=c, then=a, else_=b):
            zc = facts.z(c)
            yes, no = facts.with_(zc), facts.with_(z3.Not(zc))
            a, b = tidy_threshold(a, yes), tidy_threshold(b, no)
            if no.proves(facts.z(a) == facts.z(b)) or (no.proves(facts.z(a) <= 0) and no.proves(facts.z(b) <= 0)):
                return a
            if yes.proves(facts.z(a) == facts.z(b)) or (yes.proves(facts.z(a) <= 0) and yes.proves(facts.z(b) <= 0)):
                return b
            return IfExpr(c, a, b)
        case Max(left=a, right=b):
            a, b = tidy_threshold(a, facts), tidy_threshold(b, facts)
            if facts.proves(facts.z(a) <= facts.z(b)) or facts.proves(facts.z(a) <= 0):
                return b
            if facts.proves(facts.z(b) <= facts.z(a)) or facts.proves(facts.z(b) <= 0):
                return a
            for one, other in ((a, b), (b, a)):  # max(k, if c then p else q) = if c then max(k, p) else max(k, q)
                if isinstance(other, IfExpr) and not isinstance(one, IfExpr):
                    return tidy_threshold(IfExpr(other.cond, Max(one, other.then), Max(one, other.else_)), facts)
            return Max(a, b)
    return t


def _push_into_branches(t):
    """rest + (if c then a else b)  =>  if c then rest + a else rest + b."""
    from semantics.simplify import expr as lin_expr, linear

    lin = linear(t)
    branches = [(k, c) for k, c in lin.items() if k is not None and len(k) == 1 and isinstance(k[0], IfExpr)]
    if len(branches) != 1 or len(lin) == 1 and abs(branches[0][1]) == 1:
        return t
    (mono, coef), = branches
    rest = lin_expr({k: c for k, c in lin.items() if k != mono})
    ite = mono[0]
    scale = lambda e: BinOp("*", Const(coef), e)
    return IfExpr(ite.cond, simplify(BinOp("+", rest, scale(ite.then))), simplify(BinOp("+", rest, scale(ite.else_))))


def keep_z3_small(n: int, ctx: "Context") -> None:
    """Before the n-th op of a pass over a program: a fresh Z3 context in the pass's
    session every RENEW_AFTER_OPS ops (facts.py), and the context's own Z3 facts
    rebuilt in it, so that long kernels plan in linear time (docs/sync-speed.md)."""
    if n and n % RENEW_AFTER_OPS == 0:
        ctx.session.renew()
        ctx.prefix.refresh_facts()
        ctx.before.clear()


def plan_thresholds(program: Program, conflicts=conflicting_pairs) -> Plan:
    """The threshold of every (op, producer engine) pair with a possible dependence.
    `conflicts(x_op, y_op)` gives the conflicting access pairs (semantics.symbolic's
    `conflicting_pairs`; tests pass a weaker one to build deliberately broken strategies).
    The plan has its own solver session (a Z3 context of its own), so that it does not
    depend on what ran before in the process (Z3's effort on a query depends on the
    ids of earlier terms)."""
    ctx = Context(program, conflicts)
    plan = Plan(session=ctx.session)
    for n, y in enumerate(ctx.sites.values()):
        keep_z3_small(n, ctx)
        facts = site_facts(ctx, y)
        for engine in program.engines:
            if engine == y.op.engine:
                continue
            producers = ctx.producers(y, engine)
            if not producers:
                continue
            targets = ctx.by_engine[engine]
            plan.dependence_pairs += len({x.op.name for x, _ in producers})
            parts, notes, sources, closed_parts = [], [], [], []
            for x, pair in producers:
                try:
                    if never_before(x, y):
                        continue  # no x-instance precedes y: no dependence, nothing to prove
                    candidates = candidates_of(program, x, y, pair)
                    dominant = dominates(x, y, candidates)
                    # A dominating candidate is exact by construction; the later ones are
                    # only proved to be conflicting earlier instances (irredundancy uses them).
                    why = prove_candidates(ctx.session, program, x, y, pair, candidates, soundness_only=dominant)
                    if why:
                        raise Unsupported(f"{x.op.name} -> {y.op.name}: {why}")
                    part, closed_part = Const(0), Const(0)
                    for n, candidate in enumerate(reversed(candidates)):
                        if dominant and n < len(candidates) - 1:
                            sources.append((x, candidate))  # masked by the first: never counted
                            continue
                        count, closed = _candidate_count(ctx, x, y, candidate, targets, facts)
                        part = IfExpr(candidate.condition, count, part)
                        closed_part = None if closed is None or closed_part is None else IfExpr(candidate.condition, closed, closed_part)
                        sources.append((x, candidate))
                    parts.append(part)
                    closed_parts.append(closed_part)
                except Unsupported as why:
                    notes.append(str(why))
            if notes:
                try:
                    threshold, exact = count_before_y(ctx, y, targets, facts), False
                except Unsupported as why:
                    # Neither exact nor conservative: the caller places a local barrier
                    # before y (algorithm/barrier.py); never a refusal.
                    where = f"line {y.op.loc.line}: " if y.op.loc else ""
                    plan.entries.append(PlanEntry(
                        y.op.name, engine, None, False,
                        f"{where}cannot count the {engine} instances before it ({why}); the exact analysis "
                        f"failed too ({notes[0]})"))
                    continue
            else:
                if not parts:
                    continue  # no producer precedes y
                threshold = parts[0]
                for part in parts[1:]:
                    threshold = Max(threshold, part)
                exact = True
            threshold = closed_iters(ctx, y, threshold)
            threshold = tidy_threshold(threshold, iters_facts(ctx, y, facts, threshold))
            if isinstance(threshold, Const) and threshold.value <= 0:
                continue
            closed = None
            if exact and all(c is not None for c in closed_parts):
                closed = closed_parts[0]
                for part in closed_parts[1:]:
                    closed = Max(closed, part)
                closed = simplify(closed)
            plan.entries.append(PlanEntry(y.op.name, engine, threshold, exact, "; ".join(notes) or None,
                                          tuple(sources) if exact else (), closed))
    return plan


TRUE = Compare("==", Const(0), Const(0))  # candidates.conjoin's empty conjunction


def dominates(x: Site, y: Site, candidates) -> bool:
    """Dominance (issue 16): x sits directly in a body on y's trail (no loop or guard of
    its own), before y, and its first candidate, x in y's own iteration, conflicts
    unconditionally (the index equations simplified to true). Then that instance is
    the last conflicting x-instance before y: any later x-instance is in a later
    iteration of a loop that encloses y, so after y. No proof is needed for it."""
    depth = common_depth(x, y)
    return (static_order(x, y) == "before" and depth == len(x.trail) - 1 and bool(candidates)
            and candidates[0].depth == depth and candidates[0].condition == TRUE)


def never_before(x: Site, y: Site) -> bool:
    """x comes after y in their common body and no loop encloses both: every x-instance
    follows every y-instance in program order."""
    depth = common_depth(x, y)
    return static_order(x, y) == "after" and not any(isinstance(s.stmt, For) for s in x.trail[:depth])


def apply_plan(program: Program, entries) -> Program:
    """The program with each op's waits replaced by the plan's and no barriers."""
    waits: dict[str, list[Wait]] = {}
    for entry in entries:
        waits.setdefault(entry.op, []).append(Wait(entry.engine, entry.threshold))
    body = map_ops(program.body, lambda op: attrs.evolve(op, waits=tuple(waits.get(op.name, ()))))
    return attrs.evolve(program, body=_drop_barriers(body))


def _drop_barriers(body):
    from semantics.ir import Barrier

    out = []
    for stmt in body:
        match stmt:
            case Barrier():
                continue
            case For():
                out.append(attrs.evolve(stmt, body=_drop_barriers(stmt.body)))
            case If():
                out.append(attrs.evolve(stmt, then=_drop_barriers(stmt.then), else_=_drop_barriers(stmt.else_)))
            case _:
                out.append(stmt)
    return tuple(out)


def threshold(program: Program) -> Program:
    """The barrier-free strategy: exact minimal thresholds, no barriers."""
    return apply_plan(program, plan_thresholds(program).entries)
