"""Benchmark the checkers on the kernel corpus: seconds per kernel for the explicit
engine and the Z3 engine, with every parameter bounded to 0..K (default K = 0..3), the
explicit engine's states per second at the largest K, and the all-values proof
(verify/proof/prove.py: status and seconds; only for programs whose bounded check holds).

    python bench/engines_bench.py [--max-param 0 1 2 3] [--json] [KERNEL ...]

Rows: every kernels/*.sync as written (`manual`, as tests/test_corpus.py verifies them)
and as synchronized by `threshold`; kernels/bugs/*.sync only as written (they are
hand-synced on purpose). Each cell is one check's wall time; the verdict column is
the verdict at the largest K, marked `DISAGREE` if the engines reach different
definite verdicts anywhere (exit status 1), and noted when one says `unknown`.
This is a measurement, not a timed test.
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
from verify.engines import explicit
from verify.engines import z3_check
from verify.proof.prove import prove
from verify.search.generators import param_bounds


def cases(paths: list[Path]):
    for path in paths:
        strategies = ["manual"] if path.parent.name == "bugs" else ["manual", "threshold"]
        for strategy in strategies:
            yield path, strategy


def measure(path: Path, strategy: str, bounds_max: list[int]) -> dict:
    program = get_strategy(strategy)(parse_file(str(path))).program
    row = {"kernel": path.relative_to(ROOT / "kernels").as_posix(), "strategy": strategy,
           "explicit": {}, "z3": {}, "verdicts": {}}
    for k in bounds_max:
        bounds = param_bounds(program, k)
        start = time.perf_counter()
        a = explicit.check(program, bounds)
        row["explicit"][k] = round(time.perf_counter() - start, 3)
        start = time.perf_counter()
        b = z3_check.check(program, bounds)
        row["z3"][k] = round(time.perf_counter() - start, 3)
        row["verdicts"][k] = (a.verdict.value, b.verdict.value)
        row["states_per_s"] = round(a.states / max(row["explicit"][k], 1e-3))
        print(f"{row['kernel']} {strategy} K={k}: explicit {row['explicit'][k]}s {a.verdict.value}, "
              f"z3 {row['z3'][k]}s {b.verdict.value}", file=sys.stderr, flush=True)
    if a.holds:
        start = time.perf_counter()
        proof = prove(program)
        row["proof"] = (proof.status, round(time.perf_counter() - start, 2))
    else:
        row["proof"] = ("-", 0.0)
    return row


def table(rows: list[dict], bounds_max: list[int]) -> str:
    head = (["kernel", "strategy", "verdict"] + [f"explicit K={k}" for k in bounds_max]
            + [f"z3 K={k}" for k in bounds_max] + ["states/s", "all values"])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        pairs = row["verdicts"].values()
        verdict = row["verdicts"][bounds_max[-1]][0]
        if any(a != b and "unknown" not in (a, b) for a, b in pairs):
            verdict = "DISAGREE " + "; ".join(f"{a}/{b}" for a, b in pairs)
        elif any("unknown" in pair for pair in pairs):  # a time limit: not a disagreement
            verdict += " (an engine: unknown at K=" + ",".join(str(k) for k, pair in row["verdicts"].items()
                                                            if "unknown" in pair) + ")"
        cells = [row["kernel"], row["strategy"], verdict]
        cells += [f"{row['explicit'][k]:.2f}" for k in bounds_max] + [f"{row['z3'][k]:.2f}" for k in bounds_max]
        status, seconds = row["proof"]
        cells += [str(row["states_per_s"]), status if status == "-" else f"{status} {seconds:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kernels", nargs="*", help="kernel files (default: the corpus)")
    parser.add_argument("--max-param", type=int, nargs="+", default=[0, 1, 2, 3], metavar="K")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    paths = [Path(k).resolve() for k in args.kernels] or sorted((ROOT / "kernels").glob("*.sync")) + sorted(
        (ROOT / "kernels" / "bugs").glob("*.sync"))
    rows = [measure(path, strategy, args.max_param) for path, strategy in cases(paths)]
    print(json.dumps(rows, indent=2) if args.json else table(rows, args.max_param))
    return 1 if any(a != b and "unknown" not in (a, b) for row in rows for a, b in row["verdicts"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
