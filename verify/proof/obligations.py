"""The obligations of the all-values proof (verify/proof/prove.py explains the argument):
`sound` per dependence, `exact` per wait (bisimulation), `live` per wait (soundness:
deadlock freedom), `defined` per loop and per op with a non-constant divisor. Each is
a Z3 query for a violation, run in stages until one proves it; `Prover.query` holds
the budgets (deterministic resource limits per query and for the whole proof,
verify/proof/budget.py; a wall-clock cap only when the user sets one).
"""

from __future__ import annotations

import os

import attrs
import z3

from semantics.context import Site, Step
from semantics.ir import BinOp, Const, For, If, Op, Program, walk_expr
from semantics.registers import inline_registers
from semantics.symbolic import conflict, conflicting_pairs, domain, precedes, to_z3

from verify.engines.deadline import Deadline
from verify.proof.budget import Budgeted
from verify.proof.cases import Cases
from verify.proof.options import (  # noqa: F401 (public here too)
    Budget, ProofOptions, budget_ran_out, domain_lower, rlimit_ran_out,
)
from verify.proof.chains import Chains
from verify.proof.queues import beyond, forces, home, is_dma, reaches
from verify.proof.terms import Terms, depth, last_candidates, lex_le, op_expressions, witnesses
from verify.verdicts import ObligationKind, ProofStatus

PROVED, FAILED, UNKNOWN = ProofStatus.PROVED, ProofStatus.FAILED, ProofStatus.UNKNOWN
RETRY_SEEDS = (1, 2, 3)  # a full-budget query Z3 leaves unknown is asked again with these (Prover.query)


@attrs.frozen
class Obligation:
    kind: ObligationKind
    consumer: str  # op name (or loop variable for "defined")
    engine: str | None = None
    producer: str | None = None
    status: ProofStatus = UNKNOWN
    reason: str | None = None
    model: dict | None = None  # a valuation where the query is satisfiable
    seconds: float = 0.0
    units: int = 0  # Z3 resource units its queries spent (deterministic; jobs.py `run` counts them)
    budget: Budget | None = None  # when unknown: the budget that ended it, if one did

    def describe(self) -> str:
        match self.kind:
            case ObligationKind.SOUND:
                return f"{self.consumer} after {self.producer} (engine {self.engine}) is sound"
            case ObligationKind.EXACT:
                return f"the wait of {self.consumer} on {self.engine} is exact"
            case ObligationKind.LIVE:
                return f"the wait of {self.consumer} on {self.engine} asks only for earlier instances"
        return f"{self.consumer} is defined (non-negative loop bounds, non-zero divisors)"

    def to_json(self) -> dict:
        return {"kind": self.kind, "consumer": self.consumer, "engine": self.engine, "producer": self.producer,
                "status": self.status, "reason": self.reason, "model": self.model,
                "seconds": round(self.seconds, 3), "z3_units": self.units,
                "budget": None if self.budget is None else str(self.budget)}


# ------------------------------------------------------------------ obligations


def loop_sites(program: Program) -> list[Site]:
    """Every loop as a pseudo-site (its trail ends with the loop itself), so that
    `domain` gives the condition under which its bounds are evaluated."""
    found = []

    def visit(body, trail):
        for index, stmt in enumerate(body):
            match stmt:
                case For():
                    found.append(Site(stmt, trail + (Step(index, stmt),)))
                    visit(stmt.body, trail + (Step(index, stmt),))
                case If():
                    visit(stmt.then, trail + (Step(index, stmt, True),))
                    visit(stmt.else_, trail + (Step(index, stmt, False),))
                case _:
                    pass

    visit(program.body, ())
    return found


class Prover(Chains, Cases, Budgeted):
    def __init__(self, program: Program, options: ProofOptions, deadline: Deadline | None = None,
                 dump_prefix: str = "prove", counter=None):
        """`deadline`: when the proof's budget ends (default: options.timeout from now);
        the term building polls it (DeadlineReached), queries get what is left.
        `dump_prefix`: how the files of `options.dump_smt` begin (a worker's own).
        `counter`: the program's counts (verify/proof/counts.py), when another prover's
        are at hand. Loop registers are read by their values (semantics/registers.py)."""
        program = inline_registers(program)
        self.program = program
        self.options = options
        self.deadline = Deadline.after(options.timeout, options.clock) if deadline is None else deadline
        # The proof's own Z3 context: its answers must not depend on what else the
        # process asked Z3 before (z3's shared default context made them history-dependent).
        self.ctx = z3.Context()
        self.terms = Terms(program, self.ctx, self.deadline, counter)
        # How many iterations back a candidate may sit: the accesses' own rotation depth
        # (terms.depth). Thresholds do not count: a threshold's `(QT - 1) // 16` is not a
        # buffer rotation, and a depth of 16 fills the candidate sets to their limits,
        # whose terms then cost more than the queries.
        self.depth = depth(program)
        lower = domain_lower(program, options)
        self.nonneg = [p >= lower[n] for n, p in self.terms.params.items()]
        self.rlimit = options.query_rlimit  # per query; prove.py lowers it for a first round
        # The proof's deterministic budget (options.rlimit; None: none) and what its
        # queries spent so far: the "rlimit count" of every Z3 context a query used
        # (`settle`), since it was last read.
        self.spent = 0
        self.contexts: dict[int, list] = {}  # id -> [context, its count when last read]
        self.hit: Budget | None = None  # the last budget that ended a query (Budgeted.note_unknown)
        self.dumped = 0  # queries written by dump_smt (it sat after a return: --dump-smt crashed)
        self.dump_prefix = dump_prefix
        self.failing: dict[tuple, bool] = {}  # valuation -> the program fails there (`fails_at`)

    def report(self, text: str, seconds: float) -> None:
        """A query's progress line: its text and how long it took (a proof worker sends
        the two apart: verify/proof/jobs.py `_answer_next`)."""
        self.options.progress(query_line(text, seconds))

    def either(self, *terms):
        """A disjunction in the proof's context (z3.Or() of nothing would take the default one)."""
        return z3.Or(*terms, self.ctx)

    # The obligations' loops build their terms through these helpers and Terms: they
    # poll the deadline, so no loop runs on past it.
    def domain(self, site: Site, env: dict) -> list:
        self.deadline.check()
        return domain(site, env, self.ctx)

    def precedes(self, x: Site, x_env: dict, y: Site, y_env: dict):
        self.deadline.check()
        return precedes(x, x_env, y, y_env, self.ctx)

    def conflict(self, x: Op, x_env: dict, y: Op, y_env: dict):
        self.deadline.check()
        return conflict(x, x_env, y, y_env, self.ctx)

    def out_of_time(self) -> bool:
        return self.deadline.passed()

    def out_of_budget(self) -> str:
        return budget_ran_out(self.options.timeout)

    def query(self, facts: list, name: str):
        """(PROVED, None) when the facts are unsat, (FAILED, valuation) when sat,
        (UNKNOWN, reason) otherwise."""
        second = self.rlimit >= self.options.query_rlimit  # the second round (verify/proof/schedule.py)
        assertions = [*self.nonneg, *facts]
        solver, answer = None, z3.unknown
        if second and 0 < self.options.short_query_rlimit < self.rlimit:
            # The first round left this query unknown in the prover's context with seed
            # 0. Z3's effort on it is heavy-tailed in its seed and term ids (flash
            # attention's exact `ld_q`: 40M units unanswered with seeds 0, 1 and 5, about
            # 2M with 2, 3 or 4), so short tries in fresh contexts with other seeds come
            # before the full budget; each try is deterministic, the answer Z3's.
            solver, answer = self._other_seeds(assertions, self.options.short_query_rlimit)
        if answer == z3.unknown:
            solver = self._solver(self.ctx, 0)
            solver.add(*assertions)
            answer = solver.check()
            if answer == z3.unknown:
                self.note_unknown(solver)
        if second and answer == z3.unknown:
            # Again in a fresh context with other seeds: Z3's effort on one query is
            # heavy-tailed in the ids its terms got (every query asked before in the
            # context) and in its random seed: a query that runs out of its units with
            # one seed is often proved at once with another. Each try is deterministic;
            # the answer is Z3's either way.
            again, answer = self._other_seeds(assertions)
            if again is not None:
                solver = again
        if answer == z3.unsat:
            return PROVED, None
        if answer == z3.sat:
            return FAILED, self._valuation(solver)
        if self.deadline.passed():  # the query had what was left of the budget: name the budget
            return UNKNOWN, self.out_of_budget()
        if self.hit == Budget.PROOF_RLIMIT:
            return UNKNOWN, rlimit_ran_out(self.options.rlimit)
        reason = solver.reason_unknown()
        if self.hit == Budget.QUERY_RLIMIT:
            reason = f"its resource limit of {self.rlimit:,} units per query ran out ({reason})"
        if self.options.dump_smt and self.rlimit >= self.options.query_rlimit:  # not a first-round query
            os.makedirs(self.options.dump_smt, exist_ok=True)
            self.dumped += 1
            path = os.path.join(self.options.dump_smt, f"{self.dump_prefix}-{self.dumped:03d}-{name}.smt2")
            with open(path, "w") as handle:
                handle.write(solver.to_smt2())
            reason += f" (query written to {path})"
        return UNKNOWN, f"Z3 answered unknown: {reason}"

    def _solver(self, ctx: z3.Context, seed: int, rlimit: int | None = None) -> z3.Solver:
        """A solver with the query's budgets: the resource limit (`rlimit` or the query's,
        at most what is left of the proof's deterministic budget: RlimitReached when
        nothing is), and what is left of the wall-clock cap (and at most
        query_timeout_ms) when there is one."""
        rlimit = self.allowance() if rlimit is None else min(rlimit, self.allowance())
        solver = z3.Solver(ctx=ctx)
        self.track(ctx, solver)
        limits = [ms for ms in (self.options.query_timeout_ms, self._left_ms()) if ms is not None]
        if limits:
            solver.set(timeout=min(limits))
        solver.set(random_seed=self.options.seed + seed)
        solver.set("rlimit", rlimit)
        return solver

    def _other_seeds(self, assertions: list, rlimit: int | None = None):
        """(solver, answer) of the first try with RETRY_SEEDS, each in a fresh context
        with `rlimit` (None: the query's), that Z3 decides; else of the last try (solver
        None when the wall-clock cap left no try)."""
        solver, answer = None, z3.unknown
        for seed in RETRY_SEEDS:
            if self.deadline.passed():
                break
            solver = self._fresh(assertions, seed, rlimit)
            answer = solver.check()
            if answer != z3.unknown:
                break
            self.note_unknown(solver)
        return solver, answer

    def _fresh(self, assertions: list, seed: int, rlimit: int | None = None) -> z3.Solver:
        """A solver of a fresh context holding the assertions (translated)."""
        ctx = z3.Context()
        solver = self._solver(ctx, seed, rlimit)
        solver.add(*[a.translate(ctx) for a in assertions])
        return solver

    def _valuation(self, solver: z3.Solver) -> dict:
        """The model's parameter values (the driver tries smaller ones concretely)."""
        model = solver.model()
        fresh = solver.ctx is not self.ctx  # a model from `_fresh`: its own context
        return {n: model.eval(p.translate(solver.ctx) if fresh else p, model_completion=True).as_long()
                for n, p in self.terms.params.items()}

    # -- the four kinds: defined, sound, exact, live

    def defined(self, site: Site) -> Obligation:
        """Divisors are non-zero wherever evaluated (in an op, or in a loop's bounds:
        any integer bounds are defined, hi <= lo running zero times)."""
        env = self.terms.env(site, "d")
        node = site.op
        if isinstance(node, For):
            bad = [to_z3(d, env, ctx=self.ctx) == 0 for d in bound_divisors(node)]
            name = node.var
        else:
            bad = [to_z3(d, env, ctx=self.ctx) == 0 for d in divisors(node)]
            name = node.name
        return self._run(Obligation(ObligationKind.DEFINED, name), self.domain(site, env) + [self.either(*bad)])

    def sound(self, y: Site, engine: str, x: Site) -> Obligation:
        t = self.terms
        name = Obligation(ObligationKind.SOUND, y.op.name, engine, x.op.name)
        if is_dma(y.op) and engine == y.op.engine and home(x.op) == engine:
            # x runs on the stream of y's trigger and precedes y (a dependence): the trigger
            # issues only after x completed, and y's transfer only after its trigger.
            return attrs.evolve(name, status=PROVED)
        step = t.steps[engine]
        iy, jx = t.env(y, "y"), t.env(x, "x")
        dep = self.domain(y, iy) + self.domain(x, jx) + [self.precedes(x, jx, y, iy), self.conflict(x.op, jx, y.op, iy)]
        own = t.threshold(y, engine, iy)
        # Stage 1: the last producer. When candidate instances w of x, themselves
        # producers of y, come at or after every producer (a query without counts,
        # so linear), it is enough that those w have completed: F completes in order,
        # and a later instance of one op never has a smaller local index. This keeps
        # the non-linear counts (products of trip counts) away from the quantified j.
        # The narrow candidates (index-equation solutions only, where there are any)
        # first: when they cover every producer, each needs its own query below.
        full = last_candidates(t, x, y, iy, self.depth)
        narrow = last_candidates(t, x, y, iy, self.depth, narrow=True)
        for lasts in ([narrow, full] if len(narrow) < len(full) else [full]):
            producer = [z3.And(*self.domain(x, w), self.precedes(x, w, y, iy), self.conflict(x.op, w, y.op, iy))
                        for w in lasts]
            covered = [z3.Not(z3.And(p, lex_le(x, jx, w, self.ctx))) for p, w in zip(producer, lasts)]
            if self.query(dep + covered, "last")[0] != PROVED:
                continue
            # The fewest leading candidates that still cover every producer (queries
            # without counts, so cheap): each candidate left costs a query with counts
            # below. Flash attention's `sel` after `qk`: its own iteration alone, not 54.
            size = 1
            while size < len(lasts):
                if self.query(dep + covered[:size], "last")[0] == PROVED:
                    producer, lasts = producer[:size], lasts[:size]
                    break
                size *= 2
            late = [z3.And(p, z3.Not(forces(own, step, t.local(x, engine, w))) if own is not None
                           else z3.BoolVal(True, self.ctx))
                    for p, w in zip(producer, lasts)]
            first = self._run(name, self.domain(y, iy) + [self.either(*late)])
            if first.status == PROVED:
                return first
            if all(self._completed(name, y, iy, x, w, [p], engine, witnessed=True).status == PROVED
                   for p, w in zip(producer, lasts)):  # each candidate that is a producer, by a chain
                return attrs.evolve(first, status=PROVED, model=None, reason=None)
            break  # the full candidates include the narrow ones (within their limit): no better
        # Stage 2: every producer j, with its own local index: y's waits, then chains.
        return self._completed(name, y, iy, x, jx, dep[len(self.domain(y, iy)):], engine)

    def _completed(self, name: Obligation, y: Site, iy: dict, x: Site, jx: dict, facts: list,
                   engine: str, witnessed: bool = False) -> Obligation:
        """Whenever `facts` hold, x's instance at jx has completed when y's may issue:
        by y's own waits on `engine`, else by a chain. `witnessed`: jx is a candidate
        instance (terms over y's indices), so the queries are quantifier-free."""
        t = self.terms
        lx = t.local(x, engine, jx)
        own = t.threshold(y, engine, iy)
        own_domain = self.domain(y, iy)
        rest = facts + [z3.Not(forces(own, t.steps[engine], lx)) if own is not None else z3.BoolVal(True, self.ctx)]
        base = own_domain + rest
        first = self._run(name, base)
        if first.status == UNKNOWN and witnessed and own is not None:
            # y's own wait against a candidate's closed form, case by case (flash
            # attention's `fexp` after `mupd`: min(i2 // 16, JT - 1) on both sides).
            first = self._run_cases(name, [*self.nonneg, *own_domain], rest, [own] + list(jx.values()))
        if first.status == PROVED or (first.status == UNKNOWN and not witnessed):
            return first
        # Chains: one step with candidate indices (quantifier-free), up to MAX_HOPS
        # steps over all indices (quantified), two steps with candidate indices.
        narrow = self._witnessed_chains(y, iy, x, jx, engine, lx, two_hops=False, narrow=True)
        if witnessed and narrow:
            # x's instance is a candidate (the query has no quantified indices): the
            # narrow chains case by case (verify/proof/cases.py) first: with the counts' guards
            # decided per case, the two sides of an identity cancel, where the plain
            # non-linear query often ends unknown (flash attention's `expr` after `tr`).
            cased = self._run_cases(name, [*self.nonneg, *own_domain], rest + narrow, [])
            if cased.status == PROVED:
                return cased
        first = self._stages(name, base, first, [lambda: narrow])
        if first.status == PROVED:
            return first
        stages = [lambda: self._witnessed_chains(y, iy, x, jx, engine, lx, two_hops=False),
                  lambda: self._chains(y, iy, engine, lx),
                  lambda: self._witnessed_chains(y, iy, x, jx, engine, lx, two_hops=True),
                  lambda: self._long_witnessed_chains(y, iy, x, jx, engine, lx)]
        return self._stages(name, base, first, stages)

    def _stages(self, name: Obligation, base: list, first: Obligation, stages) -> Obligation:
        """Run `base` plus each stage's extra facts until one proves it. A failed
        query's model is kept for the driver even when a later stage ends unknown; where
        the program really fails at that model's valuation (`fails_at`), no chain can
        cover the failure and the later stages are not asked."""
        failed = first if first.status == FAILED else None
        last = first
        for stage in stages:
            if last.status == PROVED or (failed is not None and self.fails_at(failed.model)):
                break
            extra = stage()
            if not extra:
                continue
            last = self._run(name, base + extra)
            if last.status == FAILED:
                failed = last
        if last.status != PROVED and failed is not None:
            return failed
        return last

    def fails_at(self, model: dict | None) -> bool:
        """Whether the program breaks the proof's property at a failed query's valuation,
        every parameter capped at 4 as the driver's first try is (prove.py), so that the
        driver finds the same failure; decided by the happens-before engine where it
        applies (verify/engines/select.py), within `max_states`."""
        if not model:
            return False
        from verify.engines.select import check
        from verify.verdicts import CheckOptions

        lower = domain_lower(self.program, self.options)
        valuation = tuple((k, max(lower.get(k, 0), min(v, 4))) for k, v in model.items())
        if valuation not in self.failing:
            values = dict(valuation)
            bounds = tuple((p.name, values.get(p.name, 0), values.get(p.name, 0)) for p in self.program.params)
            result = check(self.program, bounds, CheckOptions(property=self.options.property,
                                                               max_states=self.options.max_states))
            self.failing[valuation] = result.holds is False
        return self.failing[valuation]

    def live(self, y: Site, wait) -> Obligation:
        """The wait asks only for instances of its engine that precede y in program
        order. Then no reachable state is stuck: the pending instance that comes first
        in program order can always issue once what is in flight has completed."""
        iy = self.terms.env(y, "y")
        threshold = self.terms.wait_term(y, wait, iy)
        step = self.terms.steps[wait.engine]
        return self._run(Obligation(ObligationKind.LIVE, y.op.name, wait.engine),
                         self.domain(y, iy) + [beyond(threshold, step, self.terms.local(y, wait.engine, iy))])

    def exact(self, y: Site, wait) -> Obligation:
        t = self.terms
        iy = t.env(y, "y")
        threshold = t.wait_term(y, wait, iy)
        own_domain = self.domain(y, iy)
        facts = own_domain + [threshold >= 1]
        # A DMA op's transfers on its own queue are no producers of it (FIFO, one engine),
        # and its trigger issues before they complete: they supply none of its waits.
        producers = [x for x in t.sites.values() if home(x.op) == wait.engine and conflicting_pairs(x.op, y.op)
                     and not (is_dma(y.op) and home(y.op) == wait.engine)]
        step = t.steps[wait.engine]

        def supplies(x, jx):
            return z3.And(*self.domain(x, jx), self.precedes(x, jx, y, iy), self.conflict(x.op, jx, y.op, iy),
                          reaches(threshold, step, t.local(x, wait.engine, jx)))

        name = Obligation(ObligationKind.EXACT, y.op.name, wait.engine)
        # The narrow last-producer candidates alone first: a small query, and usually
        # the one the threshold names (the full candidates' terms can cost more than the
        # queries).
        candidates = [(x, jx) for x in producers for jx in last_candidates(t, x, y, iy, self.depth, narrow=True)]
        narrow = [z3.Not(supplies(x, jx)) for x, jx in candidates]
        first = self._run(name, facts + narrow)
        if first.status == PROVED:
            return first
        # Case by case (verify/proof/cases.py): the threshold's branches and the
        # candidates' own (guard bounds are `If`s) decide which candidate supplies it.
        cased = self._run_cases(name, [*self.nonneg, *own_domain], [threshold >= 1] + narrow,
                                [threshold] + [v for _, jx in candidates for v in jx.values()])
        if cased.status == PROVED:
            return cased
        witnessed = [z3.Not(supplies(x, jx)) for x in producers
                     for jx in last_candidates(t, x, y, iy, self.depth)
                     + witnesses(t, x, [(y, iy)], self.depth, self.options.max_witnesses)]
        first = self._run(name, facts + witnessed)
        if first.status != FAILED:
            return first
        quantified = []
        for x in producers:
            jx = t.env(x, "q")
            bound = [jx[loop.var] for loop in x.loops]
            quantified.append(z3.ForAll(bound, z3.Not(supplies(x, jx))) if bound else z3.Not(supplies(x, jx)))
        return self._stages(name, facts, first, [lambda: quantified, lambda: self._masked(y, iy, wait, threshold)])

    def _run_cases(self, obligation: Obligation, base: list, facts: list, focus: list) -> Obligation:
        """`_run`, split by cases (verify/proof/cases.py)."""
        return self._answer(obligation, lambda: self.by_cases(base, facts, focus), " by cases")

    def _run(self, obligation: Obligation, facts: list) -> Obligation:
        return self._answer(obligation, lambda: self.query(facts, f"{obligation.kind}-{obligation.consumer}"), "")

    def _answer(self, obligation: Obligation, ask, how: str) -> Obligation:
        """The obligation with the answer of `ask()` ((status, model or reason)), timed."""
        began = self.options.clock()
        if self.out_of_time():
            return attrs.evolve(obligation, status=UNKNOWN, reason=self.out_of_budget())
        status, extra = ask()
        done = attrs.evolve(obligation, status=status, seconds=self.options.clock() - began,
                            model=extra if status == FAILED else None,
                            reason=extra if status == UNKNOWN else None)
        if self.options.progress:
            self.report(f"prove: {done.describe()}{how}: {status}", done.seconds)
        return done


def query_line(text: str, seconds: float) -> str:
    return f"{text} ({seconds:.2f} s)"


def divisors(op: Op) -> list:
    """The non-constant divisors of an op's indices and thresholds."""
    return _divisors(op_expressions(op))


def bound_divisors(loop: For) -> list:
    """The non-constant divisors of a loop's bounds."""
    return _divisors([loop.lo, loop.hi])


def _divisors(roots) -> list:
    return [n.right for r in roots for n in walk_expr(r)
            if isinstance(n, BinOp) and n.op in ("//", "%") and not isinstance(n.right, Const)]
