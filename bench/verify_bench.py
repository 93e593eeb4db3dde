"""Default `verify` of the suite kernels, as a user runs it: `syncproof verify K` in a
fresh process per kernel, with the default options (threshold strategy, happens-before
engine over 0..3, then the all-values proof on two workers and its 32-bit statement).

    python bench/verify_bench.py [--json] [FILE ...]

Per kernel: the command's wall time; when the proof started (the progress line that
announces it, so what comes before is planning and the bounded check); the proof's own
seconds and Z3 units (the JSON report); its status and the 32-bit statement. Without
FILEs, every kernel of kernels/suite/. Goal (docs/benchmarks.md): every suite kernel in
< 10 s on 2 cores, proof included. A measurement, not a timed test: the seconds move
with the machine's load (the units do not).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STARTED = re.compile(r"all-values proof of .* \((\d+(?:\.\d+)?)s\)$")


def measure(path: Path) -> dict:
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "verify.cli", "verify", "--json", str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=1800)
    wall = time.monotonic() - began
    row = {"kernel": path.stem, "wall": round(wall, 1), "exit": done.returncode, "proof_started": None}
    for line in done.stderr.splitlines():
        found = STARTED.search(line)
        if found:
            row["proof_started"] = float(found.group(1))
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        row["error"] = done.stderr.strip().splitlines()[-1:] or ["no output"]
        return row
    proof = report.get("all_values") or {}
    row.update(verdict=report["verdict"], proof=proof.get("status"), proof_seconds=proof.get("seconds"),
               units=(proof.get("budget") or {}).get("z3_units"),
               int32=(proof.get("int32_range") or {}).get("status"))
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    files = args.files or sorted((ROOT / "kernels" / "suite").glob("*.sync"))
    rows = []
    for path in files:
        rows.append(measure(path))
        if not args.json:
            print(rows[-1], file=sys.stderr, flush=True)
    rows.sort(key=lambda r: -r["wall"])
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print("| kernel | wall | proof started at | proof | Z3 units | all values | 32-bit range |")
    print("|---|---:|---:|---:|---:|---|---|")
    for r in rows:
        seconds = "" if r.get("proof_seconds") is None else f"{r['proof_seconds']:.1f} s"
        units = "" if r.get("units") is None else f"{r['units']:,}"
        started = "" if r["proof_started"] is None else f"{r['proof_started']:.1f} s"
        print(f"| {r['kernel']} | {r['wall']:.1f} s | {started} | {seconds} | {units} | {r.get('proof', r.get('error'))} "
              f"| {r.get('int32') or ''} |")
    under = sum(1 for r in rows if r["wall"] < 10)
    print(f"\n{under} of {len(rows)} under 10 s.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
