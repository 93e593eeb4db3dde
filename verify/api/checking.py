"""`verify`: sync a program, check it within parameter bounds, then try to prove the
property for every parameter value, and say which of the two the answer covers.

One `VerifyOptions` holds every switch (what `syncproof verify` accepts); one `Report`
holds the answer. The engines are chosen here: a per-valuation engine
(verify/engines/select.py: happens-before or explicit), Z3 (verify/engines/z3_check.py),
or both, which must agree; after a bounded success the all-values proof
(verify/proof/prove.py) runs unless the scope asked for is `bounded`. The command line
formats a `Report` (verify/cli/report.py, verify/cli/prove.py) and adds nothing to it.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Callable

import attrs

from algorithm.registry import SyncResult, get_strategy
from semantics.errors import KernelError, UsageError
from semantics.ir import Program
from verify.engines import select as engine_select
from verify.fanout import FanOut
from verify.verdicts import PROPERTIES, CheckOptions, CheckResult, EngineName, ProofStatus, Property, Verdict

from verify.proof.options import DEFAULT_PROOF_RLIMIT  # without z3 and sympy

if TYPE_CHECKING:  # the proof loads z3 and sympy: imported only where it runs
    from verify.proof.prove import Proof

# The all-values proof's wall-clock cap in seconds: none by default (the deterministic
# budget, verify/proof/options.py DEFAULT_PROOF_RLIMIT, decides what is proved).
DEFAULT_PROOF_TIMEOUT = None
# Worker processes of the proof (verify/proof/jobs.py). A fixed default, not the machine's
# core count: the proof's answers are deterministic for a given number of workers.
DEFAULT_PROOF_JOBS = 2
DEFAULT_MAX_PARAM = 3  # parameters not given are checked from their lower bound up to this

ENGINES = (*engine_select.CHOICES, EngineName.Z3, EngineName.BOTH)

# Why no all-values proof ran (`Report.proof_skipped`; the JSON `all_values.reason`).
SKIPPED_BOUNDED = "--scope bounded"
SKIPPED_FAILED = "the bounded check did not succeed"
SKIPPED_UNKNOWN = "the bounded check is unknown"
# The combined reason of `engine="both"` when the two answers cannot be merged.
BOTH_UNKNOWN = "at least one engine's answer is unknown"
BOTH_DISAGREE = "the explicit and z3 engines disagree"


class Scope(enum.StrEnum):
    """What an answer covers: `bounded`, every valuation within the parameter bounds;
    `all`, every parameter value (proved). As an option: `all` tries the proof after a
    bounded success (the command line's `--scope auto`), `bounded` skips it."""

    BOUNDED = "bounded"
    ALL = "all"


def _scope(value) -> Scope:
    if value == "auto":  # the command line's spelling of "try for all"
        return Scope.ALL
    try:
        return Scope(value)
    except ValueError:
        raise UsageError(f"unknown scope '{value}' (choose from {', '.join(Scope)})") from None


def _bound_items(params) -> tuple[tuple[str, int, int], ...]:
    """`{name: value or (lo, hi)}`, or (name, lo, hi) triples, as (name, lo, hi) triples."""
    items = params.items() if isinstance(params, Mapping) else [(t[0], tuple(t[1:])) for t in params]
    out = []
    for name, value in items:
        try:
            lo, hi = (value, value) if isinstance(value, int) else tuple(value)
            out.append((str(name), int(lo), int(hi)))
        except (TypeError, ValueError):
            raise UsageError(f"parameter {name}: {value!r} is neither a value nor a (lo, hi) pair") from None
    return tuple(out)


def _one_of(choices):
    def check(instance, attribute, value):
        if value not in choices:
            raise UsageError(f"unknown {attribute.name} '{value}' (choose from {', '.join(choices)})")
    return check


def _positive(instance, attribute, value):
    if value is not None and not value > 0:
        raise UsageError(f"{attribute.name} must be positive, not {value}")


@attrs.frozen
class VerifyOptions:
    """Every switch of `verify`, as `syncproof verify` accepts them (docs/cli.md).

    `params` bounds parameters inclusively, `{"N": (0, 5), "K": 2}`; every other
    parameter ranges from its declared lower bound to `max(max_param, lower bound)`
    (`max_param` default 3). `engine`: `auto` (happens-before for waits and barriers,
    explicit for flags and tokens), `hb`, `explicit`, `z3`, or `both` (explicit and z3,
    which must agree). `property`: `bisimulation` or `soundness`. `scope`: `Scope.ALL`
    (default) tries the all-values proof after a bounded success, `Scope.BOUNDED` skips
    it. `max_states` is per valuation; `timeout` (seconds, from the call) bounds the
    check; `proof_rlimit` (Z3 resource units) is the all-values proof's deterministic
    budget, `proof_timeout` (seconds; None: none) its wall-clock cap; `proof_jobs` worker
    processes share the proof.
    `workers`/`cluster` fan the valuations out (verify/fanout.py). `progress` is called
    with a progress line now and then (a verify.progress.Progress shows the proof's
    start at once); `on_checked` is called with the strategy's `SyncResult` once the
    bounded check has ended, before the proof starts.
    """

    strategy: str = "threshold"
    params: tuple[tuple[str, int, int], ...] = attrs.field(default=(), converter=_bound_items)
    max_param: int | None = None
    engine: str = attrs.field(default=EngineName.AUTO, validator=_one_of(ENGINES))
    property: str = attrs.field(default=Property.BISIMULATION, validator=_one_of(PROPERTIES))
    scope: Scope = attrs.field(default=Scope.ALL, converter=_scope)
    max_states: int = attrs.field(default=CheckOptions().max_states, validator=_positive)
    timeout: float | None = attrs.field(default=None, validator=_positive)
    proof_timeout: float | None = attrs.field(default=DEFAULT_PROOF_TIMEOUT, validator=_positive)
    proof_rlimit: int | None = attrs.field(default=DEFAULT_PROOF_RLIMIT, validator=_positive)
    proof_jobs: int = attrs.field(default=DEFAULT_PROOF_JOBS, validator=_positive)
    dump_smt: str | None = None  # (z3 and the proof) write a query that ends unknown here
    verbose: bool = False  # one progress line per proof query, not a count now and then
    workers: int = 1
    cluster: str | None = None
    progress: Callable[[str], object] | None = attrs.field(default=None, eq=False)
    on_checked: Callable[[SyncResult], object] | None = attrs.field(default=None, eq=False)


@attrs.frozen
class Report:
    """The answer of `verify`.

    `result` is the verdict to report (verify/verdicts.py `CheckResult`: `verdict`,
    `holds`, `bounds`, `witness` with the trace of a failure): the bounded check's, or,
    when the all-values proof refuted the property outside the bounds, the explicit
    check at that valuation. `scope` is `Scope.ALL` only when the property was proved
    for every parameter value the kernel allows. `proof` is the all-values proof
    (verify/proof/prove.py `Proof`) when one ran, else None with `proof_skipped` saying
    why (None too when the kernel has no parameters: the check covered its only run).
    `sync` is the strategy's result (the synchronized program and its statistics);
    `by_engine` holds each engine's own result when `engine="both"`, and `disagreement`
    is set when they contradict each other (a bug in syncproof; `result` is then
    `unknown`).
    """

    result: CheckResult
    scope: Scope
    strategy: str
    sync: SyncResult
    proof: Proof | None = None
    proof_skipped: str | None = None
    by_engine: tuple[CheckResult, ...] = ()
    disagreement: bool = False
    checked_bounds: tuple = ()  # the bounds the bounded check covered (`result.bounds` may be
    # the one valuation of a counterexample the proof found outside them)

    @property
    def verdict(self) -> Verdict:
        """The verdict (`bisimilar`, `unsound`, `over-synchronized`, `deadlock`, `unknown`)."""
        return self.result.verdict

    @property
    def holds(self) -> bool | None:
        """Whether the property holds (None when unknown)."""
        return self.result.holds

    @property
    def engine(self) -> str:
        """The engine that answered: `happens-before`, `explicit`, `z3` or `both`."""
        return self.result.engine

    @property
    def stats(self):
        """The strategy's statistics (waits, barriers, dependence pairs, ...)."""
        return self.sync.stats

    @property
    def program(self) -> Program:
        """The synchronized program that was checked."""
        return self.sync.program


def parameter_bounds(program: Program, params=(), max_param: int | None = None) -> tuple[tuple[str, int, int], ...]:
    """Inclusive bounds for every parameter of `program`, in declaration order: those in
    `params` as given, every other one from its lower bound (`param K >= 1`; default 0)
    to max(max_param, lower bound), `max_param` default 3. A bound below a parameter's
    declared lower bound is a `KernelError` at the declaration."""
    if max_param is not None and max_param < 0:
        raise UsageError(f"max_param must be non-negative, not {max_param}")
    declared = {p.name: p for p in program.params}
    given: dict[str, tuple[int, int]] = {}
    for name, lo, hi in _bound_items(params):
        if name not in declared:
            raise UsageError(f"the kernel has no parameter '{name}' (parameters: {', '.join(declared) or 'none'})")
        if name in given:
            raise UsageError(f"parameter {name} is bounded twice")
        if not 0 <= lo <= hi:
            raise UsageError(f"parameter {name}: {lo}..{hi} is not a non-empty range of non-negative integers")
        param = declared[name]
        if lo < param.lower:
            raise KernelError(f"parameter {name} = {lo} is below its lower bound {param.lower} "
                              f"(declared `{name} >= {param.lower}`)", param.loc)
        given[name] = (lo, hi)
    top = DEFAULT_MAX_PARAM if max_param is None else max_param
    return tuple((p.name, *given.get(p.name, (p.lower, max(top, p.lower)))) for p in program.params)


def verify(program: Program, options: VerifyOptions = VerifyOptions()) -> Report:
    """Sync `program` with `options.strategy` (`manual`: as written), check the result
    against the reference semantics for every valuation within the parameter bounds,
    and, after a bounded success and unless `options.scope` is `Scope.BOUNDED`, try to
    prove the property for every parameter value. Never raises for a failing or unknown
    answer (they are verdicts in the `Report`); bad options raise `UsageError`, a kernel
    that goes wrong at run time `KernelError`, a disagreement of two checks that must
    agree `verify.verdicts.InternalError`."""
    began = time.monotonic()
    strategy = get_strategy(options.strategy)
    bounds = parameter_bounds(program, options.params, options.max_param)
    start_workers_early(options, program)
    sync_result = strategy(program)
    synced = sync_result.program
    statement = _start_statement(options, synced, bounds)
    try:
        return _checked(options, began, bounds, sync_result, statement)
    finally:
        if statement is not None:
            statement.cancel()


def _checked(options: VerifyOptions, began: float, bounds, sync_result, statement) -> Report:
    """verify() after the strategy ran: the bounded check, then the all-values proof."""
    synced = sync_result.program

    def timeout():  # what is left of options.timeout, which counts from the call
        return None if options.timeout is None else max(1e-3, options.timeout - (time.monotonic() - began))

    results = {}
    if options.engine != EngineName.Z3:  # a per-valuation engine (`both`: the explicit one, and z3)
        engine = EngineName.EXPLICIT if options.engine == EngineName.BOTH else options.engine
        check_options = CheckOptions(property=options.property, max_states=options.max_states, timeout=timeout(),
                                     progress=options.progress)
        fan_out = FanOut(workers=options.workers, cluster=options.cluster)
        results[engine] = engine_select.check(synced, bounds, check_options, engine, fan_out)
    if options.engine in (EngineName.Z3, EngineName.BOTH):
        # imported only when asked for: loading and syncing start without z3
        from verify.engines.z3_check import Z3Options
        from verify.engines.z3_check import check as z3_check

        z3_options = Z3Options(property=options.property, timeout=timeout(), dump_smt=options.dump_smt,
                               progress=options.progress)
        results[EngineName.Z3] = z3_check(synced, bounds, z3_options)
    if options.on_checked is not None:
        options.on_checked(sync_result)

    if options.engine == EngineName.BOTH:
        explicit, z3 = results[EngineName.EXPLICIT], results[EngineName.Z3]
        unknown = Verdict.UNKNOWN in (explicit.verdict, z3.verdict)
        agree = explicit.verdict == z3.verdict and explicit.holds == z3.holds
        if not agree or unknown:  # one unknown answer for both; no proof
            why = BOTH_UNKNOWN if unknown else BOTH_DISAGREE
            combined = attrs.evolve(explicit, verdict=Verdict.UNKNOWN, holds=None, engine=EngineName.BOTH,
                                    witness=None, complete=False, reason=why)
            return Report(combined, Scope.BOUNDED, options.strategy, sync_result, None, SKIPPED_UNKNOWN,
                          (explicit, z3), disagreement=not unknown)
        checked, by_engine = attrs.evolve(explicit, engine=EngineName.BOTH), (explicit, z3)
    else:
        checked, by_engine = results[options.engine], ()
    result, proof, skipped = _all_values(options, synced, checked, bounds, statement)
    return Report(result, _scope_of(synced, proof, skipped), options.strategy, sync_result, proof, skipped, by_engine,
                  checked_bounds=checked.bounds)


def start_workers_early(options: VerifyOptions, program: Program) -> None:
    """Start the proof's worker server now (verify/proof/server.py): it loads its modules
    on another core while the strategy runs and the bounded check explores, so the
    proof's workers fork at once. Only when a proof may run on workers."""
    if options.scope == Scope.BOUNDED or options.proof_jobs <= 1 or not program.params:
        return
    from verify.proof.server import start_workers  # without z3 and sympy: the server loads them

    start_workers()


def _always(progress, text: str) -> None:
    """A progress line shown whatever the throttle (Progress.always), if any reporter."""
    if progress is not None:
        getattr(progress, "always", progress)(text)


def _proof_options(options: VerifyOptions, bounds, progress=None):
    from verify.proof.prove import ProofOptions

    # Lower bounds of the check restrict the proof too (K=1..3: every K >= 1).
    lower = tuple((name, lo) for name, lo, _ in bounds)
    return ProofOptions(property=options.property, timeout=options.proof_timeout, rlimit=options.proof_rlimit,
                        dump_smt=options.dump_smt, progress=progress, lower=lower, jobs=options.proof_jobs)


def _start_statement(options: VerifyOptions, program: Program, bounds):
    """The proof's 32-bit statement started in a worker now, beside the bounded check
    (which runs on one core), instead of beside the proof's own workers; None where no
    proof may run on workers (the proof then starts it itself, if at all)."""
    if options.scope == Scope.BOUNDED or options.proof_jobs <= 1 or not program.params:
        return None
    from verify.proof.prove import start_statement

    return start_statement(program, _proof_options(options, bounds))


def _all_values(options: VerifyOptions, program: Program, result: CheckResult, bounds, statement=None):
    """(result to report, proof or None, why no proof ran). The result changes only when
    the proof finds a counterexample outside the bounds: then it is the explicit
    engine's result at that valuation."""
    if options.scope == Scope.BOUNDED:
        return result, None, SKIPPED_BOUNDED
    if result.holds is not True:
        return result, None, SKIPPED_FAILED if result.holds is False else SKIPPED_UNKNOWN
    if not program.params and result.complete:  # the check covered the only valuation
        return result, None, None
    progress = options.progress
    cap = "" if options.proof_timeout is None else f", wall-clock cap {options.proof_timeout:g} s: --proof-timeout"
    rlimit = "no limit" if options.proof_rlimit is None else f"{options.proof_rlimit:,} Z3 units"
    _always(progress, f"all-values proof of {options.property} for every parameter value "
                      f"(budget {rlimit}: --proof-rlimit{cap}; --scope bounded skips it)")
    answered = [0]

    def on_query(line: str) -> None:  # one line per answered query (`verbose`), else a count
        if line.startswith(SECOND_ROUND):
            _always(progress, line)
            return
        answered[0] += 1
        if options.verbose:
            _always(progress, line)
        elif progress is not None:
            progress(f"all-values proof: {answered[0]} Z3 {'query' if answered[0] == 1 else 'queries'} answered "
                     "(an obligation takes one or more)")

    from verify.proof.prove import SECOND_ROUND, prove

    proof = prove(program, _proof_options(options, bounds, on_query), statement)
    if proof.status == ProofStatus.REFUTED:
        return proof.counterexample, proof, None
    return result, proof, None


def _scope_of(program: Program, proof, skipped: str | None) -> Scope:
    """ALL when proved for every value the kernel allows: the proof's domain starts at
    each parameter's declared lower bound (not at a larger one a bound asked for)."""
    if proof is None:
        return Scope.ALL if skipped is None else Scope.BOUNDED
    lowest = {p.name: p.lower for p in program.params}  # the declared assumptions
    if proof.status == ProofStatus.PROVED and all(lo <= lowest.get(name, 0) for name, lo in proof.lower):
        return Scope.ALL
    return Scope.BOUNDED
