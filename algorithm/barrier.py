"""`barrier`: the baseline of the paper and of SNAX's insert-sync-barrier pass.

Rule. Every loop whose body holds a possible cross-engine dependence (two ops on
different engines touching one buffer, at least one writing) gets an all-engine
barrier at the start of each iteration and one right after the loop, and an `if`
holding such a loop gets one right after it (its barriers run on one path only, and
the next region must start the same way on every path). Counters reset at each
barrier, so the code between two barriers, a *region*, is straight-line code (up to
loops and `if`s without barriers inside) that always starts with every earlier
instance completed and every counter at 0. Each wait's threshold counts only the
producer engine's instances since its region's start:

    T_barrier(y, F) = T_min(y, F) - (F-instances before the region's start)

and a wait whose producers all lie before the region's start disappears: the barrier
already orders them. Input waits and barriers are replaced. Sound, not minimal: the
barriers stall every engine at every iteration boundary.

Planning. A region is a program of its own (algorithm/regions.py): its statements (an
`if` whose branches hold barriers contributes the parts of its branches before their
first barrier), with the variables of the barrier loops around it as parameters and
its loops' ranges and branches' conditions as facts. The region's thresholds are those
of that program, minimal and irredundant, planned by the threshold strategy's stages
(algorithm/threshold/pipeline.py; the closed stage takes most regions, by arithmetic),
with two exclusions: no threshold reads `count(F)`, which counts from the kernel's
start, not the region's, and none of a region inside a barrier loop reads `iters(w)` of
a nested loop, which keeps counting across the region's runs. Regions equal up to names
are planned once, so a long program costs its distinct region shapes plus a renaming
per region.

Never refused: an op whose wait cannot be counted in such a region gets a *local
barrier* right before it (a loop or `if` holding one is treated as a barrier loop),
and the layout is redone until every wait is counted; an op right after a barrier needs
no wait. The threshold strategy falls back to this layout when one of its own waits
cannot be counted (algorithm/threshold/pipeline.py, reported as `fallback`), as PTOAS
falls back to a full pipe barrier.

Source: "all-engine barriers at iteration boundaries, resetting synchronization
state so each loop body can be treated as straight-line" (the paper's baseline);
snax-mlir `insert-sync-barrier` (a `snax.cluster_sync_op` before the first
cross-core user, and before the loop's `scf.yield`).
"""

from __future__ import annotations

import attrs

from semantics.ir import Barrier, For, If, Op, Program, map_ops, ops as program_ops, walk_stmts
from semantics.symbolic import conflicting_pairs
from algorithm import regions


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
    """`body` without its waits' barriers, with the layout's barriers."""
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


# ------------------------------------------------------------------ the layout


@attrs.frozen
class BarrierLayout:
    program: Program  # the input with the layout's barriers and waits
    dependence_pairs: int
    local: frozenset  # ops with a local barrier right before them
    dropped_redundant: int  # waits the regions' plans dropped as implied by others
    conservative: int  # waits sound but not exact within their region
    notes: tuple[str, ...]


def dependence_pairs(program: Program, conflicts=conflicting_pairs) -> int:
    """(producer op, consumer op) pairs on different engines with a possible conflict
    (the threshold planner's statistic)."""
    ops = [s for s in walk_stmts(program.body) if isinstance(s, Op)]
    by_buffer: dict = {}
    for op in ops:
        for buffer in sorted({a.buffer for a in op.reads + op.writes}):
            by_buffer.setdefault(buffer, []).append(op)
    total = 0
    for y in ops:
        xs = {x.name: x for buffer in {a.buffer for a in y.reads + y.writes} for x in by_buffer[buffer]
              if x.engine != y.engine}
        total += sum(1 for x in xs.values() if conflicts(x, y))
    return total


def barrier_layout(program: Program, options=None, local: frozenset = frozenset(),
                   pairs: int | None = None) -> BarrierLayout:
    """The barrier layout of `program` (without DMA queues: the strategy plans their
    transfer view), with local barriers before the ops in `local` and before every op
    whose wait cannot be counted in its region. `options`: the threshold planner's
    (algorithm/threshold/options.py); `pairs`: the dependence pairs, when the caller
    has counted them."""
    from algorithm.threshold.options import PlannerOptions
    from algorithm.threshold.pipeline import checkpoint

    assert not program.queues, "the barrier layout plans a transfer view"
    options = attrs.evolve(options or PlannerOptions(), count_registers=False, fallback=False)
    local, nested = frozenset(local), set()
    memo: dict = {}  # region program key -> its plan: a region shape is planned once
    for _ in range(len(program_ops(program)) + 1):  # each round adds an op to `local`
        laid = _insert(program.body, local)
        waits, failed, dropped, conservative, notes = {}, set(), 0, 0, []
        parts = regions.split_regions(laid)
        for n, region in enumerate(parts):
            checkpoint[0](f"barrier region {n + 1}/{len(parts)}")
            sub = regions.region_program(program, region)
            found = memo.get(sub.key)
            if found is None:
                found = memo[sub.key] = regions.plan_region(sub, options)
            found = found.named(sub)
            failed |= found.uncounted | found.nested
            nested |= found.nested
            waits.update(found.waits)
            dropped, conservative = dropped + found.dropped_redundant, conservative + found.conservative
            notes += found.notes
        if failed - local:
            local |= failed
            continue
        assert not failed, "an op right after its local barrier waits for nothing"
        out = attrs.evolve(program, body=_with_waits(laid, waits))
        notes += [f"a local barrier before {name}: its count in its region reads iters() of a nested loop, which "
                  "counts across the region's runs" for name in sorted(nested)]
        return BarrierLayout(out, dependence_pairs(program, options.conflicts) if pairs is None else pairs,
                             local, dropped, conservative, tuple(notes))
    raise AssertionError("local barriers did not converge")


def _with_waits(body: tuple, waits: dict) -> tuple:
    return map_ops(body, lambda op: attrs.evolve(op, waits=waits.get(op.name, ())))


def barrier(program: Program) -> Program:
    """The barrier baseline: barriers at iteration boundaries, region-local thresholds."""
    return barrier_layout(program).program
