"""Record the `sync` outputs (threshold and barrier) of every kernel of the corpus, the
suite, the SNAX kernels, the threshold cases and the reproducers, as the golden set
that tests/algorithm/test_sync_outputs.py holds later revisions to.

    python bench/record_sync_outputs.py [--timeout 150] [--only NAME ...] [--force] [--reprove]

Each kernel runs in its own subprocess with a time limit. Output: one file per
(kernel, strategy) in tests/data/sync_outputs/, `<id>.<strategy>.sync` (the printed
program), and tests/data/sync_outputs/manifest.json with, per file, the status
(`ok`, `refused` with the message, `timeout`), the number of waits, of barriers and of
conservative waits, and for a threshold output without barriers the status of its
all-values proof (`all_values`: `proved`, `unknown` or `refuted`; tests/support/judge.py
`PROOF`, a deterministic budget). The rule the test encodes (docs/planner.md, "Outputs are judged by
meaning"): a later output is verified (bisimilar when exact, else sound, per the
happens-before engine), proved for every parameter value where the recorded output is,
and no worse under the one cost function (verify/cost.py); a refused or timed-out
kernel may become anything sound.

Re-recording judges every changed output by that rule first (tests/support/judge.py) and
prints the verdict; an output that breaks it is not recorded unless --force is given.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests/support/judge.py
OUT = ROOT / "tests" / "data" / "sync_outputs"
STRATEGIES = ("threshold", "barrier")


def kernels() -> list[Path]:
    k = ROOT / "kernels"
    data = ROOT / "tests" / "data"
    return (sorted(k.rglob("*.sync")) + sorted((k / "snax").glob("*.mlir"))
            + sorted((data / "threshold_cases").glob("*.sync")) + sorted((data / "repro").glob("*.sync")))


def kernel_id(path: Path) -> str:
    rel = path.relative_to(ROOT)
    parts = rel.parts[1:] if rel.parts[0] == "kernels" else rel.parts[2:]
    return "__".join(parts)


_CHILD = r"""
import json, sys
from verify.cli.mlir import load
from algorithm.registry import get_strategy
from semantics.printer import print_program
from semantics.errors import SyncproofError
program = load({path!r})
try:
    result = get_strategy({strategy!r})(program)
except SyncproofError as err:
    print(json.dumps({{"status": "refused", "message": str(err)}}))
    sys.exit(0)
print(json.dumps({{"status": "ok", "text": print_program(result.program),
                  "waits": result.stats.waits, "barriers": result.stats.barriers,
                  "conservative": result.stats.conservative or 0}}))
"""


def record(path: Path, strategy: str, timeout: float) -> dict:
    code = _CHILD.format(path=str(path), strategy=strategy)
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "timeout_seconds": timeout}
    if proc.returncode != 0:
        return {"status": "error", "message": proc.stderr.strip().splitlines()[-1:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _result(strategy: str, row: dict, text: str):
    """What the judge reads of a SyncResult, from a recorded row and its text."""
    from algorithm.registry import SyncStats
    from semantics.parser import parse

    class Result:
        program = parse(text)
        stats = SyncStats(strategy=strategy, waits=row["waits"], barriers=row["barriers"], semaphores=0,
                          conservative=row["conservative"])

    return Result


def _judged(golden: dict | None, recorded: Path, path: Path, strategy: str, row: dict, text: str | None) -> str | None:
    """The judge's verdict on a changed output (None when unchanged or new)."""
    if golden is None or row.get("status") != "ok":
        return None
    old = recorded.read_text() if golden.get("status") == "ok" and recorded.exists() else None
    if old == text:
        return None
    from semantics.parser import parse
    from tests.support.judge import judge
    from verify.api import load
    from verify.cost import cost_of

    result = _result(strategy, row, text)
    why = judge(golden, old, load(str(path)), result)
    if why:
        return f"rejected: {why}"
    after = cost_of(result.program, row["conservative"])
    if old is None:
        return f"accepted: was {golden.get('status')}, now verified ({after})"
    before = cost_of(parse(old), golden["conservative"])
    return f"accepted: verified, cost {before} -> {after}"


def _all_values(golden: dict | None, recorded: Path, strategy: str, row: dict, text: str | None,
                reprove: bool) -> str | None:
    """The all-values proof's status of a threshold output (tests/support/judge.py
    `all_values`): the recorded one while the text is unchanged (the proof is
    deterministic) unless `reprove` (after a change to the proof), else proved anew.
    None where the proof does not apply."""
    if row.get("status") != "ok" or strategy != "threshold":
        return None
    if not reprove and golden and "all_values" in golden and recorded.exists() and recorded.read_text() == text:
        return golden["all_values"]
    from tests.support.judge import all_values

    return all_values(_result(strategy, row, text))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timeout", type=float, default=150)
    parser.add_argument("--only", nargs="*", help="kernel ids to (re)record")
    parser.add_argument("--force", action="store_true", help="record outputs that break the rule too")
    parser.add_argument("--reprove", action="store_true",
                        help="prove unchanged threshold outputs again (after a change to the proof)")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    manifest_path = OUT / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    for path in kernels():
        kid = kernel_id(path)
        if args.only and kid not in args.only:
            continue
        for strategy in STRATEGIES:
            name = f"{kid}.{strategy}.sync"
            row = record(path, strategy, args.timeout)
            text = row.pop("text", None)
            verdict = _judged(manifest.get(name), OUT / name, path, strategy, row, text)
            if verdict is not None:
                print(f"{name}: {verdict}", flush=True)
                if verdict.startswith("rejected") and not args.force:
                    continue
            proved = _all_values(manifest.get(name), OUT / name, strategy, row, text, args.reprove)
            if proved is not None:
                row["all_values"] = proved
            if text is not None:
                (OUT / name).write_text(text)
            elif (OUT / name).exists():
                (OUT / name).unlink()
            manifest[name] = {"kernel": str(path.relative_to(ROOT)), "strategy": strategy, **row}
            print(name, row.get("status"), row.get("waits"), row.get("conservative"), row.get("all_values", ""), flush=True)
            manifest_path.write_text(json.dumps(dict(sorted(manifest.items())), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
