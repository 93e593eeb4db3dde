"""The threshold planner's output depends on its input only: not on the machine's load,
Python's hash order (checked in tests/algorithm/test_output_determinism.py), or what ran
before in the process (the irredundancy proof of repro/threshold_slow_nested_ifs could
answer unsat in some runs and unknown in others, because `z3.Solver()` runs tactics
with wall-clock limits on a non-linear check; the planner now asks only the plain SMT
kernel, whose budget is the resource limit: `Session.check_alone`)."""

from __future__ import annotations

import inspect
import textwrap

import pytest
import z3

from algorithm import peers as peers_mod
from algorithm.registry import get_strategy
from algorithm.threshold.facts import Session
from semantics.ir import BinOp, Compare, Const, Var
from semantics.parser import parse_file

from tests.support.corpus import ROOT
from tests.support.observe import observing

KERNELS = ["kernels/ring_buffer.sync", "kernels/suite/tiled_matmul.sync", "kernels/if_else_split.sync",
           "tests/data/threshold_cases/varying_count_war.sync"]  # (the last: the threshold strategy's general stage)


def _combined_solvers_checked(kernel: str, strategy: str) -> int:
    """How many checks `strategy` asks of a `z3.Solver()` (the combined solver, with its
    timed tactics) on `kernel`. z3.SimpleSolver builds a Solver around a plain kernel it
    passes in; a combined solver that only prints a query is not counted. z3's Solver
    is watched (tests/support/observe.py), not patched."""
    combined, checked = [], []

    def made(event, local, _):
        if event == "call" and local.get("solver") is None:
            combined.append(local["self"])

    def check(event, local, _):
        if event == "call" and any(local["self"] is s for s in combined):
            checked.append(local["self"])

    with observing({z3.Solver.__init__: made, z3.Solver.check: check}):
        get_strategy(strategy)(parse_file(str(ROOT / kernel)))
    return len(checked)


@pytest.mark.parametrize("strategy", ["threshold", "barrier", "flags", "tokens"])
@pytest.mark.parametrize("kernel", KERNELS)
def test_planner_decides_with_the_resource_limit_only(kernel, strategy):
    assert _combined_solvers_checked(kernel, strategy) == 0


def test_teeth_a_planner_asking_the_combined_solver_is_caught(monkeypatch):
    def check_alone(self, assertions, rlimit):
        solver = z3.Solver(ctx=self.ctx)  # the timed tactics again
        solver.set("rlimit", rlimit)
        solver.add(*assertions)
        return solver.check(), solver

    monkeypatch.setattr(Session, "check_alone", check_alone)
    # if_else_split: the redundancy proofs' checks, each on the combined solver here.
    assert _combined_solvers_checked(KERNELS[2], "threshold") > 0


@pytest.mark.parametrize("strategy", ["flags", "tokens"])
def test_teeth_peers_asking_the_combined_solver_are_caught(strategy, monkeypatch):
    """The peers' conflict queries (algorithm/peers.py) on the combined solver, whose
    tactics have wall-clock limits: a broken variant of our own query, made from its
    source with that one change."""
    source = textwrap.dedent(inspect.getsource(peers_mod._Conflicts._may))
    assert source.count("z3.SimpleSolver(") == 1
    namespace: dict = {}
    exec(compile(source.replace("z3.SimpleSolver(", "z3.Solver("), peers_mod.__file__, "exec"),
         vars(peers_mod), namespace)
    monkeypatch.setattr(peers_mod._Conflicts, "_may", namespace["_may"])
    assert _combined_solvers_checked(KERNELS[1], strategy) > 0


def test_a_claim_bounds_cannot_decide_is_asked_of_a_solver_of_its_own(monkeypatch):
    """Facts.proves asks Z3 with a solver of its own (Session.check_alone), holding the
    facts and the negated claim and nothing asked before, so that an answer does not
    depend on which claims came first or were decided without Z3 (bounds.py). Here the
    claim is non-linear (no bound proves it, no point refutes it); the stand-in for
    check_alone answers unsat, so the claim is proved through it and only through it."""
    asked = []

    def check_alone(self, assertions, rlimit):
        asked.append(len(assertions))
        return z3.unsat, None

    session = Session(rlimit=1)
    x = Var("x")
    facts = session.facts([Compare(">=", x, Const(3)), Compare("<=", BinOp("*", x, x), Const(100))])
    facts.proves(Compare(">=", x, Const(0)))  # decided by bounds: Z3 is not asked
    monkeypatch.setattr(Session, "check_alone", check_alone)
    assert facts.proves(Compare(">=", BinOp("*", BinOp("*", x, x), x), Const(27)))
    assert asked == [3]  # the facts and the negated claim, in one solver of its own


def _uncounted_query(ctx):
    """x^3 + y^3 = z^3 over positive integers (no solution; Z3's non-linear search
    does not settle it and spends most of its effort where no resource unit is counted)."""
    x, y, z = (z3.Int(n, ctx) for n in "xyz")
    return [x > 0, y > 0, z > 0, x * x * x + y * y * y == z * z * z]


@pytest.mark.timeout(120)  # without the backstop these checks would not return: fail, do not hang
def test_a_query_past_its_backstop_answers_unknown(monkeypatch):
    """The wall-clock backstop under the resource limit (facts.py `budget`): a query
    Z3 does not stop by its units gives `unknown`, asked alone and through Facts,
    instead of hanging `sync` (Z3's non-linear procedure can run for minutes below
    its units). The backstop is shortened here; the units are made unlimited. That the
    backstop ended it is Z3's own word (`reason_unknown`), not a time measured here."""
    from algorithm.threshold import facts as facts_mod

    monkeypatch.setattr(facts_mod, "backstop_ms", lambda rlimit: 300)
    session = Session(rlimit=0)  # 0: no resource limit at all
    result, solver = session.check_alone(_uncounted_query(session.ctx), 0)
    assert result == z3.unknown, result
    assert solver.reason_unknown() in ("timeout", "canceled"), solver.reason_unknown()
    x, y, z = (Var(n) for n in "xyz")
    known = session.facts([Compare(">", v, Const(0)) for v in (x, y, z)])
    cube = lambda v: BinOp("*", BinOp("*", v, v), v)
    assert not known.proves(Compare("!=", BinOp("+", cube(x), cube(y)), cube(z)))


def test_backstop_leaves_room_for_every_counted_budget():
    """The backstop is twenty times what a budget takes at the measured unit rate, and
    never under 60 s: it cuts only queries whose units stopped counting, even on a
    loaded machine, where a non-linear query takes several times its unloaded time."""
    from algorithm.threshold.facts import UNITS_PER_MS, backstop_ms
    from algorithm.threshold.options import PlannerOptions

    FACTS_RLIMIT = PlannerOptions().facts_rlimit

    assert backstop_ms(FACTS_RLIMIT) == 60_000 >= 20 * FACTS_RLIMIT // UNITS_PER_MS
    assert backstop_ms(20_000_000) == 20 * 20_000_000 // UNITS_PER_MS == 100_000
    assert backstop_ms(1) == 60_000


def test_assert_all_asserts_what_solver_add_asserts():
    """facts.assert_all (the C-API path of Facts' solvers) leaves a solver with the same
    assertions, in the same order, as z3's Solver.add; a term it cannot take directly
    (a Python bool, a term of another context) goes through Solver.add."""
    import z3

    from algorithm.threshold.facts import assert_all

    ctx = z3.Context()
    x, y = z3.Int("x", ctx), z3.Int("y", ctx)
    terms = [x >= 0, z3.Or(x < y, y == 3), z3.Not(x == y)]
    direct, plain = z3.SimpleSolver(ctx=ctx), z3.SimpleSolver(ctx=ctx)
    assert_all(direct, terms)
    plain.add(*terms)
    assert len(direct.assertions()) == len(terms)
    assert direct.sexpr() == plain.sexpr()
    assert_all(direct, [True])  # a Python bool: through Solver.add
    plain.add(True)
    assert direct.sexpr() == plain.sexpr()
    foreign = z3.Int("z", z3.Context()) >= 0  # never handed to the C API with this context
    for solver_add in (lambda t: assert_all(direct, [t]), plain.add):
        with pytest.raises(z3.Z3Exception):
            solver_add(foreign)
