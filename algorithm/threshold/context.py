"""The per-program context of the threshold planner: lookups shared by every (op,
engine) pair (sites by engine and buffer, prefix counts, top-level loops), the facts
at a site (`site_facts`, `iters_facts`)."""

from __future__ import annotations

from semantics.context import Site, sites
from semantics.ir import Compare, Const, Count, For, IfExpr, Iters, Neg, Not, Program, Var
from semantics.symbolic import conflicting_pairs
from algorithm.threshold.counting import Facts, PrefixCounts, Session, Unsupported, count_upto, loop_target
from algorithm.threshold.facts import domain_conds, param_bounds


def body_at(program: Program, trail, depth: int):
    if depth == 0:
        return program.body
    step = trail[depth - 1]
    if isinstance(step.stmt, For):
        return step.stmt.body
    return step.stmt.then if step.branch else step.stmt.else_


class Context:
    """Per-program lookups shared by every (op, engine) pair."""

    def __init__(self, program: Program, conflicts=conflicting_pairs, session: Session | None = None,
                 options=None):
        from algorithm.threshold.options import PlannerOptions

        self.program = program
        self.options = options or PlannerOptions(conflicts=conflicts)
        session = session or Session(self.options.facts_rlimit, self.options.candidate_rlimit)
        self.session = session  # all solver state of this pass
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
        # count_before_y's memo: (op, id(targets), facts key) -> count.
        self.before: dict = {}
        self._kept: list = []

    def keep(self, facts) -> None:
        """Keep `facts` (and its solver) for as long as this context: Z3 gives a freed
        term's id to the next term made, and the ids order its search, so freeing a
        solver midway changes what later queries find (a tidy form of
        tests/data/threshold_cases/if_else_varying.sync got longer)."""
        self._kept.append(facts)

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
    return ctx.session.facts(param_bounds(ctx.program.params) + domain_conds(y))


def iters_facts(ctx: "Context", y: Site, facts: Facts, node) -> Facts:
    """The facts plus what is known of each tracked count `node` mentions, at y
    (its closed form where one exists, else its sign)."""
    wanted = sorted(iters_vars(node))
    if not wanted:
        return facts
    params = {p.name: Var(p.name) for p in ctx.program.params}
    values = {l.var: Var(l.var) for l in y.loops}
    inside = {l.var for l in y.loops}
    extra = []
    for var in wanted:
        extra.append(Compare(">=", Iters(var), Const(1 if var in inside else 0)))
        try:
            count = count_upto(ctx.program.body, params, y.trail, values, frozenset([loop_target(var)]), facts, ctx.prefix)
            extra.append(Compare("==", Iters(var), count))
        except Unsupported:
            pass
    return facts.with_(*extra)


def iters_vars(node) -> set:
    match node:
        case Iters(var=var):
            return {var}
        case Const() | Var() | Count():
            return set()
        case Neg(operand=a) | Not(operand=a):
            return iters_vars(a)
        case IfExpr(cond=c, then=a, else_=b):
            return iters_vars(c) | iters_vars(a) | iters_vars(b)
        case _:
            return iters_vars(node.left) | iters_vars(node.right)


# --------------------------------------------------------------- counting
