"""Latency expressions (`lat 64 + 2 * min(C, 512)`): timing only. The scheduler
evaluates them per instance in its loop environment; a negative value is a kernel
error with FILE:LINE:COL (exit 2), never a traceback."""

from __future__ import annotations

import subprocess
import sys

from semantics.parser import parse
from semantics.printer import print_program
from semantics.sequential import unroll
from verify.timing.scheduler import instance_latency, load_profile, simulate

KERNEL = """\
engines A B
param C = 600
for i in 0..3 {
  A load writes x[i] lat 64 + 2 * min(C, 512) - 100 * i
  B use reads x[i] lat 10 wait A >= i + 1
}
"""


def test_latency_expression_round_trips_and_is_evaluated_per_instance():
    program = parse(KERNEL)
    assert parse(print_program(program)) == program
    unrolled = unroll(program, {"C": 600})
    assert [instance_latency(unrolled, y) for y in unrolled.instances] == [1088, 10, 988, 10, 888, 10]


def test_latency_expression_sets_the_busy_time():
    program = parse(KERNEL)
    timeline = simulate(unroll(program, {"C": 600}), load_profile("trainium"))
    assert timeline.busy[0] == 1088 + 988 + 888
    literal = parse(KERNEL.replace("lat 64 + 2 * min(C, 512) - 100 * i", "lat 988"))
    assert simulate(unroll(literal, {"C": 600}), load_profile("trainium")).busy[0] == 3 * 988


def test_negative_latency_at_run_time_is_a_located_kernel_error(tmp_path):
    path = tmp_path / "neg.sync"
    path.write_text(KERNEL)
    for command in (["simulate", str(path), "--param", "C=0"], ["bench", str(path)]):
        if command[0] == "bench":
            path.write_text(KERNEL.replace("param C = 600", "param C = 0"))
        run = subprocess.run([sys.executable, "-m", "verify.cli.main", *command], capture_output=True, text=True)
        assert run.returncode == 2, run.stderr
        assert f"{path}:4:26: error: the latency of op 'load' evaluates to -36 at C=0, i=1" in run.stderr
        assert "Traceback" not in run.stderr
