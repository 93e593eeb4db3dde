"""Benchmark `sync` on generated kernels: wall time and peak memory per size.

    python bench/sync_bench.py [--strategy threshold] [--ops 100 250 500 1000] [--json]

Each size runs in a fresh subprocess, so peak memory (ru_maxrss) is that size's own.
The time is the strategy's alone (wall and CPU: on a shared machine the CPU time is
the comparable one); parsing is reported beside it (its time, and the
peak memory once parsed).
The kernels come from bench/generate.py (a chain of pipelined loop nests).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

_CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, {bench!r})
from generate import chain_kernel
from semantics.parser import parse
from semantics.ir import ops
from algorithm.registry import get_strategy
import algorithm.threshold.plan as threshold_mod
parse_start = time.perf_counter()
program = parse(chain_kernel({blocks}))
parse_seconds = time.perf_counter() - parse_start
parse_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
start = time.perf_counter()
cpu_start = time.process_time()
# Progress on stderr: one line per 1,000 calls of site_facts (once per op in planning,
# and once more per planned wait in the barrier pass).
site_facts, seen = threshold_mod.site_facts, [0]
def counted(*args):
    seen[0] += 1
    if seen[0] % 1000 == 0:
        print(f"planned {{seen[0]}} ops in {{time.perf_counter() - start:.0f}} s", file=sys.stderr, flush=True)
    return site_facts(*args)
threshold_mod.site_facts = counted
result = get_strategy({strategy!r})(program)
elapsed = time.perf_counter() - start
cpu = time.process_time() - cpu_start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"ops": len(ops(program)), "seconds": round(elapsed, 2), "cpu_seconds": round(cpu, 2), "peak_mib": round(peak, 1),
                  "waits": result.stats.waits, "dropped": result.stats.dropped_redundant or 0,
                  "barriers": result.stats.barriers, "conservative": result.stats.conservative or 0,
                  "slices": result.stats.slices, "slice_shapes": result.stats.slice_shapes,
                  "parse_seconds": round(parse_seconds, 2), "parse_peak_mib": round(parse_peak, 1)}}))
"""


def run(strategy: str, ops: int) -> dict:
    blocks = max(1, round(ops / 4))  # about 4 ops per block
    code = _CHILD.format(bench=str(HERE), blocks=blocks, strategy=strategy)
    out = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=HERE.parent,
                         check=True)
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row["strategy"] = strategy
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--strategy", default="threshold")
    parser.add_argument("--ops", type=int, nargs="+", default=[100, 250, 500, 1000])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    for ops in args.ops:
        row = run(args.strategy, ops)
        rows.append(row)
        if not args.json:
            per_op = 1000 * row["seconds"] / row["ops"]
            print(f"{row['strategy']:>9} {row['ops']:>6} ops  {row['seconds']:>8.2f} s  cpu {row['cpu_seconds']:>8.2f} s  "
                  f"({per_op:.0f} ms/op)  "
                  f"peak {row['peak_mib']:.0f} MiB  waits {row['waits']}  dropped {row['dropped']}  "
                  + (f"slices {row['slices']} ({row['slice_shapes']} shapes planned)  " if row["slices"] else "") +
                  f"(parse {row['parse_seconds']:.1f} s, {row['parse_peak_mib']:.0f} MiB)", flush=True)
    if args.json:
        print(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
