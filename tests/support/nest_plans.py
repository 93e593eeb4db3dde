"""The nest stage's thresholds against brute force (tests/algorithm/test_nest*.py): the
plan comes from the stage, the expected T_min from the definition (exactness.py) and
the verdict on its output from the independent oracle."""

from __future__ import annotations

from algorithm.threshold import nest as nest_mod
from algorithm.threshold.plan import Plan, PlanEntry, apply_plan
from verify.search.generators import param_bounds

from tests.support import oracle
from tests.support.exactness import exactness_problems


def every_threshold(program, counts=None) -> Plan:
    """Every threshold the stage's arithmetic gives (before the necessity run)."""
    planned, _ = nest_mod.plan_nest(program, counts=counts)
    return Plan([PlanEntry(op, engine, t, True) for op, engine, t, *_ in planned])


def problems(program, counts=None, hi: int = 3) -> list[str]:
    """Where a threshold differs from T_min, and the output's verdict when not bisimilar."""
    plan = every_threshold(program, counts)
    found = exactness_problems(program, plan, hi=hi)
    verdict = oracle.verdict(apply_plan(program, plan.entries), param_bounds(program, hi))
    return found + ([] if verdict == oracle.BISIMILAR else [f"output: {verdict}"])
