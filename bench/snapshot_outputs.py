"""Snapshot the user-visible outputs of every kernel in kernels/, to compare two revisions.

For each kernel: `sync` (threshold, barrier), `verify --json --scope bounded` (manual for
hand-synchronized kernels, threshold for all), `simulate --json` (threshold). Outputs go
to DIR, one file per (kernel, command); compare two snapshots with `diff -r`.
For a change that must not alter what users see (a refactoring): the outputs must be
byte-identical before and after.

    python bench/snapshot_outputs.py /tmp/before
    python bench/snapshot_outputs.py /tmp/after && diff -r /tmp/before /tmp/after
"""

from __future__ import annotations

import argparse
import concurrent.futures
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def commands(kernel: Path) -> list[tuple[str, list[str]]]:
    name = str(kernel.relative_to(ROOT / "kernels")).replace("/", "__")
    k = str(kernel)
    runs = [
        (f"{name}.sync-threshold", ["sync", k]),
        (f"{name}.sync-barrier", ["sync", k, "--strategy", "barrier"]),
        (f"{name}.verify-threshold", ["verify", k, "--json", "--scope", "bounded"]),
        (f"{name}.simulate-threshold", ["simulate", k, "--json"]),
    ]
    if "suite" not in kernel.parts and kernel.suffix == ".sync":
        runs.append((f"{name}.verify-manual", ["verify", k, "--json", "--scope", "bounded", "--strategy", "manual"]))
    return runs


def run(out: Path, tag: str, argv: list[str]) -> str:
    proc = subprocess.run(["syncproof", *argv], capture_output=True, text=True, timeout=600, cwd=ROOT)
    (out / tag).write_text(f"exit {proc.returncode}\n--- stdout\n{proc.stdout}--- stderr\n{proc.stderr}")
    return tag


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    kernels = sorted((ROOT / "kernels").rglob("*.sync")) + sorted((ROOT / "kernels").rglob("*.mlir"))
    jobs = [job for kernel in kernels for job in commands(kernel)]
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for tag in pool.map(lambda job: run(args.out, *job), jobs):
            print(tag, file=sys.stderr)


if __name__ == "__main__":
    main()
