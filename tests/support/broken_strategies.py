"""Deliberately broken strategies: the search and mutation tests must catch them.

Each is a pure function Program -> Program built from the real threshold strategy
with one rule left out, so that what the search finds is exactly that omission. They
use the strategy's `conflicts` hook (algorithm.registry.sync_threshold), not patches.
"""

from __future__ import annotations

from algorithm.registry import sync_threshold
from semantics.ir import Op, Program
from semantics.symbolic import conflicting_pairs


def _war_blind(x: Op, y: Op):
    """Conflicting access pairs, without those where x only reads and y writes."""
    return [(ax, ay) for ax, ay in conflicting_pairs(x, y)
            if not (any(ax is a for a in x.reads) and any(ay is a for a in y.writes)
                    and not any(ax is a for a in x.writes))]


def ignore_war(program: Program) -> Program:
    """The threshold strategy, blind to write-after-read dependences: a later write
    never waits for an earlier read of the same element on another engine."""
    return sync_threshold(program, conflicts=_war_blind).program


def forget_increment(program: Program) -> Program:
    """The threshold strategy on DMA queues, forgetting the counters' increments: the
    thresholds count completions, as if every semaphore stepped by one."""
    import attrs

    from algorithm.queues import restore, transfer_view

    ones = attrs.evolve(program, queues=tuple(attrs.evolve(q, increment=1) for q in program.queues))
    synced = restore(ones, sync_threshold(transfer_view(ones)).program)
    return attrs.evolve(synced, queues=program.queues)
