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


# Batching (verify/engines/valuations.py): the valuations travel in batches sized by
# their instance counts, and the answer stays the serial one.

# Instances grow with N (N + 1 for the loop's ops, then K more): batches hold many small
# valuations and few large ones. Deadlocked when K == 2 (a wait for an op never issued),
# unsound from N == 5 on (a wait counting one load too few), over-synchronized when K == 1.
GROWING = """
engines LD PE
param N, K
for i in 0..N + 1 {
  LD load writes a[i]
}
for j in 0..K {
  PE extra reads a[0] wait LD >= (if K == 1 then N + 1 else 1)
}
PE use reads a[N] wait LD >= (if N >= 5 then N else N + 1) + (if K == 2 then 9 else 0)
"""


def unrolled_count(program, values) -> int:
    """Instances counted by unrolling (independently of the batching's count)."""
    from semantics.sequential import unroll

    return len(unroll(program, values).instances)


def check_sized_by_instances(batches, weight, target) -> None:
    """Each batch weighs at most `target` unless it is one valuation heavier than that,
    and no batch could have taken the next valuation without passing `target`."""
    for batch, following in zip(batches, [*batches[1:], None]):
        total = sum(weight(v) for v in batch)
        assert total <= target or len(batch) == 1, (batch, total, target)
        if following is not None:
            assert total + weight(following[0]) > target, (batch, following[0], target)


def test_batches_follow_instance_counts(monkeypatch):
    from semantics.parser import parse
    from verify.engines import valuations as v

    monkeypatch.setattr(v, "MIN_BATCH", 1)
    program = parse(GROWING)
    bounds = (("N", 0, 60), ("K", 0, 3))
    target = v.batch_target(program, v.valuations(bounds), 10**6, workers=2)
    batches = list(v.valuation_batches(program, v.valuations(bounds), 10**6, workers=2))
    weight = lambda values: unrolled_count(program, values) + v.VALUATION_COST  # noqa: E731
    assert [x for b in batches for x in b] == list(v.valuations(bounds))  # every valuation, in order
    check_sized_by_instances(batches, weight, target)
    sizes = [len(b) for b in batches]
    assert len(batches) > 8 and sizes[0] > sizes[-1], sizes  # small valuations share, large ones less


def test_a_batching_by_count_is_caught():
    """Teeth: batches of a fixed number of valuations, blind to their instance counts,
    fail the check that the batches above pass."""
    from semantics.parser import parse
    from verify.engines import valuations as v

    program = parse(GROWING)
    values = list(v.valuations((("N", 0, 60), ("K", 0, 3))))
    by_count = [tuple(values[i:i + 8]) for i in range(0, len(values), 8)]
    weight = lambda x: unrolled_count(program, x) + v.VALUATION_COST  # noqa: E731
    with pytest.raises(AssertionError):
        check_sized_by_instances(by_count, weight, 8 * 40)


def test_batched_keeps_order_and_puts_heavy_items_alone():
    from verify.fanout import batched

    weights = [1, 1, 1, 9, 2, 2, 2, 1, 5]
    got = list(batched(range(len(weights)), weights.__getitem__, 4))
    assert got == [(0, 1, 2), (3,), (4, 5), (6, 7), (8,)]


@pytest.mark.parametrize("min_batch", [1, 10**9], ids=["many-batches", "one-batch"])
def test_batched_fan_out_reports_the_serial_first_counterexample(monkeypatch, min_batch):
    """Failures at several valuations (over-synchronized, deadlocked, unsound): the
    same verdict, valuation, trace and counts as serially, whether the valuations travel
    one or many to a task."""
    from semantics.parser import parse
    from verify.engines import valuations as v

    monkeypatch.setattr(v, "MIN_BATCH", min_batch)
    program = parse(GROWING)
    for bounds in [(("N", 0, 8), ("K", 0, 3)), (("N", 0, 4), ("K", 0, 3)), (("N", 0, 4), ("K", 0, 1))]:
        serial = happens_before.check(program, bounds)
        pooled = happens_before.check(program, bounds, fan_out=FanOut(workers=2))
        assert outcome(pooled) == outcome(serial), bounds
    assert {happens_before.check(program, b).verdict for b in
            [(("N", 0, 8), ("K", 0, 3)), (("N", 0, 4), ("K", 0, 3)), (("N", 0, 4), ("K", 0, 1))]} == \
        {Verdict.UNSOUND, Verdict.DEADLOCK, Verdict.OVER_SYNCHRONIZED}


def test_a_batch_stops_at_an_unsound_valuation_and_when_its_time_is_spent():
    from semantics.parser import parse
    from tests.support.clock import FakeClock
    from verify.engines.valuations import run_batch

    program = parse(GROWING)
    batch = tuple({"N": n, "K": 0} for n in range(8))
    results = run_batch((program, happens_before.decide_valuation, CheckOptions(), None), batch)
    assert [r.verdict for r in results] == [Verdict.BISIMILAR] * 5 + [Verdict.UNSOUND]  # N=5 is the first unsound
    timed = CheckOptions(clock=FakeClock(step=1.0))
    results = run_batch((program, happens_before.decide_valuation, timed, 2.5), batch)
    assert results[-1] is None and 1 <= len(results) - 1 < len(batch)


# A division by zero in a loop bound at N == 3; the first wait lets mm issue before its
# load completes when BROKEN is 0 (unsound from N == 0 on).
DIVIDES = """
engines LD PE
param N
for i in 0..6 // (3 - N) {
  LD load writes a[i]
  PE mm reads a[i] wait LD >= i + BROKEN
}
"""


@pytest.mark.parametrize("min_batch", [1, 10**9], ids=["many-batches", "one-batch"])
def test_a_kernel_error_ahead_is_reported_in_its_turn(monkeypatch, min_batch):
    """Batches are weighed and sent ahead of the results: an error at a later valuation
    neither hides an earlier counterexample nor changes the error a serial run reports."""
    from semantics.errors import KernelError
    from semantics.parser import parse
    from verify.engines import valuations as v

    monkeypatch.setattr(v, "MIN_BATCH", min_batch)
    bounds = (("N", 0, 4),)
    unsound = parse(DIVIDES.replace("BROKEN", "0"))
    assert outcome(happens_before.check(unsound, bounds, fan_out=FanOut(workers=2))) == \
        outcome(happens_before.check(unsound, bounds))
    assert happens_before.check(unsound, bounds).verdict == Verdict.UNSOUND
    errors = []
    for fan_out in (FanOut(), FanOut(workers=2)):
        with pytest.raises(KernelError) as raised:
            happens_before.check(parse(DIVIDES.replace("BROKEN", "1")), bounds, fan_out=fan_out)
        errors.append(str(raised.value))
    assert errors[0] == errors[1] and "zero" in errors[0], errors


def test_a_dask_cluster_with_batches_reports_the_serial_first_counterexample(monkeypatch):
    """The program scattered once, valuations in many batches: the serial answer."""
    distributed = pytest.importorskip("distributed")
    from semantics.parser import parse
    from verify.engines import valuations as v

    monkeypatch.setattr(v, "MIN_BATCH", 1)
    program = parse(GROWING)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, host="127.0.0.1",
                                  protocol="tcp", dashboard_address=None) as cluster:
        for bounds in [(("N", 0, 8), ("K", 0, 3)), (("N", 0, 4), ("K", 0, 1))]:
            remote = happens_before.check(program, bounds, fan_out=FanOut(cluster=cluster.scheduler_address))
            assert outcome(remote) == outcome(happens_before.check(program, bounds)), bounds
