"""Deliberately broken happens-before engines: the differential test must catch them.

Each is the real engine (verify/engines/happens_before.py) with one rule of its
construction replaced, through the rule parameters of `decide`."""

from __future__ import annotations

from semantics.sequential import Unrolled
from verify.engines.happens_before import NEVER, Layout, decide


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


BROKEN = {"ignoring eager barriers": ignoring_eager_barriers,
          "counting thresholds from the program start": counting_from_program_start}
