"""The nest stage on loop bounds beyond a constant start: an upper bound over the
parameters that may lie below the start (`for i in 1..N` at N = 0), planned as
`for i in 1..max(N, 1)` (the same iterations; nest.py `clamped`), and a lower bound over
the parameters (`for j in M..M + i + 1`). Expected values come from brute force."""

from __future__ import annotations

import pytest

from algorithm.registry import get_strategy
from algorithm.threshold import nest as nest_mod
from algorithm.threshold.plan import Plan, PlanEntry
from semantics.errors import Unsupported
from semantics.parser import parse
from syncproof import load

from tests.support.corpus import ROOT
from tests.support.exactness import exactness_problems
from tests.support.nest_plans import problems

KERNEL = "tests/data/nest/loop_below_its_start.sync"


def _closed_form_problems(program) -> list[str]:
    """The thresholds as closed forms only (no `count(F)`, no `iters`): where a count
    over a loop that runs HI - LO times would go below 0, they show it."""
    planned, _ = nest_mod.plan_nest(program, count_registers=False, untracked=frozenset({"i", "j"}))
    return exactness_problems(program, Plan([PlanEntry(op, engine, t, True) for op, engine, t, *_ in planned]), hi=3)


def test_loops_that_may_end_below_their_start_are_planned_exactly(monkeypatch):
    import algorithm.threshold.pipeline as pipeline

    program = load(str(ROOT / KERNEL))
    assert problems(program) == [] and _closed_form_problems(program) == []

    def refuse(*_):
        raise AssertionError("the general stage ran")

    monkeypatch.setitem(pipeline.STAGES, "general", refuse)
    assert not get_strategy("threshold")(program).stats.conservative


def test_teeth_a_loop_counted_hi_minus_lo_times_below_its_start_is_caught(monkeypatch):
    """Broken: the class check passes such a loop and its bound is not clamped: at N = 0
    the loop counts -1 iterations and z waits for no A-instance (T_min is 1: t)."""
    monkeypatch.setattr(nest_mod, "clamped", lambda program: program)
    monkeypatch.setattr(nest_mod, "least_bound", lambda program, hi: 10**9)
    assert _closed_form_problems(load(str(ROOT / KERNEL))) != []


def _lower_bounded(bounds: str):
    return parse(f"engines A B\nparam N\nfor i in 0..N {{\n  for j in {bounds} {{\n    A w writes x[j % 2]\n  }}\n"
                 "  B r reads x[i % 2]\n}\n")


def test_a_lower_bound_over_the_parameters_below_its_end_is_planned_exactly():
    """`max(N - 1, 0)..N`: bounds place N at or above both sides of the `max`."""
    assert problems(_lower_bounded("max(N - 1, 0)..N")) == []


@pytest.mark.parametrize("bounds", ["i..N", "max(N - 1, 2)..N"])
def test_a_lower_bound_over_an_index_or_one_that_may_pass_the_upper_is_left_to_the_later_stages(bounds):
    """`j in i..N` (a range that shrinks as i grows) and `max(N - 1, 2)..N` (above its
    end at N = 0) are not in the class."""
    with pytest.raises(Unsupported):
        nest_mod.plan_nest(_lower_bounded(bounds))
