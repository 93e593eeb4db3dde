"""The last-producer candidates of the all-values proof (verify/proof/terms.py
`last_candidates`, `free_loops`) and their narrow form, which the soundness and
exactness obligations try first (verify/proof/obligations.py).

Candidates are never trusted: a query checks that they come at or after every producer.
The teeth test below shows that without that query a wrong program is proved.
"""

from __future__ import annotations

import pytest
import z3

from algorithm.registry import get_strategy
from semantics.parser import parse, parse_file
from verify.engines.deadline import Deadline
from verify.proof import obligations as obligations_module
from verify.proof.jobs import run_all, tasks
from verify.proof.obligations import ProofOptions, Prover
from verify.proof.terms import free_loops, guard_bounds, last_candidates, witnesses

from tests.support.corpus import ROOT

SUITE = ROOT / "kernels" / "suite"

# The narrow candidates of `w` for `r` are (i, 0) and (i, N - 1) (the range's ends).
# When K < N the last producer is (i, K - 1), which they miss; the wait covers only
# (i, 0) then (it is right when K >= N): unsound at K = 2, N = 3.
NARROW_MISSES = """
kernel narrow_misses
engines A B
param N = 3, K = 2, I = 2
for j in 0..I {
  for k2 in 0..K {
    A w writes b[j, k2]
  }
}
for i in 0..I {
  B r reads b[i, 0..N] wait A >= (if K >= N then K * i + N else K * i + 1)
}
"""


def _prover(program):
    return Prover(program, ProofOptions(timeout=None))


def _show(prover, env) -> dict:
    return {k: str(z3.simplify(v)) for k, v in env.items() if k not in prover.terms.params}


def test_free_loops_are_those_the_conflicting_accesses_guards_and_bounds_do_not_read():
    program = parse_file(SUITE / "matmul_fully_optimized.sync")  # candidates do not read the waits
    found = _prover(program).terms.sites
    # mm reads lhs_t[m % 2, bk, bm] and rhs_t[k % 2, bk, bn]
    assert free_loops(found["mm"], found["ld_rhs"]) == {"n", "m", "bm"}
    assert free_loops(found["mm"], found["ld_lhs"]) == {"n", "k", "bn"}
    guarded = parse("""
kernel g
engines A B
param N = 4
for t in 0..N {
  for u in 0..t {
    if u > 0 {
      A w writes a[0]
    }
  }
}
B r reads a[0]
""")
    sites = _prover(guarded).terms.sites
    assert free_loops(sites["w"], sites["r"]) == set()  # u in the guard, t in u's bound


def test_narrow_candidates_are_index_solutions_and_last_iterations_of_free_loops():
    program = parse_file(SUITE / "matmul_fully_optimized.sync")  # candidates do not read the waits
    prover = _prover(program)
    t = prover.terms
    y, x = t.sites["zero"], t.sites["pack"]
    iy = t.env(y, "y")
    full = last_candidates(t, x, y, iy, prover.depth)
    narrow = last_candidates(t, x, y, iy, prover.depth, narrow=True)
    assert len(full) == 192
    # n is shared with zero (n, n - 1, n - 2); m2, bm2, bn2 solve acc's index equations
    assert [_show(prover, w) for w in narrow] == [
        {"n": f"{s}n@y", "m2": "m0@y", "bm2": "bm0@y", "bn2": "bn0@y"} for s in ("", "-1 + ", "-2 + ")]
    y, x = t.sites["ld_rhs"], t.sites["mm"]
    narrow = last_candidates(t, x, y, t.env(y, "y"), prover.depth, narrow=True)
    shown = [_show(prover, w) for w in narrow]
    assert all(w["m"] == "-1 + MB" and w["bm"] == "-1 + TM" for w in shown if w["k"] != "k@y"), shown


def _sound_obligation():
    """`r after w` of NARROW_MISSES, at the first round's budget (the full one spends
    minutes on its chains before failing the same way)."""
    prover = Prover(parse(NARROW_MISSES), ProofOptions(timeout=None, query_rlimit=2_000_000))
    sites = prover.terms.sites
    return prover.sound(sites["r"], "A", sites["w"])


def test_a_wait_that_covers_only_the_narrow_candidates_is_not_proved_sound():
    obligation = _sound_obligation()
    assert obligation.status == "failed"
    model = obligation.model
    assert model["N"] > model["K"] >= 2, model  # where the narrow candidates miss the last producer


def test_teeth_trusting_the_narrow_candidates_unchecked_proves_the_wrong_wait(monkeypatch):
    original = obligations_module.Prover.query

    def skip_the_cover_check(self, facts, name):
        if name == "last":
            return obligations_module.PROVED, None
        return original(self, facts, name)

    monkeypatch.setattr(obligations_module.Prover, "query", skip_the_cover_check)
    assert _sound_obligation().status == "proved"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["matmul_fully_optimized"])
def test_matmul_fully_optimized_threshold_output_is_proved_for_every_parameter_value(name):
    # Not provable at any budget without the narrow candidates (docs/proofs.md).
    # The obligations on two workers, as `verify` runs them (not the 32-bit statement).
    program = get_strategy("threshold")(parse_file(SUITE / f"{name}.sync")).program
    options = ProofOptions(jobs=2, timeout=300)
    obligations = run_all(program, options, Deadline.after(options.timeout), tasks(program, options.property))
    assert len(obligations) == 26
    assert [o.describe() for o in obligations if o.status != "proved"] == []


GUARDED = """
kernel guarded
engines A B
param N = 4, Q = 8
for j in 0..N {
  for i in 0..Q {
    if i >= 3 * j + 1 and 2 * i + 1 > j {
      A w writes a[j % 2]
    }
  }
}
B r reads a[0]
"""


@pytest.mark.parametrize("text, op", [(GUARDED, "w")], ids=["two-guards"])
def test_guard_bounds_hold_exactly_where_some_inner_iteration_passes_the_guard(text, op):
    # Brute force: the largest j for which some i in 0..Q passes every guard.
    program = parse(text)
    prover = _prover(program)
    site = prover.terms.sites[op]
    bounds = guard_bounds(prover.terms, site, "j", dict(prover.terms.params))
    assert bounds, "the causal-style guard gives a bound"
    for q in range(0, 12):
        runs = [j for j in range(0, 12) for i in range(q) if i >= 3 * j + 1 and 2 * i + 1 > j]
        at = {prover.terms.params["Q"]: z3.IntVal(q, prover.ctx), prover.terms.params["N"]: z3.IntVal(12, prover.ctx)}
        values = [z3.simplify(z3.substitute(b, *at.items())).as_long() for b in bounds]
        # every bound holds for every j that runs, and the tightest one is reached
        assert all(j <= v for j in runs for v in values), (q, values)
        if runs:
            assert min(values) == max(runs), (q, values, runs)


def test_flash_causal_guard_bounds_the_kv_tiles_that_run_a_query_tile():
    program = parse_file(SUITE / "flash_attention_causal.sync")  # guard bounds do not read the waits
    prover = _prover(program)
    t = prover.terms
    (bound,) = guard_bounds(t, t.sites["qk"], "j", dict(t.params))
    for qt in (0, 1, 15, 16, 17, 33, 100):
        value = z3.simplify(z3.substitute(bound, (t.params["QT"], z3.IntVal(qt, prover.ctx)))).as_long()
        assert value == max([j for j in range(0, 20) if any(i >= 16 * j for i in range(qt))], default=-1)


def test_narrow_witnesses_take_the_anchors_own_iterations_and_index_solutions():
    # zero(n) <- pack <- accum: the chain goes through pack at zero's own (m0, bm0, bn0)
    program = parse_file(SUITE / "matmul_fully_optimized.sync")  # candidates do not read the waits
    prover = _prover(program)
    t = prover.terms
    y, x, z = t.sites["zero"], t.sites["accum"], t.sites["pack"]
    iy = t.env(y, "y")
    (w, *_) = [w for w in last_candidates(t, x, y, iy, prover.depth, narrow=True)
               if str(z3.simplify(w["n"])) == "-1 + n@y"]
    anchors = [(y, iy), (x, w)]
    full = witnesses(t, z, anchors, prover.depth, prover.options.max_witnesses)
    narrow = witnesses(t, z, anchors, prover.depth, prover.options.max_witnesses, narrow=True)
    assert len(full) == prover.options.max_witnesses  # the limit
    assert [_show(prover, k) for k in narrow] == [
        {"n": n, "m2": "m0@y", "bm2": "bm0@y", "bn2": "bn0@y"} for n in ("n@y", "-1 + n@y")]


def test_guard_bound_at_an_index_solution_names_the_last_producer_of_a_row():
    # fexp(i2) reads m_buf[i2]; mupd(j, i) writes m_buf[i] under `i >= 16 * j`: the last
    # producer is mupd(min(i2 // 16, JT - 1), i2), the candidate from the guard bound
    # at the solution i = i2 (without it, fexp after mupd stayed unknown at any budget).
    program = parse_file(SUITE / "flash_attention_causal.sync")  # candidates do not read the waits
    prover = _prover(program)
    t = prover.terms
    y, x = t.sites["fexp"], t.sites["mupd"]
    iy = t.env(y, "y")
    narrow = last_candidates(t, x, y, iy, prover.depth, narrow=True)
    guarded = [w for w in narrow if z3.is_app_of(z3.simplify(w["j"]), z3.Z3_OP_ITE)]
    assert len(guarded) == 1, [_show(prover, w) for w in narrow]
    for jt, qt in [(1, 5), (2, 17), (3, 40), (5, 33)]:
        for i2 in range(qt):
            runs = [j for j in range(jt) if i2 >= 16 * j]
            at = [(t.params["JT"], z3.IntVal(jt, prover.ctx)), (t.params["QT"], z3.IntVal(qt, prover.ctx)),
                  (iy["i2"], z3.IntVal(i2, prover.ctx))]
            assert z3.simplify(z3.substitute(guarded[0]["j"], *at)).as_long() == max(runs), (jt, qt, i2)
            assert z3.simplify(z3.substitute(guarded[0]["i"], *at)).as_long() == i2
