"""Kernels at the edges of size run in bounded memory or get a clear error: under an
address-space limit (`ulimit -v`), a kernel nested deeper than the supported 64 loops is
a `FILE:LINE:COL: error` naming the limit (exit 2), and kernels with many parameters or
many statements are checked or refused with exit 0-3, never a traceback."""

from __future__ import annotations

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
