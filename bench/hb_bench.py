"""Benchmarks of the happens-before engine (docs/happens-before.md).

    python bench/hb_bench.py scale [--instances 100000] [KERNEL ...]
        the threshold output of every kernel (kernels/*.sync and kernels/suite/*.sync by
        default) at the smallest common parameter value giving >= INSTANCES instances,
        verified by the happens-before engine: seconds, and peak traced memory at that
        size and at twice the size (linear memory: the ratio stays near 2)
    python bench/hb_bench.py differential [--examples 10000]
        generated programs with waits and barriers (tests/verify/engines), checked by
        both engines: verdict, failing valuation and trace length must agree
    python bench/hb_bench.py fanout KERNEL --param N=0..K [--workers 4 8 16] [--modes workers cluster]
            [--pool-method spawn forkserver] [--worker-profile on off]
        `verify --scope bounded` of the threshold output of KERNEL through verify.api (as
        the command line runs it on that output, without the interpreter's start-up):
        serially, with --workers N (in a fresh process each, with each pool start method
        given), and with --cluster on a LocalCluster of N single-threaded worker
        processes (started before the clock starts, as an existing cluster would be;
        with Dask's worker profiler on and/or off); seconds, speed-up over serial and
        efficiency (speed-up / N), then where each cluster run's time went (the
        scheduler's task stream)
    python bench/hb_bench.py cluster KERNEL --param N=0..K [--workers 16]
        the same, serially and on the cluster only

In `scale`, syncing is not timed (it is the threshold strategy's cost, not the checker's).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from algorithm.registry import get_strategy  # noqa: E402
from semantics.parser import parse_file  # noqa: E402
from semantics.sequential import UnrollLimit, unroll  # noqa: E402
from verify.engines import happens_before  # noqa: E402


def instances_at(program, value: int, cap: int) -> int:
    try:
        return len(unroll(program, {p.name: value for p in program.params}, limit=cap).instances)
    except UnrollLimit:
        return cap + 1


def value_for(program, target: int) -> int | None:
    """A common parameter value giving at least `target` instances (within 1/16 of the
    smallest such value)."""
    if not program.params:
        return None
    hi = 1
    while instances_at(program, hi, 4 * target) < target:
        hi *= 2
        if hi > 1 << 20:
            return None
    lo = hi // 2
    while hi - lo > max(1, hi // 16):
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if instances_at(program, mid, 4 * target) < target else (lo, mid)
    return hi


def timed_check(program, value):
    """The check at one valuation: result, wall seconds, CPU seconds of this process (the
    machine may be shared: CPU time is what the check costs, wall time what one waits)."""
    bounds = tuple((p.name, value, value) for p in program.params)
    start, cpu = time.perf_counter(), time.process_time()
    result = happens_before.check(program, bounds)
    return result, time.perf_counter() - start, time.process_time() - cpu


def peak_mb(program, value) -> float:
    tracemalloc.start()
    timed_check(program, value)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def cmd_scale(args) -> int:
    files = args.kernels or sorted(str(p.relative_to(ROOT)) for p in
                                   [*ROOT.glob("kernels/*.sync"), *ROOT.glob("kernels/suite/*.sync")])
    memory = " peak MiB | peak MiB at 2x |" if args.memory else ""
    print(f"| kernel | parameters | instances | verdict | verify wall (s) | verify CPU (s) |{memory}")
    print("|---|---|---:|---|---:|---:|" + ("---:|---:|" if args.memory else ""))
    worst = 0.0
    for name in files:
        program = get_strategy("threshold")(parse_file(str(ROOT / name))).program
        value = value_for(program, args.instances)
        if value is None:
            result, seconds, cpu = timed_check(program, 0)
            print(f"| {name} | (none) | {len(unroll(program, {}).instances)} | {result.verdict.value} | "
                  f"{seconds:.2f} | {cpu:.2f} |", flush=True)
            continue
        count = instances_at(program, value, 1 << 30)
        result, seconds, cpu = timed_check(program, value)
        worst = max(worst, seconds)
        shown = ", ".join(f"{p.name}={value}" for p in program.params)
        extra = ""
        if args.memory:
            extra = f" {peak_mb(program, value):.0f} | {peak_mb(program, value_for(program, 2 * count)):.0f} |"
        print(f"| {name} | {shown} | {count} | {result.verdict.value} | {seconds:.2f} | {cpu:.2f} |{extra}",
              flush=True)
    print(f"\nslowest verification: {worst:.2f} s wall; load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} CPUs")
    return 0


def cmd_differential(args) -> int:
    from tests.support.differential import run_differential

    start = time.perf_counter()
    seen, mismatches = run_differential(args.examples)
    total = sum(seen.values()) + len(mismatches)
    print(f"{total} programs checked by both engines in {time.perf_counter() - start:.0f} s; "
          f"{len(mismatches)} disagreements")
    print("verdicts: " + ", ".join(f"{v.value} {n}" for v, n in sorted(seen.items(), key=lambda i: i[0].value)))
    for program, found in mismatches[:3]:
        print(found)
    return 1 if mismatches else 0


def verify_seconds(program, params, **fan_out) -> tuple[float, str]:
    """`verify --scope bounded` through the API (verify.api.verify, what the command line
    calls, without its start-up): wall seconds and the verdict."""
    from verify import api

    options = api.VerifyOptions(params=params, scope="bounded", **fan_out)
    start = time.perf_counter()
    report = api.verify(program, options)
    return time.perf_counter() - start, report.verdict.value


def in_fresh_process(args, workers: int, method: str) -> tuple[float, str]:
    """verify_seconds with --workers in a new process (so that each run starts its pool,
    and its fork server, as the command line does), pool processes started by `method`."""
    import json
    import subprocess

    argv = [sys.executable, __file__, "one", args.kernel, *(f"--param={p}" for p in args.param),
            f"--workers={workers}", f"--pool-method={method}"]
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    return tuple(json.loads(out.splitlines()[-1]))


def cmd_one(args) -> int:
    """One --workers run, for in_fresh_process: [seconds, verdict] on the last line."""
    import json

    from semantics.parser import parse
    from semantics.printer import print_program
    from verify import fanout
    from verify.cli.common import parse_bounds

    fanout.POOL_METHOD = args.pool_method
    program = parse(print_program(get_strategy("threshold")(parse_file(args.kernel)).program))
    params = parse_bounds(program, args.param, None)
    verify_seconds(program, tuple((name, lo, lo) for name, lo, _ in params))  # imports, before the clock
    print(json.dumps(verify_seconds(program, params, workers=args.workers)))
    return 0


def cmd_fanout(args) -> int:
    from semantics.parser import parse

    from semantics.printer import print_program
    from verify.cli.common import parse_bounds

    program = parse(print_program(get_strategy("threshold")(parse_file(args.kernel)).program))
    params = parse_bounds(program, args.param, None)
    verify_seconds(program, tuple((name, lo, lo) for name, lo, _ in params))  # imports, before any clock
    shown = " ".join(f"--param {name}={lo}..{hi}" for name, lo, hi in params)
    print(f"`verify --scope bounded {shown}` (in process, through verify.api) on the threshold output of "
          f"{Path(args.kernel).name}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}\n")
    print("| run | workers | seconds | speed-up | efficiency | verdict |")
    print("|---|---:|---:|---:|---:|---|")
    serial, verdict = verify_seconds(program, params)
    print(f"| serial | 1 | {serial:.2f} | 1.00x | 100% | {verdict} |", flush=True)
    notes = []
    for workers in args.workers:
        runs = []
        if "workers" in args.modes:
            for method in args.pool_method:
                runs.append((f"--workers ({method})", functools.partial(in_fresh_process, args, workers, method)))
        if "cluster" in args.modes:
            for profile in args.worker_profile:
                runs.append((f"--cluster (profiler {profile})",
                             functools.partial(on_local_cluster, program, params, workers, notes, profile == "on")))
        for name, run in runs:
            seconds, verdict = run()
            speedup = serial / seconds
            print(f"| {name} | {workers} | {seconds:.2f} | {speedup:.2f}x | {100 * speedup / workers:.0f}% | "
                  f"{verdict} |", flush=True)
    print("\n" + "\n".join(f"- {note}" for note in notes))
    return 0


def on_local_cluster(program, params, workers: int, notes: list, profile: bool = True) -> tuple[float, str]:
    """verify_seconds with --cluster on a LocalCluster of `workers` single-threaded worker
    processes, started (and its workers up) before the clock starts. Adds a note on where
    the time went, from the scheduler's task stream."""
    import logging

    import dask
    from distributed import Client, LocalCluster, get_task_stream

    logging.getLogger("distributed").setLevel(logging.ERROR)
    config = dask.config.set({"distributed.worker.profile.enabled": profile})
    with config, LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                              host="127.0.0.1") as cluster, Client(cluster) as client:
        client.wait_for_workers(workers)
        began = time.time()
        with get_task_stream(client) as stream:
            result = verify_seconds(program, params, cluster=cluster.scheduler_address)
        ended = time.time()
        spans = [(s["start"], s["stop"], s["action"]) for task in stream.data for s in task["startstops"]]
        computed = [(a, b) for a, b, action in spans if action == "compute"]
        if computed:
            busy = sum(b - a for a, b in computed)
            first, last = min(a for a, _ in computed) - began, ended - max(b for _, b in computed)
            notes.append(f"--cluster {workers}, profiler {'on' if profile else 'off'}: {len(stream.data)} tasks; "
                         f"first began {first:.2f} s after the call, last ended {last:.2f} s before it returned; "
                         f"compute {busy:.2f} s in all ({busy / workers:.2f} s a worker), other work on workers "
                         f"{sum(b - a for a, b, action in spans if action != 'compute'):.2f} s")
    return result


def cmd_cluster(args) -> int:
    args.modes = ["cluster"]
    return cmd_fanout(args)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("scale")
    p.add_argument("--instances", type=int, default=100_000)
    p.add_argument("--memory", action="store_true", help="also peak traced memory, at the size and twice it")
    p.add_argument("kernels", nargs="*")
    p = sub.add_parser("differential")
    p.add_argument("--examples", type=int, default=10_000)
    for name in ("fanout", "cluster"):
        p = sub.add_parser(name)
        p.add_argument("kernel")
        p.add_argument("--param", action="append", default=[])
        p.add_argument("--workers", type=int, nargs="+", default=[2])
        if name == "fanout":
            p.add_argument("--modes", nargs="+", choices=["workers", "cluster"], default=["workers", "cluster"])
        p.add_argument("--pool-method", nargs="+", choices=["forkserver", "spawn"], default=["spawn"],
                       help="how --workers starts its processes (verify.fanout.POOL_METHOD); several: a row each")
        p.add_argument("--worker-profile", nargs="+", choices=["on", "off"], default=["on"],
                       help="the cluster workers' statistical profiler (Dask's default: on); several: a row each")
    p = sub.add_parser("one")
    p.add_argument("kernel")
    p.add_argument("--param", action="append", default=[])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--pool-method", default="spawn")
    args = parser.parse_args()
    commands = {"scale": cmd_scale, "differential": cmd_differential, "fanout": cmd_fanout, "cluster": cmd_cluster,
                "one": cmd_one}
    return commands[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
