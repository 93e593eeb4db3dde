"""Time `sync` (in process, start-up excluded) on every kernel of kernels/ (corpus, bugs,
suite, SNAX .mlir): CPU and wall seconds per kernel and strategy, the slowest first.

    python bench/suite_bench.py [--strategy threshold] [--json] [--units] [FILE ...]

With FILEs (e.g. ../shared/repro/threshold_slow_nested_ifs.sync), those instead of kernels/.
With --units, also the Z3 work of each kernel: its solver checks and the resource units
they spent (Z3's deterministic `rlimit count`). These do not move with the machine's
load, unlike the seconds (which vary severalfold on a shared machine),
so an A/B of a planner change on them needs no same-hour pairing; they miss the Python
side (simplifier, term building), which the seconds hold. The meter reads Z3's statistics
around every check, so the seconds of a --units run are not comparable with others.

Goal (docs/planner.md): every kernel < 0.3 s. CPU time is reported beside
wall time because the machine is shared: wall time includes waiting for a core.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def kernels() -> list[Path]:
    k = ROOT / "kernels"
    return sorted(k.rglob("*.sync")) + sorted((k / "snax").glob("*.mlir"))


class Z3Meter:
    """Checks and resource units of every Z3 solver check while installed (wraps
    z3.Solver.check: SimpleSolver and Solver alike). A context's `rlimit count` is shared by
    its solvers and cumulative, so each check adds the count's rise across it."""

    def __init__(self):
        import z3

        self.checks = self.units = 0
        self._z3 = z3
        self._check = z3.Solver.check
        meter = self

        def check(solver, *assumptions):
            before = meter.count(solver)
            try:
                return meter._check(solver, *assumptions)
            finally:
                meter.checks += 1
                meter.units += meter.count(solver) - before

        z3.Solver.check = check

    @staticmethod
    def count(solver) -> int:
        stats = solver.statistics()
        return stats.get_key_value("rlimit count") if "rlimit count" in stats.keys() else 0

    def reading(self) -> tuple[int, int]:
        return self.checks, self.units


def main() -> int:
    from algorithm.registry import get_strategy
    from verify.cli.mlir import load

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--strategy", default="threshold")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--units", action="store_true", help="also count Z3 checks and resource units")
    parser.add_argument("files", nargs="*", type=Path, help="kernels to time instead of kernels/")
    args = parser.parse_args()
    meter = Z3Meter() if args.units else None
    rows = []
    for path in [p.resolve() for p in args.files] or kernels():
        program = load(str(path))
        checks, units = meter.reading() if meter else (0, 0)
        cpu, wall = time.process_time(), time.perf_counter()
        result = get_strategy(args.strategy)(program)
        name = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
        rows.append({"kernel": name, "strategy": args.strategy,
                     "cpu_seconds": round(time.process_time() - cpu, 3),
                     "seconds": round(time.perf_counter() - wall, 3), "waits": result.stats.waits,
                     "conservative": result.stats.conservative or 0})
        if meter:
            rows[-1]["z3_checks"] = meter.checks - checks
            rows[-1]["z3_units"] = meter.units - units
    rows.sort(key=lambda r: -r["cpu_seconds"])
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    for r in rows:
        units = f"  z3 {r['z3_checks']:>6} checks {r['z3_units'] / 1e6:>9.3f} M units" if meter else ""
        print(f"{r['kernel']:<48} cpu {r['cpu_seconds']:>7.3f} s  wall {r['seconds']:>7.3f} s  waits {r['waits']}{units}")
    over = [r for r in rows if r["cpu_seconds"] >= 0.3]
    print(f"{len(rows)} kernels, total cpu {sum(r['cpu_seconds'] for r in rows):.2f} s; "
          f"{len(over)} at or over 0.3 s cpu"
          + (f"; z3 {sum(r['z3_checks'] for r in rows)} checks, {sum(r['z3_units'] for r in rows) / 1e6:.3f} M units"
             if meter else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
