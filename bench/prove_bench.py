"""Benchmark the all-values proof (verify/proof/prove.py): per kernel, the threshold output's
proof status, seconds and obligation count.

    python bench/prove_bench.py [--json] [--timeout SECONDS] [--jobs N] [KERNEL ...]

Default kernels: kernels/*.sync and kernels/suite/*.sync. One run each, wall time, and
the Z3 resource units the obligations' queries spent (the same for every --jobs >= 2:
the load moves the seconds, not the units). This is a measurement, not a timed test.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from algorithm.registry import get_strategy
from semantics.parser import parse_file
from verify.proof.prove import ProofOptions, prove


def _name(path: Path) -> str:
    """The kernel's path under kernels/, else under the repository, else as given."""
    path = path.resolve()
    for base in (ROOT / "kernels", ROOT):
        if path.is_relative_to(base):
            return path.relative_to(base).as_posix()
    return path.as_posix()


def measure(path: Path, timeout: float, jobs: int = 1) -> dict:
    program = get_strategy("threshold")(parse_file(str(path))).program
    start = time.perf_counter()
    proof = prove(program, ProofOptions(timeout=timeout, jobs=jobs))
    seconds = round(time.perf_counter() - start, 2)
    row = {"kernel": _name(path), "status": proof.status, "seconds": seconds,
           "z3_units": proof.units, "obligations": len(proof.obligations),
           "proved": sum(1 for o in proof.obligations if o.status == "proved"), "reason": proof.reason}
    print(f"{row['kernel']}: {proof.status} in {seconds} s, {proof.units:,} Z3 units "
          f"({row['proved']}/{row['obligations']})",
          file=sys.stderr, flush=True)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kernels", nargs="*")
    parser.add_argument("--timeout", type=float, default=ProofOptions().timeout)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes of each proof (ProofOptions.jobs)")
    args = parser.parse_args()
    paths = [Path(k).resolve() for k in args.kernels] or sorted((ROOT / "kernels").glob("*.sync")) + sorted(
        (ROOT / "kernels" / "suite").glob("*.sync"))
    rows = [measure(p, args.timeout, args.jobs) for p in paths]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print("| kernel | all-values proof | seconds | Z3 units | obligations proved | why not |")
        print("|---|---|---:|---:|---|---|")
        for r in rows:
            print(f"| {r['kernel']} | {r['status']} | {r['seconds']:.1f} | {r['z3_units']:,} | "
                  f"{r['proved']}/{r['obligations']} | "
                  f"{(r['reason'] or '').replace('|', '/')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
