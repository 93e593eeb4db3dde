"""Does the cost per op depend on the program's size? Plan only the first K ops of
generated programs of several sizes and time it (and every 1,000 ops on the way):
a pass that scans the whole program per op shows up as a slower start on bigger
programs.

    python bench/scale_probe.py [--first 300] [--ops 1000 10000 100000]

Each size runs in its own process; parsing is not timed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

_CHILD = r"""
import sys, time
sys.path.insert(0, {bench!r})
from generate import chain_kernel
from semantics.parser import parse
import algorithm.threshold.plan as threshold_mod
program = parse(chain_kernel({blocks}))
plan_site, seen, start = threshold_mod.site_facts, [0], [time.perf_counter()]
class Enough(Exception):
    pass
def counted(*args):  # site_facts runs once per op
    seen[0] += 1
    if seen[0] % 1000 == 0:
        print(f"  {{seen[0]}} ops planned after {{time.perf_counter() - start[0]:.1f}} s", flush=True)
    if seen[0] > {first}:
        raise Enough
    return plan_site(*args)
threshold_mod.site_facts = counted
try:
    threshold_mod.plan_thresholds(program)
except Enough:
    pass
print(f"{{{ops}:>7}} ops: first {first} planned in {{time.perf_counter() - start[0]:.1f}} s", flush=True)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--first", type=int, default=300)
    parser.add_argument("--ops", type=int, nargs="+", default=[1000, 10000, 100000])
    args = parser.parse_args()
    for ops in args.ops:
        code = _CHILD.format(bench=str(HERE), blocks=max(1, round(ops / 4)), first=args.first, ops=ops)
        subprocess.run([sys.executable, "-c", code], cwd=HERE.parent, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
