"""Verdicts, options and results as plain values (docs/design.md section 4)."""

from __future__ import annotations

import enum
import time
from typing import Callable

import attrs

from semantics.errors import SyncproofError
from semantics.machines import Label
from semantics.sequential import Unrolled


class Verdict(str, enum.Enum):
    """The answer of a check (docs/design.md section 4): each member equals its JSON spelling."""

    BISIMILAR = "bisimilar"
    UNSOUND = "unsound"
    OVER_SYNCHRONIZED = "over-synchronized"
    DEADLOCK = "deadlock"
    UNKNOWN = "unknown"


# The rest of the vocabulary. StrEnums: each member equals its JSON spelling, so the
# JSON fields keep their values and plain strings compare equal.

class Property(enum.StrEnum):
    """What `verify` checks: bisimilarity, or only soundness (over-synchronization allowed)."""
    BISIMULATION = "bisimulation"
    SOUNDNESS = "soundness"


class EngineName(enum.StrEnum):
    """`--engine` choices, and the `engine` of a result (HAPPENS_BEFORE, EXPLICIT, Z3, BOTH)."""
    AUTO = "auto"  # happens-before for waits and barriers, explicit for flags and tokens
    HB = "hb"  # the choice naming the happens-before engine
    EXPLICIT = "explicit"
    Z3 = "z3"
    BOTH = "both"  # explicit and z3, which must agree
    HAPPENS_BEFORE = "happens-before"  # the JSON spelling; `--engine hb` selects it (docs/happens-before.md)


class ProofStatus(enum.StrEnum):
    """The all-values proof, as a whole and per obligation."""
    PROVED = "proved"
    REFUTED = "refuted"  # a query found a valuation that the explicit engine refuted
    FAILED = "failed"  # an obligation's query is satisfiable (a candidate counterexample)
    UNKNOWN = "unknown"  # a budget or Z3 unknown: never success
    SKIPPED = "skipped"  # not attempted (`--scope bounded`, barriers, peer clauses)


class ObligationKind(enum.StrEnum):
    DEFINED = "defined"  # loop bounds >= 0, divisors != 0
    SOUND = "sound"  # a dependence is enforced when its consumer issues
    EXACT = "exact"  # a wait holds once the consumer's producers completed
    LIVE = "live"  # a wait can be satisfied (for --property soundness)


class MutantStatus(enum.StrEnum):
    KILLED = "killed"  # the verifier refutes the mutant
    EQUIVALENT = "equivalent"  # still bisimilar: the mutated wait was masked or redundant
    UNKNOWN = "unknown"  # a budget stopped the check


class InternalError(SyncproofError):
    """Two things syncproof holds equal disagree (the reference and counter machines on a
    label they must agree on, a Z3 model and the Python machines): a bug in syncproof,
    reported with exit status 3, never as a verdict."""


# Precedence among definite findings: any unsound state beats a deadlock, which
# beats over-synchronization.
SEVERITY = {Verdict.BISIMILAR: 0, Verdict.OVER_SYNCHRONIZED: 1, Verdict.DEADLOCK: 2, Verdict.UNSOUND: 3}

PROPERTIES = tuple(p.value for p in Property)


def is_failure(verdict: Verdict, prop: str) -> bool:
    """Does `verdict` refute the property? (over-synchronization is allowed by soundness)."""
    if prop == Property.SOUNDNESS:
        return verdict in (Verdict.UNSOUND, Verdict.DEADLOCK)
    return verdict in (Verdict.UNSOUND, Verdict.DEADLOCK, Verdict.OVER_SYNCHRONIZED)


def finalise(worst: Verdict, complete: bool, prop: str) -> tuple[Verdict, bool | None]:
    """The verdict and `holds` of a check from its most severe finding: a failure of the
    property is reported whether or not the exploration completed (the counterexample
    is real); otherwise an incomplete exploration is `unknown`, never success. Every
    engine ends its check here."""
    if is_failure(worst, prop):
        return worst, False
    if not complete:
        return Verdict.UNKNOWN, None
    return worst, True


@attrs.frozen
class CheckOptions:
    """Every budget and switch of a check, in one place."""

    property: str = Property.BISIMULATION
    max_states: int = 2_000_000  # per parameter valuation
    timeout: float | None = None  # seconds for the whole check
    progress: Callable[[str], None] | None = None  # called with a progress line now and then
    # What `timeout` is measured on (tests pass a fake one, tests/support/clock.py). It must
    # pickle when the valuations fan out to other processes (a module-level function or object).
    clock: Callable[[], float] = time.monotonic


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
    """The outcome of a check within parameter bounds: the verdict, whether the property
    holds (None when unknown), what was explored, and a witness for a failure."""

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
