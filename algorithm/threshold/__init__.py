"""The barrier-free threshold algorithm (docs/design.md section 3).

`plan_thresholds` computes, for every (op, producer engine) pair with a possible
dependence, the threshold expression (over loop variables, `iters` and parameters)
that says exactly "the last producer has completed"; `irredundant` drops the waits
that others imply; `apply_plan` writes the waits into the program. The names below are
the package's API, used by the pipeline's stages, the barrier layout (which tidies a
region's counts) and the tests; the modules' `_` names are their own.

Modules: plan (the planner), context (its per-program Context and the facts at a
site), thresholds (a wait's count and its tidying), candidates (which producer
instances can be last), shapes (the memo of their proofs by shape), counting + sums
(closed-form counts of instances), facts (Z3 proofs over the loop domains, with a
counterexample cache), irredundant (redundant-wait elimination).
"""

from algorithm.threshold.counting import Unsupported
from algorithm.threshold.plan import Plan, PlanEntry, apply_plan, plan_thresholds, tidy_threshold
from algorithm.threshold.irredundant import irredundant

__all__ = ["Plan", "PlanEntry", "Unsupported", "apply_plan", "irredundant", "plan_thresholds", "tidy_threshold"]
