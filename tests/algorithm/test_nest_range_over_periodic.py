"""A range read against an index periodic in x's free loop index (`x[j % 2]` written,
`x[0..2]` read): where the range holds every value the index takes, every instance
meets it (no equation on the index); where it holds the values of one residue, the
instances of that residue (`x[1..2]`: j % 2 == 1); else the kernel leaves the nest
stage's class.
Expected values come from brute force (tests/support/nest_plans.py)."""

from __future__ import annotations

import pytest

from algorithm.registry import get_strategy
from algorithm.threshold import nest
from algorithm.threshold.reasoning import NotNest
from semantics.parser import parse

from tests.support.nest_plans import problems


def _kernel(write: str, read: str, guard: str | None = "j % K == 0", bound: str = "i"):
    w = f"A w writes x[{write}]"
    inner = f"    {w}\n" if guard is None else f"    if {guard} {{\n      {w}\n    }}\n"
    return parse(f"engines A B\nparam N >= 0\nparam K >= 1\nfor i in 0..N {{\n  for j in 0..{bound} {{\n{inner}"
                 f"  }}\n  B r reads x[{read}] writes z\n  A v reads z\n}}\n")


@pytest.mark.parametrize("write, read", [("j % 2", "0..2"), ("j % 3", "0..3"), ("(j + 1) % 2", "0..4"),
                                         ("2 * (j % 2)", "0..3")])
@pytest.mark.parametrize("guard", [None, "j % K == 0"])
def test_a_range_holding_every_value_of_a_periodic_index_meets_every_instance(write, read, guard):
    """Regression: `x[0..2]` against `x[j % 2]` in a triangular loop fell back to
    barriers (the general stage cannot count the guard; the nest stage refused the
    range against an index of slope 0)."""
    program = _kernel(write, read, guard)
    nest.check_nest(program)
    assert problems(program, hi=4) == []
    stats = get_strategy("threshold")(program).stats
    assert stats.fallback is None and not stats.conservative


@pytest.mark.parametrize("write, read", [("j % 2", "1..2"), ("j % 3", "2..3"), ("(j + 1) % 2", "0..1"),
                                         ("j % 2", "2..4")])
@pytest.mark.parametrize("guard", [None, "j >= 1"])
def test_a_range_holding_the_values_of_one_residue_is_an_equation_on_it(write, read, guard):
    """`x[1..2]` against `x[j % 2]` meets the instances where j % 2 == 1 (and a range
    holding no value of the index meets none)."""
    program = _kernel(write, read, guard)
    nest.check_nest(program)
    assert problems(program, hi=4) == []


def test_teeth_the_residue_of_a_range_off_by_one_is_caught(monkeypatch):
    from algorithm.threshold import nest_equations

    real = nest_equations.range_equation

    def shifted(*args):
        found = real(*args)
        if isinstance(found, tuple) and found[0] == "mod":
            _, var, r, p = found
            return ("mod", var, type(r)((r.value + 1) % p), p)
        return found

    monkeypatch.setattr(nest_equations, "range_equation", shifted)
    from algorithm.threshold import nest_candidates

    monkeypatch.setattr(nest_candidates, "range_equation", shifted)
    assert problems(_kernel("j % 2", "1..2", None), hi=4) != []


@pytest.mark.parametrize("write, read", [("j % 3", "0..2"), ("j % 4", "1..3")])
def test_a_range_holding_several_residues_leaves_the_class(write, read):
    """A range that holds the values of several residues but not all meets some
    instances, which no one equation here states."""
    with pytest.raises(NotNest, match="slope other than 1"):
        nest.plan_nest(_kernel(write, read))
