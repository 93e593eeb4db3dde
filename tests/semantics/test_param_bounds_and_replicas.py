"""Parameter lower bounds (`param K >= 1`) and replica groups
(`replica G`, the per-core copies of one global SNAX op).

Lower bounds: they round-trip, a valuation below one is a kernel error at the
declaration (in `unroll` and in `verify --param`), `verify`'s default bounds start at
them, and the motivating kernel (`x[i % K]`, refused by every strategy while K may be
0) syncs exactly, verifies bisimilar on both engines and is proved for every K >= 1,
with the assumption named in the JSON and the text.

Replicas: ops of one group never depend on each other, in `depends_on`, in
`requirements`, in the symbolic conflict, in the independent oracle, the Z3 engine and
the all-values proof; they still conflict with every other op. SNAX's own expected
outputs (insert-sync-barrier cases 1 and 3, loop_copy_generic) are sound; the two gap
cases stay unsound.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import z3

from algorithm.registry import get_strategy
from semantics.errors import EvalError
from semantics.parser import parse, parse_file
from semantics.printer import print_program
from semantics.sequential import depends_on, requirements, unroll
from semantics.symbolic import conflict, conflicting_pairs, param_assumptions
from syncproof import Scope, VerifyOptions, load, verify
from verify.cli.main import main
from verify.engines.explicit import check
from verify.proof.prove import ProofOptions, prove
from verify.verdicts import ProofStatus, Verdict

from tests.support import oracle
from tests.support.corpus import DATA_DIR, ROOT

MOD_K = DATA_DIR / "params" / "mod_k.sync"
SNAX_PEERS = Path("/work/shared/peers/snax/insert-sync-barrier.mlir")


# ------------------------------------------------------------- lower bounds


def test_param_lower_bounds_round_trip():
    text = "engines A B\nparam N, K >= 1, T >= 2 = 8, U = 0\nA p writes x[N % K, T]\n"
    program = parse(text)
    assert [(p.name, p.lower, p.default) for p in program.params] == [
        ("N", 0, None), ("K", 1, None), ("T", 2, 8), ("U", 0, 0)]
    assert print_program(program) == text
    assert parse(print_program(program)) == program


def test_a_valuation_below_the_lower_bound_is_an_error_at_the_declaration():
    program = parse_file(str(MOD_K))
    with pytest.raises(EvalError) as err:
        unroll(program, {"N": 2, "K": 0})
    assert (err.value.loc.line, err.value.loc.col) == (4, 10)
    assert "K = 0 is below its lower bound 1" in err.value.message
    assert len(unroll(program, {"N": 2, "K": 1}).instances) == 4


def test_verify_param_below_the_lower_bound_is_a_located_error(capsys):
    assert main(["verify", str(MOD_K), "--param", "K=0..2", "--scope", "bounded"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (f"{MOD_K}:4:10: error: --param K=0..2: K = 0 is below its lower bound 1 "
                       "(declared `K >= 1`)")


def test_symbolic_assumptions_are_the_lower_bounds():
    program = parse_file(str(MOD_K))
    solver = z3.Solver()
    solver.add(*param_assumptions(program), z3.Int("K") == 0)
    assert solver.check() == z3.unsat


@pytest.mark.parametrize("strategy", ["threshold", "barrier"])
def test_the_modulo_k_kernel_syncs_and_verifies_under_its_assumption(strategy, capsys):
    synced = get_strategy(strategy)(parse_file(str(MOD_K))).program
    bounds = (("N", 0, 4), ("K", 1, 3))
    expected = oracle.BISIMILAR if strategy == "threshold" else oracle.OVER_SYNCHRONIZED
    assert oracle.verdict(synced, bounds) == expected
    assert check(synced, bounds).verdict.value == expected


def test_the_modulo_k_kernel_is_proved_for_every_k_at_least_one():
    report = verify(load(MOD_K), VerifyOptions(engine="both"))
    assert report.holds is True, report.result
    assert report.result.bounds == (("N", 0, 3), ("K", 1, 3))  # the default bounds start at K's lower bound
    assert report.proof.status == ProofStatus.PROVED
    assert report.proof.lower == (("N", 0), ("K", 1))
    assert report.proof.assumptions == ("K >= 1",)
    assert report.scope == Scope.ALL


def test_verify_names_the_assumption_in_the_json_and_the_text(capsys):
    code = main(["verify", str(MOD_K), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0, data
    assert data["bounds"] == {"N": [0, 3], "K": [1, 3]}
    assert data["all_values"]["status"] == "proved"
    assert data["all_values"]["domain"] == {"N": [0, None], "K": [1, None]}
    assert data["all_values"]["assumptions"] == ["K >= 1"]
    assert data["scope"] == "all"
    assert main(["verify", str(MOD_K)]) == 0
    out = capsys.readouterr().out
    assert "under the kernel's assumptions (K >= 1)" in out, out


def _proof_status(program) -> str:
    try:
        return prove(program, ProofOptions(timeout=None)).status
    except EvalError as err:  # the refuting valuation is a run-time error of the kernel
        return f"refuted: {err.message}"


def test_the_proof_needs_the_assumption():
    """Teeth: the same synchronized kernel with `param N, K` is not proved (K = 0
    divides by zero); with `K >= 1` it is, and says so."""
    synced = get_strategy("threshold")(parse_file(str(MOD_K))).program
    proof = prove(synced, ProofOptions(timeout=None))
    assert proof.status == "proved" and proof.assumptions == ("K >= 1",)
    weaker = parse(print_program(synced).replace("K >= 1", "K"))
    assert _proof_status(weaker) != "proved"


# ----------------------------------------------------------------- replicas

REPLICAS = """\
engines A B
param N
for i in 0..N {
  A g_A reads m writes m replica g
  B g_B reads m writes m replica g
  B use reads m
  A h_A writes m replica h
  B h_B writes m replica h
}
"""


def test_replicas_round_trip_and_never_depend_on_each_other():
    program = parse(REPLICAS)
    assert print_program(program) == REPLICAS
    by_name = {op.name: op for op in (s for s in _ops(program))}
    assert conflicting_pairs(by_name["g_A"], by_name["g_B"]) == []
    assert conflicting_pairs(by_name["g_A"], by_name["use"]) != []
    assert conflicting_pairs(by_name["g_B"], by_name["h_A"]) != []
    unrolled = unroll(program, {"N": 2})
    run = oracle.unroll_program(program, {"N": 2})
    deps = oracle.dependences(run)
    for y in unrolled.instances:
        for x in unrolled.instances:
            assert depends_on(y, x) == (x.index in deps[y.index]), (y.describe(), x.describe())
            if x.op.replica is not None and x.op.replica == y.op.replica:
                assert not depends_on(y, x)
    # g_B[i=1] depends on A's h_A[i=0] (another logical op), not on g_A[i=1]
    need = requirements(unrolled)
    g_b1 = next(y for y in unrolled.instances if y.describe() == "g_B[i=1]")
    assert need[g_b1.index][0] == 2  # 1 + local index of h_A[i=0] on A (g_A[0], h_A[0], g_A[1])


def test_replica_stays_usable_as_a_name():
    text = "engines A replica\nreplica replica writes replica replica replica\n"
    program = parse(text)
    assert program.body[0].replica == "replica" and program.body[0].writes[0].buffer == "replica"
    assert print_program(program) == text


def test_the_symbolic_conflict_of_replicas_is_false():
    program = parse(REPLICAS)
    by_name = {op.name: op for op in _ops(program)}
    env = {"N": z3.Int("N"), "i": z3.Int("i")}
    assert z3.is_false(z3.simplify(conflict(by_name["g_A"], env, by_name["g_B"], env)))


def test_exact_waits_of_replicas_verify_on_every_engine_and_for_all_values():
    program = parse(REPLICAS)
    synced = get_strategy("threshold")(program).program
    bounds = (("N", 0, 3),)
    assert oracle.verdict(synced, bounds) == oracle.BISIMILAR
    assert check(synced, bounds).verdict == Verdict.BISIMILAR
    report = verify(synced, VerifyOptions(strategy="manual", engine="both"))
    assert report.holds and report.proof.status == "proved" and report.scope == Scope.ALL, report.proof
    # Teeth: without the replica clauses the replicas race: the same waits are unsound.
    plain = parse(print_program(synced).replace(" replica g", "").replace(" replica h", ""))
    assert oracle.verdict(plain, bounds) == oracle.UNSOUND
    assert check(plain, bounds).verdict == Verdict.UNSOUND


@pytest.mark.skipif(not SNAX_PEERS.exists(), reason="the shared snax-mlir test files are not on this machine")
@pytest.mark.parametrize("case", [1, 2, 3, 4, 5])
def test_snax_expected_outputs_are_sound(case):
    report = verify(load(f"{SNAX_PEERS}:{case}"),
                    VerifyOptions(strategy="snax-barrier", property="soundness", scope=Scope.BOUNDED))
    assert report.holds and report.verdict in ("bisimilar", "over-synchronized"), report.verdict


@pytest.mark.parametrize("name, verdict", [
    ("loop_copy_generic.mlir", ("bisimilar", "over-synchronized")),
    ("loop_nested_if_gap.out-insert-sync-barrier.mlir", ("unsound",)),
    ("subview_alias_gap.mlir", ("unsound",)),
])
def test_snax_derived_cases_sound_except_the_gaps(name, verdict):
    strategy = "manual" if ".out-" in name else "snax-barrier"
    report = verify(load(DATA_DIR / "snax" / "derived" / name),
                    VerifyOptions(strategy=strategy, property="soundness", scope=Scope.BOUNDED))
    assert report.verdict in verdict


def _ops(program):
    from semantics.ir import ops

    return ops(program)


assert ROOT.exists()


# ------------------------------------------- generated programs with replicas

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from semantics.ir import map_ops  # noqa: E402
from verify.search.generators import programs, valuations  # noqa: E402

import attrs  # noqa: E402


@st.composite
def replicated_programs(draw):
    """Generated programs with random replica groups and lower bounds."""
    program = draw(programs(max_depth=2))
    groups = draw(st.lists(st.sampled_from([None, "g", "h"]), min_size=len(_ops(program)),
                           max_size=len(_ops(program))))
    by_name = dict(zip((op.name for op in _ops(program)), groups))
    lowers = [draw(st.integers(0, 1)) for _ in program.params]
    params = tuple(attrs.evolve(p, lower=low if p.default is None else min(low, p.default))
                   for p, low in zip(program.params, lowers))
    return attrs.evolve(program, params=params,
                        body=map_ops(program.body, lambda op: attrs.evolve(op, replica=by_name[op.name])))


@given(replicated_programs().flatmap(lambda p: st.tuples(st.just(p), valuations(p, 2))))
def test_replica_dependences_and_requirements_agree_with_the_oracle(example):
    program, values = example
    assert parse(print_program(program)) == program
    unrolled = unroll(program, values)
    deps = oracle.dependences(oracle.unroll_program(program, values))
    need = requirements(unrolled)
    for y in unrolled.instances:
        assert {x.index for x in unrolled.instances if depends_on(y, x)} == deps[y.index]
        brute = [0] * len(program.engines)
        for x in unrolled.instances:
            if x.index in deps[y.index]:
                brute[x.engine] = max(brute[x.engine], x.local + 1)
        assert need[y.index] == tuple(brute), y.describe()
