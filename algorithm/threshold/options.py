"""The threshold planner's one options object."""

from __future__ import annotations

from typing import Callable

import attrs

from semantics.symbolic import conflicting_pairs

STAGES = ("closed", "by statement", "nest", "general")


@attrs.frozen
class PlannerOptions:
    """What the planner's stages (algorithm/threshold/pipeline.py) read.

    - `conflicts`: the dependence relation's access-pair test; tests pass a weaker one to
      build deliberately broken strategies that the checkers must catch.
    - `stages`: the stages tried, in order, of "closed" (flat programs by arithmetic),
      "by statement" (repeated statement shapes planned once, each slice by "nest" when
      that stage is named and takes it), "nest" (loop nests by arithmetic) and "general" (every
      program; falls back to the barrier layout where a wait cannot be counted).
    - `renew_after_ops`: the general planner's solver session starts a fresh Z3 context
      after this many ops: a solver push costs more as a context's term table grows, and
      the table never shrinks, so one context for a long kernel plans it in quadratic time.
    - `max_hops`, `max_chain_nodes`: how far a redundancy proof follows chains of
      instances, and how many it visits.
    - `necessity_values`, `necessity_samples`: the parameter values, and how many
      valuations of them (the first in lexicographic order, plus the diagonal and each
      parameter at its least value among the others at 2), on which a concrete run
      shows waits necessary before any redundancy proof is tried.
    - `cover_rlimit`: the Z3 budget of a redundancy proof's smaller first query (the
      parts that cover the sampled points); an unknown falls through to the full query.
    - `divided_rlimit`: the Z3 budget of each redundancy query whose terms divide by a
      parameter (`% K`, `// K`): non-linear integer division, where Z3 spends seconds per
      million units and rarely proves what the sampled cover does not.
    - `closed_instances`: the most instances the closed stage's concrete run may make
      (past it the program is left to the later stages).
    - `max_options`: the most latest-index options a free loop index fans out to, and
      the longest constant loop or residue period tried value by value, in candidates.
    - `max_cases`: the most cases a piecewise index is split into (the second analysis).
    - `cover_valuations`, `cover_grid`, `cover_points`: the sampled cover of a redundancy
      proof: how many parameter valuations (the defaults, then a grid of offsets below
      `cover_grid` from the lower bounds), and how many instances of y it visits in each
      of its two sets of valuations (that grid, then every mix of low, default and large
      parameter values: points.py).
    - `facts_rlimit`: the Z3 budget of each query about the facts at an op.
    - `candidate_rlimit`: the Z3 budget of each query of the general stage's exactness
      check (after three short seeded tries); an unknown there is the answer.
    - `tidy_rlimit`: the Z3 units that simplifying one threshold under the facts at its
      op may spend in all (thresholds.py `tidied`); past them the remaining rewrites are
      skipped and the threshold keeps its longer, equal form.
    - `count_registers`: the general and closed stages write a threshold against the
      engine-count register `count(F)` (docs/language.md) where that is less run-time
      arithmetic (thresholds.py `counted_form`, forms.py); off, every threshold is a
      closed form (the barrier layout: the register does not restart at a barrier).
    - `fallback`: where a wait cannot be counted even conservatively, the general stage
      falls back to the barrier layout (pipeline.py); off, it raises
      `pipeline.Uncounted` naming the ops instead (the barrier layout plans its regions
      so, and puts local barriers before them: algorithm/barrier.py).
    - `loop_registers`: the finished thresholds' loop-invariant parts are kept in loop
      registers (registers.py; docs/language.md "Loop registers"); off, every threshold
      is evaluated whole at each instance.
    """

    conflicts: Callable = conflicting_pairs
    stages: tuple[str, ...] = attrs.field(default=STAGES, converter=tuple)
    renew_after_ops: int = 500
    max_hops: int = 3
    max_chain_nodes: int = 150
    necessity_values: tuple[int, ...] = (0, 1, 2, 3)
    necessity_samples: int = 64
    cover_rlimit: int = 2_000_000
    divided_rlimit: int = 500_000
    closed_instances: int = 2_000_000
    max_options: int = 12
    max_cases: int = 8
    cover_valuations: int = 48
    cover_grid: int = 8
    cover_points: int = 3_000
    facts_rlimit: int = 2_000_000
    candidate_rlimit: int = 20_000_000
    tidy_rlimit: int = 20_000_000
    count_registers: bool = True
    fallback: bool = True
    loop_registers: bool = True

    @stages.validator
    def _known(self, _, value):
        unknown = [s for s in value if s not in STAGES]
        if unknown or not value or value[-1] != "general":
            raise ValueError(f"stages must name some of {STAGES} and end with 'general': {value}")
