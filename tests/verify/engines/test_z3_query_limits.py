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
import z3

from algorithm.registry import get_strategy
from semantics.parser import parse_file
from verify.cli.main import main
from verify.engines import z3_check
from verify.engines.z3_check import NO_TIMEOUT_MS, Z3Options
from verify.verdicts import Verdict

from tests.support.clock import FakeClock

ROOT = Path(__file__).parents[3]
KERNEL = ROOT / "kernels" / "pipeline_db.sync"


@pytest.fixture
def limits(monkeypatch):
    """The (name, value) of every solver option the check sets, in order."""
    seen = []
    original = z3.Solver.set

    def record(self, *args, **keys):
        if len(args) == 2:
            seen.append((args[0], args[1]))
        seen.extend(keys.items())
        return original(self, *args, **keys)

    monkeypatch.setattr(z3.Solver, "set", record)
    return seen


def _queries_limits(seen, name):
    return [value for key, value in seen if key == name]


def _synced():
    return get_strategy("threshold")(parse_file(str(KERNEL))).program


def test_a_check_without_a_timeout_gives_its_queries_no_time_limit(limits):
    result = z3_check.check(_synced(), (("N", 0, 3),), Z3Options())
    assert result.verdict == Verdict.BISIMILAR
    timeouts = _queries_limits(limits, "timeout")
    assert timeouts and set(timeouts) == {NO_TIMEOUT_MS}
    assert set(_queries_limits(limits, "rlimit")) == {0}


def test_teeth_a_default_per_query_limit_is_seen(limits):
    """The old default (60 s per query) shows in what the queries get: the test above
    would fail with it."""
    z3_check.check(_synced(), (("N", 0, 3),), Z3Options(query_timeout_ms=60_000))
    assert set(_queries_limits(limits, "timeout")) == {60_000}


def test_a_query_gets_what_is_left_of_the_checks_timeout(limits):
    """A clock that stands still: the whole budget of 600 s is left for every query."""
    z3_check.check(_synced(), (("N", 0, 3),), Z3Options(timeout=600, clock=FakeClock()))
    assert set(_queries_limits(limits, "timeout")) == {600_000}


def test_verify_engine_z3_manual_without_timeout_sets_no_query_limit(limits, capsys):
    """The command line of the report (the synced GEMM, here the small pipeline_db):
    `verify --engine z3 --strategy manual` with no --timeout."""
    path = ROOT / "kernels" / "pipeline_db.sync"
    status = main(["verify", "--engine", "z3", "--scope", "bounded", "--param", "N=0..3", str(path)])
    assert status == 0, capsys.readouterr()
    assert set(_queries_limits(limits, "timeout")) == {NO_TIMEOUT_MS}


def test_an_unknown_names_the_per_query_limit_that_ended_it():
    """A deterministic per-query resource limit too small for any query: the reason names
    it, not Z3's bare "canceled"."""
    result = z3_check.check(_synced(), (("N", 0, 3),), Z3Options(query_rlimit=1))
    assert result.verdict == Verdict.UNKNOWN and result.holds is None
    assert "the query's resource limit of 1 units ran out" in result.reason
    assert "canceled" not in result.reason
