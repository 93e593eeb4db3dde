"""`verify --engine z3 --timeout` is honoured (issue 15 item 3): the encoding of a large
bound is built in Python loops that had no clock, so `--timeout 20` took 120 s."""

import time
from pathlib import Path

import pytest

from algorithm.registry import get_strategy
from semantics.parser import parse_file
from verify.cli.main import main
from verify.engines.deadline import DeadlineReached, interrupt_at
from verify.engines.z3_check import Z3Options, check
from verify.verdicts import Verdict

KERNEL = Path(__file__).parents[3] / "kernels" / "pipeline_db.sync"


def test_interrupt_at_stops_a_loop_with_no_clock():
    began = time.monotonic()
    with pytest.raises(DeadlineReached):
        with interrupt_at(began + 0.2):
            while True:
                sum(range(100))
    assert time.monotonic() - began < 2


class _SlowFinalizer:
    def __del__(self):
        sum(range(20000))  # about half the block's time is spent here, where exceptions are ignored


def test_interrupt_at_retries_when_a_finalizer_swallows_the_exception(capsys):
    """Ten blocks, each spending about half its time in a finalizer: without the retry,
    one of them almost surely loses its exception and runs to the end of its loop."""
    for _ in range(10):
        began = time.monotonic()
        with pytest.raises(DeadlineReached):
            with interrupt_at(began + 0.05):
                for _ in range(2_000):  # seconds of work: ends only if the interrupt was lost
                    _SlowFinalizer()
                    sum(range(20000))
        assert time.monotonic() - began < 2
    assert "Exception ignored" not in capsys.readouterr().err


def test_interrupt_at_leaves_a_block_that_ends_in_time_alone():
    for _ in range(50):
        with interrupt_at(time.monotonic() + 5):
            sum(range(1000))
    time.sleep(0.05)  # no stray exception arrives later
    with interrupt_at(None):
        pass


def test_interrupt_at_a_deadline_already_past_raises_at_once():
    with pytest.raises(DeadlineReached):
        with interrupt_at(time.monotonic() - 1):
            raise AssertionError("the block must not run")


def test_z3_engine_answers_unknown_within_its_timeout():
    program = get_strategy("threshold")(parse_file(str(KERNEL))).program
    began = time.monotonic()
    result = check(program, (("N", 0, 250),), Z3Options(timeout=1.0))
    elapsed = time.monotonic() - began
    assert result.verdict == Verdict.UNKNOWN and result.holds is None
    assert "time limit reached" in result.reason
    assert elapsed < 3.0, elapsed  # was minutes: the building of the encoding ignored the limit


def test_verify_z3_timeout_flag_exits_3(capsys):
    began = time.monotonic()
    status = main(["verify", "--engine", "z3", "--timeout", "1", "--scope", "bounded", "--param", "N=0..250",
                   str(KERNEL)])
    assert status == 3
    assert time.monotonic() - began < 4.0
    assert "verdict: unknown (time limit reached" in capsys.readouterr().out
