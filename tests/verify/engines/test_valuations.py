"""The valuations of a bounded check are made one at a time, in the order the engines
promise (smallest sum first, then lexicographic): four parameters in 0..40 are 2.8
million, and sorting them all first would take seconds that no time limit stops."""

import itertools

import pytest
from hypothesis import given, strategies as st

from algorithm.registry import get_strategy
from semantics.parser import parse_file
from verify.engines import explicit, happens_before
from verify.engines.valuations import valuations
from verify.verdicts import CheckOptions, Verdict

from tests.support.clock import FakeClock
from tests.support.corpus import KERNELS_DIR


def _brute_force(bounds):
    ranges = [range(lo, hi + 1) for _, lo, hi in bounds]
    combos = sorted(itertools.product(*ranges), key=lambda v: (sum(v), v))
    return [dict(zip([n for n, _, _ in bounds], c)) for c in combos]


bounds_lists = st.lists(st.tuples(st.integers(-3, 4), st.integers(-1, 4)), max_size=4).map(
    lambda pairs: tuple((f"P{n}", lo, lo + span) for n, (lo, span) in enumerate(pairs)))


@given(bounds_lists)
def test_valuations_are_the_sorted_product_of_the_ranges(bounds):
    expected = _brute_force(bounds)
    made = valuations(bounds)
    assert list(made) == expected
    assert made.size == len(expected) == len(made)


def test_valuations_of_wide_bounds_are_counted_and_begun_at_once():
    bounds = tuple((name, 0, 40) for name in ("JT", "QT", "NK", "TP"))
    made = valuations(bounds)
    first = list(itertools.islice(made, 3))
    assert made.size == 41 ** 4
    assert first == [dict(JT=0, QT=0, NK=0, TP=0), dict(JT=0, QT=0, NK=0, TP=1), dict(JT=0, QT=0, NK=1, TP=0)]


def test_valuations_count_beyond_a_machine_word():
    """10^36 valuations: only a lazy enumeration answers at all."""
    made = valuations(tuple((f"P{n}", 0, 10 ** 9) for n in range(4)))
    assert made.size == (10 ** 9 + 1) ** 4
    assert next(iter(made)) == {f"P{n}": 0 for n in range(4)}


@pytest.mark.parametrize("engine", [explicit, happens_before], ids=["explicit", "happens-before"])
def test_a_check_stops_once_its_clock_passes_the_time_limit(engine):
    """The time limit of the per-valuation engines, on a fake clock (CheckOptions.clock)
    that advances 10 ms per reading: a 50 ms limit ends the check after a few of the 41
    valuations, unknown with the reason, never success; a clock that stands still never
    ends it."""
    program = get_strategy("threshold")(parse_file(str(KERNELS_DIR / "pipeline_db.sync"))).program
    bounds = (("N", 0, 40),)
    result = engine.check(program, bounds, CheckOptions(timeout=0.05, clock=FakeClock(step=0.01)))
    assert result.verdict == Verdict.UNKNOWN and result.holds is None
    assert result.reason == "time limit reached" and 0 < result.valuations < 41
    result = engine.check(program, bounds, CheckOptions(timeout=0.05, clock=FakeClock()))
    assert result.verdict == Verdict.BISIMILAR and result.valuations == 41
