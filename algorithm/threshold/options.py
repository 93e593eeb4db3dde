"""The threshold planner's one options object."""

from __future__ import annotations

from typing import Callable

import attrs

from semantics.symbolic import conflicting_pairs

STAGES = ("closed", "by statement", "general")


@attrs.frozen
class PlannerOptions:
    """What the planner's stages (algorithm/threshold/pipeline.py) read.

    - `conflicts`: the dependence relation's access-pair test; tests pass a weaker one to
      build deliberately broken strategies that the checkers must catch.
    - `stages`: the stages tried, in order, of "closed" (flat programs by arithmetic),
      "by statement" (repeated statement shapes planned once) and "general" (every
      program; falls back to the barrier layout where a wait cannot be counted).
    - `renew_after_ops`: the general planner's solver session starts a fresh Z3 context
      after this many ops: a solver push costs more as a context's term table grows, and
      the table never shrinks, so one context for a long kernel plans it in quadratic time.
    - `max_hops`, `max_chain_nodes`: how far a redundancy proof follows chains of
      instances, and how many it visits.
    """

    conflicts: Callable = conflicting_pairs
    stages: tuple[str, ...] = attrs.field(default=STAGES, converter=tuple)
    renew_after_ops: int = 500
    max_hops: int = 3
    max_chain_nodes: int = 150

    @stages.validator
    def _known(self, _, value):
        unknown = [s for s in value if s not in STAGES]
        if unknown or "general" not in value:
            raise ValueError(f"stages must name some of {STAGES} and end with 'general': {value}")
