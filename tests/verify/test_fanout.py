"""Fan-out (verify/fanout.py): a process pool and a Dask cluster give the serial answer,
in task order, with the same first counterexample."""

from __future__ import annotations

import functools
import os
import time

import pytest

from semantics.parser import parse
from verify.engines import happens_before
from verify.engines.valuations import check_valuations
from verify.engines.explicit import explore
from verify.fanout import FanOut, ordered_map
from verify.verdicts import CheckOptions, Verdict


def slow_square(delay: float, n: int) -> int:
    time.sleep(delay * (5 - n % 5))  # later tasks finish first
    return n * n


def marked_square(folder: str, n: int) -> int:
    """n * n, leaving a file named n in `folder` (tasks run in other processes)."""
    with open(os.path.join(folder, str(n)), "w"):
        pass
    return n * n


# Unsound from N=2 on (the wait counts one load too few); over-synchronized at N=1.
KERNEL = """
engines LD PE
param N, M
for i in 0..N + M {
  LD load writes a[i]
  PE mm reads a[i] wait LD >= if i == 0 then 2 else i
}
"""


def outcome(result):
    w = result.witness
    return (result.verdict, result.holds, result.valuations, result.states, result.complete,
            w and w.unrolled.valuation, w and w.trace, w and w.failing, w and w.explanation)


def test_a_process_pool_keeps_task_order():
    tasks = list(range(10))
    fn = functools.partial(slow_square, 0.02)
    assert list(ordered_map(fn, tasks, FanOut(workers=2))) == [n * n for n in tasks]


def test_stopping_early_cancels_what_is_pending(tmp_path):
    """Counted, not timed: once the caller stops, no more of the 200 tasks is taken from
    the source (at most the window of 2 per worker ever was), and every task that ran
    is one that had been submitted."""
    taken = []

    def source():
        for n in range(200):
            taken.append(n)
            yield n

    results = ordered_map(functools.partial(marked_square, str(tmp_path)), source(), FanOut(workers=2))
    assert next(results) == 0
    results.close()  # cancels what is pending, and waits for what runs
    ran = sorted(int(p.name) for p in tmp_path.iterdir())
    assert len(taken) <= 4 and ran and set(ran) <= set(taken), (taken, ran)


@pytest.mark.parametrize("decide", [happens_before.decide_valuation, explore], ids=["happens-before", "explicit"])
def test_a_process_pool_reports_the_serial_counterexample(decide):
    program = parse(KERNEL)
    bounds = (("N", 0, 3), ("M", 0, 3))
    serial = check_valuations(program, bounds, CheckOptions(), decide, "e")
    pooled = check_valuations(program, bounds, CheckOptions(), decide, "e", FanOut(workers=2))
    assert serial.verdict == Verdict.UNSOUND and serial.valuations < serial.total_valuations
    assert outcome(pooled) == outcome(serial)


def test_a_dask_cluster_reports_the_serial_counterexample():
    distributed = pytest.importorskip("distributed")
    program = parse(KERNEL)
    bounds = (("N", 0, 3), ("M", 0, 3))
    serial = happens_before.check(program, bounds)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, host="127.0.0.1", protocol="tcp",
                                  dashboard_address=None) as cluster:
        remote = happens_before.check(program, bounds, fan_out=FanOut(cluster=cluster.scheduler_address))
    assert serial.verdict == Verdict.UNSOUND
    assert outcome(remote) == outcome(serial)


def test_workers_must_be_positive():
    with pytest.raises(Exception, match="at least 1"):
        FanOut(workers=0)


def test_search_on_a_pool_finds_what_the_serial_search_finds():
    from tests.support.broken_strategies import ignore_war
    from verify.search.search import SearchOptions, search

    options = SearchOptions(strategy="ignore-war", sync=ignore_war, examples=25, seed=1)
    serial = search(options)
    pooled = search(options, FanOut(workers=2))
    assert serial.finding is not None
    assert pooled.finding.program == serial.finding.program
    assert outcome(pooled.finding.result) == outcome(serial.finding.result)
    assert (pooled.examples, pooled.skipped_unknown, pooled.skipped_rejected, pooled.largest_ops) == \
        (serial.examples, serial.skipped_unknown, serial.skipped_rejected, serial.largest_ops)


def test_mutants_on_a_pool_are_judged_as_serially():
    from semantics.parser import parse_file
    from tests.support.corpus import ROOT
    from verify.search.mutate import run_mutants

    program = parse_file(str(ROOT / "kernels" / "pipeline_db.sync"))
    bounds = (("N", 0, 2),)
    serial = run_mutants(program, bounds)
    pooled = run_mutants(program, bounds, fan_out=FanOut(workers=2))
    assert len(serial) > 5 and {r.outcome for r in serial} >= {"killed"}
    assert [(r.mutant.where, r.outcome, r.verdict) for r in pooled] == \
        [(r.mutant.where, r.outcome, r.verdict) for r in serial]
