"""The Z3 checker: bounded model checking of the product of the reference and counter
machines over symbolic parameter values and symbolic schedules (docs/design.md section 4).

It answers the question `verify.engines.explicit.check` answers, independently: the program is
unrolled once into potential instances with existence formulas over the parameter
variables (verify/engines/z3_machines.py), so one query covers every valuation within the
bounds, and the model names the valuation of a counterexample.

Depth k asks for a path of k steps from the initial product state (each step: one
engine issues, as enabled in both machines, or completes) that ends in a state where
the enabled issue sets differ:
- unsound: the counter machine enables an issue the reference does not;
- deadlock: the counter machine has no step, has not finished, and the reference
  enables an issue it blocks;
- over-synchronized: the reference enables an issue the counter machine blocks.
Every step advances one engine of the reference by one (issue or complete), so a
state at depth k has engine values summing to k and each reachable product state sits
at exactly one depth; a run of a valuation with n instances has 2n steps. Checking
every depth up to 2 * (largest n within the bounds) therefore visits every reachable
state of every valuation: only then is a verdict complete. As the explicit engine,
the verdict is the most severe finding over all valuations and states: after a finding
the search goes on asking only for more severe kinds.

Both machines step only on labels both enable. That is the explicit engine's product:
it follows the counter machine's labels from states that are not unsound, and there
the counter's labels are the reference's too; unsound states end the search.

A query's limits are the ones asked for: what is left of the check's time budget
(`timeout`, the command's `--timeout`), and optionally a per-query wall-clock limit and
a per-query resource limit (Z3 units, deterministic). With none given a query runs until
Z3 decides it: a hidden per-query limit made a check without `--timeout` end "unknown
(canceled)" (Z3's word for a query its timer or resource limit stopped). `unknown` names
the limit that ended the query, else Z3's `reason_unknown()`; with `dump_smt`, the query
is written to an .smt2 file.
A decoded counterexample is replayed on the Python machines; any mismatch with the
model is an InternalError (a bug in syncproof).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import attrs
import z3

from semantics.compiled import compiler
from semantics.errors import KernelError, UsageError
from semantics.ir import Program, peer_clause
from semantics.registers import inline_registers
from verify.engines.witness import range_check
from semantics.machines import COMPLETE, ISSUE, Counter, Label, Reference
from semantics.sequential import UnrollLimit, unroll

from verify.engines import z3_events as ze
from verify.engines import z3_machines as zm
from verify.engines.deadline import Deadline, DeadlineReached
from verify.engines.explicit import InternalError, valuations
from verify.engines.witness import witness_of
from verify.verdicts import SEVERITY, CheckResult, EngineName, Verdict, finalise


@attrs.frozen
class Z3Options:
    """Every budget and switch of a Z3 check, in one place."""

    property: str = "bisimulation"
    encoding: str = "events"  # "events" (one query, event times) or "steps" (BMC depth by depth)
    max_depth: int | None = None  # steps only; None: every depth a complete answer needs
    query_timeout_ms: int | None = None  # per Z3 query, wall time (None: only what is left of `timeout`)
    query_rlimit: int | None = None  # per Z3 query, in Z3 resource units (deterministic; None: none)
    timeout: float | None = None  # seconds for the whole check
    seed: int = 0  # Z3's random seed
    dump_smt: str | None = None  # directory for the .smt2 of a query that ends unknown
    max_instances: int = 2_000  # per valuation; beyond it the answer is unknown
    progress: Callable[[str], None] | None = None  # called with one line per depth
    clock: Callable[[], float] = time.monotonic  # what `timeout` is measured on (tests pass a fake one)
    on_limit: Callable[[str, int], None] | None = None  # told (option, value) of each limit a query gets


@attrs.frozen
class _Path:
    """The BMC unrolling: product states after each step and each step's engine."""

    refs: list
    ctrs: list
    who: list


def _step(pp: zm.PotentialProgram, ref, ctr, who, deadline: Deadline):
    """One product step taken by engine `who` (a Z3 Int): the formula that it is
    enabled in both machines, and both successor states."""
    engines = range(len(pp.program.engines))
    moves = []
    for e in engines:
        issue = []
        for y in pp.reference_streams[e]:
            deadline.check()
            issue.append(z3.And(zm.counter_issue_enabled(pp, ctr, y), zm.reference_issue_enabled(pp, ref, y)))
        completes = z3.And(zm.complete_enabled(ctr, e), zm.complete_enabled(ref, e))
        moves.append(z3.And(who == e, z3.Or(completes, *issue)))
    next_ref = tuple(zm.reference_step(pp, ref, e)[e] for e in engines)
    next_ref = tuple(_select(who, e, next_ref[e], ref[e]) for e in engines)
    options = [zm.counter_step(pp, ctr, e) for e in engines]
    next_ctr = options[-1]
    for e in reversed(engines[:-1]):
        next_ctr = tuple(_select(who, e, a, b) for a, b in zip(options[e], next_ctr))
    return z3.Or(*moves), next_ref, next_ctr


def _select(who, e, a, b):
    return z3.If(who == e, a[0], b[0]), z3.If(who == e, a[1], b[1])


def _findings(pp: zm.PotentialProgram, ref, ctr, deadline: Deadline) -> dict:
    """Formula per verdict kind: the product state (ref, ctr) shows that kind."""
    blocked, unsound = [], []
    for y in pp.instances:
        deadline.check()
        blocked.append(zm.blocked_at(pp, ref, ctr, y))
        unsound.append(zm.unsound_at(pp, ref, ctr, y))
    blocked = z3.Or(*blocked)
    return {
        Verdict.UNSOUND: z3.Or(*unsound),
        Verdict.DEADLOCK: z3.And(zm.counter_stuck(pp, ctr), blocked),
        Verdict.OVER_SYNCHRONIZED: blocked,
    }


def _dump(options: Z3Options, solver: z3.Solver, name: str) -> str | None:
    if not options.dump_smt:
        return None
    os.makedirs(options.dump_smt, exist_ok=True)
    path = os.path.join(options.dump_smt, f"{name}.smt2")
    with open(path, "w") as handle:
        handle.write(solver.to_smt2())
    return path


NO_TIMEOUT_MS = 4294967295  # Z3's default `timeout`: none


def _why_unknown(solver, options: Z3Options, deadline: Deadline) -> str:
    """Which limit ended a query Z3 left unknown: the check's time budget, a per-query
    limit, or Z3's own reason (Z3 says "canceled" for a timer's or a resource limit's stop)."""
    if deadline.passed():
        return "time limit reached"
    reason = solver.reason_unknown()
    if reason in ("canceled", "timeout"):
        limits = [*([f"resource limit of {options.query_rlimit:,} units"] if options.query_rlimit else []),
                  *([f"time limit of {options.query_timeout_ms} ms"] if options.query_timeout_ms is not None else [])]
        if limits:
            return f"Z3 returned unknown: the query's {' or '.join(limits)} ran out"
    return f"Z3 returned unknown ({reason})"


class _Search:
    """The queries of one check: what has been found so far and what is still wanted."""

    def __init__(self, solver, options: Z3Options, deadline, wanted, name):
        self.solver, self.options, self.deadline, self.name = solver, options, deadline, name
        self.wanted = list(wanted)
        self.worst, self.witness, self.queries, self.reason = Verdict.BISIMILAR, None, 0, None

    def ask(self, findings: dict, decode, where: str) -> bool:
        """Ask for states of every still wanted kind, most severe findings first
        recorded; False when a query ended unknown (self.reason says why)."""
        solver = self.solver
        while self.wanted:
            remaining = self.deadline.left()
            if remaining is not None and remaining <= 0:
                self.reason = f"time limit reached ({where})"
                return False
            limits = [ms for ms in (self.options.query_timeout_ms,
                                    None if remaining is None else max(1, int(remaining * 1000))) if ms is not None]
            # Z3's "no limit" values: a solver reused across queries must not keep an older limit
            for option, value in (("timeout", min(limits) if limits else NO_TIMEOUT_MS),
                                  ("rlimit", self.options.query_rlimit or 0)):
                solver.set(option, value)
                if self.options.on_limit is not None:
                    self.options.on_limit(option, value)
            solver.push()
            solver.add(z3.Or(*[findings[k] for k in self.wanted]))
            answer = solver.check()
            self.queries += 1
            if answer == z3.unknown:
                self.reason = f"{_why_unknown(solver, self.options, self.deadline)} {where}"
                dumped = _dump(self.options, solver, f"{self.name}-{self.queries}")
                if dumped:
                    self.reason += f"; query written to {dumped}"
                solver.pop()
                return False
            if answer == z3.unsat:
                solver.pop()
                return True
            model = solver.model()
            kind = max((k for k in self.wanted if z3.is_true(model.eval(findings[k], model_completion=True))),
                       key=SEVERITY.__getitem__)
            self.witness = decode(model, kind)
            solver.pop()
            self.worst = kind
            self.wanted = [k for k in self.wanted if SEVERITY[k] > SEVERITY[kind]]
        return True


def _search_events(pp: zm.PotentialProgram, search: _Search, progress) -> bool:
    """One query per finding kind over every reachable state (z3_events.py)."""
    tl = ze.timeline(pp)
    horizon = z3.Int("T")
    search.solver.add(*tl.facts, *ze.issues_enabled(pp, tl, horizon, search.deadline), horizon >= 1)
    findings = _findings(pp, ze.reference_state_at(pp, tl, horizon), ze.counter_state_at(pp, tl, horizon),
                         search.deadline)

    def decode(model, kind):
        values = _valuation(pp, model)
        labels = ze.schedule(pp, tl, model, horizon)
        return _replay(pp, model, values, labels, kind)

    if progress:
        progress("z3: event-time query over every reachable state")
    return search.ask(findings, decode, "in the event-time query")


def _search_steps(pp: zm.PotentialProgram, search: _Search, depth_limit: int, progress) -> bool:
    """Bounded model checking, depth by depth (incremental: one push/pop per query)."""
    path = _Path([zm.reference_initial(pp)], [zm.counter_initial(pp)], [])
    for depth in range(depth_limit + 1):
        if depth:
            who = z3.Int(f"who{depth}")
            enabled, next_ref, next_ctr = _step(pp, path.refs[-1], path.ctrs[-1], who, search.deadline)
            ref, ctr = zm.fresh_state(pp, f"r{depth}"), zm.fresh_state(pp, f"c{depth}")
            search.solver.add(enabled, zm.same_state(ref, next_ref), zm.same_state(ctr, next_ctr))
            path.refs.append(ref)
            path.ctrs.append(ctr)
            path.who.append(who)
        if progress:
            progress(f"z3: depth {depth}/{depth_limit}")

        def decode(model, kind, steps=depth):
            return _replay(pp, model, _valuation(pp, model), _step_labels(pp, model, path, steps), kind,
                           (path.refs, path.ctrs))

        if not search.ask(_findings(pp, path.refs[-1], path.ctrs[-1], search.deadline), decode, f"at depth {depth}"):
            return False
        if not search.wanted:
            break
    return True


def check(program: Program, bounds: tuple[tuple[str, int, int], ...], options: Z3Options = Z3Options()) -> CheckResult:
    """Check `program` (its own waits and barriers) against the reference for every
    valuation within `bounds` (name, lo, hi inclusive). Loop registers are read by their
    values (semantics/registers.py): the encoding sees the program without them."""
    program = inline_registers(program)
    clause = peer_clause(program)
    if clause is not None:
        # The Z3 encoding has no flag or token state: refuse rather than answer wrongly.
        where = f" (line {clause.loc.line})" if clause.loc else ""
        raise UsageError(f"the z3 engine does not support the peer clause '{clause.kind}'{where}: "
                         f"check this program with --engine explicit")
    deadline = Deadline.after(options.timeout or None, options.clock)
    every = valuations(bounds)

    def result(verdict, witness, queries, complete, reason=None, covered=0):
        final, holds = finalise(verdict, complete, options.property)
        return CheckResult(verdict=final, holds=holds, property=options.property, engine=EngineName.Z3, bounds=bounds,
                           states=queries, valuations=covered, total_valuations=every.size, witness=witness,
                           complete=complete, reason=reason)

    # The encoding is built in Python loops that poll the deadline (verify/engines/deadline.py);
    # Z3's queries get the remaining time.
    run = {"phase": "unrolling the valuations", "search": None}
    try:
        return _check(program, bounds, options, deadline, every, result, run)
    except DeadlineReached:
        search = run["search"]
        if search is None:
            return result(Verdict.BISIMILAR, None, 0, False, f"time limit reached while {run['phase']}")
        return result(search.worst, search.witness, search.queries, False, f"time limit reached while {run['phase']}")


def _check(program, bounds, options: Z3Options, deadline, every, result, run) -> CheckResult:
    # Unroll every valuation first, in the explicit engine's order: a kernel error at
    # some valuation ends that engine's run there unless an earlier one is unsound.
    usable, error, largest = [], None, 0
    compiled = compiler()  # one for every valuation (verify/engines/valuations.py says why)
    for values in every:
        deadline.check()
        try:
            unrolled = unroll(program, values, limit=options.max_instances, compiled=compiled)
            largest = max(largest, len(unrolled.instances))
            out_of_range = range_check(unrolled)  # the 32-bit range is part of soundness
            if out_of_range is not None:
                return result(Verdict.UNSOUND, out_of_range.witness, 0, True, covered=len(usable) + 1)
        except UnrollLimit as limit:
            return result(Verdict.BISIMILAR, None, 0, False, f"instance limit: {limit}")
        except KernelError as err:
            error = err
            break
        usable.append(values)
    if error is not None and not usable:
        raise error
    run["phase"] = "building the Z3 encoding"
    if options.progress:
        options.progress(f"z3: building the encoding of {len(usable)} valuations, up to {largest} instances each")
    pp = zm.potential_program(program, usable, deadline=deadline)
    solver = z3.Solver()
    solver.set("random_seed", options.seed)
    solver.add(*pp.facts)
    solver.add(zm.valuation_constraint(pp, bounds) if error is None else zm.valuation_in(pp, usable))
    wanted = [Verdict.UNSOUND] if error is not None else [Verdict.UNSOUND, Verdict.DEADLOCK, Verdict.OVER_SYNCHRONIZED]
    search = run["search"] = _Search(solver, options, deadline, wanted, program.name or "kernel")

    def progress(line):
        if options.progress:
            options.progress(line)

    needed = 2 * largest
    depth_limit = needed
    run["phase"] = f"running the {options.encoding} search"
    if options.encoding == "events":
        finished = _search_events(pp, search, progress)
    else:
        depth_limit = needed if options.max_depth is None else min(needed, options.max_depth)
        finished = _search_steps(pp, search, depth_limit, progress)
    if error is not None and search.worst != Verdict.UNSOUND:
        raise error
    complete = search.worst == Verdict.UNSOUND or (finished and depth_limit == needed)
    reason = search.reason
    if finished and not complete:
        reason = f"depth limit {depth_limit} reached (a complete check needs {needed})"
    return result(search.worst, search.witness, search.queries, complete, reason,
                  covered=len(usable) if complete else 0)


def _valuation(pp: zm.PotentialProgram, model) -> dict:
    return {n: model.eval(v, model_completion=True).as_long() for n, v in pp.params.items()}


def _step_labels(pp: zm.PotentialProgram, model, path: _Path, steps: int) -> list:
    """(kind, potential instance) per step of a BMC model: the stepping engine's
    current instance, found by its position in the model's counter state."""
    def value(term):
        return model.eval(term, model_completion=True)

    labels = []
    for k in range(steps):
        engine = value(path.who[k]).as_long()
        pos, busy = (value(t) for t in path.ctrs[k][engine])
        here = [y for y in pp.reference_streams[engine]
                if z3.is_true(value(y.exists)) and value(y.position).as_long() == pos.as_long()]
        if len(here) != 1:
            raise InternalError(f"z3 step {k + 1}: no instance of {pp.program.engines[engine]} at position {pos}")
        labels.append((COMPLETE if z3.is_true(busy) else ISSUE, here[0]))
    return labels


def _replay(pp: zm.PotentialProgram, model, values: dict, labels: list, kind: Verdict, states=None):
    """The witness of a model: unroll for the model's valuation, replay its run on the
    Python machines, and check that they reach a `kind` state as the model says."""
    def value(term):
        return model.eval(term, model_completion=True)

    unrolled = unroll(pp.program, values)
    index = {zm.instance_ident(i): i.index for i in unrolled.instances}
    for y in pp.instances:
        if z3.is_true(value(y.exists)) != (y.ident in index):
            raise InternalError(f"z3 model and unroll disagree on whether {y.op.name}{dict(y.env)} occurs at {values}")
    ref, ctr = Reference(unrolled), Counter(unrolled)
    state = (ref.initial(), ctr.initial())
    parent: dict = {state: None}
    for k, (label_kind, y) in enumerate(labels):
        label = Label(label_kind, index[y.ident])
        r, c = state
        if label not in ctr.enabled(c) or label not in ref.enabled(r):
            raise InternalError(f"z3 run step {k + 1} ({label_kind} {y.op.name}{dict(y.env)}) "
                                f"is not a step of both machines at {values}")
        state = (ref.step(r, label), ctr.step(c, label))
        parent[state] = ((r, c), label)
        if states is not None:
            for machine_state, symbolic in zip(state, (states[0][k + 1], states[1][k + 1])):
                decoded = tuple(2 * value(p).as_long() + int(z3.is_true(value(b))) for p, b in symbolic)
                if decoded != machine_state:
                    raise InternalError(f"z3 state {decoded} after step {k + 1} differs from the machines' "
                                        f"{machine_state} at {values}")
    r, c = state
    ref_labels, ctr_labels = set(ref.enabled(r)), ctr.enabled(c)
    if kind == Verdict.UNSOUND:
        failing = tuple(l for l in ctr_labels if l not in ref_labels)
    else:
        failing = tuple(sorted(l for l in ref_labels if l not in set(ctr_labels)))
        if kind == Verdict.DEADLOCK and (ctr_labels or ctr.final(c)):
            failing = ()
    if not failing:
        raise InternalError(f"z3 reports a {kind.value} state that the machines do not show at {values}")
    return witness_of({kind: (state, failing)}, unrolled, ref, ctr, parent)
