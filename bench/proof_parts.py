"""Where an all-values proof's time goes: the proof of one kernel's threshold output, asked
in this process in two rounds as `prove` asks them (`verify/proof/jobs.py run_all` with
one job at a time, no deadline), with timers around Z3's solver checks, `z3.simplify`, the count terms'
building (`verify/proof/counts.py`) and the case splits' walks (`verify/proof/cases.py`).

    python bench/proof_parts.py KERNEL

A measurement, not a timed test; the parts nest (a check inside a case split counts under
"check" only: the walks are timed on their own).
"""

from __future__ import annotations

import collections
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import z3

from algorithm.registry import get_strategy
from semantics.parser import parse_file
from verify.proof import cases, counts
from verify.engines.deadline import Deadline
from verify.proof.jobs import run_all, tasks
from verify.proof.options import ProofOptions


def timed(seconds: collections.Counter, key: str, real):
    def wrapper(*args, **kwargs):
        began = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            seconds[key] += time.perf_counter() - began
    return wrapper


def main() -> int:
    program = get_strategy("threshold")(parse_file(sys.argv[1])).program
    seconds: collections.Counter = collections.Counter()
    for module, name in ((cases, "ite_conditions"), (cases, "comparisons"), (counts, "_build_count")):
        setattr(module, name, timed(seconds, name, getattr(module, name)))
    z3.Solver.check = timed(seconds, "check", z3.Solver.check)
    z3.simplify = timed(seconds, "simplify", z3.simplify)
    options = ProofOptions(timeout=None)
    began = time.perf_counter()
    todo = tasks(program, options.property)
    done = run_all(program, options, Deadline.after(None), todo)
    total = time.perf_counter() - began
    print(f"{sum(o.status == 'proved' for o in done)} of {len(done)} obligations proved, {total:.1f} s in all")
    for key, value in seconds.most_common():
        print(f"{value:8.2f} s  {key}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
