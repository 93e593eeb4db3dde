"""Queries decided case by case (verify/proof/cases.py): never a proof of a satisfiable
query (random if-then-else polynomials against brute force over a box, with teeth),
and the obligations they were built for: exactness waits whose closed forms are the same
polynomial in each branch (matmul_fully_optimized's `ld_lhs`, flash attention's waits),
and one-step chains through candidate instances (flash attention's `sel` after `cmax`)."""

from __future__ import annotations

import itertools

import pytest
import z3
from hypothesis import given, strategies as st

from semantics.parser import parse, parse_file
from verify.proof import cases as cases_module
from verify.proof.obligations import ProofOptions, Prover

from tests.support.corpus import ROOT

SYNCED = ROOT / "tests" / "data" / "sync_outputs"
NAMES = ("A", "B", "C")
BOX = range(0, 5)
THREE_PARAMS = """
kernel three
engines E
param A = 1, B = 1, C = 1
E op writes a[0]
"""

# A term: ("var", name) | ("const", c) | (op, left, right) for + - * | ("if", (l, r), then, else),
# the condition l >= r. Evaluated in Python and built in Z3 from the same tree.
leaves = st.one_of(st.sampled_from([("var", n) for n in NAMES]), st.builds(lambda c: ("const", c), st.integers(-3, 3)))
terms = st.recursive(leaves, lambda inner: st.one_of(
    st.tuples(st.sampled_from(["+", "-", "*"]), inner, inner),
    st.tuples(st.just("if"), st.tuples(inner, inner), inner, inner)), max_leaves=8)
facts = st.lists(st.tuples(st.booleans(), terms, terms), min_size=1, max_size=3)  # (negated, l, r): l >= r


def _value(term, point: dict) -> int:
    match term:
        case ("var", name):
            return point[name]
        case ("const", c):
            return c
        case ("if", (left, right), then, else_):
            return _value(then if _value(left, point) >= _value(right, point) else else_, point)
        case (op, left, right):
            a, b = _value(left, point), _value(right, point)
            return a + b if op == "+" else a - b if op == "-" else a * b
    raise AssertionError(term)


def _z3(term, env: dict, ctx):
    match term:
        case ("var", name):
            return env[name]
        case ("const", c):
            return z3.IntVal(c, ctx)
        case ("if", (left, right), then, else_):
            return z3.If(_z3(left, env, ctx) >= _z3(right, env, ctx), _z3(then, env, ctx), _z3(else_, env, ctx))
        case (op, left, right):
            a, b = _z3(left, env, ctx), _z3(right, env, ctx)
            return a + b if op == "+" else a - b if op == "-" else a * b
    raise AssertionError(term)


def _holds(fact, point: dict) -> bool:
    negated, left, right = fact
    return (_value(left, point) >= _value(right, point)) != negated


def _check_against_brute_force(query) -> None:
    """by_cases's answer on `query` (facts over A, B, C in 0..4) agrees with brute force."""
    prover = Prover(parse(THREE_PARAMS), ProofOptions(timeout=None, query_rlimit=2_000_000))
    env = prover.terms.params
    base = [*prover.nonneg, *[env[n] <= max(BOX) for n in NAMES]]
    built = [(lambda f: z3.Not(f) if negated else f)(_z3(left, env, prover.ctx) >= _z3(right, env, prover.ctx))
             for negated, left, right in query]
    status, extra = prover.by_cases(base, built, built)
    models = [dict(zip(NAMES, values)) for values in itertools.product(BOX, repeat=3)
              if all(_holds(f, dict(zip(NAMES, values))) for f in query)]
    if status == "proved":
        assert models == [], f"proved, but {models[0]} satisfies every fact"
    elif status == "failed":
        assert extra in models, f"the model {extra} does not satisfy the facts"


@given(facts)
def test_cases_never_prove_a_satisfiable_query(query):
    _check_against_brute_force(query)


# A satisfiable query (A = 0) whose branch "A < 2" a wrong pruning would drop; then the
# other branch, 0 >= 1, is unsat and the query would be proved.
DROPPED_BRANCH = [(False, ("if", (("var", "A"), ("const", 2)), ("const", 0), ("const", 1)), ("const", 1))]


def test_cases_find_the_model_of_a_branch():
    _check_against_brute_force(DROPPED_BRANCH)
    prover = Prover(parse(THREE_PARAMS), ProofOptions(timeout=None))
    a = prover.terms.params["A"]
    status, model = prover.by_cases([*prover.nonneg, a <= 4], [z3.If(a >= 2, 0, 1) >= 1], [])
    assert status == "failed" and model["A"] < 2, (status, model)


def test_teeth_a_pruning_that_drops_a_satisfiable_branch_proves_a_satisfiable_query(monkeypatch):
    original = cases_module.Cases._contradicts

    def drops_negations(self, ctx, base, case):
        return z3.is_not(case[-1]) or original(self, ctx, base, case)

    monkeypatch.setattr(cases_module.Cases, "_contradicts", drops_negations)
    with pytest.raises(AssertionError, match="proved, but"):
        _check_against_brute_force(DROPPED_BRANCH)


def test_teeth_a_wrongly_decided_guard_proves_a_satisfiable_query(monkeypatch):
    # `_decided` replaces the comparisons the case implies; one that calls every
    # comparison implied true makes If(A >= 2, 0, 1) >= 1 false everywhere, and the
    # query that test_cases_find_the_model_of_a_branch fails is proved.
    monkeypatch.setattr(cases_module.Cases, "_decided", lambda self, ctx, base, case, facts: [
        z3.simplify(z3.substitute(f, *[(c, z3.BoolVal(True, ctx))
                                       for c in cases_module.comparisons(cases_module.ite_conditions(facts))]))
        for f in facts])
    prover = Prover(parse(THREE_PARAMS), ProofOptions(timeout=None))
    a = prover.terms.params["A"]
    status, _ = prover.by_cases([*prover.nonneg, a <= 4], [z3.If(a >= 2, 0, 1) >= 1], [])
    assert status == "proved"


def _first_round_prover(name: str, path=None) -> Prover:
    """A prover of the kernel's recorded `threshold` output (the output-preservation test
    holds it equal to what the planner gives), or of the output at `path`, at the first
    round's budget."""
    program = parse_file(path or SYNCED / f"suite__{name}.sync.threshold.sync")
    return Prover(program, ProofOptions(timeout=None, query_rlimit=2_000_000, first_query_rlimit=2_000_000))


def test_matmul_fully_optimized_ld_lhs_wait_is_proved_exact_in_the_first_round():
    # Asked first in a fresh prover, its plain queries end "failed" / unknown at 2M units;
    # the case split proves it within the first round.
    prover = _first_round_prover("matmul_fully_optimized")
    y = prover.terms.sites["ld_lhs"]
    assert prover.exact(y, y.op.waits[0]).status == "proved"


@pytest.mark.slow
@pytest.mark.parametrize("op, engine", [("ld_k", "PE"), ("qscale", "PE"), ("tr", "DVE")])
def test_flash_attention_causal_waits_are_proved_exact_in_the_first_round(op, engine):
    # Unknown at 2M and at 40M units without case splits (docs/proofs.md, "Case
    # splits"); three of the
    # five (the others, ld_q on DVE and qk on POOL, alike): min((QT - 1) // 16, j - 1) in
    # ld_k's threshold, parity cases in qscale's, three nested branches in tr's.
    prover = _first_round_prover("flash_attention_causal", ROOT / "tests/data/prove_cases/flash_attention_causal_general.sync")
    y = prover.terms.sites[op]
    (wait,) = [w for w in y.op.waits if w.engine == engine]
    assert prover.exact(y, wait).status == "proved"


def _python_subterms(terms, into):
    seen, stack = set(), list(reversed(terms))
    while stack:
        term = stack.pop()
        if term.get_id() in seen:
            continue
        seen.add(term.get_id())
        yield term
        if into(term):
            stack.extend(reversed(term.children()))


def _python_ite_conditions(terms, by_count=False):
    found = {}
    for term in _python_subterms(terms, lambda t: not z3.is_quantifier(t)):
        if z3.is_app_of(term, z3.Z3_OP_ITE) and term.sort().kind() == z3.Z3_INT_SORT:
            found.setdefault(term.arg(0).get_id(), [term.arg(0), 0])[1] += 1
    conds = sorted(found.values(), key=lambda pair: -pair[1]) if by_count else list(found.values())
    return [c for c, _ in conds]


def _python_comparisons(conds):
    into = lambda t: z3.is_and(t) or z3.is_or(t) or z3.is_not(t)  # noqa: E731
    return [t for t in _python_subterms(conds, into)
            if (z3.is_le(t) or z3.is_ge(t) or z3.is_lt(t) or z3.is_gt(t) or z3.is_eq(t))
            and t.arg(0).sort().kind() == z3.Z3_INT_SORT]


@pytest.mark.parametrize("name", ["flash_attention_causal", "matmul_fully_optimized", "long_row_reduce"])
def test_the_c_api_walks_find_the_python_api_walks_conditions_and_comparisons(name):
    # ite_conditions and comparisons walk terms through Z3's C API; the same walk
    # through z3's Python API (as they were written first) finds the same terms in the
    # same order, on the thresholds and local indices of a recorded synced kernel.
    program = parse_file(str(SYNCED / f"suite__{name}.sync.threshold.sync"))
    prover = Prover(program, ProofOptions(timeout=None))
    terms = prover.terms
    found = []
    for y in terms.sites.values():
        env = terms.env(y, "r")
        found += [t for t in (terms.threshold(y, e, env) for e in program.engines) if t is not None]
        found.append(terms.local(y, y.op.engine, env))
    checked = 0
    for term in found + [z3.And(*[t >= 0 for t in found])]:
        for by_count in (False, True):
            conds = cases_module.ite_conditions([term], by_count)
            expected = _python_ite_conditions([term], by_count)
            assert [c.get_id() for c in conds] == [c.get_id() for c in expected]
            assert [c.get_id() for c in cases_module.comparisons(conds)] == \
                [c.get_id() for c in _python_comparisons(expected)]
            checked += len(conds)
    assert checked > 20
