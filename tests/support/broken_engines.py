"""Deliberately broken happens-before engines: the differential test must catch them.

Each is the real engine (verify/engines/happens_before.py) with one rule of its
construction replaced, through the rule parameters of `decide`."""

from __future__ import annotations

from semantics.sequential import Unrolled, requirements
from verify.engines.happens_before import NEVER, Layout, decide, wait_sources


def no_eager_barriers(frontier, lay: Layout, unrolled: Unrolled):
    """Closure that never passes a barrier: the least state holding some events is
    taken to be their down-set, even where every engine stands at a barrier."""
    return frontier


def sources_from_program_start(unrolled: Unrolled, lay: Layout):
    """A wait `F >= t` made to wait for F's t-th completion since the program start,
    not since the last barrier."""
    out = []
    for y in unrolled.instances:
        out.append(tuple(
            (lay.local_instance[f][t - 1] if t <= len(lay.local_instance[f]) else NEVER)
            for f, t in y.waits if t > 0))
    return tuple(out)


def ignoring_eager_barriers(unrolled, options=None, deadline=None, on_progress=None):
    return decide(unrolled, close=no_eager_barriers)


def counting_from_program_start(unrolled, options=None, deadline=None, on_progress=None):
    return decide(unrolled, sources_of=sources_from_program_start)


def sources_ignoring_increments(unrolled: Unrolled, lay: Layout):
    """DMA queues: a wait `Q >= t` made to wait for Q's t-th completion, as if every
    counter stepped by one."""
    import attrs

    return wait_sources(unrolled, attrs.evolve(lay, increment=(1,) * lay.engines))


def sources_without_triggers(unrolled: Unrolled, lay: Layout):
    """DMA queues: a transfer no longer waits for its trigger to complete."""
    return tuple(tuple(x for x in sources if x != y.trigger or y.trigger < 0)
                 for y, sources in zip(unrolled.instances, wait_sources(unrolled, lay)))


def ignoring_increments(unrolled, options=None, deadline=None, on_progress=None):
    return decide(unrolled, sources_of=sources_ignoring_increments)


def ignoring_triggers(unrolled, options=None, deadline=None, on_progress=None):
    return decide(unrolled, sources_of=sources_without_triggers)


def unswapped_needs(unrolled, options=None, deadline=None, on_progress=None):
    """DMA queues: the reference's T_min read off `requirements` unswapped (the trigger
    holds for nothing, the transfer for its producers)."""
    return decide(unrolled, needs_of=requirements)


BROKEN = {"ignoring eager barriers": ignoring_eager_barriers,
          "counting thresholds from the program start": counting_from_program_start}
# Broken only in their DMA-queue rules: the differential test on queue programs must catch them.
BROKEN_QUEUES = {"counting every counter by one": ignoring_increments,
                 "a transfer not waiting for its trigger": ignoring_triggers,
                 "the reference's requirements not moved to the trigger": unswapped_needs}
