"""Proofs for every parameter value (docs/design.md section 4; docs/proofs.md).

For a barrier-free counter program, bisimilarity with the reference follows from two
per-wait properties, each a statement over unbounded parameters and loop indices:

- sound: for every dependence x -> y (x on engine F precedes y, they touch one element,
  one writes), when y may issue, x has completed. Either y's own waits on F say so
  (max of y's thresholds on F >= 1 + local index of x: in-order completion makes
  C[F] >= k mean "F's first k instances completed"), or a *chain* does: some instance z
  completed before y may issue (z runs on y's engine and precedes y, or y waits on z's
  engine past z) and z's own waits on F already forced x (or z runs on F after x).
  Counters only grow without barriers, so what held when z issued still holds.
- exact: every wait `F >= t` of y is satisfied as soon as every producer of y has
  completed: t <= 0, or some producer x on F has 1 + local index >= t.
If every dependence is sound, the counter machine never issues what the reference
would not; if every wait is exact, it never blocks what the reference would issue
(C[F] >= T_min >= t). Together, in every reachable state the enabled issues agree: the
program is bisimilar for all parameter values. The soundness property needs the
first half and deadlock freedom, from `live`: every wait asks only for instances of
its engine that precede the consumer in program order (then the pending instance that
comes first in program order can always issue). Divisors must also be non-zero
wherever they are evaluated (the `defined` obligation): otherwise the program is in
error there. Loop bounds need no obligation: any integer bounds are defined, and
hi <= lo runs zero times (docs/language.md).

Each obligation is a Z3 query for a violation (unsat proves it). Existential parts
(the producer that comes last, a chain's instances, the exact wait's producer) are
first witnessed by candidate loop indices (the consumer's own iteration and the ones
just before it, the solutions of index equations, first and last iterations), then
quantified over all indices. Counts
(local indices, `iters`) come from verify/proof/counts.py, independent of the algorithm.

Verdicts: `proved` when every obligation is unsat; a satisfiable query gives a
valuation, which the explicit engine checks (first with every parameter capped at
4, 5, ..., 16, since Z3's models can be huge, then as is): a failure there is a real counterexample
(`refuted`); otherwise the obligation stays `unknown` (a candidate witness was missing),
as does any query Z3 answers unknown or that runs out of time. Unknown is never proof.
"""

from __future__ import annotations

from functools import partial

import attrs

from semantics.ir import Barrier, Op, Program, walk_stmts
from semantics.registers import inline_registers

from verify.engines.deadline import Deadline, DeadlineReached
from verify.proof.counts import Unsupported
from verify.proof.int32 import RangeLimit, range_limit
from verify.proof.jobs import (  # noqa: F401 (SECOND_ROUND: public here too)
    SECOND_ROUND, WorkerLost, run_all, start_in_worker, tasks,
)
from verify.verdicts import ProofStatus
from verify.proof.obligations import (  # noqa: F401 (the public names of the proof live here too)
    FAILED, PROVED, UNKNOWN, Budget, Obligation, ProofOptions, Prover, bound_divisors, budget_ran_out, divisors,
    domain_lower, loop_sites,
)
from verify.proof.budget import RlimitReached


@attrs.frozen
class Proof:
    status: ProofStatus  # PROVED, REFUTED or UNKNOWN
    property: str
    obligations: tuple[Obligation, ...] = ()
    reason: str | None = None  # why not proved
    counterexample: object = None  # the explicit CheckResult at a refuting valuation
    seconds: float = 0.0
    lower: tuple = ()  # the domain: (name, lowest value) per parameter, no upper bound
    assumptions: tuple[str, ...] = ()  # the kernel's declared lower bounds, as `K >= 1`
    # When proved: up to which parameter values counters and thresholds stay in the signed
    # 32-bit range (verify/proof/int32.py); the obligations assume unbounded counters.
    int32: RangeLimit | None = None
    units: int = 0  # Z3 resource units the obligations' queries spent (deterministic)
    # The budgets it ran with: the deterministic one (--proof-rlimit, Z3 units), the
    # wall-clock cap (--proof-timeout, seconds); None: none. `budget`: the one that ended
    # it when unknown, if one did (the first unknown obligation's, or the driver's).
    rlimit: int | None = None
    timeout: float | None = None
    budget: Budget | None = None

    def to_json(self) -> dict:
        return {"status": self.status, "property": self.property, "reason": self.reason,
                "budget": {"rlimit": self.rlimit, "z3_units": self.units, "wall_clock_cap": self.timeout,
                           "hit": None if self.budget is None else str(self.budget)},
                "domain": {name: [lo, None] for name, lo in self.lower},
                "assumptions": list(self.assumptions),
                "seconds": round(self.seconds, 3),
                "obligations": [o.to_json() for o in self.obligations],
                **({"int32_range": self.int32.to_json()} if self.int32 is not None else {})}


# ---------------------------------------------------------------------- driver


def _why_not(program: Program) -> str | None:
    if any(isinstance(s, Barrier) for s in walk_stmts(program.body)):
        return "the program has barriers; the all-values proof covers barrier-free counter programs"
    if any(isinstance(s, Op) and s.syncs for s in walk_stmts(program.body)):
        return "the program has flag or token clauses; the all-values proof covers counter waits only"
    return None


def start_statement(program: Program, options: ProofOptions):
    """The 32-bit statement of `prove(program, options)` started now in a worker of its
    own (`Started`), for a caller that will prove later and has a core to spare before
    (`verify`: during the bounded check); None where `prove` would not start one (no
    workers, a wall-clock cap, a program outside the proof). Pass it to `prove`, or
    cancel it."""
    program = inline_registers(program)  # as `prove` reads it
    if options.timeout is not None or _why_not(program):
        return None
    return start_in_worker(program, options, Deadline.after(None, options.clock),
                           partial(range_limit, lower=domain_lower(program, options)))


def prove(program: Program, options: ProofOptions = ProofOptions(), statement=None) -> Proof:
    """Try to prove the property for every parameter value (at least `options.lower`;
    see the module docstring). Its budget is deterministic: a resource limit per query
    and `options.rlimit` for all of them (verify/proof/budget.py), so the verdict does
    not depend on load. `options.timeout`, when set, is a wall-clock cap on the whole
    proof: the building of its terms, every query, and the explicit checks that decide a
    failed query (each polls the deadline, so the cap is not overrun by what comes after
    a query); reaching it gives unknown, naming the cap. `statement`: its 32-bit statement
    if already started (`start_statement`, with the same program and options); it is
    ended when the proof returns. Loop registers are read by their values
    (semantics/registers.py): the obligations, the 32-bit statement and the explicit
    checks of a failed query all see the program without them."""
    program = inline_registers(program)
    lower = domain_lower(program, options)
    began = options.clock()
    deadline = Deadline.after(options.timeout, options.clock)
    # The 32-bit statement needs no answer of the proof: on workers it starts now (if
    # the caller has not started it already: `start_statement`).
    if statement is None and not _why_not(program):
        statement = start_in_worker(program, options, deadline, partial(range_limit, lower=lower))
    try:
        try:
            proof = _prove(program, options, deadline)
        except DeadlineReached:  # from a poll of the term building (verify/engines/deadline.py)
            proof = Proof(UNKNOWN, options.property, reason=budget_ran_out(options.timeout),
                          seconds=options.clock() - began, budget=Budget.WALL_CLOCK)
        if proof.status == PROVED:  # the 32-bit statement never costs the proof itself
            proof = attrs.evolve(proof, int32=_range(program, options, lower, deadline, statement))
    finally:
        if statement is not None:
            statement.cancel()
    return attrs.evolve(proof, lower=tuple((p.name, lower[p.name]) for p in program.params),
                        assumptions=assumptions(program), units=sum(o.units for o in proof.obligations),
                        rlimit=options.rlimit, timeout=options.timeout, budget=_budget_hit(proof))


def _budget_hit(proof: Proof) -> Budget | None:
    """The budget that ended an unknown proof: the driver's, or its first unknown
    obligation's (None when proved or refuted, or when no budget ended it)."""
    if proof.status != UNKNOWN or proof.budget is not None:
        return proof.budget
    return next((o.budget for o in proof.obligations if o.status == UNKNOWN), None)


def _range(program: Program, options: ProofOptions, lower: dict, deadline: Deadline, statement) -> RangeLimit:
    """verify/proof/int32.py within what is left of the proof's budget: from `statement`
    (started in a worker beside the proof, `start_in_worker`), or computed here."""
    out_of_time = RangeLimit("unknown", reason=budget_ran_out(options.timeout))
    try:
        if statement is not None:
            # Once the proof is proved, the statement gets a grace period, not the rest of
            # the budget: otherwise `verify` can wait out the whole budget after a proved proof
            # for a statement that only ends "at least".
            grace = statement_grace(options.timeout, options.statement_grace)
            left = grace if deadline.at is None else min(grace, max(0.0, deadline.left()))
            found = statement.result(within=None if left == float("inf") else left)
            if found is None:
                return RangeLimit("unknown", reason=f"no answer within {left:.0f} s after the proof; a larger "
                                  f"--proof-timeout gives it more (a sixth of the budget, at least "
                                  f"{options.statement_grace:.0f} s)")
            return found
        if deadline.passed():
            return out_of_time
        return range_limit(Prover(program, options, deadline), lower)
    except DeadlineReached:
        return out_of_time
    except (WorkerLost, RlimitReached) as err:
        return RangeLimit("unknown", reason=str(err))
    except Unsupported as err:
        # The range statement counts every op's instances; the obligations may not have
        # needed the count of an op that has no waits and no dependence (found by the range
        # differential).
        return RangeLimit("unknown", reason=f"no closed-form counts: {err}")


# Seconds the 32-bit statement may take after the proof, at least (the options' default).
STATEMENT_GRACE = ProofOptions().statement_grace


def statement_grace(timeout: float | None, least: float = STATEMENT_GRACE) -> float:
    """How long after a proved proof its 32-bit statement may still take: a sixth of the
    proof's budget, at least `least` seconds (ProofOptions.statement_grace; no limit
    without a budget)."""
    return float("inf") if timeout is None else max(least, timeout / 6)


def assumptions(program: Program) -> tuple[str, ...]:
    """The kernel's declared parameter assumptions (`param K >= 1`), as text."""
    return tuple(f"{p.name} >= {p.lower}" for p in program.params if p.lower > 0)


def _prove(program: Program, options: ProofOptions, deadline: Deadline) -> Proof:
    from verify.engines.explicit import check
    from verify.verdicts import CheckOptions

    began = options.clock()
    why = _why_not(program)
    if why:
        return Proof(UNKNOWN, options.property, reason=why, seconds=options.clock() - began)
    try:
        obligations = run_all(program, options, deadline, tasks(program, options.property))
    except Unsupported as err:
        return Proof(UNKNOWN, options.property, reason=f"no closed-form counts: {err}",
                     seconds=options.clock() - began)
    except WorkerLost as err:
        return Proof(UNKNOWN, options.property, reason=str(err), seconds=options.clock() - began)

    if all(o.status == PROVED for o in obligations):
        return Proof(PROVED, options.property, tuple(obligations), seconds=options.clock() - began)

    # A satisfiable query names a valuation; the explicit engine decides it there.
    checked: dict[tuple, object] = {}

    def decide(valuation: dict):
        key = tuple(sorted(valuation.items()))
        if key not in checked:
            bounds = tuple((p.name, valuation[p.name], valuation[p.name]) for p in program.params)
            # Bounded by max_states (deterministic); by the wall-clock cap only when one is set.
            left = None if deadline.at is None else deadline.left()
            if left is not None and left <= 0:
                return None  # the wall-clock cap ran out
            checked[key] = check(program, bounds, CheckOptions(property=options.property, max_states=options.max_states,
                                                               timeout=left, clock=options.clock))
        return checked[key]

    final = []
    for o in obligations:
        if o.status == FAILED:
            # The model's valuation may be large (Z3 does not minimize); the same
            # failure usually shows at the model's values capped at a small c, so
            # those are tried first. Every verdict comes from the explicit engine.
            lower = domain_lower(program, options)
            tries = [{k: max(lower.get(k, 0), min(v, cap)) for k, v in o.model.items()}
                     for cap in range(4, 17)] + [o.model]
            for valuation in dict.fromkeys(tuple(t.items()) for t in tries):
                result = decide(dict(valuation))
                if result is None:
                    break
                if result.holds is False:
                    return Proof(ProofStatus.REFUTED, options.property, tuple(obligations), counterexample=result,
                                 reason=f"{o.describe()} fails at {_text(dict(valuation))}",
                                 seconds=options.clock() - began)
            result = decide(o.model)
            if result is None:
                o = attrs.evolve(o, status=UNKNOWN, budget=Budget.WALL_CLOCK,
                                 reason=f"{budget_ran_out(options.timeout)} "
                                 f"while deciding the query's valuation {_text(o.model)}")
            else:
                o = attrs.evolve(o, status=UNKNOWN, reason=(
                    f"no witness found; at {_text(o.model)} the explicit engine finds "
                    f"{'no failure' if result.holds else 'unknown (' + str(result.reason) + ')'}, "
                    "so this is a gap of the proof, not a counterexample"))
        final.append(o)
    first = next(o for o in final if o.status != PROVED)
    return Proof(UNKNOWN, options.property, tuple(final), seconds=options.clock() - began,
                 reason=f"not proved: {first.describe()}: {first.reason}")


def _text(valuation: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in valuation.items()) or "the only valuation"
