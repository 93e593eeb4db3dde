"""The signed 32-bit range is part of soundness (docs/design.md, "Counter increments"):
every engine reports a semaphore value or a threshold outside [-2^31, 2^31 - 1] within
the bounds as unsound, with the reason; every engine models DMA queues."""

from __future__ import annotations

import pytest

from semantics.ir import INT32_MAX
from semantics.machines import counter_range_violation
from semantics.parser import parse, parse_file
from semantics.sequential import unroll
from verify.engines import select
from verify.engines.z3_check import Z3Options
from verify.engines.z3_check import check as z3_check
from verify.verdicts import CheckOptions, Verdict

from tests.support.corpus import DMA_DIR, KERNELS_DIR

BIG_THRESHOLD = parse("engines A B\nparam N\nfor i in 0..N {\n  A w writes a[i]\n"
                      "  B r reads a[i] wait A >= 3000000000 * i + 1\n}\n")


@pytest.mark.parametrize("engine", ["hb", "explicit", "z3"])
def test_every_engine_reports_a_threshold_outside_32_bits_as_unsound(engine):
    bounds = (("N", 0, 3),)
    if engine == "z3":
        result = z3_check(BIG_THRESHOLD, bounds, Z3Options())
    else:
        result = select.check(BIG_THRESHOLD, bounds, CheckOptions(), engine=engine)
    assert result.verdict == Verdict.UNSOUND and not result.holds
    assert dict(result.witness.unrolled.valuation) == {"N": 2}  # i = 1 first exists at N = 2
    assert any("32-bit range" in line and "3000000001" in line for line in result.witness.explanation)
    # Within N <= 1 the threshold is 1: in range, and the program is the exact one.
    low = select.check(BIG_THRESHOLD, (("N", 0, 1),), CheckOptions(), engine=engine) if engine != "z3" \
        else z3_check(BIG_THRESHOLD, (("N", 0, 1),), Z3Options())
    assert low.verdict == Verdict.BISIMILAR


def test_a_counter_driven_past_the_maximum_by_its_increment_is_unsound():
    program = parse_file(str(DMA_DIR / "int32_overflow.sync"))
    assert counter_range_violation(unroll(program, {"N": 1})) is None
    why = counter_range_violation(unroll(program, {"N": 2}))
    assert why is not None and f"{INT32_MAX + 1}" in why and "C[q0]" in why
    for engine in ("hb", "explicit"):
        result = select.check(program, (("N", 0, 3),), CheckOptions(property="soundness"), engine=engine)
        assert result.verdict == Verdict.UNSOUND and not result.holds  # soundness, not just bisimulation
    # The z3 engine (which models queues and their increments) says the same, with the reason.
    result = z3_check(program, (("N", 0, 3),), Z3Options(property="soundness"))
    assert result.verdict == Verdict.UNSOUND and not result.holds
    assert dict(result.witness.unrolled.valuation) == {"N": 2}
    assert any("32-bit range" in line and "C[q0]" in line for line in result.witness.explanation)
    assert z3_check(program, (("N", 0, 1),), Z3Options()).verdict == Verdict.BISIMILAR


def test_counter_range_is_checked_from_exact_counts_not_only_the_instance_bound():
    # Many instances with increment 1 stay far inside the range: no violation, no Counter built.
    unrolled = unroll(parse("engines A B\nparam N\nfor i in 0..N {\n  A w writes a[i]\n"
                            "  B r reads a[i] wait A >= i + 1\n}\n"), {"N": 50})
    assert counter_range_violation(unrolled) is None


@pytest.mark.parametrize("engine", ["hb", "explicit"])
def test_every_per_valuation_engine_checks_queue_programs_and_auto_takes_hb(engine):
    # The hb engine models queues, so `auto` takes it for them as for any wait program.
    program = parse_file(str(KERNELS_DIR / "dma_trigger.sync"))
    assert select.engine_for(program) == "happens-before"
    for chosen in (engine, "auto"):
        result = select.check(program, (("N", 0, 3),), CheckOptions(), engine=chosen)
        assert (result.verdict, result.holds, result.complete) == (Verdict.BISIMILAR, True, True)


def test_the_z3_engine_checks_queue_programs():
    # Agreement with the other engines: tests/verify/engines/test_z3_queues.py.
    program = parse_file(str(KERNELS_DIR / "dma_trigger.sync"))
    result = z3_check(program, (("N", 0, 3),), Z3Options())
    assert (result.verdict, result.holds, result.complete) == (Verdict.BISIMILAR, True, True)
