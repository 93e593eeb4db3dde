"""bench/lean_coverage.py, whose totals docs/lean.md quotes, runs as documented (on small
kernels: the totals themselves are measured, not tested)."""

from __future__ import annotations

import subprocess
import sys

from tests.support.corpus import ROOT


def _coverage(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "bench/lean_coverage.py", *args], cwd=ROOT, capture_output=True, text=True)


def test_lean_coverage_reports_each_kernel_and_the_totals():
    run = _coverage("--mirror", "kernels/dma_trigger.sync", "kernels/suite/layernorm.sync")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("kernels/dma_trigger.sync: exported (3 bounded claims")
    assert "mirror: 3 claims replayed; agrees on 3 valuations" in lines[0]
    assert lines[1].startswith("kernels/suite/layernorm.sync: exported")
    assert lines[-1] == "total: 2 kernels, 2 exported, 0 refused, 0 disagreeing with the mirror"


def test_lean_coverage_counts_a_refusal(tmp_path):
    peer = tmp_path / "peer.sync"
    peer.write_text("engines A B\nA w writes a setflag B:0\nB r reads a waitflag A:0\n")
    run = _coverage("--strategy", "manual", str(peer))
    assert run.returncode == 1
    assert "refused: the Lean export does not support the peer clause 'setflag'" in run.stdout
    assert run.stdout.splitlines()[-1] == "total: 1 kernels, 0 exported, 1 refused"
