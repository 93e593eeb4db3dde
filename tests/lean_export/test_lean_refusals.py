"""Features the Lean export does not cover yet are refused with a clear error (exit 2),
never exported as a different program: range accesses and latency expressions."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("line, what, col", [
    ("A w writes a[0..N]", "range access", 12),
    ("A w writes a lat 2 * N", "latency expression", 18),
])
def test_lean_export_refuses_unsupported_features(tmp_path, line, what, col):
    path = tmp_path / "k.sync"
    path.write_text(f"engines A B\nparam N\n{line}\nB r reads a\n")
    run = subprocess.run([sys.executable, "-m", "verify.cli.main", "lean", str(path), "-o", str(tmp_path / "out")],
                         capture_output=True, text=True)
    assert run.returncode == 2 and what in run.stderr and "Traceback" not in run.stderr, run.stderr
    assert f"{path}:3:{col}: error: op 'w' has a {what}" in run.stderr  # FILE:LINE:COL at the feature
    assert not (tmp_path / "out").exists()


def test_lean_export_refuses_dma_queues_at_their_declaration(tmp_path):
    # FILE:LINE:COL at the `queue` declaration, exit 2, nothing written (docs/proofs.md).
    path = tmp_path / "k.sync"
    path.write_text("engines A B\nqueue q increment 16\nA w via q writes a\nB r reads a\n")
    run = subprocess.run([sys.executable, "-m", "verify.cli.main", "lean", str(path), "-o", str(tmp_path / "out")],
                         capture_output=True, text=True)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert f"{path}:2:7: error: DMA queue 'q': the Lean export does not support DMA queues" in run.stderr
    assert not (tmp_path / "out").exists()
