"""The all-values proof's verdict does not depend on the machine's load.

Its budget is deterministic: Z3 resource units per query and for the whole proof
(`ProofOptions.rlimit`, `--proof-rlimit`; verify/proof/budget.py). The wall clock is only
an outer cap the user sets (`--proof-timeout`, none by default), and reaching it gives
unknown naming the cap. Load is simulated here by a fake clock the proof reads
(`ProofOptions.clock`; tests/support/clock.py), not by patching Z3; the slow test at the
end runs real CPU hogs beside the proof.
"""

import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from algorithm.registry import get_strategy
from semantics.parser import parse_file
from verify.cli.main import main
from verify.proof.options import DEFAULT_PROOF_RLIMIT, Budget, ProofOptions
from verify.proof.prove import prove
from verify.verdicts import ProofStatus

from tests.support.clock import FakeClock

ROOT = Path(__file__).parents[3]
SMALL = ROOT / "kernels" / "pipeline_db.sync"  # proved in about a second, 11 obligations


def _synced(path: Path):
    return get_strategy("threshold")(parse_file(str(path))).program


def _answer(proof) -> tuple:
    """What a proof decided: its verdict and each obligation's status (not its seconds)."""
    return proof.status, tuple((o.describe(), o.status) for o in proof.obligations)


def test_the_verdict_is_the_same_when_the_clock_runs_slow():
    """A clock that advances 1000 s per reading (a machine so loaded that every step of
    the proof takes ages) changes nothing: no budget of the proof is on the wall clock
    unless the user sets one."""
    program = _synced(SMALL)
    still = prove(program, ProofOptions(clock=FakeClock()))
    slow = prove(program, ProofOptions(clock=FakeClock(step=1000.0)))
    assert still.status == ProofStatus.PROVED  # the recorded expectation (kernels/ bench)
    assert _answer(slow) == _answer(still)
    assert slow.units == still.units > 0  # counted work, the same on either clock
    assert slow.budget is None and slow.to_json()["budget"]["hit"] is None


def test_teeth_a_default_wall_clock_budget_is_caught():
    """The property above catches a proof whose default budget is on the wall clock (60 s,
    as it was): with the slow clock its verdict changes."""
    program = _synced(SMALL)
    still = prove(program, ProofOptions(clock=FakeClock(), timeout=60.0))
    slow = prove(program, ProofOptions(clock=FakeClock(step=1000.0), timeout=60.0))
    assert _answer(slow) != _answer(still)


def test_a_wall_clock_cap_the_user_sets_gives_unknown_naming_it():
    program = _synced(SMALL)
    proof = prove(program, ProofOptions(clock=FakeClock(step=1000.0), timeout=600.0))
    assert proof.status == ProofStatus.UNKNOWN  # never proved
    assert proof.reason == "the wall-clock cap of 600 s set by --proof-timeout ran out"
    assert proof.budget == Budget.WALL_CLOCK and proof.to_json()["budget"]["hit"] == "wall-clock"


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_tiny_deterministic_budget_gives_unknown_naming_it_never_proved(jobs):
    """Teeth of the budget: 1000 Z3 units cannot prove this kernel (it spends far more),
    on any clock and with workers too; the reason names the budget and its total."""
    program = _synced(SMALL)
    for clock in (FakeClock(), FakeClock(step=1000.0)):
        proof = prove(program, ProofOptions(rlimit=1000, clock=clock, jobs=jobs, start_method="fork"))
        assert proof.status == ProofStatus.UNKNOWN
        assert proof.budget == Budget.PROOF_RLIMIT
        assert "the proof's deterministic budget of 1,000 Z3 units (--proof-rlimit) ran out" in proof.reason
        assert any(o.budget == Budget.PROOF_RLIMIT for o in proof.obligations)


def test_a_budget_above_what_the_proof_spends_proves_it_and_the_spending_is_deterministic():
    program = _synced(SMALL)
    first = prove(program, ProofOptions())
    again = prove(program, ProofOptions())
    assert first.status == ProofStatus.PROVED and first.units == again.units
    assert sum(o.units for o in first.obligations) == first.units
    enough = prove(program, ProofOptions(rlimit=2 * first.units))
    assert enough.status == ProofStatus.PROVED
    assert first.units < DEFAULT_PROOF_RLIMIT // 1000  # the default leaves a wide margin


def test_a_budget_that_ends_midway_ends_at_the_same_obligation_on_any_number_of_workers():
    """The budget is counted in the obligations' order, and every job's answer is its
    own: half of what the proof spends leaves the same obligations unknown, with the
    same units, on two workers and on three."""
    program = _synced(SMALL)
    spent = prove(program, ProofOptions(jobs=2)).units
    runs = [prove(program, ProofOptions(jobs=jobs, rlimit=spent // 2)) for jobs in (2, 3)]
    table = [[(o.describe(), o.status, o.units, o.budget) for o in proof.obligations] for proof in runs]
    assert table[0] == table[1]
    statuses = [status for _, status, _, _ in table[0]]
    assert ProofStatus.PROVED in statuses and runs[0].status == ProofStatus.UNKNOWN
    assert runs[0].budget == Budget.PROOF_RLIMIT


def test_the_json_names_the_budgets_it_ran_with():
    proof = prove(_synced(SMALL), ProofOptions(rlimit=123_456_789_000))
    budget = proof.to_json()["budget"]
    assert budget == {"rlimit": 123_456_789_000, "z3_units": proof.units, "wall_clock_cap": None, "hit": None}


def test_verify_proof_rlimit_flag_reaches_the_proof(capsys):
    import json

    assert main(["verify", "--json", "--proof-rlimit", "1000", str(SMALL)]) == 0  # the bounded check holds
    proof = json.loads(capsys.readouterr().out)["all_values"]
    assert proof["status"] == "unknown" and proof["budget"]["hit"] == "proof-rlimit"
    assert proof["budget"]["rlimit"] == 1000 and proof["budget"]["wall_clock_cap"] is None


@pytest.mark.parametrize("value", ["0", "-5", "x", "", "1.5"])
def test_verify_proof_rlimit_flag_refuses_what_is_not_a_positive_count(capsys, value):
    assert main(["verify", "--proof-rlimit", value, str(SMALL)]) == 2
    err = capsys.readouterr().err
    assert "--proof-rlimit" in err and "Traceback" not in err


def test_the_proof_has_no_wall_clock_cap_by_default():
    from verify.api.checking import VerifyOptions

    assert ProofOptions().timeout is None and VerifyOptions().proof_timeout is None
    assert ProofOptions().query_timeout_ms is None


# ---------------------------------------------------------------- real load (slow)

# Three suite kernels with short proofs, and what their proofs decide (recorded from
# bench/prove_bench.py on a quiet machine).
LOADED = {"pingpong.sync": ProofStatus.PROVED, "ring_allreduce.sync": ProofStatus.PROVED,
          "paged_decode_attention.sync": ProofStatus.PROVED}
HOG = "import time\nend = time.monotonic() + 120\nwhile time.monotonic() < end:\n    pass\n"


@pytest.mark.slow
def test_the_verdict_is_the_same_beside_two_busy_cpu_hogs():
    programs = {name: _synced(ROOT / "kernels" / "suite" / name) for name in LOADED}
    options = ProofOptions(jobs=2)
    quiet = {name: prove(p, options) for name, p in programs.items()}
    hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(2)]
    try:
        loaded = {name: prove(p, options) for name, p in programs.items()}
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    for name, expected in LOADED.items():
        assert quiet[name].status == expected, (name, quiet[name].reason)
        assert _answer(loaded[name]) == _answer(quiet[name]), (name, loaded[name].reason)
        assert loaded[name].units == quiet[name].units


def test_teeth_the_hog_comparison_sees_a_changed_answer():
    """The comparison of the slow test is not vacuous: an answer that differs (here, one
    obligation unknown) is seen as different."""
    proof = prove(_synced(SMALL), ProofOptions())
    changed = attrs.evolve(proof, obligations=(attrs.evolve(proof.obligations[0], status=ProofStatus.UNKNOWN),
                                               *proof.obligations[1:]))
    assert _answer(changed) != _answer(proof)
