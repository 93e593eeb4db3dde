"""How the all-values proof spends its Z3 budget (verify/proof/schedule.py,
verify/proof/obligations.py `Prover.query`) and how it builds count terms
(verify/proof/counts.py `to_z3`): none of it may change what is proved, only when.

Reference translations here are written from the counts' definition (sympy to Z3
directly), not taken from the code under test."""

from __future__ import annotations

from functools import partial

import pytest
import sympy as sp
import z3

from algorithm.registry import get_strategy
from semantics.context import sites
from semantics.parser import parse_file
from semantics.symbolic import instance_env, param_env
from verify.proof import counts as counts_module
from verify.proof.counts import Counter, to_z3
from verify.proof.obligations import Obligation, Prover
from verify.proof.prove import PROVED, SECOND_ROUND, UNKNOWN, Budget, ProofOptions, prove
from verify.proof.schedule import Schedule
from verify.verdicts import ObligationKind

from tests.support.corpus import ROOT

KERNELS = ROOT / "kernels"


def _obligation(name, status, units=1, reason=None):
    return Obligation(ObligationKind.SOUND, name, status=status, units=units, reason=reason)


def _drive(schedule, ask):
    """Run a schedule's jobs in hand-out order in this process; the jobs asked."""
    asked = []
    while (job := schedule.next_job()) is not None:
        asked.append(job)
        schedule.answered(job, ask(job, schedule.rlimit(job)))
    assert schedule.next_job() is None
    return asked


def test_an_obligation_proved_in_the_first_round_is_not_asked_again_and_the_rest_get_the_full_budget():
    lines = []
    options = ProofOptions(first_query_rlimit=10, query_rlimit=100, progress=lines.append)
    needs = {0: 10, 1: 100, 2: None}  # cheap, dear, never
    schedule = Schedule(3, options)

    def ask(job, rlimit):
        proved = needs[job.task] is not None and rlimit >= needs[job.task]
        return _obligation(str(job.task), PROVED if proved else UNKNOWN, units=rlimit)

    asked = _drive(schedule, ask)
    assert [(j.task, schedule.rlimit(j)) for j in asked] == [(0, 10), (1, 10), (2, 10), (1, 100), (2, 100)]
    result = schedule.obligations(["t0", "t1", "t2"], lambda task, reason: _obligation(task, UNKNOWN))
    assert [o.status for o in result] == [PROVED, PROVED, UNKNOWN]
    assert [o.units for o in result] == [10, 110, 110]  # both rounds' units
    assert lines == ["prove: second round: 1 of 3 obligations proved with 10 Z3 units per query; "
                     "the other 2 again with 100"]


def test_workers_get_a_second_round_before_the_first_rounds_still_waiting():
    schedule = Schedule(3, ProofOptions(first_query_rlimit=10, query_rlimit=100), eager_second_round=True)
    asked = _drive(schedule, lambda job, rlimit: _obligation("x", UNKNOWN if job.task == 0 else PROVED))
    assert [(j.task, j.second) for j in asked] == [(0, False), (0, True), (1, False), (2, False)]


def test_one_round_when_the_first_budget_is_the_full_one():
    schedule = Schedule(1, ProofOptions(first_query_rlimit=100, query_rlimit=100))
    asked = _drive(schedule, lambda job, rlimit: _obligation("x", UNKNOWN))
    assert [schedule.rlimit(j) for j in asked] == [100]
    assert [o.status for o in schedule.obligations(["t"], None)] == [UNKNOWN]


def test_the_budget_counts_the_jobs_in_task_order_whatever_order_they_answered_in():
    """Jobs 0..3 spend 4, 3, 2, 1 units against a budget of 8: in task order the third
    job crosses it, so it and the fourth are unknown, in whichever order they answered."""
    costs = [4, 3, 2, 1]
    options = ProofOptions(first_query_rlimit=100, query_rlimit=100, rlimit=8)
    for order in ([0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1]):
        schedule = Schedule(4, options, eager_second_round=True)
        jobs = [schedule.next_job() for _ in range(4)]
        for n in order:
            schedule.answered(jobs[n], _obligation(str(n), PROVED, units=costs[n]))
        result = schedule.obligations(list(range(4)), lambda task, why: _obligation(str(task), UNKNOWN, reason=why))
        assert [o.status for o in result] == [PROVED, PROVED, UNKNOWN, UNKNOWN], order
        assert [o.budget for o in result[2:]] == [Budget.PROOF_RLIMIT] * 2
        assert "--proof-rlimit" in result[2].reason


def test_jobs_after_the_budget_are_not_handed_out():
    schedule = Schedule(5, ProofOptions(first_query_rlimit=100, query_rlimit=100, rlimit=5))
    first = schedule.next_job()
    schedule.answered(first, _obligation("0", PROVED, units=9))  # over the budget alone
    assert schedule.next_job() is None
    result = schedule.obligations(list(range(5)), lambda task, reason: _obligation(str(task), UNKNOWN))
    assert [o.status for o in result] == [UNKNOWN] * 5


def test_the_earliest_failure_is_raised_and_later_jobs_are_not_handed_out():
    schedule = Schedule(4, ProofOptions(first_query_rlimit=100, query_rlimit=100), eager_second_round=True)
    jobs = [schedule.next_job() for _ in range(3)]
    schedule.failed(jobs[2], ValueError("late"))
    assert schedule.next_job() is None  # job 3 comes after a failure
    schedule.failed(jobs[1], ValueError("early"))
    schedule.answered(jobs[0], _obligation("0", PROVED))
    with pytest.raises(ValueError, match="early"):
        schedule.obligations(list(range(4)), None)


@pytest.mark.parametrize("name", ["masked_wait", "if_else_split", "triangular_attention"])
def test_two_rounds_prove_what_one_round_proves(name):
    program = get_strategy("threshold")(parse_file(KERNELS / f"{name}.sync")).program
    one = prove(program, ProofOptions(timeout=None, first_query_rlimit=ProofOptions().query_rlimit))
    two = prove(program, ProofOptions(timeout=None))
    assert one.status == two.status == PROVED
    assert len(one.obligations) == len(two.obligations)


def test_what_a_starved_first_round_leaves_is_proved_in_the_second(monkeypatch):
    """The real path through both rounds: a first budget of one unit proves almost
    nothing (only what Z3 settles without search), so the rest is proved at the full
    budget, and `verify` announces the round without counting it as a query."""
    program = get_strategy("threshold")(parse_file(KERNELS / "masked_wait.sync")).program
    lines = []
    proof = prove(program, ProofOptions(timeout=None, first_query_rlimit=1, progress=lines.append))
    assert proof.status == PROVED
    announced = [line for line in lines if line.startswith(SECOND_ROUND)]
    assert len(announced) == 1 and f"of {len(proof.obligations)} obligations" in announced[0]

    import syncproof
    from verify.proof import prove as prove_module

    monkeypatch.setattr(prove_module, "ProofOptions", partial(ProofOptions, first_query_rlimit=1))
    lines = []
    options = syncproof.VerifyOptions(verbose=True, progress=lines.append, proof_jobs=2)
    report = syncproof.verify(syncproof.load(KERNELS / "masked_wait.sync"), options)
    assert report.holds is True and report.proof.status == PROVED and report.scope == syncproof.Scope.ALL
    # The proof runs on two workers (proof_jobs 2, the default); the round is announced once.
    progress = "\n".join(lines)
    assert progress.count(SECOND_ROUND) == 1


def _hard_query(prover):
    a, b = z3.Int("a", prover.ctx), z3.Int("b", prover.ctx)
    return [a * b == 7, a > 1, b > 1]  # unsat, but not within one resource unit


def test_a_full_budget_unknown_is_asked_again_in_fresh_contexts_with_other_seeds(monkeypatch):
    prover = Prover(parse_file(KERNELS / "pipeline_db.sync"), ProofOptions(query_rlimit=1, short_query_rlimit=0))
    seeds = []
    fresh = Prover._fresh

    def recording(self, assertions, seed, rlimit=None):
        assert rlimit is None  # no short tries: each retry has the full budget
        seeds.append(seed)
        solver = fresh(self, assertions, seed)
        assert solver.ctx is not self.ctx
        return solver

    monkeypatch.setattr(Prover, "_fresh", recording)
    status, reason = prover.query(_hard_query(prover), "probe")
    assert status == UNKNOWN and seeds == [1, 2, 3]

    # A retry that decides ends the retries, and its answer is the query's.
    seeds.clear()

    def proving(self, assertions, seed, rlimit=None):
        seeds.append(seed)
        solver = z3.Solver(ctx=z3.Context())
        solver.add(z3.BoolVal(False, solver.ctx))
        return solver

    monkeypatch.setattr(Prover, "_fresh", proving)
    assert prover.query(_hard_query(prover), "probe") == (PROVED, None)
    assert seeds == [1]


def test_a_second_round_query_is_first_tried_short_with_other_seeds_then_with_the_full_budget(monkeypatch):
    prover = Prover(parse_file(KERNELS / "pipeline_db.sync"), ProofOptions(query_rlimit=2, short_query_rlimit=1))
    tries = []
    fresh, solver_of = Prover._fresh, Prover._solver

    def recording(self, assertions, seed, rlimit=None):
        tries.append((seed, rlimit))
        return fresh(self, assertions, seed, rlimit)

    def in_own_context(self, ctx, seed, rlimit=None):
        if ctx is self.ctx:
            tries.append(("own context", seed))
        return solver_of(self, ctx, seed, rlimit)

    monkeypatch.setattr(Prover, "_fresh", recording)
    monkeypatch.setattr(Prover, "_solver", in_own_context)
    assert prover.query(_hard_query(prover), "probe")[0] == UNKNOWN
    assert tries == [(1, 1), (2, 1), (3, 1), ("own context", 0), (1, None), (2, None), (3, None)]

    # A short try that decides is the query's answer: no full-budget query follows.
    tries.clear()

    def proving(self, assertions, seed, rlimit=None):
        tries.append((seed, rlimit))
        solver = z3.Solver(ctx=z3.Context())
        solver.add(z3.BoolVal(False, solver.ctx))
        return solver

    monkeypatch.setattr(Prover, "_fresh", proving)
    assert prover.query(_hard_query(prover), "probe") == (PROVED, None)
    assert tries == [(1, 1)]


def test_a_first_round_query_is_not_retried(monkeypatch):
    prover = Prover(parse_file(KERNELS / "pipeline_db.sync"), ProofOptions(query_rlimit=1000))
    prover.rlimit = 1  # the first round's budget: below query_rlimit
    monkeypatch.setattr(Prover, "_fresh", lambda *a: pytest.fail("a first-round query was retried"))
    assert prover.query(_hard_query(prover), "probe")[0] == UNKNOWN


def test_a_model_from_a_retry_gives_the_valuation():
    prover = Prover(parse_file(KERNELS / "pipeline_db.sync"), ProofOptions())
    n = prover.terms.params["N"]
    solver = prover._fresh([*prover.nonneg, n == 5], seed=1)
    assert solver.check() == z3.sat
    assert prover._valuation(solver) == {"N": 5}


# ------------------------------------------- count terms built once per count


def _direct(pieces, names, atoms, ctx):
    """A count's Z3 term straight from its sympy pieces: sum of [conds] * value."""
    def poly(e):
        if e.is_Integer:
            return z3.IntVal(int(e), ctx)
        if e.is_Symbol:
            if e in atoms.defs:
                kind, dividend, divisor = atoms.defs[e]
                x, m = poly(sp.expand(dividend)), z3.IntVal(divisor, ctx)
                floor = z3.If(m > 0, x / m, (-x) / (-m))
                return floor if kind == "fd" else x - m * floor
            return names[e.name]
        if e.is_Add:
            return z3.Sum(*[poly(a) for a in e.args])
        if e.is_Mul:
            return z3.Product(*[poly(a) for a in e.args])
        if e.is_Pow:
            return z3.Product(*[poly(e.base)] * int(e.exp))
        raise AssertionError(e)

    terms = []
    for conds, value in pieces:
        num, den = sp.fraction(sp.together(value))
        body = poly(sp.expand(num))
        if int(den) != 1:
            body = body / int(den)
        guard = []
        for kind, e in conds:
            term = poly(sp.expand(sp.fraction(sp.together(e))[0]))
            guard.append(term >= 0 if kind == "ge" else term == 0)
        terms.append(z3.If(z3.And(*guard), body, z3.IntVal(0, ctx)) if guard else body)
    return z3.Sum(*terms) if terms else z3.IntVal(0, ctx)


def _mismatches(program, build) -> tuple[int, list]:
    """Every local index of every site, at two instances in turn and then the first
    again, built by `build` and directly: (terms compared, those that differ)."""
    ctx = z3.Context()
    counter = Counter(program)
    params = param_env(program, ctx)
    compared, wrong = 0, []
    for name, site in sites(program).items():
        envs = [instance_env(site, tag, params, ctx) for tag in ("a", "b", "a")]
        for engine in program.engines:
            pieces = counter.before(site, ("engine", engine))
            for env in envs:
                names = {str(k): v for k, v in env.items()}
                got = build(pieces, names, counter.atoms, ctx)
                want = _direct(pieces, names, counter.atoms, ctx)
                compared += 1
                if not got.eq(want):
                    wrong.append((name, engine))
    return compared, wrong


@pytest.mark.parametrize("name", ["triangular_attention", "tile_transpose_2d", "suite/transpose_parity_evac",
                                  "suite/long_row_reduce"])
def test_count_terms_built_once_per_count_are_the_direct_translation(name):
    program = get_strategy("threshold")(parse_file(KERNELS / f"{name}.sync")).program
    compared, wrong = _mismatches(program, to_z3)
    assert compared > 0 and wrong == []


def test_teeth_a_memo_that_ignores_the_instance_is_caught():
    memo = {}

    def stale(pieces, names, atoms, ctx):  # keyed by the count only
        if pieces not in memo:
            memo[pieces] = counts_module.to_z3(pieces, names, atoms, ctx)
        return memo[pieces]

    program = get_strategy("threshold")(parse_file(KERNELS / "triangular_attention.sync")).program
    assert _mismatches(program, stale)[1]
