"""Exact thresholds against brute force: T_min(y, F) straight from its definition on
the unrolled program, compared with a plan's exact entries (tests/algorithm/
test_threshold.py, test_fast_paths.py). Never calls the planner: the plan is given."""

from __future__ import annotations

import itertools

import algorithm.threshold.plan as threshold_mod
from semantics.ir import Program
from semantics.sequential import Unrolled, depends_on, unroll
from tests.support.corpus import HI


def valuations(program: Program, hi: int = HI):
    """Every valuation with each parameter from its lower bound up to max(hi, lower)."""
    names = [p.name for p in program.params]
    ranges = [range(p.lower, max(hi, p.lower) + 1) for p in program.params]
    for combo in itertools.product(*ranges):
        yield dict(zip(names, combo))


def brute_force_minimum(unrolled: Unrolled) -> list[list[int]]:
    """T_min(y, F) for every instance y and engine F, straight from the definition:
    1 + the local index of the last F-instance y depends on, 0 when there is none."""
    engines = len(unrolled.program.engines)
    result = []
    for y in unrolled.instances:
        need = [0] * engines
        for x in unrolled.instances[: y.index]:
            if depends_on(y, x):
                need[x.engine] = max(need[x.engine], x.local + 1)
        result.append(need)
    return result


def exactness_problems(program: Program, plan, hi: int = HI, limit: int = 5) -> list[str]:
    """Where an exact plan entry differs from the brute-force T_min (a missing entry
    counts as threshold 0, so a missing wait on a real dependence is reported too)."""
    inexact = {(e.op, e.engine) for e in plan.entries if not e.exact}
    planned = threshold_mod.apply_plan(program, plan.entries)
    engines = program.engines
    problems = []
    for values in valuations(program, hi):
        unrolled = unroll(planned, values)
        for y, need in zip(unrolled.instances, brute_force_minimum(unrolled)):
            got = [0] * len(engines)
            for f, t in y.waits:
                got[f] = max(got[f], max(0, t))
            for f, engine in enumerate(engines):
                if f == y.engine or (y.op.name, engine) in inexact:
                    continue
                if got[f] != need[f]:
                    problems.append(f"{values} {y.describe()}: wait {engine} >= {got[f]}, T_min = {need[f]}")
                    if len(problems) >= limit:
                        return problems
    return problems
