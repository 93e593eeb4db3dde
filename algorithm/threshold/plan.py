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

from semantics.context import Site, common_depth, static_order
from semantics.ir import Compare, Const, For, If, IfExpr, Program, Wait, as_read, map_ops
from semantics.symbolic import conflicting_pairs
# candidates_of, prove_candidates and site_facts are looked up here at call time (tests
# and bench/sync_bench.py replace them on this module); the rest is re-exported for the
# package's other modules.
from algorithm.threshold.candidates import Candidate, candidates_of, conjoin, prove_candidates  # noqa: F401
from algorithm.threshold.context import (  # noqa: F401
    Context, body_at, iters_facts, site_facts,
)
from algorithm.threshold.cases import piecewise_cases
from algorithm.threshold.counting import Unsupported
from algorithm.threshold.thresholds import (  # noqa: F401
    candidate_count, closed_iters, count_before_y, counted_form, every_earlier_instance_conflicts,
    later_producers_first, max_of, never_before, operators, tidied, tidy_threshold,
)
from semantics.printer import print_expr
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
    # The same threshold against the engine-count register `count(F)` where that is less
    # arithmetic (thresholds.counted_form); used only by outputs without barriers, where
    # the register and the semaphore count from the same start.
    counted: object = None


@attrs.define
class Plan:
    entries: list = attrs.Factory(list)
    dependence_pairs: int = 0  # static (producer op, consumer op) pairs with a possible dependence
    # The solver session the plan was made in; the passes over the plan (irredundancy,
    # barrier regions) continue in it, so that their queries meet the plan's memo.
    session: object = attrs.field(default=None, eq=False, repr=False)


def keep_z3_small(n: int, ctx: "Context") -> None:
    """Before the n-th op of a pass over a program: a fresh Z3 context in the pass's
    session every `renew_after_ops` ops (the planner's options), and the context's own Z3 facts
    rebuilt in it, so that long kernels plan in linear time (docs/planner.md)."""
    if n and n % ctx.options.renew_after_ops == 0:
        ctx.session.renew()
        ctx.prefix.refresh_facts()
        ctx.before.clear()


def plan_thresholds(program: Program, conflicts=conflicting_pairs, options=None, only=None) -> Plan:
    """The threshold of every (op, producer engine) pair with a possible dependence.
    `conflicts(x_op, y_op)` gives the conflicting access pairs (semantics.symbolic's
    `conflicting_pairs`; tests pass a weaker one to build deliberately broken strategies).
    `only`: the names of the ops whose waits are wanted (None: every op's).
    The plan has its own solver session (a Z3 context of its own), so that it does not
    depend on what ran before in the process (Z3's effort on a query depends on the
    ids of earlier terms)."""
    from algorithm.threshold.pipeline import checkpoint  # (here: pipeline imports this module)

    ctx = Context(program, conflicts, options=options)
    plan = Plan(session=ctx.session)
    for n, y in enumerate(ctx.sites.values()):
        if only is not None and y.op.name not in only:
            continue  # (before the progress line: an op not planned is not reported)
        checkpoint[0](f"threshold stage 'general', op {y.op.name} ({n + 1}/{len(ctx.sites)})")
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
                    candidates = candidates_of(program, x, y, pair, ctx.options.max_options)
                    dominant = dominates(x, y, candidates)
                    # A dominating candidate is exact by construction; the later ones are
                    # only proved to be conflicting earlier instances (irredundancy uses them).
                    why = prove_candidates(ctx.session, program, x, y, pair, candidates, soundness_only=dominant)
                    analyses = [(candidates, dominant)]
                    if why:
                        cases = second_chance(ctx.session, program, x, y, pair, ctx.options)
                        if cases is None:
                            raise Unsupported(f"{x.op.name} -> {y.op.name}: {why}")
                        analyses = [(found, False) for found in cases]
                    for candidates, dominant in analyses:
                        part, closed_part = Const(0), Const(0)
                        for n, candidate in enumerate(reversed(candidates)):
                            if dominant and n < len(candidates) - 1:
                                sources.append((x, candidate))  # masked by the first: never counted
                                continue
                            count, closed = candidate_count(ctx, x, y, candidate, targets, facts)
                            part = IfExpr(candidate.condition, count, part)
                            closed_part = None if closed is None or closed_part is None else IfExpr(candidate.condition, closed, closed_part)
                            sources.append((x, candidate))
                        parts.append((x.trail[0].index, part))
                        closed_parts.append((x.trail[0].index, closed_part))
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
                threshold = plain = max_of(part for _, part in parts)
                exact = True
            # Where every earlier F-instance conflicts, count(F) is the exact threshold
            # (counted_form) unless the closed form tidies to a bare name: a tenth of
            # the tidying budget settles that.
            register = exact and ctx.options.count_registers and every_earlier_instance_conflicts(ctx, y, targets)
            threshold = tidied(ctx, y, facts, threshold, ctx.options.tidy_rlimit // 10 if register else None)
            if exact and "max(" in print_expr(threshold) and (chain := later_producers_first(parts)) != plain:
                # A max Z3 did not resolve: the chain (later_producers_first) has none, and
                # is kept when it tidies to less run-time arithmetic. Not tidied always:
                # its tidy can reach the wall-clock backstop (the nested-`if` reproducer),
                # and where the max form resolves the chain is no better.
                chain = tidied(ctx, y, facts, chain)
                if operators(chain) < operators(threshold):
                    threshold = chain
            if isinstance(threshold, Const) and threshold.value <= 0:
                continue
            closed = None
            if exact and all(c is not None for _, c in closed_parts):
                closed = simplify(later_producers_first(closed_parts))
            counted = counted_form(ctx, y, engine, targets, facts, threshold) if ctx.options.count_registers else None
            plan.entries.append(PlanEntry(y.op.name, engine, threshold, exact, "; ".join(notes) or None,
                                          tuple(sources) if exact else (), closed, counted))
    return plan


TRUE = Compare("==", Const(0), Const(0))  # candidates.conjoin's empty conjunction


def second_chance(session, program: Program, x: Site, y: Site, pair, options) -> list | None:
    """The second case analysis (algorithm/threshold/cases.py) of a pair the first one
    missed: the producer's access split into the cases of its piecewise indices, each
    analysed plainly and then with the bounds projected from below each free index.
    The candidate lists of every case, each proved exact by Z3; None if some case fails
    (the wait then stays conservative, as before)."""
    ax, ay = pair
    split = piecewise_cases(ax, options.max_cases) or [((), ax)]
    out = []
    for where, access in split:
        case_pair = (access, ay)
        for deep in ((False, True) if where else (True,)):
            try:
                candidates = candidates_of(program, x, y, case_pair, options.max_options, where=where, project=deep)
            except Unsupported:
                continue
            if not prove_candidates(session, program, x, y, case_pair, candidates, where=where):
                out.append(candidates)
                break
        else:
            return None
    return out


def dominates(x: Site, y: Site, candidates) -> bool:
    """Dominance: x sits directly in a body on y's trail (no loop or guard of
    its own), before y, and its first candidate, x in y's own iteration, conflicts
    unconditionally (the index equations simplified to true). Then that instance is
    the last conflicting x-instance before y: any later x-instance is in a later
    iteration of a loop that encloses y, so after y. No proof is needed for it."""
    depth = common_depth(x, y)
    return (static_order(x, y) == "before" and depth == len(x.trail) - 1 and bool(candidates)
            and candidates[0].depth == depth and candidates[0].condition == TRUE)


def apply_plan(program: Program, entries) -> Program:
    """The program with each op's waits replaced by the plan's and no barriers."""
    waits: dict[str, list[Wait]] = {}
    for entry in entries:
        threshold = entry.threshold if entry.threshold is None else as_read(entry.threshold)
        waits.setdefault(entry.op, []).append(Wait(entry.engine, threshold))
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