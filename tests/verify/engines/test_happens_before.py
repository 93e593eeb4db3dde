"""The happens-before engine against the explicit engine (docs/happens-before.md).

On generated programs with waits and barriers (tests/support/differential.py: random
waits, and exact waits perturbed so that every verdict occurs), the two
engines must give the same verdict, failing valuation and trace length; every
happens-before trace must replay on both machines to a state where they disagree.
Two deliberately broken variants (tests/support/broken_engines.py) must be caught.
"""

from __future__ import annotations

import pytest

from semantics.parser import parse
from tests.support.broken_engines import BROKEN
from tests.support.differential import run_differential
from verify.engines import happens_before
from verify.engines.explicit import InternalError
from verify.engines.explicit import check as explicit_check
from verify.engines.valuations import check_valuations
from verify.verdicts import CheckOptions, Verdict


def test_agrees_with_the_explicit_engine_on_every_verdict():
    seen, mismatches = run_differential(400)
    assert not mismatches, mismatches[0]
    # Not vacuous: every verdict occurs.
    for verdict in (Verdict.BISIMILAR, Verdict.UNSOUND, Verdict.DEADLOCK, Verdict.OVER_SYNCHRONIZED):
        assert seen[verdict] >= 5, seen


@pytest.mark.slow
def test_agrees_with_the_explicit_engine_at_length():
    seen, mismatches = run_differential(1500)
    assert not mismatches, mismatches[0]
    assert min(seen[v] for v in (Verdict.BISIMILAR, Verdict.UNSOUND, Verdict.DEADLOCK,
                                 Verdict.OVER_SYNCHRONIZED)) >= 20, seen


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_engine_is_caught(name):
    _, mismatches = run_differential(400, BROKEN[name])
    assert mismatches, f"the differential test does not catch the engine {name}"


# Bisimilar: c overwrites everything B read before the barrier, so the barrier holds
# c back no longer than the reference does; d's wait counts c since the barrier.
BARRIER_THEN_FREE = """
engines A B
param N
for i in 0..N {
  A a writes x[i]
  B b reads x[i] wait A >= i + 1
}
barrier
A c writes x[0], x[1], x[2]
B d reads x[0], x[1], x[2] wait A >= 1
"""


def test_thresholds_count_from_the_last_barrier_and_barriers_pass_eagerly():
    program = parse(BARRIER_THEN_FREE)
    bounds = (("N", 3, 3),)  # below 3, c would overwrite what no b read
    assert explicit_check(program, bounds).verdict == Verdict.BISIMILAR
    result = happens_before.check(program, bounds)
    assert result.verdict == Verdict.BISIMILAR and result.holds and result.engine == "happens-before"
    for name, decide in BROKEN.items():  # wrong, or caught by the engine's own cross-check of its witness
        try:
            broken = check_valuations(program, bounds, CheckOptions(), decide, "broken")
        except InternalError:
            continue
        assert broken.verdict != Verdict.BISIMILAR, name


def test_peer_clauses_are_refused():
    program = parse("engines A B\nA a writes x setflag B:0\nB b reads x waitflag A:0\n")
    with pytest.raises(Exception, match="happens-before engine does not handle"):
        happens_before.check(program, ())
