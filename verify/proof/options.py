"""The options of an all-values proof (every budget in one place) and the two small
facts every part of the proof reads from them: the parameters' lowest values and the
wording of an ended budget."""

from __future__ import annotations

import enum
import time
from typing import Callable

import attrs

from semantics.ir import Program

from verify.verdicts import Property


# The default of ProofOptions.rlimit, in Z3 resource units: several times what the
# largest proof of kernels/ and kernels/suite/ spends (docs/proofs.md).
DEFAULT_PROOF_RLIMIT = 1_000_000_000


class Budget(str, enum.Enum):
    """Which budget ended an obligation or a proof (JSON `all_values.budget.hit`)."""

    PROOF_RLIMIT = "proof-rlimit"  # the proof's deterministic budget (--proof-rlimit)
    QUERY_RLIMIT = "query-rlimit"  # one query's resource limit (deterministic)
    WALL_CLOCK = "wall-clock"  # the wall-clock cap (--proof-timeout)

    def __str__(self) -> str:
        return self.value


@attrs.frozen
class ProofOptions:
    """Every budget of an all-values proof, in one place."""

    property: str = Property.BISIMULATION
    query_rlimit: int = 40_000_000  # per Z3 query, in Z3 resource units: the same answer on any load
    # The first round's budget per query (verify/proof/schedule.py): every obligation is
    # tried with it first, and only those it leaves unproved get query_rlimit.
    first_query_rlimit: int = 2_000_000
    # In the second round, a query is first tried in fresh contexts with the retry seeds
    # at this budget each, then with query_rlimit (obligations.Prover.query); 0 (or not
    # below query_rlimit): no short tries.
    short_query_rlimit: int = 5_000_000
    # The whole proof's deterministic budget: Z3 resource units summed over every query
    # and case split of the obligations (`--proof-rlimit`; None: none), counted in the
    # obligations' order (verify/proof/schedule.py). It, not the clock, decides what is
    # proved: the same input and options give the same verdict on any load.
    rlimit: int | None = DEFAULT_PROOF_RLIMIT
    query_timeout_ms: int | None = None  # per Z3 query, wall time (None: only what is left of `timeout`)
    # The wall-clock cap of the whole proof (`--proof-timeout`), seconds; None: none. Only
    # a cap the user sets: reaching it gives unknown, naming it (`wall_clock_ran_out`).
    timeout: float | None = None
    max_witnesses: int = 48  # candidate index tuples per witness op
    seed: int = 0
    dump_smt: str | None = None  # directory for the .smt2 of a query that ends unknown
    max_states: int = 200_000  # for the explicit check of a model's valuation
    # (name, value): parameters range over value.. instead of their declared lower bound
    # (`param K >= 1`; 0 if none); the larger of the two applies (see `domain_lower`).
    lower: tuple = ()
    progress: Callable[[str], None] | None = None
    # Worker processes the obligations are shared among (verify/proof/jobs.py); 1: this
    # process. The answers are the same for every value.
    jobs: int = 1
    # How workers start (multiprocessing): "forkserver" forks them from a server process
    # started fresh, so their answers do not depend on what the calling process did before
    # (with "fork", a proof's effort moved with the proofs run before it);
    # "fork" copies the caller (the tests use it to inject faults into workers).
    start_method: str = "forkserver"
    # Z3's memory limit in each worker process, in MB (None: none): a query that reaches it
    # ends unknown (verify/proof/jobs.py). A query's own `max_memory` did not hold it. Z3
    # counts the whole process: a forked worker (start_method "fork") counts the caller's
    # Z3 memory too.
    worker_memory_mb: int | None = 2048
    # Seconds the 32-bit statement may still take after a proved proof, at least
    # (prove.py `statement_grace`: a sixth of `timeout` when that is more).
    statement_grace: float = 10.0
    # What `timeout` and the reported seconds are measured on: the wall clock; tests pass
    # a fake one (tests/support/clock.py), so that no answer of theirs depends on load.
    # It must pickle when workers run the proof (a module-level function or object).
    clock: Callable[[], float] = time.monotonic



def domain_lower(program: Program, options: ProofOptions) -> dict[str, int]:
    """The lowest value of every parameter in the proof's domain: its declared lower
    bound (the kernel's assumption), raised by `options.lower`."""
    given = dict(options.lower)
    return {p.name: max(p.lower, given.get(p.name, 0)) for p in program.params}


def budget_ran_out(timeout: float | None) -> str:
    """The one wording of an ended wall-clock cap, wherever it is seen first (prove.py's
    driver, an obligation, a query): which sees it first depends on timing."""
    amount = "" if timeout is None else f" of {timeout:g} s"
    return f"the wall-clock cap{amount} set by --proof-timeout ran out"


def rlimit_ran_out(rlimit: int | None) -> str:
    """The one wording of the proof's ended deterministic budget."""
    return f"the proof's deterministic budget of {rlimit or 0:,} Z3 units (--proof-rlimit) ran out"
