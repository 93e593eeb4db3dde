"""A Z3 check's queries get the limits the user asked for, and no hidden one.

The z3 engine gave every query a default 60 s time limit even without `--timeout`: the
synced GEMM (`../shared/repro/gemm_psum_if.sync`, `verify --engine z3 --strategy manual`)
has one event-time query that takes longer, and the check said "unknown (canceled)"
(Z3's word when its timer stops a query) although no limit was given. Now a query's
time limit is what is left of `--timeout` (none without it), and an unknown answer
names the limit that ended it. The limits each query gets are recorded from the
solver's `set` calls, so no test here waits for a slow query.
"""

from pathlib import Path

import pytest

from algorithm.registry import get_strategy
from semantics.parser import parse_file
from verify.engines import z3_check
from verify.engines.z3_check import NO_TIMEOUT_MS, Z3Options
from verify.verdicts import Verdict

from tests.support.clock import FakeClock

ROOT = Path(__file__).parents[3]
KERNEL = ROOT / "kernels" / "pipeline_db.sync"


class Limits(list):
    """The (option, value) of every limit the check's queries get, in order (the
    options' `on_limit` observer)."""

    def __call__(self, option, value):
        self.append((option, value))


@pytest.fixture
def limits():
    return Limits()


def _queries_limits(seen, name):
    return [value for key, value in seen if key == name]


def _synced():
    return get_strategy("threshold")(parse_file(str(KERNEL))).program


def test_a_check_without_a_timeout_gives_its_queries_no_time_limit(limits):
    result = z3_check.check(_synced(), (("N", 0, 3),), Z3Options(on_limit=limits))
    assert result.verdict == Verdict.BISIMILAR
    timeouts = _queries_limits(limits, "timeout")
    assert timeouts and set(timeouts) == {NO_TIMEOUT_MS}
    assert set(_queries_limits(limits, "rlimit")) == {0}


def test_teeth_a_default_per_query_limit_is_seen(limits):
    """The old default (60 s per query) shows in what the queries get: the test above
    would fail with it."""
    z3_check.check(_synced(), (("N", 0, 3),), Z3Options(query_timeout_ms=60_000, on_limit=limits))
    assert set(_queries_limits(limits, "timeout")) == {60_000}


def test_a_query_gets_what_is_left_of_the_checks_timeout(limits):
    """A clock that stands still: the whole budget of 600 s is left for every query."""
    z3_check.check(_synced(), (("N", 0, 3),), Z3Options(timeout=600, clock=FakeClock(), on_limit=limits))
    assert set(_queries_limits(limits, "timeout")) == {600_000}


def test_the_default_options_set_no_per_query_time_limit():
    """What `verify --engine z3` uses when no --timeout is given."""
    assert Z3Options().query_timeout_ms is None and Z3Options().timeout is None


def test_an_unknown_names_the_per_query_limit_that_ended_it():
    """A deterministic per-query resource limit too small for any query: the reason names
    it, not Z3's bare "canceled"."""
    result = z3_check.check(_synced(), (("N", 0, 3),), Z3Options(query_rlimit=1))
    assert result.verdict == Verdict.UNKNOWN and result.holds is None
    assert "the query's resource limit of 1 units ran out" in result.reason
    assert "canceled" not in result.reason
