"""The all-values proof understands `count(F)` thresholds: its closed-form threshold term
at an instance is the value `unroll` computes there (nested, triangular and guarded
loops, a DMA queue); exact count waits are proved for every parameter value; a count
threshold wrong only beyond the bounded check's bounds is refuted there."""

from __future__ import annotations

import itertools

import pytest
import z3

from semantics.context import sites
from semantics.parser import parse
from semantics.sequential import unroll
from verify.engines.explicit import check
from verify.proof.prove import PROVED, ProofOptions, prove
from verify.proof.terms import Terms
from verify.verdicts import CheckOptions

from tests.support.count_kernels import DMA_IF, GUARDED, INCREMENT, NESTED, PIPE

TRIANGLE = """\
engines PE DVE
queue Q
param N, M
for i in 0..N {
  for j in i..M {
    PE a writes x[j] via Q
    if j % 2 == 0 {
      PE b writes y[j]
    }
  }
  DVE c reads x[i] wait PE >= count(PE) + 2 * count(Q) - count(DVE), Q >= count(Q)
}
"""


def test_the_proofs_threshold_terms_are_the_unrolled_thresholds():
    program = parse(TRIANGLE)
    terms = Terms(program, z3.main_ctx())
    site = sites(program)["c"]
    compared = 0
    for n, m in itertools.product(range(4), range(5)):
        unrolled = unroll(program, {"N": n, "M": m})
        for inst in unrolled.instances:
            if inst.op.name != "c":
                continue
            env = {"N": z3.IntVal(n), "M": z3.IntVal(m), **{k: z3.IntVal(v) for k, v in inst.env}}
            got = tuple(z3.simplify(terms.wait_term(site, w, env)).as_long() for w in program.body[0].body[1].waits)
            assert got == tuple(t for _, t in inst.waits), (n, m, inst.describe())
            compared += 1
    assert compared > 20


@pytest.mark.parametrize("text", [PIPE, DMA_IF, NESTED, GUARDED, INCREMENT],
                         ids=["pipe", "dma_if", "nested", "guarded", "increment"])
def test_exact_count_waits_are_proved_for_every_parameter_value(text):
    proof = prove(parse(text.replace("{d}", "")), ProofOptions(timeout=600))
    assert proof.status == PROVED, proof.reason


def test_a_count_threshold_wrong_only_for_large_parameters_is_refuted_beyond_the_bounds():
    # From i = 4 on, one PE instance too few: invisible within N <= 3.
    program = parse(PIPE.replace("{d}", " - i // 4"))
    assert check(program, (("N", 0, 3),), CheckOptions()).holds is True
    proof = prove(program, ProofOptions(timeout=600))
    assert proof.status == "refuted", proof.reason
    assert proof.counterexample.verdict.value == "unsound"
    assert dict(proof.counterexample.witness.unrolled.valuation)["N"] > 4
