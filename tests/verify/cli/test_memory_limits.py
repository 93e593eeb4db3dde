"""Kernels at the edges of size run in bounded memory or get a clear error: under an
address-space limit (`ulimit -v`), a kernel nested deeper than the supported 64 loops is
a `FILE:LINE:COL: error` naming the limit (exit 2), and kernels with many parameters or
many statements are checked or refused with exit 0-3, never a traceback."""

from __future__ import annotations

import json
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[3]
LIMIT = 3 * 1024 ** 3  # 3 GiB of address space for the command


def _limited():
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "verify.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          preexec_fn=_limited, timeout=600)


def nested(depth: int) -> str:
    lines = ["engines A B", "param N"]
    for d in range(depth):
        lines.append("  " * d + f"for i{d} in 0..N {{")
    lines.append("  " * depth + "A p writes x")
    lines.append("  " * depth + "B c reads x")
    lines += ["  " * d + "}" for d in reversed(range(depth))]
    return "\n".join(lines) + "\n"


def test_three_hundred_nested_loops_are_an_error_naming_the_limit(tmp_path):
    kernel = tmp_path / "deep.sync"
    kernel.write_text(nested(300))
    done = run("verify", "--scope", "bounded", str(kernel))
    assert done.returncode == 2, done.stderr
    assert re.match(rf"{re.escape(str(kernel))}:\d+:\d+: error: .*at most 64 nested loops", done.stderr), done.stderr
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr


@pytest.mark.parametrize("command", ["check", "sync"])
def test_many_parameters_and_statements_end_cleanly(tmp_path, command):
    params = [f"P{k}" for k in range(40)]
    body = [f"{'A' if k % 2 else 'B'} op{k} reads x[{params[k % 40]}] writes y[{k}]" for k in range(80)]
    kernel = tmp_path / "wide.sync"
    kernel.write_text("engines A B\nparam " + ", ".join(params) + "\n" + "\n".join(body) + "\n")
    done = run(command, str(kernel))
    assert done.returncode in (0, 1, 2, 3), done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr[-2000:]


TINY = str(ROOT / "tests" / "data" / "cli" / "tiny.sync")


def run_with(env: dict, *args: str) -> subprocess.CompletedProcess:
    import os

    return subprocess.run([sys.executable, "-m", "verify.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **env}, timeout=600)


def test_a_proof_worker_out_of_memory_leaves_the_proof_unknown_with_the_reason():
    """A MemoryError in a proof worker (injected: SYNCPROOF_TEST_FAIL) is the proof's
    `unknown` with the reason, in text and JSON, never an internal error; the bounded
    result stands (exit 0: the property holds within the bounds)."""
    from verify.proof.jobs import OUT_OF_MEMORY

    hook = {"SYNCPROOF_TEST_FAIL": "proof-worker-memory"}
    text = run_with(hook, "verify", "--proof-jobs", "2", TINY)
    assert text.returncode == 0, text.stdout + text.stderr
    assert f"all parameter values: not proved ({OUT_OF_MEMORY})" in text.stdout, text.stdout
    assert "internal error" not in text.stderr and "Traceback" not in text.stderr, text.stderr
    data = json.loads(run_with(hook, "verify", "--proof-jobs", "2", "--json", TINY).stdout)
    assert data["verdict"] == "bisimilar" and data["scope"] == "bounded", data
    assert data["all_values"]["status"] == "unknown" and data["all_values"]["reason"] == OUT_OF_MEMORY, data


def test_without_the_injected_failure_the_same_proof_is_proved():
    """Teeth for the test above: the hook, not the kernel, makes the proof unknown."""
    data = json.loads(run_with({}, "verify", "--proof-jobs", "2", "--json", TINY).stdout)
    assert data["all_values"]["status"] == "proved", data


def test_a_proof_in_this_process_out_of_memory_leaves_the_proof_unknown_with_the_reason():
    """`--proof-jobs 1` proves in the command's own process: a MemoryError there (injected)
    is the proof's `unknown` with the reason, as a worker's is; the bounded result stands."""
    from verify.proof.jobs import OUT_OF_MEMORY_HERE

    hook = {"SYNCPROOF_TEST_FAIL": "proof-memory"}
    text = run_with(hook, "verify", "--proof-jobs", "1", TINY)
    assert text.returncode == 0, text.stdout + text.stderr
    assert f"all parameter values: not proved ({OUT_OF_MEMORY_HERE})" in text.stdout, text.stdout
    assert "internal error" not in text.stderr and "Traceback" not in text.stderr, text.stderr
    proved = json.loads(run_with({}, "verify", "--proof-jobs", "1", "--json", TINY).stdout)
    assert proved["all_values"]["status"] == "proved", proved  # the hook, not the kernel
