"""The threshold planner's speed and memory goals, each measured in a fresh process.

    python bench/planner_goals.py [--large] [--json]

Rows (CPU seconds of the strategy alone, in a process that has loaded the planner's
modules, as a compiler that plans many kernels has; loading them, once per process, is
its own row; peak memory of that process):
- every kernel of kernels/ (corpus, suite, SNAX .mlir), each in its own process: how many
  plan in < 0.1 s, the slowest ones, and the largest peak memory (< 200 MiB);
- the reproducers of ../shared/repro (when present): nested ifs, the GEMM with
  `if k == 0`, 24 straight-line ops, `% K` indices with DMA queues (under `threshold`,
  and under `barrier`, whose layout plans each region between barriers on its own, each
  shape of region once);
- a prefetching ring whose depth is a parameter (slots `% (D + 1)`,
  tests/data/threshold_cases/ring_prefetch_runtime_depth.sync);
- guards whose period is a parameter (`k % K == K - 1`, `if k % K == 0 ... else ...`:
  tests/data/nest/period_over_parameters*.sync);
- one loop body of 1,000 and 10,000 ops over 5 engines (bench/generate.py wide_body_kernel);
- the chain of pipelined loop nests (bench/generate.py chain_kernel) at 1,000 ops, and with
  --large at 100,000 ops (< 20 s, < 1 GiB), under `threshold` and under `barrier`;
- 400 straight-line ops over 200 parameters, each reading a parameter-indexed element and
  writing its own (bench/generate.py many_params_kernel): no dependence, < 1 s.
Which stage planned each is printed beside it (closed: flat programs by arithmetic; nest:
rectangular loop nests by arithmetic; by statement; general: with Z3).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPRO = ROOT.parent / "shared" / "repro"

_CHILD = r"""
import importlib, json, pkgutil, resource, sys, time
sys.path.insert(0, {root!r}); sys.path.insert(0, {bench!r})
from syncproof import load
from semantics.parser import parse
import generate
import algorithm
loading = time.process_time()
for module in pkgutil.walk_packages(algorithm.__path__, "algorithm."):  # the pass, loaded once per process
    importlib.import_module(module.name)
loading = time.process_time() - loading
from algorithm.registry import get_strategy
rows = []
for spec in {specs!r}:
    strategy, _, spec = spec.rpartition("@")
    program = load(spec) if not spec.startswith("gen:") else parse(eval("generate." + spec[4:]))
    cpu = time.process_time()
    result = get_strategy(strategy or "threshold")(program)
    cpu = time.process_time() - cpu
    stats = result.stats
    plain = stats.slices is None and not stats.conservative and stats.fallback is None
    stage = "barrier layout" if strategy else "closed" if plain and {closed}(program) else (
        "nest" if plain and {nest}(program) else "by statement" if stats.slices else "general")
    rows.append({{"what": spec, "cpu": round(cpu, 3), "waits": stats.waits, "stage": stage}})
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"rows": rows, "peak_mib": round(peak, 1), "loading": round(loading, 3)}}))
"""

# (On the transfer view, as the pipeline plans a program with DMA queues: algorithm/queues.py;
# its dead statements taken out first, as the pipeline does: live.py.)
_VIEW = ("(lambda v: (lambda live: v if live is None else live.program)("
         "__import__('algorithm.threshold.live', fromlist=['x']).live_program(v)))("
         "__import__('algorithm.queues', fromlist=['x']).transfer_view(p))")
_IS_FLAT = f"(lambda p: __import__('algorithm.threshold.closed', fromlist=['x']).sync_closed({_VIEW}) is not None)"
_IS_NEST = (f"(lambda p: __import__('algorithm.threshold.nest', fromlist=['x']).sync_nest({_VIEW}, "
            "__import__('algorithm.threshold.options', fromlist=['x']).PlannerOptions()) is not None)")


def measure(specs: list[str]) -> dict:
    code = _CHILD.format(root=str(ROOT), bench=str(ROOT / "bench"), specs=specs, closed=_IS_FLAT, nest=_IS_NEST)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def kernels() -> list[str]:
    k = ROOT / "kernels"
    return [str(p) for p in sorted(k.rglob("*.sync")) + sorted((k / "snax").glob("*.mlir"))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--large", action="store_true", help="also the 100,000-op chain")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = {}
    runs = [measure([k]) for k in kernels()]  # each in its own process: its own peak memory
    suite = {"rows": [r["rows"][0] | {"peak_mib": r["peak_mib"]} for r in runs],
             "peak_mib": max(r["peak_mib"] for r in runs)}
    fast = [r for r in suite["rows"] if r["cpu"] < 0.1]
    report["loading_s"] = max(r["loading"] for r in runs)
    report["kernels"] = {"count": len(suite["rows"]), "under_0.1_s": len(fast), "peak_mib": suite["peak_mib"],
                         "over_200_mib": [r["what"] for r in suite["rows"] if r["peak_mib"] >= 200],
                         "by_stage": {s: sum(r["stage"] == s for r in suite["rows"]) for s in ("closed", "nest", "by statement", "general")},
                         "slowest": sorted(suite["rows"], key=lambda r: -r["cpu"])[:8]}
    goals = []
    for name in ("threshold_slow_nested_ifs", "gemm_psum_if", "straight_line_24_ops", "barrier_slow_mod_k"):
        path = REPRO / f"{name}.sync"
        if path.exists():
            goals.append((name, [str(path)], 0.1, None))
    if (REPRO / "barrier_slow_mod_k.sync").exists():
        goals.append(("barrier_slow_mod_k, strategy barrier", [f"barrier@{REPRO / 'barrier_slow_mod_k.sync'}"], 0.1, None))
    goals.append(("prefetching ring with a run-time depth", [str(ROOT / "tests/data/threshold_cases/ring_prefetch_runtime_depth.sync")],
                  0.1, None))
    for name, data in (("guards with a parameter period", "period_over_parameters"),
                       ("the same in a triangular loop", "period_over_parameters_triangular"),
                       ("blocked accumulation (`k % K == 0` and its else)", "period_over_parameters_else"),
                       ("the else alone holding an engine's op", "period_over_parameters_else_only"),
                       ("blocked accumulation over a double-buffered tile", "period_beside_double_buffer")):
        goals.append((name, [str(ROOT / f"tests/data/nest/{data}.sync")], 0.1, None))
    goals += [("wide body, 1,000 ops", ["gen:wide_body_kernel(1000)"], 1.0, 200),
              ("wide body, 10,000 ops", ["gen:wide_body_kernel(10000)"], 15.0, None),
              ("chain, 1,000 ops", ["gen:chain_kernel(250)"], 0.2, None),
              ("400 ops over 200 parameters, no dependence", ["gen:many_params_kernel(400, 200)"], 1.0, None)]
    goals.append(("chain, 1,000 ops, strategy barrier", ["barrier@gen:chain_kernel(250)"], 0.2, None))
    if args.large:
        goals.append(("chain, 100,000 ops", ["gen:chain_kernel(25000)"], 20.0, 1024))
        goals.append(("chain, 100,000 ops, strategy barrier", ["barrier@gen:chain_kernel(25000)"], 20.0, 1024))
    report["goals"] = []
    for name, specs, seconds, mib in goals:
        m = measure(specs)
        row = m["rows"][0]
        report["goals"].append({"what": name, "cpu": row["cpu"], "goal_s": seconds, "peak_mib": m["peak_mib"],
                                "goal_mib": mib, "stage": row["stage"], "waits": row["waits"]})
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    k = report["kernels"]
    print(f"loading the planner's modules (once per process): {report['loading_s']:.3f} s CPU at most")
    print(f"kernels/: {k['under_0.1_s']} of {k['count']} plan in < 0.1 s CPU; the largest peak of one kernel's "
          f"process {k['peak_mib']:.0f} MiB ({len(k['over_200_mib'])} at or over 200 MiB); stages {k['by_stage']}")
    for r in k["slowest"]:
        print(f"  {Path(r['what']).relative_to(ROOT)}: {r['cpu']:.3f} s, {r['peak_mib']:.0f} MiB ({r['stage']})")
    print("| goal | CPU s | goal s | peak MiB | goal MiB | stage |")
    print("|---|---|---|---|---|---|")
    for g in report["goals"]:
        print(f"| {g['what']} | {g['cpu']:.2f} | < {g['goal_s']} | {g['peak_mib']:.0f} | "
              f"{'< ' + str(g['goal_mib']) if g['goal_mib'] else '-'} | {g['stage']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
