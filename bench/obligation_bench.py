"""Per obligation of the all-values proof: its answer, seconds and Z3 queries, asked in task
order in this process (no deadline), each of a fresh `Prover` as the proof's jobs are, at
one resource limit per query, with the Z3 units each spent.

    python bench/obligation_bench.py KERNEL [--rlimit UNITS] [--only TEXT ...] [--range METHOD ...]

`--rlimit` (default: the first round's, 2,000,000): what the proof's first round gives each
query; as in the proof, a query left unknown is asked again with other seeds only at the
full limit (ProofOptions.query_rlimit). `--only`: obligations whose "kind consumer engine
producer" contains one of the texts.
`--range`: the 32-bit range statement afterwards, computed in a worker started with METHOD
(forkserver, fork) or here (inproc), with its seconds. A measurement, not a timed test.
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from algorithm.registry import get_strategy
from semantics.parser import parse_file
from verify.engines.deadline import Deadline
from verify.proof import obligations
from verify.proof.int32 import range_limit
from verify.proof.jobs import answer, counts, start_in_worker, tasks
from verify.proof.obligations import ProofOptions, Prover, domain_lower


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kernel")
    parser.add_argument("--rlimit", type=float, default=ProofOptions().first_query_rlimit)
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--range", nargs="*", default=[], choices=["forkserver", "fork", "inproc"])
    args = parser.parse_args()
    program = get_strategy("threshold")(parse_file(args.kernel)).program
    rlimit = int(args.rlimit)
    options = ProofOptions(timeout=None, query_rlimit=max(rlimit, ProofOptions().query_rlimit),
                           first_query_rlimit=rlimit)
    counted = {"queries": 0, "seconds": 0.0}
    real = obligations.Prover.query

    def query(self, facts, name):
        began = time.monotonic()
        try:
            return real(self, facts, name)
        finally:
            counted["queries"] += 1
            counted["seconds"] += time.monotonic() - began

    obligations.Prover.query = query
    began = time.monotonic()
    proved = units = 0
    todo = tasks(program, options.property)
    deadline = Deadline.after(None)
    counter = counts(program, deadline)  # as a proof's worker builds them before its jobs
    for task in todo:
        text = f"{task.kind} {task.consumer} {task.engine} {task.producer or ''}"
        if args.only and not any(o in text for o in args.only):
            continue
        start, queries, solving = time.monotonic(), counted["queries"], counted["seconds"]
        # A fresh prover per obligation, as the proof's jobs (verify/proof/jobs.py `answer`).
        done = answer(program, options, deadline, task, rlimit, counter=counter)
        units += done.units
        proved += done.status == "proved"
        print(f"{time.monotonic() - start:7.2f} s  {counted['queries'] - queries:4d} queries "
              f"({counted['seconds'] - solving:6.2f} s) {done.units:11,d} units  "
              f"{done.status:8s} {done.describe()}"
              f"{': ' + done.reason if done.reason else ''}"[:240], flush=True)
    print(f"{proved} proved, {units:,} units, {time.monotonic() - began:.1f} s in all", flush=True)
    obligations.Prover.query = real
    for method in args.range:
        full = ProofOptions(timeout=None, jobs=1 if method == "inproc" else 2,
                            start_method="fork" if method == "inproc" else method)
        start = time.monotonic()
        compute = partial(range_limit, lower=domain_lower(program, full))
        started = start_in_worker(program, full, Deadline.after(None), compute)
        limit = started.result() if started is not None else compute(Prover(program, full))
        print(f"range ({method}): {limit.status} {limit.max_param}, {time.monotonic() - start:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
