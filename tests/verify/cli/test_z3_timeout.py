"""`verify --engine z3 --timeout` is honoured: the encoding of a large bound is built in
Python loops before Z3 sees a query, so those loops must look at the clock too."""

import gc
from pathlib import Path

import pytest

from algorithm.registry import get_strategy
from semantics.parser import parse_file
from verify.cli.main import main
from verify.engines.deadline import NO_DEADLINE, Deadline, DeadlineReached
from verify.engines.z3_check import Z3Options, check as z3_check
from verify.verdicts import Verdict

from tests.support.clock import FakeClock

KERNEL = Path(__file__).parents[3] / "kernels" / "pipeline_db.sync"
FLASH = Path(__file__).parents[3] / "kernels" / "suite" / "flash_attention_causal.sync"


def test_deadline_check_raises_only_once_the_clock_passes_it():
    now = [10.0]
    deadline = Deadline.after(2.0, clock=lambda: now[0])
    deadline.check()
    assert deadline.left() == 2.0 and not deadline.passed()
    now[0] = 11.999
    deadline.check()
    now[0] = 12.0
    assert deadline.passed() and deadline.left() == 0.0
    with pytest.raises(DeadlineReached):
        deadline.check()


def test_no_deadline_never_raises():
    assert Deadline.after(None).left() is None and not NO_DEADLINE.passed()
    NO_DEADLINE.check()


def test_the_z3_engine_polls_its_deadline_while_building_the_encoding():
    """The building of the encoding stops at its first poll after the deadline (here a
    fake clock that jumps past it at its 300th reading, past the 251 polls of the
    valuations): no interruption from another thread is involved, so the exception
    never lands inside z3's Python wrappers (a CI worker crashed so)."""
    program = get_strategy("threshold")(parse_file(str(KERNEL))).program
    clock = FakeClock(jump_at=300)
    result = z3_check(program, (("N", 0, 250),), Z3Options(timeout=600, clock=clock))
    assert result.verdict == Verdict.UNKNOWN and "time limit reached while building the Z3 encoding" in result.reason
    assert clock.after_jump == 1  # the poll that saw it, and no more work


@pytest.mark.parametrize("jump_at", [2, 260, 300, 1000, 5000])
def test_the_z3_engine_stops_at_any_poll_and_leaves_z3_usable(jump_at):
    """Stopping the encoding's building at many different points (a fake clock jumping at
    a different reading each time) leaves z3 usable: an interrupting timer could corrupt
    z3's reference counts (a worker died with SIGSEGV)."""
    program = get_strategy("threshold")(parse_file(str(KERNEL))).program
    clock = FakeClock(jump_at=jump_at)
    result = z3_check(program, (("N", 0, 250),), Z3Options(timeout=600, clock=clock))
    assert result.verdict == Verdict.UNKNOWN and result.holds is None and "time limit reached" in result.reason
    assert clock.after_jump == 1
    gc.collect()
    assert z3_check(program, (("N", 0, 3),), Z3Options()).verdict == Verdict.BISIMILAR


def test_z3_engine_answers_unknown_once_its_timeout_has_passed():
    """A clock that advances 10 ms per reading passes the 1 s limit at its 102nd reading
    (the first one is the start); the engine stops at that poll: unknown, never success."""
    program = get_strategy("threshold")(parse_file(str(KERNEL))).program
    clock = FakeClock(step=0.01)
    result = z3_check(program, (("N", 0, 250),), Z3Options(timeout=1.0, clock=clock))
    assert result.verdict == Verdict.UNKNOWN and result.holds is None
    assert "time limit reached" in result.reason
    assert clock.late(clock.readings[0] + 1.0) == 1


def test_verify_z3_timeout_flag_exits_3(capsys):
    """The flag's plumbing (the budget itself is tested above, on a fake clock): the
    250 valuations take far more than the 1 s given, on any machine."""
    status = main(["verify", "--engine", "z3", "--timeout", "1", "--scope", "bounded", "--param", "N=0..250",
                   str(KERNEL)])
    assert status == 3
    assert "verdict: unknown (time limit reached" in capsys.readouterr().out


def test_z3_engine_timeout_holds_over_millions_of_valuations():
    """Four parameters in 0..40 (2.8 million valuations): the list of valuations was
    sorted before the clock was looked at (7 s past a 0.5 s limit; that they are made
    one at a time is tests/verify/engines/test_valuations.py's). With a clock past the
    limit at its second reading, the first poll stops the check."""
    program = parse_file(str(FLASH))
    bounds = tuple((p.name, 0, 40) for p in program.params)
    clock = FakeClock(jump_at=2)
    result = z3_check(program, bounds, Z3Options(timeout=0.5, clock=clock))
    assert result.verdict == Verdict.UNKNOWN and "time limit reached while unrolling the valuations" in result.reason
    assert result.total_valuations == 41 ** 4
    assert len(clock.readings) == 2  # the start, and the first poll
