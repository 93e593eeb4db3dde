"""Which recorded `sync` outputs (tests/data/sync_outputs) today's code changes, and the
time of each: a quick byte comparison, without the explicit-engine judge of
tests/algorithm/test_sync_outputs.py (which decides whether a change is allowed).

    python bench/golden_diff.py [--jobs 2] [--only SUBSTRING ...]

Prints one line per changed or failing entry, then the totals and the slowest entries
(CPU seconds of the strategy alone, in its worker process).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "sync_outputs"


def one(name: str) -> tuple[str, str, float, str]:
    sys.path.insert(0, str(ROOT))
    from algorithm.registry import get_strategy
    from semantics.printer import print_program
    from verify.cli.mlir import load

    golden = json.loads((OUT / "manifest.json").read_text())[name]
    program = load(str(ROOT / golden["kernel"]))
    start = time.process_time()
    try:
        result = get_strategy(golden["strategy"])(program)
    except Exception as error:  # a crash is a finding here, not a reason to stop
        return name, "error", time.process_time() - start, repr(error)
    seconds = time.process_time() - start
    text = print_program(result.program)
    if golden["status"] != "ok":
        return name, f"was {golden['status']}", seconds, ""
    expected = (OUT / name).read_text()
    if text == expected:
        return name, "same", seconds, ""
    import difflib

    diff = "".join(difflib.unified_diff(expected.splitlines(True), text.splitlines(True), n=0))
    return name, "changed", seconds, diff


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", nargs="*", default=[])
    args = parser.parse_args()
    names = sorted(json.loads((OUT / "manifest.json").read_text()))
    if args.only:
        names = [n for n in names if any(s in n for s in args.only)]
    rows = []
    with concurrent.futures.ProcessPoolExecutor(args.jobs) as pool:
        for name, status, seconds, detail in pool.map(one, names):
            rows.append((name, status, seconds))
            if status not in ("same",):
                print(f"{status:>10}  {seconds:7.2f} s  {name}\n{detail}", flush=True)
    changed = sum(1 for _, s, _ in rows if s not in ("same",))
    print(f"{len(rows)} entries, {changed} not byte-identical, {sum(r[2] for r in rows):.1f} s CPU in all")
    for name, status, seconds in sorted(rows, key=lambda r: -r[2])[:8]:
        print(f"  {seconds:7.2f} s  {status:>10}  {name}")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
