"""The closed-form planner's plans as tests check them: every threshold it plans (or the
irredundant ones) as plan entries, and their problems against brute force and the
independent oracle (tests/algorithm/test_closed.py, test_closed_parameters.py)."""

from __future__ import annotations

import attrs

from algorithm.threshold import closed as closed_mod
from algorithm.threshold.concrete import check_and_reduce
from algorithm.threshold.flat import HI, NotFlat, flat_shape
from algorithm.threshold.plan import PlanEntry, apply_plan
from semantics.simplify import simplify
from verify.search.generators import param_bounds

from tests.support import oracle
from tests.support.exactness import exactness_problems


@attrs.frozen
class ClosedPlan:
    entries: tuple


def in_the_class(program) -> bool:
    """Whether the closed stage's arithmetic takes `program` (no NotFlat while planning)."""
    try:
        closed_mod.plan_closed(program)
    except NotFlat:
        return False
    return True


def raw_thresholds(program, planner=closed_mod.Planner):
    """(flat shape, every threshold `planner` gives, its distance), before any check: what a
    broken planner would hand to the concrete check."""
    flat = flat_shape(program)
    p = planner(program, flat, closed_mod.conflicting_pairs)
    thresholds = {(y.name, e): t for y in (*flat.prefix, *flat.body, *flat.suffix) for e in program.engines
                  if e != y.engine and (t := p.threshold(y, e)) is not None}
    return flat, thresholds, p.distance


def planned(program, planner=closed_mod.Planner, reduce: bool = True):
    """The closed plan's entries (all of them, or the irredundant ones)."""
    flat = flat_shape(program)
    p = planner(program, flat, closed_mod.conflicting_pairs)
    thresholds = {}
    for y in (*flat.prefix, *flat.body, *flat.suffix):
        for engine in program.engines:
            if engine != y.engine and (t := p.threshold(y, engine)) is not None:
                thresholds[(y.name, engine)] = t
    kept = check_and_reduce(program, flat, thresholds, p.distance) if reduce else set(thresholds)
    return ClosedPlan(tuple(PlanEntry(op, e, simplify(closed_mod._substitute(t, HI, flat.hi)), True)
                       for (op, e), t in thresholds.items() if (op, e) in kept))


def problems(program, planner=closed_mod.Planner, hi: int = 4, reduce: bool = True) -> list[str]:
    """Brute-force T_min against every planned threshold; the oracle's verdict on the
    output (after irredundancy when `reduce`)."""
    full = planned(program, planner, reduce=False)
    found = exactness_problems(program, full, hi=hi)
    synced = apply_plan(program, (planned(program, planner) if reduce else full).entries)
    verdict = oracle.verdict(synced, param_bounds(program, hi))
    return found + ([] if verdict == oracle.BISIMILAR else [f"output: {verdict}"])
