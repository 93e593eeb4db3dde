"""A fanned-out bounded check is never silent for long: the valuations travel in short
batches even when the bounds hold millions of instances, and the fan-out reports what it
does before its first result (starting the pool, connecting to a cluster, sizing the
batches)."""

from __future__ import annotations

import pytest

from semantics.parser import parse
from verify.engines import happens_before
from verify.engines import valuations as v
from verify.fanout import FanOut
from verify.verdicts import CheckOptions

# Three instances per iteration: N=100000 alone is 300,000 instances.
PIPELINE = """
engines DMA PE ACT
param N
for i in 0..N {
  DMA load writes a[i % 2] lat 4
  PE mm reads a[i % 2] writes acc[i % 2] wait DMA >= i + 1 lat 2
  ACT store reads acc[i % 2] wait PE >= i + 1 lat 3
}
"""

# About a second's work on one core at the happens-before engine's pace, counted in
# instances: the ceiling a batch stays under, whatever the bounds.
SECOND_OF_WORK = 100_000


def first_batch_weight(program, bounds, workers: int) -> tuple[int, int]:
    batches = v.valuation_batches(program, v.valuations(bounds), 10**9, workers)
    first = next(iter(batches))
    return len(first), sum(v.instance_weight(program, values, 10**9) for values in first)


def test_a_batch_of_a_huge_bounded_check_stays_short():
    program = parse(PIPELINE)
    size, weight = first_batch_weight(program, (("N", 0, 100_000),), workers=1)
    assert size > 1 and weight <= SECOND_OF_WORK, (size, weight)


def test_without_the_ceiling_the_first_batch_is_minutes_of_work(monkeypatch):
    """Teeth: batches sized only by the total (a sixteenth of it per worker) make the
    first batch hold tens of thousands of valuations, which the test above rejects."""
    monkeypatch.setattr(v, "MAX_BATCH", 10**15)
    size, weight = first_batch_weight(parse(PIPELINE), (("N", 0, 100_000),), workers=1)
    assert weight > 100 * SECOND_OF_WORK, (size, weight)


def test_worker_processes_report_before_their_first_result():
    program = parse(PIPELINE)
    lines: list[str] = []
    result = happens_before.check(program, (("N", 0, 5),), CheckOptions(progress=lines.append),
                                  fan_out=FanOut(workers=2))
    assert result.valuations >= 1
    first_result = next(i for i, line in enumerate(lines) if line.startswith("valuation 1/"))
    assert lines[:first_result] == ["sizing the batches of 6 valuations for 2 workers",
                                    "starting 2 worker processes"], lines


def test_a_dask_cluster_reports_connecting_and_sizing_before_its_first_result():
    distributed = pytest.importorskip("distributed")
    program = parse(PIPELINE)
    lines: list[str] = []
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, host="127.0.0.1",
                                  protocol="tcp", dashboard_address=None) as cluster:
        address = cluster.scheduler_address
        result = happens_before.check(program, (("N", 0, 5),), CheckOptions(progress=lines.append),
                                      fan_out=FanOut(cluster=address))
    assert result.valuations >= 1
    first_result = next(i for i, line in enumerate(lines) if line.startswith("valuation 1/"))
    assert lines[:first_result] == [f"connecting to the Dask scheduler at {address}",
                                    f"connected to {address}: 1 worker thread",
                                    "sending the program to the workers",
                                    "sizing the batches of 6 valuations for 1 worker"], lines


def test_a_fanned_out_search_reports_its_checks_ahead():
    """`search --workers`: the generated kernels checked ahead on the pool are counted
    as they come back, after the pool's own start-up line."""
    from verify.search.search import SearchOptions, search

    lines: list[str] = []
    search(SearchOptions(examples=6, seed=3, progress=lines.append), FanOut(workers=2))
    ahead = [line for line in lines if "checked ahead" in line]
    assert lines[0].startswith("checking ") and "2 worker processes" in lines[0], lines
    assert "starting 2 worker processes" in lines, lines
    assert ahead and ahead[-1].split()[0].split("/")[0] == ahead[-1].split()[0].split("/")[1], lines


def test_fanned_out_mutants_report_the_pool_before_their_first_result():
    from verify.search.mutate import run_mutants

    program = parse(PIPELINE)
    lines: list[str] = []
    results = run_mutants(program, (("N", 0, 2),), progress=lines.append, fan_out=FanOut(workers=2))
    first_result = next(i for i, line in enumerate(lines) if line.startswith("1/"))
    assert lines[:first_result] == ["starting 2 worker processes"], lines
    assert len([line for line in lines if "/" in line.split()[0]]) == len(results) > 0
