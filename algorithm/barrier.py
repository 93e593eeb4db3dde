"""`barrier`: the baseline of the paper and of SNAX's insert-sync-barrier pass.

Rule. Every loop whose body holds a possible cross-engine dependence (two ops on
different engines touching one buffer, at least one writing) gets an all-engine
barrier at the start of each iteration and one right after the loop, and an `if`
holding such a loop gets one right after it (its barriers run on one path only, and
the next region must start the same way on every path). Counters reset
at each barrier, so every region between barriers is straight-line code (up to loops
without cross-engine dependences) and each wait's threshold counts only the
producer engine's instances since the region's start:

    T_barrier(y, F) = T_min(y, F) - (F-instances before the region's start)

and waits whose producer lies before the region's start (T <= 0) disappear: the
barrier already orders them. Input waits and barriers are replaced. Sound, not
minimal: the barriers stall every engine at every iteration boundary.

Never refused: an op whose wait cannot be counted in closed form (not even the
conservative "every earlier instance") gets a *local barrier* right before it (a
loop or `if` holding one is treated as a barrier loop), and the plan is redone
until every wait is counted; an op right after a barrier needs no wait. The
threshold strategy falls back to this program when one of its own waits cannot be
counted (algorithm/registry.py, reported as `fallback`), as PTOAS falls back to a full
pipe barrier.

Source: "all-engine barriers at iteration boundaries, resetting synchronization
state so each loop body can be treated as straight-line" (the paper's baseline);
snax-mlir `insert-sync-barrier` (a `snax.cluster_sync_op` before the first
cross-core user, and before the loop's `scf.yield`).
"""

from __future__ import annotations

import attrs

from semantics.ir import Barrier, BinOp, For, If, Op, Program, Var, walk_stmts
from semantics.context import common_depth
from semantics.symbolic import conflicting_pairs
from semantics.simplify import simplify
from algorithm.threshold import (
    Plan, PlanEntry, Context, body_at, closed_iters, count_before_y, iters_facts, site_facts, tidy_threshold,
    keep_z3_small, apply_plan, plan_thresholds, Unsupported, count_upto, full_count,
)


def needs_barriers(loop: For, local: frozenset = frozenset()) -> bool:
    """Does the loop's body hold a possible cross-engine dependence (or a local barrier)?"""
    body_ops = [s for s in walk_stmts(loop.body) if isinstance(s, Op)]
    return any(op.name in local for op in body_ops) or any(
        x.engine != y.engine and conflicting_pairs(x, y)
        for n, x in enumerate(body_ops) for y in body_ops[n + 1:]
    )


def _guards_barriers(stmt, local: frozenset = frozenset()) -> bool:
    """An `if` with a barrier loop (or a local barrier) in a branch: the barriers run on
    one path only, so a barrier after the `if` starts the next region the same way on
    every path."""
    return isinstance(stmt, If) and any(
        isinstance(s, For) and needs_barriers(s, local) or isinstance(s, Op) and s.name in local
        for s in walk_stmts(stmt.then + stmt.else_))


def _insert(body, local: frozenset = frozenset()) -> tuple:
    out = []
    for stmt in body:
        match stmt:
            case For():
                inner = _insert(stmt.body, local)
                if needs_barriers(stmt, local):
                    start = () if inner and isinstance(inner[0], Barrier) else (Barrier(),)
                    out.append(attrs.evolve(stmt, body=start + inner))
                    out.append(Barrier())
                else:
                    out.append(attrs.evolve(stmt, body=inner))
            case If():
                out.append(attrs.evolve(stmt, then=_insert(stmt.then, local), else_=_insert(stmt.else_, local)))
                if _guards_barriers(stmt, local):
                    out.append(Barrier())
            case Op():
                if stmt.name in local and not (out and isinstance(out[-1], Barrier)):
                    out.append(Barrier())
                out.append(stmt)
            case Barrier():
                pass  # input barriers are replaced
    return tuple(out)


def _region_start(program: Program, y, local: frozenset = frozenset()) -> tuple[int, int]:
    """(trail depth k, index b): y's region starts before statement b of the body at
    depth k of y's trail (in the program without barriers)."""
    if y.op.name in local:
        return len(y.trail) - 1, y.trail[-1].index
    for k in range(len(y.trail) - 1, -1, -1):
        body = body_at(program, y.trail, k)
        limit = y.trail[k].index
        boundaries = [n + 1 for n in range(limit)
                      if isinstance(body[n], For) and needs_barriers(body[n], local)
                      or _guards_barriers(body[n], local)]
        boundaries += [n for n in range(limit + 1) if isinstance(body[n], Op) and body[n].name in local]
        if k > 0 and isinstance(y.trail[k - 1].stmt, For) and needs_barriers(y.trail[k - 1].stmt, local):
            boundaries.append(0)
        if boundaries:
            return k, max(boundaries)
    return 0, 0


def _before_region(x, candidate, y, k: int, b: int) -> bool:
    """The candidate x-instance (of an exact plan entry) precedes the barrier that
    starts y's region (before statement b of the body at depth k of y's trail): it is
    in an earlier iteration of a loop around that body, or leaves y's trail above it,
    or is in that body before the barrier. When every candidate of a wait does, the
    wait always holds after the barrier, even where its count is too intricate for
    tidy_threshold to see that it is <= 0 (kernels/suite/flash_attention_causal.sync's
    `fexp`)."""
    depth = candidate.depth  # the candidate shares y's iterations above it (earlier at it, if a loop)
    return depth < k or depth == k == common_depth(x, y) and x.trail[k].index < b


@attrs.define
class BarrierPlan(Plan):
    local: frozenset = frozenset()  # ops that get a local barrier right before them


MAX_LOCAL_ROUNDS = 64


def plan_barrier(program: Program, exact: Plan | None = None, options=None) -> BarrierPlan:
    """The barrier plan; `exact` is the threshold plan if the caller has it. Ops whose
    waits cannot be counted get local barriers, until every wait is counted. `options`:
    the planner's (algorithm/threshold/options.py)."""
    exact = exact or plan_thresholds(program, options=options)
    local = frozenset(e.op for e in exact.entries if e.threshold is None)
    for _ in range(MAX_LOCAL_ROUNDS):
        plan, failed = _plan_regions(program, exact, local, options)
        if not failed:
            return plan
        local |= failed
    raise AssertionError("local barriers did not converge")  # each round adds an op: bounded by the op count


def _plan_regions(program: Program, exact: Plan, local: frozenset, options=None) -> tuple[BarrierPlan, frozenset]:
    ctx = Context(program, session=exact.session, options=options)
    all_sites = ctx.sites
    plan = BarrierPlan(dependence_pairs=exact.dependence_pairs, local=local, session=exact.session)
    failed = set()
    for n, entry in enumerate(exact.entries):
        keep_z3_small(n, ctx)
        y = all_sites[entry.op]
        k, b = _region_start(program, y, local)
        if y.op.name in local:
            continue  # right after its barrier: every earlier instance has completed
        if entry.threshold is None:
            failed.add(y.op.name)
            continue
        if k == 0 and b == 0:
            plan.entries.append(entry)
            continue
        if entry.exact and entry.sources and all(_before_region(x, c, y, k, b) for x, c in entry.sources):
            continue  # every instance it waits for completed before the region's barrier
        facts = site_facts(ctx, y)
        targets = ctx.by_engine[entry.engine]
        names = ctx.names(targets)
        env = {p.name: Var(p.name) for p in program.params}
        for step in y.trail[:k]:
            if isinstance(step.stmt, For):
                env[step.stmt.var] = Var(step.stmt.var)
        body = body_at(program, y.trail, k)
        y_values = {l.var: Var(l.var) for l in y.loops}
        try:
            before_body = BinOp("-", count_before_y(ctx, y, targets, facts),
                                count_upto(body, env, y.trail[k:], y_values, names, facts, ctx.prefix))
            start = BinOp("+", before_body, full_count(body[:b], env, names, facts))
        except Unsupported:
            failed.add(y.op.name)  # the region's start cannot be counted: a barrier right before y
            continue
        threshold = closed_iters(ctx, y, simplify(BinOp("-", entry.threshold, start)))
        threshold = tidy_threshold(threshold, iters_facts(ctx, y, facts, threshold))
        plan.entries.append(PlanEntry(entry.op, entry.engine, threshold, entry.exact, entry.note))
    return plan, frozenset(failed)


def barrier(program: Program) -> Program:
    """The barrier baseline: barriers at iteration boundaries, static thresholds in between."""
    return apply_barrier_plan(program, plan_barrier(program))


def apply_barrier_plan(program: Program, plan: BarrierPlan) -> Program:
    """The program with the plan's static waits and the barriers (a plan from plan_barrier)."""
    synced = apply_plan(program, [e for e in plan.entries if not _always_holds(e.threshold)])
    return attrs.evolve(synced, body=_insert(synced.body, plan.local))


def _always_holds(threshold) -> bool:
    from semantics.ir import Const

    return isinstance(threshold, Const) and threshold.value <= 0
