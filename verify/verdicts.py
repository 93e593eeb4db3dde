"""Verdicts, options and results as plain values (docs/design.md section 4)."""

from __future__ import annotations

import enum
from typing import Callable

import attrs

from semantics.machines import Label
from semantics.sequential import Unrolled


class Verdict(str, enum.Enum):
    BISIMILAR = "bisimilar"
    UNSOUND = "unsound"
    OVER_SYNCHRONIZED = "over-synchronized"
    DEADLOCK = "deadlock"
    UNKNOWN = "unknown"


# Precedence among definite findings: any unsound state beats a deadlock, which
# beats over-synchronization.
SEVERITY = {Verdict.BISIMILAR: 0, Verdict.OVER_SYNCHRONIZED: 1, Verdict.DEADLOCK: 2, Verdict.UNSOUND: 3}

PROPERTIES = ("bisimulation", "soundness")


def is_failure(verdict: Verdict, prop: str) -> bool:
    """Does `verdict` refute the property? (over-synchronization is allowed by soundness)."""
    if prop == "soundness":
        return verdict in (Verdict.UNSOUND, Verdict.DEADLOCK)
    return verdict in (Verdict.UNSOUND, Verdict.DEADLOCK, Verdict.OVER_SYNCHRONIZED)


@attrs.frozen
class CheckOptions:
    """Every budget and switch of a check, in one place."""

    property: str = "bisimulation"
    max_states: int = 2_000_000  # per parameter valuation
    timeout: float | None = None  # seconds for the whole check
    progress: Callable[[str], None] | None = None  # called with a progress line now and then


@attrs.frozen
class Witness:
    """A counterexample: the shortest trace to a failing state and what fails there."""

    verdict: Verdict
    unrolled: Unrolled
    trace: tuple[Label, ...]
    failing: tuple[Label, ...]  # the offending issue labels (unsound / over-synchronized)
    explanation: tuple[str, ...]  # one line per reason, in words


@attrs.frozen
class ValuationResult:
    """The outcome of exploring one parameter valuation."""

    verdict: Verdict  # UNKNOWN when a limit stopped the exploration
    states: int
    witness: Witness | None  # for the most severe finding
    findings: frozenset = frozenset()  # every definite failure verdict seen
    reason: str | None = None  # why unknown


@attrs.frozen
class CheckResult:
    verdict: Verdict
    holds: bool | None  # None when unknown
    property: str
    engine: str
    bounds: tuple[tuple[str, int, int], ...]
    states: int
    valuations: int  # explored
    total_valuations: int
    witness: Witness | None = None
    complete: bool = True  # False when a limit stopped some exploration
    reason: str | None = None
