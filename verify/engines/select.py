"""Which per-valuation engine checks a program, and the one call that runs it (with
fan-out). `auto` (the default): the happens-before engine for programs whose
synchronization is waits and barriers, DMA queues included (its argument:
docs/happens-before.md, "DMA queues"), the explicit engine for programs with flags or
tokens. `hb` and `explicit` force one (`hb` refuses flags and tokens)."""

from __future__ import annotations

from semantics.errors import UsageError
from semantics.ir import Program, peer_clause
from verify.engines import explicit, happens_before
from verify.engines.valuations import check_valuations
from verify.fanout import SERIAL, FanOut
from verify.verdicts import CheckOptions, CheckResult, EngineName

AUTO, HB, EXPLICIT = EngineName.AUTO, EngineName.HB, EngineName.EXPLICIT
CHOICES = (AUTO, HB, EXPLICIT)


def engine_for(program: Program, requested: str = AUTO) -> str:
    """The engine that checks `program`: happens_before.ENGINE or "explicit"."""
    if requested not in CHOICES:
        raise UsageError(f"unknown engine '{requested}' (choose from {', '.join(CHOICES)})")
    if requested == EXPLICIT or (requested == AUTO and peer_clause(program) is not None):
        return EXPLICIT
    return happens_before.ENGINE


def check(program: Program, bounds, options: CheckOptions = CheckOptions(), engine: str = AUTO,
          fan_out: FanOut = SERIAL) -> CheckResult:
    """Check `program` within `bounds` with the chosen engine; the answer does not depend
    on `fan_out`."""
    if engine_for(program, engine) == happens_before.ENGINE:
        return happens_before.check(program, bounds, options, fan_out)
    return check_valuations(program, bounds, options, explicit.explore, EngineName.EXPLICIT, fan_out)
