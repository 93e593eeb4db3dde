"""The all-values proof states up to which parameter values every semaphore value and
threshold stays in the signed 32-bit range (verify/proof/int32.py). Expected limits are
brute-forced with the bounded check's own range test over unrolled valuations
(semantics.machines.counter_range_violation), never taken from the proof."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semantics.machines import counter_range_violation
from semantics.parser import parse
from semantics.sequential import unroll
from verify.proof.int32 import ALL, AT_LEAST, UP_TO
from verify.proof.prove import ProofOptions, prove
from verify.verdicts import ProofStatus

from tests.support.clock import FakeClock


def brute_limit(program, cap: int) -> int | None:
    """The largest P <= cap such that no valuation with every parameter in [lower, P]
    leaves the range; None when it holds up to cap."""
    lows = {p.name: p.lower for p in program.params}
    for top in range(max(lows.values()), cap + 1):
        for combo in itertools.product(*[range(lows[p.name], top + 1) for p in program.params]):
            if max(combo) != top:
                continue
            values = dict(zip((p.name for p in program.params), combo))
            if counter_range_violation(unroll(program, values)) is not None:
                return top - 1
    return None


# Exact programs whose thresholds leave the range at small parameter values: a wait
# at or below 0 always holds, so `B s` may wait on A with a hugely negative threshold
# and stay exact (it has no producer on A).
ONE = """engines A B
param N
for i in 0..N {
  A w writes a[i]
  B r reads a[i] wait A >= i + 1
  B s reads b[i] wait A >= -100000000 * i
}
"""
TWO = """engines A B
param N, M >= 1
for i in 0..N {
  for j in 0..M {
    A w writes a[i, j]
    B r reads a[i, j] wait A >= iters(j)
    B s reads b[i, j] wait A >= -200000000 * i - 100000000 * j
  }
}
"""


@pytest.mark.parametrize("text", [
    pytest.param(ONE, id="one-parameter"),
    pytest.param(TWO, id="two-parameters", marks=pytest.mark.slow),  # ~3 s: the proof's own obligations
])
def test_the_stated_limit_is_the_brute_forced_one(text):
    program = parse(text)
    proof = prove(program, ProofOptions())
    assert proof.status == ProofStatus.PROVED
    expected = brute_limit(program, 40)
    assert expected is not None
    assert (proof.int32.status, proof.int32.max_param) == (UP_TO, expected)


def test_a_program_whose_counters_and_thresholds_are_bounded_holds_for_every_value():
    program = parse("engines A B\nparam N\nA w writes a[N]\nB r reads a[N] wait A >= 1\n")
    proof = prove(program, ProofOptions())
    assert proof.status == ProofStatus.PROVED and proof.int32.status == ALL
    assert proof.to_json()["int32_range"]["status"] == "all"


@pytest.mark.parametrize("text, expected", [
    # C[A] reaches N: the last valid N is 2^31 - 1.
    ("engines A B\nparam N\nfor i in 0..N {\n  A w writes a[i]\n  B r reads a[i] wait A >= i + 1\n}\n",
     2 ** 31 - 1),
    # Two instances of A per iteration: C[A] reaches 2N.
    ("engines A B\nparam N\nfor i in 0..N {\n  A w writes a[i]\n  A v writes c[i]\n"
     "  B r reads a[i], c[i] wait A >= 2 * i + 2\n}\n", (2 ** 31 - 1) // 2),
])
def test_the_stated_limit_is_where_the_counter_count_crosses_2_31(text, expected):
    # Expected values derived by hand from the instance counts (C[A] = N, 2N); the brute
    # force below confirms the counts themselves on small valuations.
    program = parse(text)
    proof = prove(program, ProofOptions())
    assert proof.status == ProofStatus.PROVED
    assert (proof.int32.status, proof.int32.max_param) == (UP_TO, expected)
    per_iteration = 2 if "A v" in text else 1
    for n in range(4):
        unrolled = unroll(program, {"N": n})
        assert sum(1 for i in unrolled.instances if i.engine == 0) == per_iteration * n


@pytest.mark.parametrize("text", [ONE], ids=["one"])
def test_the_statement_from_a_worker_is_the_one_from_this_process(text):
    """With workers (jobs > 1) the statement is computed in one, started like theirs, so
    that it does not depend on what the calling process did before; same answer."""
    program = parse(text)
    here = prove(program, ProofOptions()).int32
    for method in ("forkserver", "fork"):
        assert prove(program, ProofOptions(jobs=2, start_method=method)).int32 == here, method


def test_a_lost_statement_worker_leaves_the_statement_unknown_and_the_proof_proved(monkeypatch):
    import os

    from verify.proof import prove as prove_module

    def die(prover, lower):
        os._exit(7)

    monkeypatch.setattr(prove_module, "range_limit", die)
    proof = prove(parse(ONE), ProofOptions(jobs=2, start_method="fork"))
    assert proof.status == ProofStatus.PROVED
    assert proof.int32.status == "unknown"
    assert "ended without an answer (exit code 7)" in proof.int32.reason


def test_a_statement_slower_than_its_grace_is_unknown_and_the_proof_stays_proved(monkeypatch):
    # After a proved proof the statement gets a grace period (ProofOptions.statement_grace,
    # or a sixth of the budget when that is more), not the rest of the budget: a statement
    # that takes longer is not waited for. The stand-in gives the real answer, but only
    # after 60 s, far past the 0.5 s grace on any load: had the proof waited for it, it
    # would report that answer. The budget is on a clock that stands still, so the proof
    # itself never runs out, however loaded the machine.
    import time

    from verify.proof import prove as prove_module

    real = prove_module.range_limit

    def slow(prover, lower):
        time.sleep(60)
        return real(prover, lower)

    monkeypatch.setattr(prove_module, "range_limit", slow)
    options = ProofOptions(jobs=2, start_method="fork", timeout=3, statement_grace=0.5, clock=FakeClock())
    proof = prove(parse(ONE), options)
    assert proof.status == ProofStatus.PROVED
    assert proof.int32.status == "unknown" and "no answer within 0 s after the proof" in proof.int32.reason


def test_the_grace_is_a_sixth_of_the_budget_at_least_ten_seconds():
    from verify.proof.prove import statement_grace

    assert statement_grace(60) == 10 and statement_grace(300) == 50 and statement_grace(6) == 10
    assert statement_grace(None) == float("inf")


def _undecided_int32(monkeypatch, when):
    """Range queries answer unknown where `when(prover, cap)` holds (cap: the query's
    largest parameter value)."""
    from verify.proof import obligations as obligations_module

    real = obligations_module.Prover.query

    def query(self, facts, name):
        if name.startswith("int32-") and when(self, int(name.split("-", 1)[1])):
            return ProofStatus.UNKNOWN, "made undecided"
        return real(self, facts, name)

    monkeypatch.setattr(obligations_module.Prover, "query", query)


def test_a_first_search_that_decides_nothing_still_gives_the_brute_forced_limit(monkeypatch):
    # Every query at the small budget undecided: the full-budget search alone decides.
    _undecided_int32(monkeypatch, lambda prover, cap: prover.rlimit < prover.options.query_rlimit)
    program = parse(ONE)
    proof = prove(program, ProofOptions())
    assert (proof.int32.status, proof.int32.max_param) == (UP_TO, brute_limit(program, 40))


def test_a_limit_the_full_budget_cannot_prove_is_at_least_never_up_to(monkeypatch):
    program = parse(ONE)
    limit = brute_limit(program, 40)
    _undecided_int32(monkeypatch, lambda prover, cap: cap == limit)
    proof = prove(program, ProofOptions())
    assert (proof.int32.status, proof.int32.max_param) == (AT_LEAST, limit - 1)


def _stated_valuation(reason: str) -> dict[str, int]:
    """The valuation named by an up-to statement's reason ("at N=23, M=4 a counter ...")."""
    named = reason.split("at ", 1)[1].split(" a counter", 1)[0]
    return {k: int(v) for k, v in (item.split("=") for item in named.split(", "))}


def _statement_agrees_with_brute_force(program, limit) -> bool:
    """The stated limit is the brute-forced one, and the valuation it names leaves the range."""
    expected = brute_limit(program, 40)
    if (limit.status, limit.max_param) != (UP_TO, expected):
        return False
    return counter_range_violation(unroll(program, _stated_valuation(limit.reason))) is not None


@pytest.mark.parametrize("text", [
    pytest.param(ONE, id="one-parameter"),
    pytest.param(TWO, id="two-parameters", marks=pytest.mark.slow),
])
def test_the_diagonal_alone_states_the_brute_forced_limit(monkeypatch, text):
    # Without the optimizer's proposal (it gives up on non-linear counts), the diagonal's
    # (every parameter equal, doubling then bisection) is proved below and stated.
    from verify.proof import int32 as int32_module

    monkeypatch.setattr(int32_module, "_optimum", lambda prover, cases, params: (None, {}))
    asked = []
    real = int32_module._violated

    def violated(prover, cases, bounds, name):
        asked.append(name)
        return real(prover, cases, bounds, name)

    monkeypatch.setattr(int32_module, "_violated", violated)
    program = parse(text)
    proof = prove(program, ProofOptions())
    assert _statement_agrees_with_brute_force(program, proof.int32)
    # Proved by one "holds up to" query (the binary search did not run).
    assert [n for n in asked if n.startswith("int32-")] == [f"int32-{proof.int32.max_param}"]


def test_a_diagonal_proposal_below_the_limit_is_caught_by_the_brute_force_check(monkeypatch):
    # Teeth for the test above: a diagonal that proposes a point below the limit with a
    # made-up violation gets "holds up to" proved, and the check rejects the statement.
    from verify.proof import int32 as int32_module

    program = parse(ONE)
    limit = brute_limit(program, 40)
    monkeypatch.setattr(int32_module, "_optimum", lambda prover, cases, params: (None, {}))
    monkeypatch.setattr(int32_module, "_diagonal",
                        lambda prover, cases, params, good, high: (limit - 2, {"N": limit - 2}))
    assert not _statement_agrees_with_brute_force(program, prove(program, ProofOptions()).int32)


def test_a_range_case_left_undecided_is_never_stated_as_holding(monkeypatch):
    # "Holds up to P" is asked one case (op, counter or wait) at a time: one undecided
    # case leaves P undecided even when every other case is proved.
    from verify.proof import obligations as obligations_module

    real = obligations_module.Prover.query
    seen = set()

    def query(self, facts, name):
        if name.startswith("int32-") and name not in seen:
            seen.add(name)  # the first case of each "holds up to P" query
            return ProofStatus.UNKNOWN, "made undecided"
        return real(self, facts, name)

    monkeypatch.setattr(obligations_module.Prover, "query", query)
    proof = prove(parse(ONE), ProofOptions())
    assert proof.status == ProofStatus.PROVED
    assert proof.int32.status not in (UP_TO, ALL)


# Thresholds that leave the range only off the diagonal: with M = N they are 0.
OFF_DIAGONAL = """engines A B
param N, M
for i in 0..N {
  A w writes a[i]
  B r reads a[i] wait A >= i + 1
  B s reads b[i] wait A >= -100000000 * (M - N) * (M - N)
}
"""


def test_a_limit_off_the_diagonal_is_still_the_brute_forced_one():
    # The diagonal proposes nothing here (every point with M = N holds); the binary
    # search decides, and its limit is the brute-forced one.
    program = parse(OFF_DIAGONAL)
    proof = prove(program, ProofOptions())
    assert proof.status == ProofStatus.PROVED
    assert _statement_agrees_with_brute_force(program, proof.int32)


def test_a_kernel_without_parameters_that_leaves_the_range_says_so_in_words():
    text = "engines A B\nA w writes a[0]\nB r reads a[0] wait A >= 1\nB s reads b[0] wait A >= -3000000000\n"
    proof = prove(parse(text), ProofOptions())
    assert proof.status == ProofStatus.PROVED
    assert proof.int32.status == "none"
    assert proof.int32.reason.endswith("at the kernel's only valuation")


SCALES = [0, 3_000_000, 40_000_000, 200_000_000]


@st.composite
def scaled_kernels(draw) -> str:
    """Exact two-parameter kernels whose third op's threshold (at or below 0: it always
    holds) leaves the range once the parameters grow: linear or not in the indices."""
    c1, c2, c3 = draw(st.tuples(*[st.sampled_from(SCALES)] * 3).filter(any))
    low_n, low_m = draw(st.integers(0, 2)), draw(st.integers(1, 2))
    return (f"engines A B\nparam N >= {low_n}, M >= {low_m}\nfor i in 0..N {{\n  for j in 0..M {{\n"
            f"    A w writes a[i, j]\n    B r reads a[i, j] wait A >= iters(j)\n"
            f"    B s reads b[i, j] wait A >= -{c1} * i - {c2} * j - {c3} * i * j\n  }}\n}}\n")


CAP = 24


@pytest.mark.slow
@settings(max_examples=10)
@given(scaled_kernels())
def test_the_statement_on_generated_kernels_is_the_brute_forced_one(text):
    # Brute force up to CAP: a stated limit below it must be the brute-forced one (and
    # its named valuation must leave the range); holding up to CAP, any statement of a
    # limit >= CAP (or "all") agrees.
    program = parse(text)
    proof = prove(program, ProofOptions())
    assert proof.status == ProofStatus.PROVED
    expected = brute_limit(program, CAP)
    limit = proof.int32
    if expected is None:
        assert limit.status == ALL or (limit.status in (UP_TO, AT_LEAST) and limit.max_param >= CAP)
    else:
        assert _statement_agrees_with_brute_force(program, limit), (limit, expected)
