"""The benchmark scripts whose numbers the README and docs quote run as documented
(on small inputs: the numbers themselves are measured, not tested)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support.corpus import ROOT

FILES = ["kernels/design_example.sync", "kernels/suite/pingpong.sync"]


def test_suite_bench_times_the_files_it_is_given():
    run = subprocess.run([sys.executable, "bench/suite_bench.py", "--json", *FILES],
                         cwd=ROOT, capture_output=True, text=True, check=True)
    rows = json.loads(run.stdout)
    assert sorted(r["kernel"] for r in rows) == sorted(FILES)
    assert all(r["cpu_seconds"] >= 0 and r["waits"] > 0 and r["strategy"] == "threshold" for r in rows)
