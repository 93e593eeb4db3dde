"""What the Lean export accepts and what it refuses. Range accesses, latency
expressions, DMA queues (triggers, increments) and replica groups are exported; the
only refusal is a program with peer clauses (flags, tokens), whose state the Lean
semantics does not have: a clear error (exit 2), nothing written."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.lean_export.lean_terms import read_module


def _lean(tmp_path, text: str, *extra: str) -> subprocess.CompletedProcess:
    path = tmp_path / "k.sync"
    path.write_text(text)
    return subprocess.run([sys.executable, "-m", "verify.cli.main", "lean", str(path), "-o", str(tmp_path / "out"),
                           *extra], capture_output=True, text=True)


@pytest.mark.parametrize("lines, field", [
    ("A w writes a[0..N]\nB r reads a[N - 1]", '.range (.const 0) (.var "N")'),
    ("A w writes a lat 2 * N\nB r reads a", 'lat := .mul (.const 2) (.var "N")'),
    ("A w writes a replica g\nB v writes a replica g\nB r reads a", 'replica := some "g"'),
])
def test_lean_export_covers_ranges_latency_expressions_and_replicas(tmp_path, lines, field):
    run = _lean(tmp_path, f"engines A B\nparam N\n{lines}\n")
    assert run.returncode == 0, run.stderr
    module = (tmp_path / "out" / "Kernels" / "K.lean").read_text()
    assert field in module
    assert read_module(module).claims  # bounded instances claimed (replayed in test_lean_mirror.py)


def test_lean_export_covers_dma_queues(tmp_path):
    run = _lean(tmp_path, "engines A B\nqueue q increment 16\nA w via q writes a\nB r reads a\n")
    assert run.returncode == 0, run.stderr
    module = (tmp_path / "out" / "Kernels" / "K.lean").read_text()
    assert 'queues := [("q", 16)]' in module and 'via := some "q"' in module
    assert '⟨"q", .const 16⟩' in module  # the threshold strategy's wait, scaled by the increment


def test_lean_export_refuses_peer_clauses(tmp_path):
    run = _lean(tmp_path, "engines A B\nA w writes a setflag B:0\nB r reads a waitflag A:0\n", "--strategy", "manual")
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert "the Lean export does not support the peer clause 'setflag'" in run.stderr
    assert not (tmp_path / "out").exists()
