"""The threshold strategy as a pipeline of named stages over one options object.

Every stage is a function `(Program, PlannerOptions) -> SyncResult | None`: a result
when it plans the program, None when the program is outside what it plans. The stages
are tried in the order the options name them (options.py):

- `closed`: a flat program (one loop of ops, linear-plus-periodic indices) planned by
  arithmetic, checked by a concrete run, with no solver (closed.py, concrete.py);
- `by statement`: a program of repeated top-level statement shapes, each shape planned
  once (by the nest stage where it takes the slice, else the general one) and the waits
  that cross statements composed (compose.py);
- `nest`: a program of loop nests (lower bounds over the parameters, upper bounds affine in the
  parameters and enclosing indices, `if` guards on one loop index or the parameters)
  planned by arithmetic (nest.py); the waits a concrete run does not show needed go to
  the general stage's redundancy proofs;
- `general`: every program: the rule of plan.py, with Z3 deciding the case analyses the
  candidates need, then irredundancy (irredundant.py). Where a wait cannot be counted
  even conservatively, the `barrier fallback` wraps it: the program takes the barrier
  layout, with a local barrier before each such op (algorithm/barrier.py).

DMA queues are planned on the program's transfer view first (algorithm/queues.py).
"""

from __future__ import annotations

from typing import Callable

import attrs

from semantics.errors import Unsupported
from semantics.ir import Program
from algorithm.threshold.options import PlannerOptions
from algorithm.threshold.plan import PlanEntry, apply_plan


def closed_stage(program: Program, options: PlannerOptions, stats):
    from algorithm.threshold.closed import sync_closed

    closed = sync_closed(program, options.conflicts, options.closed_instances, options.count_registers)
    if closed is None:
        return None
    entries, pairs, dropped = closed
    return _result(apply_plan(program, entries), stats, dependence_pairs=pairs, dropped_redundant=dropped,
                   conservative=0, notes=())


def nest_stage(program: Program, options: PlannerOptions, stats):
    from algorithm.threshold.nest import sync_nest

    planned = sync_nest(program, options)
    if planned is None:
        return None
    entries, pairs, dropped = planned
    return _result(apply_plan(program, entries), stats, dependence_pairs=pairs, dropped_redundant=dropped,
                   conservative=0, notes=())


def statement_stage(program: Program, options: PlannerOptions, stats):
    from algorithm.threshold.compose import plan_by_statement

    composed = plan_by_statement(program, options.conflicts, options)
    if composed is None:
        return None
    synced = apply_plan(program, [PlanEntry(op, engine, t, True) for op, engine, t in composed.entries])
    return _result(synced, stats, dependence_pairs=composed.dependence_pairs, dropped_redundant=composed.dropped,
                   conservative=0, notes=(), slices=composed.slices, slice_shapes=composed.shapes)


def general_stage(program: Program, options: PlannerOptions, stats):
    from algorithm.threshold import irredundant, plan_thresholds  # (looked up on the package: tests spy on it)

    plan = plan_thresholds(program, options.conflicts, options)
    uncounted = [e for e in plan.entries if e.threshold is None]
    if uncounted:
        if not options.fallback:
            raise Uncounted(frozenset(e.op for e in uncounted))
        return barrier_fallback(program, plan, uncounted, options, stats)
    kept, dropped = irredundant(program, plan, options.conflicts, options=options)
    return _result(apply_plan(program, [with_registers(e) for e in kept]), stats, dependence_pairs=plan.dependence_pairs,
                   dropped_redundant=dropped, conservative=sum(1 for e in kept if not e.exact),
                   notes=[f"{e.op} waits on {e.engine} conservatively: {e.note}" for e in kept if not e.exact])


def with_registers(entry: PlanEntry) -> PlanEntry:
    """The entry with its threshold against `count(F)` where the plan found that cheaper
    (an output without barriers: the register and the semaphore count from the start)."""
    return entry if entry.counted is None else attrs.evolve(entry, threshold=entry.counted)


def barrier_fallback(program: Program, plan, uncounted, options: PlannerOptions, stats):
    """Some wait is neither exact nor countable conservatively: the barrier layout, with
    a local barrier before each op whose wait cannot be counted. Sound, not minimal;
    reported, never refused."""
    from algorithm.barrier import barrier_layout

    layout = barrier_layout(program, options, frozenset(e.op for e in uncounted), plan.dependence_pairs)
    notes = [f"{e.op} waits on {e.engine}: {e.note}" for e in uncounted]
    notes.append(f"fell back to the barrier layout with local barriers before {', '.join(sorted(layout.local))}")
    return _result(layout.program, stats, dependence_pairs=layout.dependence_pairs,
                   dropped_redundant=layout.dropped_redundant, conservative=layout.conservative,
                   fallback="barrier", local_barriers=len(layout.local), notes=notes + list(layout.notes))


class Uncounted(Unsupported):
    """The general stage, told not to fall back (`PlannerOptions.fallback`), met waits
    it cannot count even conservatively: the ops that have them."""

    def __init__(self, ops: frozenset):
        super().__init__(f"waits that cannot be counted: {', '.join(sorted(ops))}")
        self.ops = ops


STAGES: dict[str, Callable] = {"closed": closed_stage, "by statement": statement_stage, "nest": nest_stage,
                               "general": general_stage}

# Cancellation and progress: `plan` calls `checkpoint[0](where)` before each stage (and
# plan.py before each op of the general stage, algorithm/barrier.py before each region of
# its layout; `where` names it). The command line sets it (verify/cli/limits.py) to report the stage and to stop a plan that
# has run past `--timeout` by raising semantics.errors.LimitReached, which `plan` lets through.
checkpoint: list[Callable[[str], None]] = [lambda stage: None]


def plan(program: Program, options: PlannerOptions, stats) -> object:
    """The first stage's result that plans `program`, its dead statements taken out
    first and put back without waits (live.py). `stats(program, **fields)` makes the
    strategy's statistics (the registry's SyncStats)."""
    from algorithm.threshold.live import live_program, restored

    live = live_program(program)
    if live is None:
        return _first_stage(program, options, stats)
    synced, fields = _first_stage(live.program, options, lambda synced, **fields: (synced, fields))
    return stats(restored(program, live, synced), **fields)


def _first_stage(program: Program, options: PlannerOptions, stats) -> object:
    for name in options.stages:
        checkpoint[0](f"threshold stage '{name}'")
        result = STAGES[name](program, options, stats)
        if result is not None:
            return result
    raise AssertionError("the general stage plans every program")


def _result(synced: Program, stats, **fields):
    fields = {"fallback": None, "local_barriers": 0, **fields}
    return stats(synced, **fields)



