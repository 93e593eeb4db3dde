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


def _run(*args) -> str:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def test_proof_benches_run_on_a_small_kernel():
    # The proof's benchmarks (docs/proofs.md): every obligation proved, with its parts.
    parts = _run("bench/proof_parts.py", "kernels/suite/pingpong.sync")
    assert "4 of 4 obligations proved" in parts and " check" in parts
    each = _run("bench/obligation_bench.py", "kernels/suite/pingpong.sync", "--range", "inproc")
    assert "4 proved" in each and "range (inproc): up-to 2147483647" in each
    table = _run("bench/prove_bench.py", "--jobs", "2", "kernels/suite/pingpong.sync",
                 "tests/data/threshold_cases/top_level_if.sync")
    assert "pingpong.sync | proved | " in table
    # A kernel outside kernels/ is named by its path in the repository (it was a traceback).
    assert "| tests/data/threshold_cases/top_level_if.sync | proved | " in table


def test_verify_bench_reports_the_default_verify_of_the_files_it_is_given():
    rows = json.loads(_run("bench/verify_bench.py", "--json", "kernels/suite/pingpong.sync"))
    assert [r["kernel"] for r in rows] == ["pingpong"]
    row = rows[0]
    assert row["exit"] == 0 and row["verdict"] == "bisimilar" and row["proof"] == "proved"
    assert 0 <= row["proof_started"] <= row["wall"] and row["units"] > 0
