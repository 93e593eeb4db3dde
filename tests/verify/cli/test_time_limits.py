"""`--timeout` counts from the start of the command and covers the sync: with the sync
slowed by the test hook (SYNCPROOF_TEST_SLOW, verify/progress.py), a tiny or a medium
limit ends the command with `unknown` (exit 3), never a verdict that holds; a large one
lets it finish. The slow phase is injected, so no answer depends on the machine's load
and no test reads a clock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[3]
KERNEL = ROOT / "docs" / "examples" / "double_buffer.sync"


def verify(timeout: str, slow: str, *more: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SYNCPROOF_TEST_SLOW": slow}
    return subprocess.run([sys.executable, "-m", "verify.cli", "verify", "--json", "--timeout", timeout, *more,
                           str(KERNEL)], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)


@pytest.mark.parametrize("timeout", ["0.001", "2"])
def test_a_limit_hit_during_the_sync_is_unknown_never_a_verdict(timeout):
    run = verify(timeout, "sync:120")
    assert run.returncode == 3, run.stdout + run.stderr
    assert "Traceback" not in run.stderr
    data = json.loads(run.stdout)
    assert data["verdict"] == "unknown" and data.get("holds") is not True
    assert data.get("scope") != "all"
    assert data["reason"].startswith(f"time limit reached: --timeout {float(timeout):g} s ran out while syncing"), data


def test_a_large_limit_lets_a_slowed_sync_finish():
    run = verify("600", "sync:1", "--scope", "bounded")
    assert run.returncode == 0, run.stdout + run.stderr
    assert json.loads(run.stdout)["verdict"] == "bisimilar"


def test_the_unslowed_command_finishes_within_a_limit():
    """The limits above are hit because of the slowed sync: unslowed, the command
    finishes within a generous limit."""
    run = verify("60", "", "--scope", "bounded")
    assert run.returncode == 0, run.stdout + run.stderr
