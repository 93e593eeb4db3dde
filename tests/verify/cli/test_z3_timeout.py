"""`verify --engine z3 --timeout` is honoured: the encoding of a large bound is built in
Python loops before Z3 sees a query, so those loops must look at the clock too."""

import gc
import time
from pathlib import Path

import pytest

from algorithm.registry import get_strategy
from semantics.parser import parse_file
from verify.cli.main import main
from verify.engines.deadline import NO_DEADLINE, Deadline, DeadlineReached
from verify.engines.z3_check import Z3Options, check as z3_check
from verify.verdicts import Verdict

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


def test_the_z3_engine_polls_its_deadline_while_building_the_encoding(monkeypatch):
    """The building of the encoding stops at its first poll after the deadline (here a
    clock that jumps once polled enough): no interruption from another thread is involved,
    so the exception never lands inside z3's Python wrappers (a CI worker crashed so)."""
    program = get_strategy("threshold")(parse_file(str(KERNEL))).program
    polls = {"n": 0}

    def check(self):
        polls["n"] += 1
        if polls["n"] > 300:
            raise DeadlineReached()

    monkeypatch.setattr(Deadline, "check", check)
    result = z3_check(program, (("N", 0, 250),), Z3Options(timeout=600))
    assert result.verdict == Verdict.UNKNOWN and "time limit reached while building the Z3 encoding" in result.reason
    assert polls["n"] == 301


def test_repeated_short_z3_timeouts_leave_z3_usable():
    """A timer that interrupts z3's Python wrappers can corrupt its reference counts
    (verify/engines/deadline.py): many short budgets in a row, then z3 must still answer."""
    program = get_strategy("threshold")(parse_file(str(KERNEL))).program
    for budget in (0.02, 0.05, 0.1, 0.2, 0.3):
        result = z3_check(program, (("N", 0, 250),), Z3Options(timeout=budget))
        assert result.verdict == Verdict.UNKNOWN
    gc.collect()
    assert z3_check(program, (("N", 0, 3),), Z3Options()).verdict == Verdict.BISIMILAR


def test_z3_engine_answers_unknown_within_its_timeout():
    program = get_strategy("threshold")(parse_file(str(KERNEL))).program
    began = time.monotonic()
    result = z3_check(program, (("N", 0, 250),), Z3Options(timeout=1.0))
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


def test_z3_engine_timeout_holds_over_millions_of_valuations():
    """Four parameters in 0..40 (2.8 million valuations): the valuations are made lazily,
    so the clock is looked at before all of them exist."""
    program = parse_file(str(FLASH))
    bounds = tuple((p.name, 0, 40) for p in program.params)
    began = time.monotonic()
    result = z3_check(program, bounds, Z3Options(timeout=0.5))
    assert result.verdict == Verdict.UNKNOWN and "time limit reached" in result.reason
    assert result.total_valuations == 41 ** 4
    assert time.monotonic() - began < 3.0
