"""Exactness of `threshold` on generated kernels: the share of exact waits, and every
remaining conservative wait or fallback with its reason.

    python bench/exact_bench.py [--kernels 1000] [--timeout 60] [--generator today|rich] [--seed S]
                                [--out DIR] [--json] [--verify]

With `--generator today` (the default), kernels come from verify/search/generators.py
`programs` (Hypothesis, derandomized, so the same kernels every run): loops with affine,
triangular (`i..N`, `0..i + 1`) and `min`/`max` bounds, `if` on loop variables and
parameters (nested), `%` and plain indices mixed, 2-4 engines. With `--generator rich`
they come from verify/search/rich.py `rich_programs` (derandomized with `--seed`,
default 0): the same kernels enriched with range accesses, DMA queues with triggers and
increments, `if`/`else` on affine conditions, triangular and `min`/`max` loop bounds and
parameter lower bounds; the summary also counts the kernels exercising each feature.

Each kernel gets `timeout` seconds of CPU time (not wall time: the machine is shared; a
kernel over it is listed, not counted as exact). The summary also gives how many kernels
took over 0.1 s and over 1 s of CPU to plan, and the five slowest. With --out, every kernel with a
conservative wait, a fallback or a timeout is written to DIR as a .sync file. With
--verify, each kernel's output is also verified within bounds (`syncproof.verify`,
Scope.BOUNDED, max_param 3: the happens-before engine), after its timed plan and
outside the CPU totals; a verdict other than bisimilar is listed with the kernel.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def generated(count: int) -> list:
    from hypothesis import HealthCheck, Phase, given, settings

    from verify.search.generators import programs

    out = []

    @settings(max_examples=count, derandomize=True, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(programs(engines=(2, 4), max_depth=3, max_statements=5))
    def collect(program):
        out.append(program)

    collect()
    return out


def generated_rich(count: int, seed: int = 0) -> list:
    """`count` kernels of verify/search/rich.py `rich_programs`, the same ones for one seed."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as with_seed

    from verify.search.rich import rich_programs

    out = []

    @with_seed(seed)
    @settings(max_examples=count, derandomize=True, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(rich_programs())
    def collect(program):
        out.append(program)

    collect()
    return out


def _verdict(program) -> str:
    """The bounded verdict on the threshold output (it plans the kernel again)."""
    import syncproof

    report = syncproof.verify(program, syncproof.VerifyOptions(scope=syncproof.Scope.BOUNDED, max_param=3))
    return report.verdict.value if hasattr(report.verdict, "value") else str(report.verdict)


class _Timeout(Exception):
    pass


def _alarm(*_):
    raise _Timeout


def main() -> int:
    from algorithm.registry import get_strategy
    from semantics.printer import print_program

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernels", type=int, default=1000)
    parser.add_argument("--timeout", type=int, default=60)
    parser.add_argument("--generator", choices=("today", "rich"), default="today",
                        help="verify/search/generators.py (today) or verify/search/rich.py (rich)")
    parser.add_argument("--seed", type=int, default=0, help="the rich generator's seed (default 0)")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--verify", action="store_true",
                        help="also verify each kernel's output within bounds (syncproof.verify, Scope.BOUNDED, "
                             "max_param 3; not timed): a verdict other than bisimilar is listed")
    args = parser.parse_args()
    if args.generator == "rich":
        from verify.search.rich import FEATURES, features

        programs = generated_rich(args.kernels, args.seed)
        exercised = Counter(f for program in programs for f in features(program))
        feature_counts = {f: exercised[f] for f in FEATURES}
    else:
        programs = generated(args.kernels)
        feature_counts = None
    signal.signal(signal.SIGPROF, _alarm)
    waits = conservative = 0
    kinds: Counter = Counter()
    cases = []
    cpu_start, wall_start = time.process_time(), time.perf_counter()
    per_kernel = []  # (CPU seconds, kernel number)
    verdicts: Counter = Counter()
    verify_cpu = 0.0
    for n, program in enumerate(programs):
        signal.setitimer(signal.ITIMER_PROF, args.timeout)
        began = time.process_time()
        try:
            stats = get_strategy("threshold")(program).stats
        except _Timeout:
            kinds["timeout"] += 1
            cases.append({"kernel": n, "kind": "timeout", "notes": [], "text": print_program(program)})
            continue
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
            per_kernel.append((time.process_time() - began, n))
        if stats.fallback:
            kinds["fallback"] += 1
            cases.append({"kernel": n, "kind": "fallback", "notes": list(stats.notes), "text": print_program(program)})
            continue
        waits += stats.waits
        conservative += stats.conservative
        if stats.conservative:
            kinds["conservative"] += 1
            cases.append({"kernel": n, "kind": "conservative", "notes": list(stats.notes),
                          "text": print_program(program)})
        else:
            kinds["exact"] += 1
        if args.verify:
            checking = time.process_time()
            verdict = _verdict(program)
            verify_cpu += time.process_time() - checking
            verdicts[verdict] += 1
            if verdict != "bisimilar":
                cases.append({"kernel": n, "kind": f"verify: {verdict}", "notes": [], "text": print_program(program)})
    summary = {
        "generator": args.generator, **({"seed": args.seed} if args.generator == "rich" else {}),
        "kernels": len(programs), "waits": waits, "conservative_waits": conservative,
        "exact_share": round(1 - conservative / waits, 5) if waits else 1.0, "kernel_kinds": dict(kinds),
        "cpu_seconds": round(time.process_time() - cpu_start - verify_cpu, 1),
        "seconds": round(time.perf_counter() - wall_start, 1),
        "over_0.1_s": sum(1 for t, _ in per_kernel if t > 0.1), "over_1_s": sum(1 for t, _ in per_kernel if t > 1),
        "slowest": [{"kernel": n, "cpu": round(t, 2)} for t, n in sorted(per_kernel, reverse=True)[:5]],
        **({"features": feature_counts} if feature_counts is not None else {}),
        **({"verdicts": dict(verdicts)} if args.verify else {}),
        "cases": [{k: v for k, v in c.items() if k != "text"} for c in cases],
    }
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        for c in cases:
            (args.out / f"{c['kind']}_{c['kernel']:04d}.sync").write_text(c["text"])
    if args.json:
        print(json.dumps(summary, indent=1))
        return 0
    print(f"{summary['kernels']} generated kernels ({args.generator}), {waits} waits in kernels without fallback, "
          f"{conservative} conservative: exact share {100 * summary['exact_share']:.2f}%")
    print(f"kernels: {dict(kinds)}; cpu {summary['cpu_seconds']} s, wall {summary['seconds']} s")
    print(f"planned in over 0.1 s of CPU: {summary['over_0.1_s']}, over 1 s: {summary['over_1_s']}; slowest: "
          + ", ".join(f"kernel {r['kernel']} {r['cpu']} s" for r in summary["slowest"]))
    if args.verify:
        print(f"verified within bounds (max_param 3): {dict(verdicts)}")
    if feature_counts is not None:
        print("kernels per feature: " + ", ".join(f"{f} {n}" for f, n in feature_counts.items()))
    for c in cases:
        print(f"- kernel {c['kernel']} ({c['kind']}): " + ("; ".join(c["notes"]) or "-"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
