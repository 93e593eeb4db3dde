"""Which kernels the Lean export covers, and (with --mirror) how the exported definitions
fare against the reference semantics.

    python bench/lean_coverage.py [--strategy S] [--max-param K] [--mirror] [--cap N] [KERNEL ...]

Without kernels: every kernels/*.sync and kernels/suite/*.sync. Per kernel: `exported`
(with how many bounded `native_decide` claims the module makes) or `refused` (with the
error), then the totals. With --mirror, each exported module is read back
(tests/lean_export/lean_terms.py), every claim is replayed on the mirror of the Lean
definitions, and the mirror is compared with semantics/machines.py in every reachable
state of every valuation within the bounds (tests/lean_export/agreement.py): valuations
and states compared, or the first disagreement. --cap bounds the states per valuation
and machine (a valuation over it is reported as capped, not compared).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from algorithm.registry import get_strategy  # noqa: E402
from lean_export.export import export_files  # noqa: E402
from semantics.errors import SyncproofError  # noqa: E402
from semantics.parser import parse_file  # noqa: E402
from verify.api.lean import plan_instances  # noqa: E402


def mirror_row(program, files: dict, strategy: str, max_param: int, cap: int) -> str:
    from tests.lean_export.agreement import agree
    from tests.lean_export.lean_machines import check
    from tests.lean_export.lean_terms import read_module

    module = read_module(next(text for rel, text in files.items() if rel.startswith("Kernels/")))
    (term,) = module.programs.values()
    wrong = [c.theorem for c in module.claims if check(term, c.valuation) != c.expected]
    if wrong or module.decide_count != len(module.claims):
        return f"claims NOT replayed: {wrong or 'a decide outside the claims'}"
    result = agree(get_strategy(strategy)(program).program, term, max_param, cap)
    if result.disagreement:
        return f"DISAGREES: {result.disagreement}"
    capped = " (some valuations over the cap, not compared)" if result.capped else ""
    return (f"{len(module.claims)} claims replayed; agrees on {result.valuations} valuations, "
            f"{result.states} states{capped}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernels", nargs="*")
    parser.add_argument("--strategy", default="threshold")
    parser.add_argument("--max-param", type=int, default=2)
    parser.add_argument("--mirror", action="store_true", help="replay the claims and compare the mirror")
    parser.add_argument("--cap", type=int, default=1_000_000, help="states per valuation and machine")
    args = parser.parse_args(argv)
    paths = [Path(k) for k in args.kernels] or (sorted((ROOT / "kernels").glob("*.sync"))
                                                + sorted((ROOT / "kernels" / "suite").glob("*.sync")))
    exported = refused = disagree = 0
    for path in paths:
        name = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.as_posix()
        start = time.process_time()
        try:
            program = parse_file(str(path))
            files = export_files(program, path.name, args.strategy, args.max_param, planner=plan_instances)
        except SyncproofError as err:
            refused += 1
            print(f"{name}: refused: {err}", flush=True)
            continue
        exported += 1
        text = next(text for rel, text in files.items() if rel.startswith("Kernels/"))
        claims = text.count(":= by native_decide")
        row = f"{name}: exported ({claims} bounded claims, {time.process_time() - start:.1f} s CPU)"
        if args.mirror:
            row += "; mirror: " + mirror_row(program, files, args.strategy, args.max_param, args.cap)
            disagree += "DISAGREES" in row or "NOT replayed" in row
        print(row, flush=True)
    print(f"total: {len(paths)} kernels, {exported} exported, {refused} refused"
          + (f", {disagree} disagreeing with the mirror" if args.mirror else ""))
    return 1 if refused or disagree else 0


if __name__ == "__main__":
    sys.exit(main())
