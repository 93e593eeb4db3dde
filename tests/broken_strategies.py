"""Deliberately broken strategies: the search and mutation tests must catch them.

Each is a pure function Program -> Program built from the real threshold strategy
with one rule left out, so that what the search finds is exactly that omission.
"""

from __future__ import annotations

from algorithm import threshold as threshold_mod
from algorithm.registry import get_strategy
from semantics.ir import Program


def ignore_war(program: Program) -> Program:
    """The threshold strategy, blind to write-after-read dependences: a later write
    never waits for an earlier read of the same element on another engine."""
    original = threshold_mod._Context.producers

    def producers(self, y, engine):
        return [(x, (ax, ay)) for x, (ax, ay) in original(self, y, engine)
                if not (any(ax is a for a in x.op.reads) and any(ay is a for a in y.op.writes)
                        and not any(ax is a for a in x.op.writes))]

    threshold_mod._Context.producers = producers
    try:
        return get_strategy("threshold")(program).program
    finally:
        threshold_mod._Context.producers = original
