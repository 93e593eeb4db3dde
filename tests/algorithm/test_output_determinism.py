"""A `sync` output is deterministic for its input: the same bytes under other hash seeds,
after other kernels in the same process, with other worker counts, and under load. Both
the threshold strategy and the barrier layout (which plans each of its regions with the
threshold stages) are printed."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from semantics.printer import print_program
from syncproof import load, sync

from tests.support.corpus import ROOT

# Flat kernels (the closed-form planner) and kernels of the general planner.
KERNELS = ["kernels/pipeline_db.sync", "kernels/suite/paged_decode_attention.sync", "kernels/zero_trip_acc.sync",
           "kernels/ring_buffer.sync", "kernels/suite/tiled_matmul.sync", "kernels/if_else_split.sync"]

STRATEGIES = ("threshold", "barrier")

_PRINT = ("import sys; sys.path.insert(0, {root!r}); from syncproof import load, sync; "
          "from semantics.printer import print_program; "
          "[print(print_program(sync(load(k), s).program)) for k in {kernels!r} for s in {strategies!r}]")


def _fresh(kernels: list[str], env: dict | None = None) -> str:
    code = _PRINT.format(root=str(ROOT), kernels=[str(ROOT / k) for k in kernels], strategies=STRATEGIES)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                          env={**os.environ, **(env or {})}).stdout


def _here(kernels: list[str]) -> str:
    return "".join(print_program(sync(load(str(ROOT / k)), s).program) + "\n" for k in kernels for s in STRATEGIES)


@pytest.fixture(scope="module")
def fresh_by_seed() -> dict[str, str]:
    """The kernels' outputs, each seed's from a fresh process (shared by the tests below)."""
    return {seed: _fresh(KERNELS, {"PYTHONHASHSEED": seed}) for seed in ("0", "1", "4242")}


def test_output_is_the_same_under_other_hash_seeds(fresh_by_seed):
    assert len(set(fresh_by_seed.values())) == 1, [k for k in fresh_by_seed]


def test_output_does_not_depend_on_what_ran_before_in_the_process(fresh_by_seed):
    alone = {k: _here([k]) for k in KERNELS}
    # every kernel again, after all the others, in reverse order
    after = {k: _here([k]) for k in reversed(KERNELS)}
    assert alone == after
    assert fresh_by_seed["0"] == "".join(alone[k] for k in KERNELS)


def test_output_is_the_same_under_load(fresh_by_seed):
    """Two processes keep both cores busy while the kernels are planned."""
    burn = "import time\nend = time.time() + 60\nwhile time.time() < end: pass\n"
    burners = [subprocess.Popen([sys.executable, "-c", burn]) for _ in range(2)]
    try:
        loaded = _fresh(KERNELS)
    finally:
        for b in burners:
            b.kill()
            b.wait()
    assert loaded == fresh_by_seed["0"]


@pytest.mark.parametrize("kernel", ["kernels/pipeline_db.sync", "kernels/nested_dynamic.sync"])
def test_verify_answers_the_same_with_other_worker_counts(kernel):
    def verify(*flags):
        out = subprocess.run([sys.executable, "-m", "verify.cli", "verify", "--json", "--max-param", "4", *flags,
                              str(ROOT / kernel)], capture_output=True, text=True, cwd=ROOT)
        assert out.returncode == 0, out.stderr
        report = json.loads(out.stdout)
        return report["verdict"], report["scope"], report["states"], report.get("all_values", {}).get("status")

    assert verify("--workers", "1", "--proof-jobs", "1") == verify("--workers", "2", "--proof-jobs", "2")
