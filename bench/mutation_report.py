"""Mutation report: kill rate of the mutants of the threshold output over kernels/, and
the throughput of the counterexample search.

    python bench/mutation_report.py [--max-param 2] [--search-examples 200] [--json]

Per kernel: mutants, killed, equivalent (the mutated wait was masked or redundant),
unknown, kill rate = killed / (killed + equivalent). Then `search` on the threshold
strategy (seed 1): kernels tried per second.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    from algorithm.registry import get_strategy
    from semantics.parser import parse_file
    from verify.search.mutate import kill_rate, run_mutants
    from verify.search.search import SearchOptions, search
    from verify.search.generators import param_bounds

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-param", type=int, default=2)
    parser.add_argument("--search-examples", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    for path in sorted((ROOT / "kernels").glob("*.sync")):
        start = time.perf_counter()
        program = parse_file(str(path))
        synced = get_strategy("threshold")(program).program
        results = run_mutants(synced, param_bounds(synced, args.max_param))
        count = lambda outcome: sum(r.outcome == outcome for r in results)  # noqa: E731
        rows.append({"kernel": path.name, "mutants": len(results), "killed": count("killed"),
                     "equivalent": count("equivalent"), "unknown": count("unknown"),
                     "kill_rate": kill_rate(results), "seconds": round(time.perf_counter() - start, 1),
                     "equivalent_mutants": [r.mutant.where for r in results if r.outcome == "equivalent"]})
        if not args.json:
            row = rows[-1]
            rate = "n/a" if row["kill_rate"] is None else f"{100 * row['kill_rate']:.1f}%"
            print(f"{row['kernel']:<28} {row['mutants']:>4} mutants  {row['killed']:>4} killed  "
                  f"{row['equivalent']:>3} equivalent  {row['unknown']} unknown  {rate:>6}  {row['seconds']} s",
                  flush=True)
    total = {k: sum(r[k] for r in rows) for k in ("mutants", "killed", "equivalent", "unknown")}
    decided = total["killed"] + total["equivalent"]
    total["kill_rate"] = total["killed"] / decided if decided else None
    start = time.perf_counter()
    found = search(SearchOptions(strategy="threshold", examples=args.search_examples, seed=1))
    elapsed = time.perf_counter() - start
    searched = {"strategy": "threshold", "seed": 1, "examples": found.examples, "seconds": round(elapsed, 1),
                "per_second": round(found.examples / elapsed, 2), "found": found.finding is not None}
    if args.json:
        print(json.dumps({"kernels": rows, "total": total, "search": searched}, indent=2))
    else:
        rate = "n/a" if total["kill_rate"] is None else f"{100 * total['kill_rate']:.1f}%"
        print(f"total: {total['mutants']} mutants, {total['killed']} killed, {total['equivalent']} equivalent, "
              f"{total['unknown']} unknown: kill rate {rate}")
        print(f"search --strategy threshold --seed 1: {found.examples} kernels in {elapsed:.1f} s "
              f"({searched['per_second']} per second), counterexample found: {searched['found']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
