"""The all-values proof's answers are deterministic for a given input and `jobs`: the
same verdict, the same obligations proved, the same 32-bit statement, whatever the
process did before (planned and proved another kernel), whatever Python's hash seed,
and wherever Python's cyclic collector runs (no Z3 term of a proof is left to it: Z3
gives a freed term's id to the next new term, and its effort on a non-linear query
depends on the ids)."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys

import pytest
import z3

from algorithm.registry import get_strategy
from semantics.parser import parse_file
from verify.proof import terms as terms_module
from verify.proof.prove import PROVED, ProofOptions, prove

from tests.support.corpus import ROOT

KERNELS = ROOT / "kernels"
SMALL = ["triangular_attention", "nested_dynamic", "six_engine_block"]


def _program(name: str):
    return get_strategy("threshold")(parse_file(str(KERNELS / f"{name}.sync"))).program


def answers(proof) -> dict:
    """What a proof says, without its seconds."""
    return {"status": proof.status, "reason": proof.reason,
            "obligations": [(o.describe(), o.status) for o in proof.obligations],
            "int32": None if proof.int32 is None else (proof.int32.status, proof.int32.max_param)}


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("name", SMALL)
def test_a_proof_answers_the_same_after_planning_and_proving_another_kernel(name, jobs):
    program = _program(name)
    first = answers(prove(program, ProofOptions(jobs=jobs)))
    assert first["status"] == PROVED
    other = _program(SMALL[(SMALL.index(name) + 1) % len(SMALL)])  # planned in this process, then proved
    assert prove(other, ProofOptions(jobs=jobs)).status == PROVED
    assert answers(prove(program, ProofOptions(jobs=jobs))) == first


_ANSWERS = """
import json, sys
from algorithm.registry import get_strategy
from semantics.parser import parse_file
from verify.proof.prove import ProofOptions, prove
from tests.verify.proof.test_deterministic_answers import answers

out = {}
for path in sys.argv[1:]:
    out[path] = answers(prove(get_strategy("threshold")(parse_file(path)).program, ProofOptions(jobs=2)))
print(json.dumps(out))
"""


def test_a_proof_answers_the_same_under_any_hash_seed():
    """Sets and dicts of names iterate in another order under another PYTHONHASHSEED;
    none of that may reach the queries' answers (workers inherit the seed)."""
    paths = [str(KERNELS / "triangular_attention.sync"), str(KERNELS / "suite" / "layernorm.sync")]
    runs = []
    for seed in ("0", "1", "4242"):
        done = subprocess.run([sys.executable, "-c", _ANSWERS, *paths], capture_output=True, text=True, cwd=ROOT,
                              env={**os.environ, "PYTHONHASHSEED": seed}, timeout=300)
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout))
    assert all(run[path]["status"] == PROVED for run in runs for path in paths)
    assert runs[1] == runs[0] and runs[2] == runs[0]


def _z3_terms_the_collector_frees(run) -> int:
    """How many Z3 terms Python's cyclic collector finds as garbage while `run()` runs,
    collecting after (almost) every allocation. Found garbage is kept (DEBUG_SAVEALL),
    not freed, so the proof runs as it would without the collector."""
    gc.collect()
    saved_threshold, saved_debug, enabled = gc.get_threshold(), gc.get_debug(), gc.isenabled()
    found = {"terms": 0, "seen": len(gc.garbage)}

    def count(phase, info):
        if phase == "stop":
            found["terms"] += sum(isinstance(o, z3.AstRef) for o in gc.garbage[found["seen"]:])
            found["seen"] = len(gc.garbage)

    gc.enable()
    gc.set_threshold(50, 5, 5)
    gc.set_debug(gc.DEBUG_SAVEALL)
    gc.callbacks.append(count)
    try:
        run()
    finally:
        gc.callbacks.remove(count)
        gc.set_debug(saved_debug)
        gc.set_threshold(*saved_threshold)
        if not enabled:
            gc.disable()
        gc.garbage.clear()
    return found["terms"]


@pytest.mark.parametrize("name", ["triangular_attention", "suite/layernorm"])
def test_no_z3_term_of_a_proof_waits_for_the_cyclic_collector(name):
    """Every term a proof drops is freed by reference counting, at the same point of
    every run, never by the collector at a point set by the process's allocations
    (a recursive closure over the candidates' terms was such a cycle)."""
    program = _program(name)
    assert _z3_terms_the_collector_frees(lambda: prove(program, ProofOptions(jobs=1))) == 0


def test_teeth_a_reference_cycle_over_a_term_is_seen(monkeypatch):
    real = terms_module.Terms.local

    def local(self, site, engine, env):
        term = real(self, site, engine, env)
        cycle = [term]
        cycle.append(cycle)
        return term

    monkeypatch.setattr(terms_module.Terms, "local", local)
    program = _program("triangular_attention")
    assert _z3_terms_the_collector_frees(lambda: prove(program, ProofOptions(jobs=1))) > 0
