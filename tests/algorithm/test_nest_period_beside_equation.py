"""A guard with a parameter period beside an index equation on the same index
(`if k % K == 0` over a tile `a[k % 2]`): the stage takes the equation's top and asks
the guard there; an instance below the top (where the guard fails at it) has a place the
stage cannot write, so it must be covered: wherever it exists, a candidate later than
it exists too (the other branch at the top). Else the kernel leaves the class.
Expected values come from brute force (tests/support/nest_plans.py)."""

from __future__ import annotations

import pytest

from algorithm.registry import get_strategy
from algorithm.threshold import nest, nest_pieces
from algorithm.threshold.reasoning import NotNest
from semantics.ir import Op, walk_stmts
from semantics.parser import parse
from semantics.printer import print_expr
from syncproof import load

from tests.support.corpus import ROOT
from tests.support.nest_plans import problems

KERNEL = "tests/data/nest/period_beside_double_buffer.sync"


def test_blocked_accumulation_over_a_double_buffer_is_planned_exactly():
    """Regression: the load's wait was conservative (`PE >= k`: the load of a tile waited
    for the step before, which uses the other buffer)."""
    program = load(str(ROOT / KERNEL))
    nest.check_nest(program)
    assert problems(program, hi=4) == []
    result = get_strategy("threshold")(program)
    assert not result.stats.conservative
    ld = next(s for s in walk_stmts(result.program.body) if isinstance(s, Op) and s.name == "ld")
    (wait,) = [print_expr(w.threshold) for w in ld.waits if w.engine == "PE"]
    assert wait.startswith("if k >= 2 then count(PE) - 1 else ")  # (the step two back; else the last row's)


@pytest.mark.parametrize("guard", ["k % K != 0", "k % K < 1", "(k + 1) % K == 0"])
def test_each_spelling_of_the_guard_beside_the_tile_is_exact(guard):
    program = parse(f"engines DMA PE\nparam N, K >= 1\nfor k in 0..N {{\n  DMA ld writes a[k % 2]\n"
                    f"  if {guard} {{\n    PE first reads a[k % 2] writes acc\n  }} else {{\n"
                    f"    PE more reads a[k % 2], acc writes acc\n  }}\n}}\n")
    assert problems(program, hi=5) == []


UNCOVERED = ("engines DMA PE\nparam N, K >= 1\nfor k in 0..N {\n  DMA ld writes a[k % 2]\n"
             "  if k % K == 0 {\n    PE first reads a[k % 2] writes acc\n  } else {\n"
             "    PE more reads b, acc writes acc\n  }\n}\n")


def test_an_instance_below_the_top_that_no_later_candidate_covers_leaves_the_class():
    """The last `first` of the load's parity below the top is a question of two
    congruences, one over K: the stage does not answer it."""
    with pytest.raises(NotNest, match="beside an index equation"):
        nest.plan_nest(parse(UNCOVERED))


def test_teeth_an_instance_below_the_top_taken_as_covered_is_caught(monkeypatch):
    """Broken: every instance below the top counts as covered (and every candidate as
    missing where the earlier ones are)."""
    monkeypatch.setattr(nest_pieces, "_missing_where_failed", lambda *_: True)
    assert problems(parse(UNCOVERED), hi=4) != []
