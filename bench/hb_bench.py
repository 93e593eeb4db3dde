"""Benchmarks of the happens-before engine (docs/happens-before.md).

    python bench/hb_bench.py scale [--instances 100000] [KERNEL ...]
        the threshold output of every kernel (kernels/*.sync and kernels/suite/*.sync by
        default) at the smallest common parameter value giving >= INSTANCES instances,
        verified by the happens-before engine: seconds, and peak traced memory at that
        size and at twice the size (linear memory: the ratio stays near 2)
    python bench/hb_bench.py differential [--examples 10000]
        generated programs with waits and barriers (tests/verify/engines), checked by
        both engines: verdict, failing valuation and trace length must agree
    python bench/hb_bench.py fanout [--workers 2] KERNEL --param N=0..K
        one kernel's valuations serially and on a process pool: the speedup

Syncing is not timed (it is the threshold strategy's cost, not the checker's).
"""

from __future__ import annotations

import argparse
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


def cmd_fanout(args) -> int:
    from verify.cli.main import parse_bounds
    from verify.engines.valuations import check_valuations
    from verify.engines.explicit import explore
    from verify.fanout import FanOut
    from verify.verdicts import CheckOptions

    program = get_strategy("threshold")(parse_file(args.kernel)).program
    bounds = parse_bounds(program, args.param, None)
    engines = {"happens-before": happens_before.decide_valuation, "explicit": explore}
    decide = engines[args.engine]
    times = {}
    for fan_out in (FanOut(), FanOut(workers=args.workers)):
        start = time.perf_counter()
        result = check_valuations(program, bounds, CheckOptions(), decide, args.engine, fan_out)
        times[fan_out.workers] = time.perf_counter() - start
        print(f"workers {fan_out.workers}: {result.verdict.value}, {result.valuations} valuations, "
              f"{times[fan_out.workers]:.1f} s", flush=True)
    print(f"speedup {times[1] / times[args.workers]:.2f}x on {args.workers} workers")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("scale")
    p.add_argument("--instances", type=int, default=100_000)
    p.add_argument("--memory", action="store_true", help="also peak traced memory, at the size and twice it")
    p.add_argument("kernels", nargs="*")
    p = sub.add_parser("differential")
    p.add_argument("--examples", type=int, default=10_000)
    p = sub.add_parser("fanout")
    p.add_argument("kernel")
    p.add_argument("--param", action="append", default=[])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--engine", choices=["happens-before", "explicit"], default="happens-before")
    args = parser.parse_args()
    return {"scale": cmd_scale, "differential": cmd_differential, "fanout": cmd_fanout}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
