"""Time `sync` (in process, start-up excluded) on every kernel of kernels/ (corpus, bugs,
suite, SNAX .mlir): CPU and wall seconds per kernel and strategy, the slowest first.

    python bench/suite_bench.py [--strategy threshold] [--json] [FILE ...]

With FILEs (e.g. ../shared/repro/threshold_slow_nested_ifs.sync), those instead of kernels/.

Goal (issue 16, docs/sync-speed.md): every kernel < 0.3 s. CPU time is reported beside
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


def main() -> int:
    from algorithm.registry import get_strategy
    from verify.cli.mlir import load

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--strategy", default="threshold")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("files", nargs="*", type=Path, help="kernels to time instead of kernels/")
    args = parser.parse_args()
    rows = []
    for path in [p.resolve() for p in args.files] or kernels():
        program = load(str(path))
        cpu, wall = time.process_time(), time.perf_counter()
        result = get_strategy(args.strategy)(program)
        name = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
        rows.append({"kernel": name, "strategy": args.strategy,
                     "cpu_seconds": round(time.process_time() - cpu, 3),
                     "seconds": round(time.perf_counter() - wall, 3), "waits": result.stats["waits"],
                     "conservative": result.stats.get("conservative", 0)})
    rows.sort(key=lambda r: -r["cpu_seconds"])
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    for r in rows:
        print(f"{r['kernel']:<48} cpu {r['cpu_seconds']:>7.3f} s  wall {r['seconds']:>7.3f} s  waits {r['waits']}")
    over = [r for r in rows if r["cpu_seconds"] >= 0.3]
    print(f"{len(rows)} kernels, total cpu {sum(r['cpu_seconds'] for r in rows):.2f} s; "
          f"{len(over)} at or over 0.3 s cpu")
    return 0


if __name__ == "__main__":
    sys.exit(main())
