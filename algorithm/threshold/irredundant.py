"""Irredundancy: drop waits that the other waits and in-order execution imply.

Rule. Wait `F >= T` of op y is dropped when Z3 proves, for every parameter value and
every instance of y, that when y may issue some instance z has completed whose own
requirement already forces C[F] >= T:
- z is reached from y by a chain of at most `max_hops` steps (options.py), each step either
  "a producer instance that one of y's kept waits covers" (first step only), "a
  producer instance that z's exact requirement covers", or "an earlier instance on
  the same engine" (in-order execution: it completed before the next one issued);
- z's requirement on F (its exact threshold, evaluated at z's loop indices) is at
  least T, or z runs on F and is itself the T-th instance or later.
Why it is sound: by induction over program order, every instance's exact
requirement holds when it issues (kept waits enforce theirs; a dropped wait's
requirement follows from an earlier instance's); the first step only uses waits of
y that stay, and those are pinned so that they are never dropped later. Exact waits
stay exact, so the result stays bisimilar. Dropping only ever removes a wait, so it
cannot add over-synchronization.
"""

from __future__ import annotations

import bisect

import attrs
import z3

from semantics.context import Site
from semantics.errors import SyncproofError
from semantics.ir import Access, And, BinOp, Const, Program, Var
from semantics.symbolic import conflicting_pairs, domain
from algorithm.threshold.counting import Unsupported, count_upto, subst
from semantics.simplify import simplify
from algorithm.threshold.plan import Plan, PlanEntry, Context, candidates_of, keep_z3_small, prove_candidates
from algorithm.threshold.points import Parts, sample_cover


_NO_PAIR = (Access("", ()), Access("", ()))


@attrs.frozen
class Source:
    site: Site
    condition: object  # over the loop indices of the instance it is a source of
    values: dict  # the source's loop variables -> expressions over those indices
    via: str | None  # the engine whose wait covers it (None: in-order predecessor)


def nearby(y: Site, same: list[Site], tops: list[int]) -> list[Site]:
    """The ops of y's engine whose latest instances before y are its in-order sources: those
    in y's top-level statement, and the last one before it (a bounded subset, so the work
    per op does not grow with the program). `same` is the engine's sites in program
    order, `tops` their top-level statement indices."""
    top = y.trail[0].index
    first = bisect.bisect_left(tops, top)
    return same[first:bisect.bisect_right(tops, top)] + same[max(0, first - 1):first]


def _same_engine_sources(ctx, y: Site, same: list[Site], tops: list[int]) -> list[Source]:
    """Earlier instances on y's engine that in-order execution completes before y (the
    latest instances of the `nearby` ops, by the general stage's candidates)."""
    program = ctx.program
    out = []
    for e in nearby(y, same, tops):
        try:
            candidates = candidates_of(program, e, y, _NO_PAIR, ctx.options.max_options)
        except Unsupported:
            continue
        if prove_candidates(ctx.session, program, e, y, _NO_PAIR, candidates, soundness_only=True):
            continue
        out += [Source(e, c.condition, c.values, None) for c in candidates]
    return out


def _requirement(ctx, entries, z: Site, engine: str, values: dict, counted=None):
    """What z's completion guarantees of C[engine], over the chain's indices (`counted(z,
    engine)`: the engine's instances before z over z's indices, where a stage gives them)."""
    program = ctx.program
    if z.op.engine == engine and counted is not None:
        before = counted(z, engine)
        if before is not None:
            return simplify(BinOp("+", subst(before, values), Const(1)))
    if z.op.engine == engine:
        env = {p.name: Var(p.name) for p in program.params}
        try:
            before = count_upto(program.body, env, z.trail, values,
                                ctx.names(ctx.by_engine[engine]), ctx.session.facts(), ctx.prefix)
        except Unsupported:
            return None
        return simplify(BinOp("+", before, Const(1)))
    entry = entries.get((z.op.name, engine))
    if entry is None or entry.closed is None:
        return None
    return simplify(subst(entry.closed, values))


def irredundant(program: Program, plan: Plan, conflicts=conflicting_pairs,
                only: frozenset | None = None, options=None, necessary: set | None = None,
                same_engine=None, counted=None) -> tuple[list[PlanEntry], int]:
    """The plan's entries without redundant waits, and how many were dropped
    (`conflicts` as for `plan_thresholds`; `necessary`: `shown_necessary` of the plan,
    if the caller has it; `same_engine(y, same, tops)`: the in-order sources of y as a
    stage that knows them exactly gives them, else None; `counted(z, engine)`: the
    engine's instances before z, as such a stage counts them). With `only`, just the waits of those ops
    are tried (the others are kept; a proof never relies on a wait being dropped, so
    the waits tried get the same answers: compose.py plans one statement of a slice)."""
    ctx = Context(program, conflicts, plan.session, options)
    all_sites = ctx.sites
    entries = {(e.op, e.engine): e for e in plan.entries}
    by_op: dict[str, list[PlanEntry]] = {}
    for e in plan.entries:
        by_op.setdefault(e.op, []).append(e)
    in_order: dict[str, list[Source]] = {}  # computed on demand (the general stage's: Z3 proofs per op pair)
    tops = {e: [s.trail[0].index for s in sites_] for e, sites_ in ctx.by_engine.items()}

    def sources(name: str, kept_engines=None) -> list[Source]:
        if name not in in_order:
            site = all_sites[name]
            given = same_engine(site, ctx.by_engine[site.op.engine], tops[site.op.engine]) if same_engine else None
            in_order[name] = given if given is not None else _same_engine_sources(
                ctx, site, ctx.by_engine[site.op.engine], tops[site.op.engine])
        out = list(in_order[name])
        for e in by_op.get(name, ()):
            if e.exact and (kept_engines is None or e.engine in kept_engines):
                out += [Source(x, c.condition, c.values, e.engine) for x, c in e.sources]
        return out

    # Which engines' counts a chain through each op can vouch for (a static closure):
    # a chain through an op that cannot reach engine F is never explored for F.
    # (Over-approximated per engine: every op on an engine may precede every other, so
    # all ops of one engine share one set; linear in the plan, not in op pairs.)
    engine_reach = {e: {e} for e in program.engines}
    for e in plan.entries:
        if e.exact:
            engine_reach[all_sites[e.op].op.engine].add(e.engine)
    changed = True
    while changed:
        changed = False
        for e in plan.entries:
            if not e.exact:
                continue
            mine = engine_reach[all_sites[e.op].op.engine]
            for x, _ in e.sources:
                extra = engine_reach[x.op.engine] - mine
                if extra:
                    mine |= extra
                    changed = True
    reach = {name: engine_reach[site.op.engine] for name, site in all_sites.items()}

    def useful(name: str, engine: str) -> bool:
        return engine in reach[name]

    memo: dict = {}

    def requirement(z_site, engine, values):
        key = (z_site.op.name, engine, tuple(sorted(values.items(), key=lambda kv: kv[0])))
        if key not in memo:
            memo[key] = _requirement(ctx, entries, z_site, engine, values, counted)
        return memo[key]

    compiled: dict = {}  # IR node -> its compiled evaluator (points.sample_cover)
    # A proof of redundancy is asked again with fewer waits kept (_implied), and the
    # chains of y's ops overlap: each hop's successors are built once. The same objects
    # come back, so later lookups (the session's term cache, the requirement memo) hit
    # by identity instead of comparing equal trees. IR only: Z3 terms are still made and
    # freed per query as before (Z3 reuses a freed term's id, and ids order its search:
    # keeping the disjunct terms alive changed flash_attention_causal's Z3 work).
    chains = ChainSteps(sources)
    kept = {(e.op, e.engine) for e in plan.entries}
    if necessary is None:  # (the caller may have run it already)
        necessary = shown_necessary(program, plan.entries, ctx.options)
    pinned: set = set()
    dropped = 0
    for n, (y_name, y_entries) in enumerate(by_op.items()):
        keep_z3_small(n, ctx)
        if only is not None and y_name not in only:
            continue
        y = all_sites[y_name]
        for entry in y_entries:
            if not entry.exact or entry.closed is None or (y_name, entry.engine) in pinned \
                    or (y_name, entry.engine) in necessary:
                continue
            others = {e.engine for e in y_entries if e.engine != entry.engine and (y_name, e.engine) in kept}
            used = _implied(ctx, requirement, useful, chains, y, entry, others, compiled)
            if used is None:
                continue
            kept.discard((y_name, entry.engine))
            pinned |= {(y_name, g) for g in used}
            dropped += 1
    return [e for e in plan.entries if (e.op, e.engine) in kept], dropped


def shown_necessary(program: Program, entries, options) -> set:
    """(op, engine) waits that some small concrete valuation shows are needed: an
    instance whose requirement on the engine no other wait or in-order predecessor
    implies (happens-before vectors, computed in program order). A cheap refutation
    that spares the Z3 proof for the waits that are not redundant."""
    import itertools

    from semantics.compiled import compiler
    from semantics.sequential import UnrollLimit, unroll
    from algorithm.threshold.plan import apply_plan

    from semantics.ir import ops as program_ops

    synced = apply_plan(program, entries)
    all_ops = program_ops(program)
    names = [p.name for p in program.params]
    # The first valuations in lexicographic order, and the diagonal: never the whole
    # product, which has len(values) ** parameters members.
    values = options.necessity_values
    combos = list(itertools.islice(itertools.product(values, repeat=len(names)), options.necessity_samples))
    combos += [diagonal for v in values if (diagonal := (v,) * len(names)) not in combos]
    # And each parameter at its least value among the others at 2: with many parameters
    # the first valuations all leave the outermost loop empty (an empty inner loop is
    # what shows a wait on an earlier producer needed: matmul's pack after the K loop).
    low = [max(p.lower, min(values)) for p in program.params]
    combos += [one for k in range(min(len(names), options.necessity_samples))  # (linear in the parameters, at most)
               if (one := tuple(low[k] if n == k else max(2, program.params[n].lower) for n in range(len(names))))
               not in combos]
    if all(p.default is not None for p in program.params):
        combos.append(tuple(p.default for p in program.params))
    engines = len(program.engines)
    shown: set = set()
    compiled = compiler()  # one for every valuation: compiling took most of an unroll of a long kernel
    every = {(e.op, e.engine) for e in entries}
    for combo in combos:
        if shown >= every:
            break  # every wait is shown needed: later valuations cannot add one
        try:
            unrolled = unroll(synced, dict(zip(names, combo)), limit=max(20_000, 200 * len(all_ops)),
                              compiled=compiled)
        except (UnrollLimit, SyncproofError):
            continue
        by_local = [[i for i in s if i >= 0] for s in unrolled.streams]
        guaranteed: list = [None] * len(unrolled.instances)
        previous = [None] * engines
        for y in unrolled.instances:
            parts = []  # (engine of the wait or None, vector it guarantees)
            p = previous[y.engine]
            if p is not None:
                vec = list(guaranteed[p])
                vec[y.engine] = max(vec[y.engine], unrolled.instances[p].local + 1)
                parts.append((None, vec))
            for engine, t in y.waits:
                if t > 0 and t <= len(by_local[engine]):
                    vec = list(guaranteed[by_local[engine][t - 1]])
                    vec[engine] = max(vec[engine], t)
                    parts.append((engine, vec))
            full = [max((v[e] for _, v in parts), default=0) for e in range(engines)]
            for engine, t in y.waits:
                if t > 0 and (y.op.name, program.engines[engine]) not in shown:
                    without = max((v[engine] for g, v in parts if g != engine), default=0)
                    if without < t:
                        shown.add((y.op.name, program.engines[engine]))
            guaranteed[y.index] = full
            previous[y.engine] = y.index
    return shown


class ChainSteps:
    """The chain steps of the redundancy proofs of one plan, each built once: an
    instance's successors (the sources of its op, with the instance's condition and
    loop values substituted in; pure IR, so when they are built changes no answer)."""

    def __init__(self, sources):
        self.sources = sources
        self._following: dict = {}

    def following(self, name: str, condition, values: dict):
        """The steps from an instance of `name`, in the order of its sources; built
        on first use, as far as a caller reads (a query stops at its node limit)."""
        key = (name, condition, tuple(values.items()))
        entry = self._following.get(key)
        if entry is None:  # (runs at the first step read: a generator's body waits for it)
            entry = self._following[key] = (self.sources(name), [])
        sources, built = entry
        yield from built
        for s in sources[len(built):]:
            step = (s.site, And(condition, subst(s.condition, values)),
                    {k: subst(v, values) for k, v in s.values.items()})
            built.append(step)
            yield step


def _implied(ctx, requirement, useful, chains, y: Site, entry: PlanEntry, others: set, compiled: dict):
    """The engines of y's waits that a proof of redundancy needs, or None if unproven.
    In-order execution and the chains' own requirements alone are tried first: most
    redundant waits need none of y's other waits (one proof, not one per engine)."""
    if others and _proves(ctx, requirement, useful, chains, y, entry, set(), compiled):
        return set()
    if not _proves(ctx, requirement, useful, chains, y, entry, others, compiled):
        return None
    needed = set(others)
    for engine in sorted(others):
        fewer = needed - {engine}  # (none of them: not proved above)
        if fewer and _proves(ctx, requirement, useful, chains, y, entry, fewer, compiled):
            needed.discard(engine)
    return needed


def _chain_parts(ctx, requirement, useful, chains, y: Site, entry: PlanEntry, kept_engines: set):
    """The parts (condition, guaranteed) of the chains from y, in order (hop by hop),
    each computed when the caller reads it."""
    frontier = [(s.site, s.condition, s.values) for s in chains.sources(y.op.name, kept_engines)
                if useful(s.site.op.name, entry.engine)]
    nodes = 0
    max_hops, max_nodes = ctx.options.max_hops, ctx.options.max_chain_nodes
    for hop in range(max_hops):
        reached = []
        for z_site, condition, values in frontier:
            nodes += 1
            if nodes > max_nodes:
                break
            reached.append(nodes)
            guaranteed = requirement(z_site, entry.engine, values)
            if guaranteed is not None:
                yield condition, guaranteed
        if hop + 1 == max_hops:
            return
        following = []
        for (z_site, condition, values), seen in zip(frontier, reached):
            for step in chains.following(z_site.op.name, condition, values):
                if len(following) >= max_nodes - seen:
                    break  # the next hop never reaches these
                if useful(step[0].op.name, entry.engine):
                    following.append(step)
        frontier = following


def _proves(ctx, requirement, useful, chains, y: Site, entry: PlanEntry, kept_engines: set, compiled: dict) -> bool:
    """Whether Z3 proves y's wait on entry.engine implied by the chains from y.

    Sampling (points.sample_cover) refutes the query or picks a small cover of its parts
    for a smaller first query. It takes the first part that covers each point not yet
    covered, so the chains are followed only as far as a point needs: the cover is the
    one all the parts would give, and its query the one all of them would ask first.
    Only a wait that query leaves unproven reads the rest of the chain."""
    program = ctx.program
    z = ctx.session.z
    target = entry.closed
    parts = Parts(_chain_parts(ctx, requirement, useful, chains, y, entry, kept_engines))
    cover = sample_cover(program, y, target, parts, ctx.options, compiled)
    if cover is None:
        return False  # a concrete model of the query below: Z3 would answer sat
    built: dict = {}

    def disjunct(k: int):
        # Z3 terms only for a query that sampling did not refute, and only for the parts
        # a query holds: building the terms of every part cost many times the check.
        if k not in built:
            condition, guaranteed = parts.get(k)
            built[k] = z3.And(z(condition), z(guaranteed) >= z(target))
        return built[k]

    session = ctx.session
    params = {p.name: session.var(p.name) for p in program.params}
    y_env = {**params, **{l.var: session.var(l.var) for l in y.loops}}
    base = [*[params[p.name] >= p.lower for p in program.params], *domain(y, y_env, session.ctx)]
    # A divisor over the parameters (`% K`, `// K`) makes a query one of non-linear
    # integer division, where Z3 spends seconds per million units and minutes on the full
    # budget for an unknown (a guard `j % K != 0` in a triangular loop: 112 s): such a
    # query gets PlannerOptions.divided_rlimit.
    def budget(ks, units: int) -> int:
        divided = any(_divided_by_parameter(e) for e in (target, *(x for k in ks for x in parts.get(k))))
        return min(units, ctx.options.divided_rlimit) if divided else units

    if cover and parts.get(len(cover)) is not None:
        # A smaller query (fewer parts than the chain has); proving it proves the full
        # one (fewer disjuncts claim more).
        small = base + [z3.Not(z3.Or(z(target) <= 0, *[disjunct(k) for k in cover]))]
        if session.check_alone(small, budget(cover, ctx.options.cover_rlimit))[0] == z3.unsat:
            return True
    every = parts.all()  # (none: the query asks whether y ever runs with a positive threshold)
    query = base + [z3.Not(z3.Or(z(target) <= 0, *[disjunct(k) for k in range(len(every))]))]
    return session.check_alone(query, budget(range(len(every)), 20_000_000))[0] == z3.unsat


def _divided_by_parameter(e) -> bool:
    from semantics.ir import walk_expr

    return any(isinstance(n, BinOp) and n.op in ("%", "//") and not isinstance(n.right, Const) for n in walk_expr(e))
