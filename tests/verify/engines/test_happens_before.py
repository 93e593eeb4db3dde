"""The happens-before engine against the explicit engine (docs/happens-before.md).

On generated programs with waits and barriers (tests/support/differential.py: random
waits, and exact waits perturbed so that every verdict occurs), the two
engines must give the same verdict, failing valuation and trace length; every
happens-before trace must replay on both machines to a state where they disagree.
Two deliberately broken variants (tests/support/broken_engines.py) must be caught.
The same on generated programs with DMA queues (docs/happens-before.md, "DMA queues"),
on every DMA kernel for the manual, threshold and barrier strategies, and three
variants broken only in a queue rule must be caught there.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, find, settings

from semantics.parser import parse
from algorithm.registry import get_strategy
from semantics.parser import parse_file
from tests.support.broken_engines import BROKEN, BROKEN_QUEUES
from tests.support.corpus import DMA_KERNELS, kernel_id
from tests.support.differential import differ, queue_variants, run_differential, variants
from verify.engines import happens_before
from verify.engines.explicit import InternalError
from verify.engines.explicit import check as explicit_check
from verify.engines.valuations import check_valuations
from verify.verdicts import CheckOptions, Verdict


@pytest.mark.slow
def test_agrees_with_the_explicit_engine_on_every_verdict():
    """1,000 programs (each broken engine below is caught within 300 of them)."""
    seen, mismatches = run_differential(1000)
    assert not mismatches, mismatches[0]
    # Not vacuous: every verdict occurs, often.
    assert min(seen[v] for v in (Verdict.BISIMILAR, Verdict.UNSOUND, Verdict.DEADLOCK,
                                 Verdict.OVER_SYNCHRONIZED)) >= 20, seen


def test_agrees_with_the_explicit_engine_on_queue_programs():
    seen, mismatches = run_differential(200, queues=True)
    assert not mismatches, mismatches[0]
    for verdict in (Verdict.BISIMILAR, Verdict.UNSOUND, Verdict.DEADLOCK, Verdict.OVER_SYNCHRONIZED):
        assert seen[verdict] >= 1, seen


@pytest.mark.parametrize("strategy", ["manual", "threshold", "barrier"])
@pytest.mark.parametrize("path", DMA_KERNELS, ids=kernel_id)
def test_agrees_with_the_explicit_engine_on_the_dma_kernels(path, strategy):
    program = get_strategy(strategy)(parse_file(str(path))).program
    assert differ(program) is None


# The first example caught is enough (no shrinking: it reruns both engines many times).
_FIND = settings(database=None, derandomize=True, max_examples=300, deadline=None,
                 suppress_health_check=list(HealthCheck), phases=(Phase.explicit, Phase.generate))


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_engine_is_caught(name):
    """The differential's own programs: the first mismatch is enough (`find` ends there;
    the property test above would run on to its 400th program)."""
    found = find(variants(), lambda program: differ(program, BROKEN[name]) is not None, settings=_FIND)
    assert differ(found) is None  # the real engine agrees there: the break is what differs


@pytest.mark.parametrize("name", sorted(BROKEN) + sorted(BROKEN_QUEUES))
def test_a_broken_engine_is_caught_on_queue_programs(name):
    broken = {**BROKEN, **BROKEN_QUEUES}[name]
    found = find(queue_variants(), lambda program: differ(program, broken) is not None, settings=_FIND)
    assert found.queues and differ(found) is None  # the real engine agrees there: the break is what differs


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
