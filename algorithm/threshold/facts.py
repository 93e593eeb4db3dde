"""What the algorithm knows at a point, and the small tools that use it: a Z3 prover
over named integers (`Facts`), substitution, and `refine`, which resolves `min`,
`max`, `if` and `%` terms that the facts decide."""

from __future__ import annotations

import weakref

import z3

from semantics.errors import Unsupported  # noqa: F401  (re-exported: no closed form known; the caller falls back)
from semantics.ir import (
    And, BinOp, Compare, Const, Count, For, IfExpr, Iters, Max, Min, Neg, Not, Or, Var,
)
from semantics.symbolic import to_z3
from algorithm.threshold.bounds import by_residues, decide, inequalities_of, proved, refutes_at
from semantics.simplify import cond as simplify_cond, simplify

# Z3's budget per query is a resource limit (PlannerOptions.facts_rlimit): deterministic,
# unlike a time limit, the same answer on any machine load.
# A wall-clock backstop under the resource limit. Some of Z3's non-linear procedures
# (nlsat, Groebner bases, called from the SMT kernel's arithmetic) count few resource
# units for their time: a query of the nested-`if` reproducer
# (tests/data/repro/threshold_slow_nested_ifs.sync) could run for minutes below its
# units. The backstop gives such a query `unknown` (the wait then stays conservative, or
# the next asking decides it) instead of hanging `sync`. It is twenty times what the
# resource limit takes at this machine's rate for linear queries (about 4M units per
# second), and at least 60 s: non-linear queries run several times slower per unit,
# and a loaded machine slows them several times more (a query of that reproducer that
# takes 1 s alone took 8.8 s of CPU and 16 s of wall time beside two test workers). A
# backstop that cuts a query Z3 would have answered makes the output depend on the
# load. Outputs stay independent of machine load unless Z3 stops counting or the
# machine is slower than that.
UNITS_PER_MS = 4_000  # measured: 2M units in about 0.5 s (z3 5.4.1, this machine)


def backstop_ms(rlimit: int) -> int:
    return max(60_000, 20 * rlimit // UNITS_PER_MS)


def budget(solver, rlimit: int) -> None:
    """The solver's resource limit and its wall-clock backstop."""
    solver.set("rlimit", rlimit)
    solver.set("timeout", backstop_ms(rlimit))


def assert_all(solver, terms) -> None:
    """solver.add(*terms), with Z3's Boolean terms asserted through the C API: z3.Solver.add
    first casts each term to Bool in Python, which was a tenth of matmul_fully_optimized's
    planning time (40,841 assertions). The same Z3 calls in the same order otherwise."""
    ref, handle = solver.ctx.ref(), solver.solver
    for term in terms:
        if isinstance(term, z3.BoolRef) and term.ctx is solver.ctx:
            z3.Z3_solver_assert(ref, handle, term.as_ast())
        else:
            solver.add(term)



class Session:
    """All solver state of one planning pass: its own Z3 context (never z3's default
    one), the names' Z3 constants, the term cache, the proof memo (keyed by Z3 term
    ids, valid within one context only) and the memo of
    statement contents. One per plan; nothing survives it, so a plan does not depend
    on what ran before in the process."""

    def __init__(self, rlimit: int, candidate_rlimit: int = 20_000_000):
        self.rlimit = rlimit
        self.candidate_rlimit = candidate_rlimit  # (candidates.py: an exactness check's query)
        self.contents: dict = {}  # id(stmt) -> (stmt, names inside): see counting._contents
        # prove_candidates' answers by the shape of the question (shapes.py): plain
        # values, so they survive a renewal of the Z3 context.
        self.shapes: dict = {}
        self.shape_hits = 0
        self._new_context()

    def _new_context(self) -> None:
        self.ctx = z3.Context()
        self._vars: dict = {}
        self._iters: dict = {}
        self._terms: dict = {}
        self._names = (_Names(self.var), _Names(self.iters))
        self.memo: dict = {}
        # Facts key -> Z3's latest models of queries under those facts, as points (latest
        # first): a point where the facts hold and a later claim does not refutes it.
        self.models: dict = {}
        self.recent: list = []  # the latest models under any facts (RECENT_KEPT), latest first
        self.counts: dict = {}  # counting.full_count's memo (its keys hold Facts keys of this context)
        # Z3 resource units spent by the checks of capped stretches (`capped`), and the
        # total past which a stretch asks Z3 no more: deterministic, unlike a time limit.
        # Counted only inside a stretch (reading Z3's statistics costs time).
        self.units = 0
        self.cap: int | None = None

    def capped(self, units: int):
        """A stretch in which the checks of `proves` may spend at most `units` more Z3
        resource units; past them a claim is not proved (never a wrong proof: only a
        rewrite skipped). For work whose proofs only tidy a result."""
        return _Cap(self, units)

    def exhausted(self) -> bool:
        return self.cap is not None and self.units >= self.cap

    def check(self, solver):
        """solver.check(), its units counted when inside a capped stretch."""
        if self.cap is None:
            return solver.check()
        mark = counted(solver)
        result = solver.check()
        self.units += counted(solver) - mark
        return result

    def renew(self) -> None:
        """A fresh Z3 context (callers must drop every term and Facts they hold)."""
        self._new_context()

    def var(self, name: str):
        value = self._vars.get(name)
        if value is None:
            value = self._vars[name] = z3.Int(name, self.ctx)
        return value

    def iters(self, var: str):
        # Tracked counts are free integers to the prover: nothing is assumed of them.
        value = self._iters.get(var)
        if value is None:
            value = self._iters[var] = z3.Int(f"iters({var})", self.ctx)
        return value

    def z(self, node):
        """The Z3 term of an IR node over the session's names (memoized: terms are immutable)."""
        if len(self._terms) > 200_000:
            self._terms.clear()
        return to_z3(node, *self._names, self._terms, self.ctx)

    def check_alone(self, assertions, rlimit: int):
        """The Z3 answer for `assertions` (and the solver that gave it) from a solver of
        their own on the plain SMT kernel (`SimpleSolver`), whose only budget is the
        deterministic resource limit. `z3.Solver()` runs, for a single non-linear check,
        tactics with wall-clock limits of their own (`try_for`): the irredundancy proof of
        repro/threshold_slow_nested_ifs answered unsat in some runs and unknown in others,
        with the same seed and input.
        An `unknown` is asked once more, rebuilt from the query's SMT-LIB text in a fresh
        Z3 context: a differently shaped, equally deterministic attempt (it proves that
        nested-if wait redundant). Not every query is asked that way: the answers
        are the same where both decide, but a fresh context per query costs several
        times as much."""
        solver = self._solver_of(assertions, rlimit)
        result = self.check(solver)
        if result != z3.unknown:
            return result, solver
        source = z3.Solver(ctx=self.ctx)  # only prints the query (as built: never checked)
        source.add(*assertions)
        again = z3.SimpleSolver(ctx=z3.Context())
        budget(again, rlimit)
        again.from_string(source.to_smt2())
        return self.check(again), again

    def check_seeded(self, assertions, rlimit: int, seed: int):
        """Z3's answer for the assertions from a solver of their own with this random seed."""
        return self.check(self._solver_of(assertions, rlimit, seed))

    def _solver_of(self, assertions, rlimit: int, seed: int | None = None):
        """A plain SMT kernel solver of the session's context holding the assertions."""
        solver = z3.SimpleSolver(ctx=self.ctx)
        budget(solver, rlimit)
        if seed is not None:
            solver.set("random_seed", seed)
        assert_all(solver, assertions)
        return solver

    def facts(self, conds=()) -> "Facts":
        """Facts of IR conditions over the session's names."""
        return Facts(self, conds)

    def false(self):
        return z3.BoolVal(False, self.ctx)


class _Cap:
    def __init__(self, session: Session, units: int):
        self.session, self.units = session, units

    def __enter__(self):
        self.before = self.session.cap
        self.session.cap = self.session.units + self.units
        return self

    def __exit__(self, *exc):
        self.session.cap = self.before


def counted(solver) -> int:
    """The resource units spent in the solver's Z3 context so far (Z3 counts them per
    context, over all of its solvers)."""
    stats = solver.statistics()
    ref, handle = stats.ctx.ref(), stats.stats
    # Looked up from the end, where Z3 lists it (z3.Statistics.keys() reads every key,
    # and the keys vary with the procedures a check used).
    for k in range(z3.Z3_stats_size(ref, handle) - 1, -1, -1):
        if z3.Z3_stats_get_key(ref, handle, k) == "rlimit count":
            if z3.Z3_stats_is_uint(ref, handle, k):
                return z3.Z3_stats_get_uint_value(ref, handle, k)
            return int(z3.Z3_stats_get_double_value(ref, handle, k))
    return 0


class _Names(dict):
    """A read-only view that makes a session's Z3 constant for any name asked. It holds
    the session's method weakly: a strong one would make a reference cycle, and a
    session (with its Z3 context, tens of MiB) would then live until the cyclic
    collector ran, which runs rarely while a strategy runs (semantics/collector.py)."""

    def __init__(self, make):
        super().__init__()
        self._make = weakref.WeakMethod(make)

    def __missing__(self, name):
        return self._make()(name)

    def __contains__(self, name):
        return True


class Facts:
    """What is known at a point (IR conditions over a session's names) and a prover:
    bounds.py decides what bounds decide, Z3 the rest. The memo is keyed by the
    conditions and the claim (IR nodes hash once: semantics/ir.py)."""

    def __init__(self, session: Session, conds=(), _key=None, _forms=None):
        self.session = session
        self.conds = tuple(conds)
        self._key = _key if _key is not None else frozenset(self.conds)
        self._forms = _forms if _forms is not None else inequalities_of(self.conds)

    def with_(self, *more) -> "Facts":
        """These facts and the conditions `more`."""
        return Facts(self.session, self.conds + more, self._key.union(more), self._forms + inequalities_of(more))

    @property
    def assertions(self) -> list:
        """The conditions as Z3 terms of the session's context."""
        return [self.session.z(c) for c in self.conds]

    def proves(self, claim) -> bool:
        """Whether the condition `claim` holds wherever the facts do."""
        memo = self.session.memo
        key = (self._key, claim)
        hit = memo.get(key)
        if hit is not None:
            return hit
        if self.session.exhausted():
            # Past a capped stretch's budget only a proof by elimination can answer True;
            # the refutations below only ever answer False, as the cap does: skipped.
            if proved(self._forms, claim):
                memo[key] = True
                return True
            return False  # (not remembered: outside the capped stretch Z3 is asked)
        # Z3's models first: a claim one of them refutes is false, whatever bounds would
        # find (both are exact), and trying them costs less than elimination. Only Z3's
        # models are kept: a point the rules find is found again as cheaply.
        models = self.session.models.get(self._key)
        if models and any(self._refutes(point, claim) for point in models):
            memo[key] = False
            return False
        if any(self._refutes(point, claim) for point in self.session.recent):
            memo[key] = False
            return False
        decided = decide(self.conds, self._forms, claim)
        if decided is not None:
            memo[key] = decided
            return decided
        if self.session.exhausted():
            return False  # (not remembered: outside the capped stretch Z3 is asked)
        # A solver of its own per query (on the plain SMT kernel): what Z3 answers does
        # not depend on which claims were asked before, or decided here without it.
        z_claim = self.session.z(claim)
        result, solver = self.session.check_alone([*self.assertions, z3.Not(z_claim)], self.session.rlimit)
        hit = result == z3.unsat or (result == z3.unknown and by_residues(self.conds, claim))
        if result == z3.sat:
            self._remember(_point(solver.model()))
        if len(memo) > 500_000:
            memo.clear()
        memo[key] = hit
        return hit

    def _remember(self, point) -> None:
        """Keep a point where these facts hold and some claim does not (Session.models)."""
        models = self.session.models.setdefault(self._key, [])
        models.insert(0, point)
        del models[MODELS_KEPT:]
        self.session.recent.insert(0, point)
        del self.session.recent[RECENT_KEPT:]

    def _refutes(self, point, claim) -> bool:
        """At `point` (vars, iters) every fact holds and the claim does not
        (bounds.refutes_at): the claim is false, as Z3 would find."""
        return refutes_at(self.conds, claim, *point)


MODELS_KEPT = 4  # Z3 models remembered per set of facts (Session.models)
RECENT_KEPT = 8  # and under any facts: tried where every fact of the claim's facts holds


def _point(model) -> tuple:
    """A Z3 model of the session's names as a point: (vars, iters) by name."""
    env, iters = {}, {}
    for decl in model.decls():
        value = model[decl]
        if not z3.is_int_value(value):
            continue
        name = decl.name()
        if name.startswith("iters(") and name.endswith(")"):
            iters[name[6:-1]] = value.as_long()
        else:
            env[name] = value.as_long()
    return env, iters


def param_bounds(params) -> list:
    """The parameters' declared lower bounds, as conditions."""
    return [Compare(">=", Var(p.name), Const(p.lower)) for p in params]


def domain_conds(site) -> list:
    """The site's instance exists: each enclosing loop index in range, each guard as
    taken (semantics.symbolic.domain, as IR over the loops' own names)."""
    return path_conds((step.stmt, step.branch) for step in site.trail[:-1])


def path_conds(path) -> list:
    """What holds inside a path of (loop or `if`, branch taken) pairs, outermost first:
    each loop index in its range, each condition as taken."""
    out = []
    for stmt, branch in path:
        if isinstance(stmt, For):
            out += [Compare("<=", stmt.lo, Var(stmt.var)), Compare("<", Var(stmt.var), stmt.hi)]
        else:
            out.append(stmt.cond if branch else Not(stmt.cond))
    return out


def subst(node, env: dict):
    """Replace names by expressions (names not in `env` stay). A sub-term that occurs
    many times (the irredundancy pass substitutes chains of index expressions into
    each other) is rewritten once: the memo is by identity, for this call only."""
    done: dict = {}

    def go(node):
        hit = done.get(id(node))
        if hit is not None:
            return hit
        match node:
            case Var(name=name):
                out = env.get(name, node)
            case Const() | Iters() | Count():
                out = node
            case BinOp(op=op, left=a, right=b):
                out = _rebuilt(node, BinOp, (go(a), go(b)), (a, b), op)
            case Neg(operand=a):
                out = _rebuilt(node, Neg, (go(a),), (a,))
            case Min(left=a, right=b) | Max(left=a, right=b) | And(left=a, right=b) | Or(left=a, right=b):
                out = _rebuilt(node, type(node), (go(a), go(b)), (a, b))
            case IfExpr(cond=c, then=a, else_=b):
                out = _rebuilt(node, IfExpr, (go(c), go(a), go(b)), (c, a, b))
            case Compare(op=op, left=a, right=b):
                out = _rebuilt(node, Compare, (go(a), go(b)), (a, b), op)
            case Not(operand=a):
                out = _rebuilt(node, Not, (go(a),), (a,))
            case _:
                raise TypeError(f"cannot substitute in {node!r}")
        done[id(node)] = out  # `node` lives in the input tree for the whole call
        return out

    try:
        return go(node)
    finally:
        del go  # a recursive closure is a reference cycle: freed at once, not by the collector


def _rebuilt(node, kind, children: tuple, before: tuple, op=None):
    """`node` itself when no child changed (so unchanged sub-terms stay shared, and
    comparing them stops at identity), else a new node of `kind`."""
    if all(new is old for new, old in zip(children, before)):
        return node
    return kind(op, *children) if op is not None else kind(*children)


def mentions(node, name: str) -> bool:
    match node:
        case Var(name=n):
            return n == name
        case Const() | Iters() | Count():
            return False
        case Neg(operand=a) | Not(operand=a):
            return mentions(a, name)
        case IfExpr(cond=c, then=a, else_=b):
            return mentions(c, name) or mentions(a, name) or mentions(b, name)
        case _:
            return mentions(node.left, name) or mentions(node.right, name)


def refine(node, facts: Facts):
    """Resolve `min`, `max` and `if` terms whose outcome the facts decide."""
    match node:
        case Const() | Var() | Iters() | Count():
            return node
        case BinOp(op="%", left=a, right=Const(value=m)) if 1 < m <= 8:
            node = BinOp("%", refine(a, facts), Const(m))
            for value in range(m):  # a residue that is the same at every point
                if facts.proves(Compare("==", node, Const(value))):
                    return Const(value)
            return node
        case BinOp(op="%", left=a, right=m):
            node = BinOp("%", refine(a, facts), refine(m, facts))
            for value in (Const(0), simplify(BinOp("-", m, Const(1)))):  # a residue fixed at every point
                if facts.proves(Compare("==", node, value)):
                    return value
            return node
        case BinOp(op=op, left=a, right=b):
            return BinOp(op, refine(a, facts), refine(b, facts))
        case Neg(operand=a):
            return Neg(refine(a, facts))
        case Min(left=a, right=b) | Max(left=a, right=b):
            a, b = refine(a, facts), refine(b, facts)
            first_smaller = facts.proves(Compare("<=", a, b))
            if first_smaller or facts.proves(Compare("<=", b, a)):
                return a if first_smaller == isinstance(node, Min) else b
            return type(node)(a, b)
        case IfExpr(cond=c, then=a, else_=b):
            c = refine_cond(c, facts)
            if facts.proves(c):
                return refine(a, facts)
            if facts.proves(Not(c)):
                return refine(b, facts)
            return IfExpr(c, refine(a, facts.with_(c)), refine(b, facts.with_(Not(c))))
    raise TypeError(f"not an integer expression: {node!r}")


def refine_cond(node, facts: Facts):
    """A condition with its integer parts refined and provable conjuncts dropped."""
    match node:
        case Compare(op=op, left=a, right=b):
            return simplify_cond(Compare(op, refine(simplify(a), facts), refine(simplify(b), facts)))
        case And(left=a, right=b):
            a, b = refine_cond(a, facts), refine_cond(b, facts)
            if facts.proves(a):
                return b
            if facts.proves(b):
                return a
            return And(a, b)
        case Or(left=a, right=b):
            return Or(refine_cond(a, facts), refine_cond(b, facts))
        case Not(operand=a):
            return Not(refine_cond(a, facts))
    raise TypeError(f"not a condition: {node!r}")


def tidy(node, facts: Facts):
    return simplify(refine(simplify(node), facts))


def nonneg_diff(hi, lo, facts: Facts):
    """max(0, hi - lo), without the max where the facts show hi >= lo."""
    if facts.proves(Compare(">=", hi, lo)):
        return simplify(BinOp("-", hi, lo))
    return simplify(Max(Const(0), BinOp("-", hi, lo)))
