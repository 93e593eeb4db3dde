"""Features the Lean export does not cover yet are refused with a clear error (exit 2),
never exported as a different program: range accesses and latency expressions."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("line, what", [
    ("A w writes a[0..N]", "range access"),
    ("A w writes a lat 2 * N", "latency expression"),
])
def test_lean_export_refuses_unsupported_features(tmp_path, line, what):
    path = tmp_path / "k.sync"
    path.write_text(f"engines A B\nparam N\n{line}\nB r reads a\n")
    run = subprocess.run([sys.executable, "-m", "verify.cli.main", "lean", str(path), "-o", str(tmp_path / "out")],
                         capture_output=True, text=True)
    assert run.returncode == 2 and what in run.stderr and "Traceback" not in run.stderr, run.stderr
    assert not (tmp_path / "out").exists()
