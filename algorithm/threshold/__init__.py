"""The barrier-free threshold algorithm (docs/design.md section 3).

`plan_thresholds` computes, for every (op, producer engine) pair with a possible
dependence, the threshold expression (over loop variables, `iters` and parameters)
that says exactly "the last producer has completed"; `irredundant` drops the waits
that others imply; `apply_plan` writes the waits into the program. The names below are
the package's API, used by the barrier baseline (which plans its regions with the same
counting) and by the tests; the modules' `_` names are their own.

Modules: plan (the planner), context (its per-program Context and the facts at a
site), thresholds (a wait's count and its tidying), candidates (which producer
instances can be last), shapes (the memo of their proofs by shape), counting + sums
(closed-form counts of instances), facts (Z3 proofs over the loop domains, with a
counterexample cache), irredundant (redundant-wait elimination).
"""

from algorithm.threshold.counting import Unsupported, count_upto, full_count
from algorithm.threshold.plan import (
    Context, Plan, PlanEntry, apply_plan, body_at, closed_iters, count_before_y, iters_facts, keep_z3_small,
    plan_thresholds, site_facts, tidy_threshold,
)
from algorithm.threshold.irredundant import irredundant

__all__ = [
    "Context", "Plan", "PlanEntry", "Unsupported", "apply_plan", "body_at", "closed_iters", "count_before_y",
    "count_upto", "full_count", "irredundant", "iters_facts", "keep_z3_small", "plan_thresholds", "site_facts",
    "tidy_threshold",
]
