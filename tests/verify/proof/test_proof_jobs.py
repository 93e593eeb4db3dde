"""The all-values proof on several worker processes (verify/proof/jobs.py): the tasks are
the sequential proof's obligations, workers prove what one process proves, their answers
do not depend on the run, and failures in a worker are the proof's failures."""

from __future__ import annotations

import os

import pytest
import z3

from algorithm.registry import get_strategy
from semantics.parser import parse_file
from verify.cli.main import main
from verify.proof import jobs as jobs_module
from verify.proof.counts import Unsupported
from verify.proof.jobs import tasks
from verify.proof.obligations import Prover
from verify.proof.prove import PROVED, UNKNOWN, ProofOptions, prove

from tests.support.clock import FakeClock
from tests.support.corpus import ROOT

KERNELS = ROOT / "kernels"
SMALL = ["design_example", "masked_wait", "if_else_split", "six_engine_block"]


def _program(name: str, strategy: str = "threshold"):
    return get_strategy(strategy)(parse_file(str(KERNELS / f"{name}.sync"))).program


def _table(proof) -> list:
    return [(o.describe(), o.status) for o in proof.obligations]


@pytest.mark.parametrize("name", SMALL)
def test_the_tasks_are_the_obligations_of_the_sequential_proof(name):
    program = _program(name)
    proof = prove(program, ProofOptions(jobs=1))
    assert proof.status == PROVED
    named = [(t.kind, t.consumer, t.engine, t.producer) for t in tasks(program, proof.property)]
    assert named == [(o.kind, o.consumer, o.engine, o.producer) for o in proof.obligations]


@pytest.mark.parametrize("name", SMALL)
def test_two_workers_prove_every_obligation_one_process_proves(name):
    program = _program(name)
    one, two = prove(program, ProofOptions(jobs=1)), prove(program, ProofOptions(jobs=2))
    assert two.status == one.status == PROVED
    assert _table(two) == _table(one)
    assert two.int32 == one.int32


def test_more_workers_than_obligations_and_the_soundness_property():
    program = _program("pipeline_db")
    for jobs in (3, 64):
        proof = prove(program, ProofOptions(jobs=jobs, property="soundness"))
        assert proof.status == PROVED and len(proof.obligations) == len(tasks(program, "soundness"))


def test_workers_answer_the_same_in_every_run_and_on_any_number_of_workers():
    """Every job starts from the same state (a copy of its worker's prover): the same
    answers and Z3 units in every run and with any number of workers, each query's (from
    the progress lines) as well as each obligation's."""
    program = _program("triangular_attention")
    runs = []
    for jobs in (2, 2, 3):
        lines = []
        proof = prove(program, ProofOptions(jobs=jobs, progress=lines.append))
        runs.append(([(*row, o.units) for row, o in zip(_table(proof), proof.obligations)], sorted(lines)))
    assert runs[0][0] == runs[1][0] == runs[2][0]
    # The progress lines carry each query's answer; only their interleaving may differ.
    strip = [[line.rsplit(" (", 1)[0] for line in r[1]] for r in runs]
    assert strip[0] == strip[1] == strip[2] and strip[0]


def test_progress_lines_of_every_worker_reach_the_caller():
    program = _program("six_engine_block")
    lines = []
    proof = prove(program, ProofOptions(jobs=2, progress=lines.append))
    assert proof.status == PROVED
    for o in proof.obligations:  # each obligation's last query reported its answer
        assert any(line.startswith(f"prove: {o.describe()}: ") for line in lines), o.describe()


def _fault(monkeypatch, when, act) -> None:
    """`act()` instead of the obligation of every task `when(task)` holds for, in this
    process and in forked workers (they inherit the patch; forkserver ones do not)."""
    real = jobs_module.run

    def run(prover, task, loops):
        return act() if when(task) else real(prover, task, loops)

    monkeypatch.setattr(jobs_module, "run", run)


def _raise(error: Exception):
    raise error


def test_an_uncountable_term_in_a_worker_leaves_the_proof_unknown_with_its_reason(monkeypatch):
    program = _program("design_example")
    victim = tasks(program, "bisimulation")[3]
    _fault(monkeypatch, lambda task: task == victim, lambda: _raise(Unsupported("a made-up count")))
    for n in (1, 2):
        proof = prove(program, ProofOptions(jobs=n, start_method="fork"))
        assert proof.status == UNKNOWN and proof.reason == "no closed-form counts: a made-up count", n


def test_a_worker_that_dies_leaves_the_proof_unknown_never_proved(monkeypatch):
    program = _program("design_example")
    victim = tasks(program, "bisimulation")[2]
    _fault(monkeypatch, lambda task: task == victim, lambda: os._exit(9))  # as if killed: no answer
    proof = prove(program, ProofOptions(jobs=2, start_method="fork"))
    assert proof.status == UNKNOWN
    assert "ended without an answer (exit code 9)" in proof.reason


def test_what_a_lost_worker_printed_is_in_the_reason(monkeypatch):
    """Z3 aborting (out of memory) prints to stderr and ends the process: the proof says so."""
    program = _program("design_example")

    def abort():
        os.write(2, b"terminate called after throwing an instance of 'out_of_memory_error'\n")
        os._exit(134)

    _fault(monkeypatch, lambda task: task.kind == "exact", abort)
    proof = prove(program, ProofOptions(jobs=2, start_method="fork"))
    assert proof.status == UNKNOWN
    assert proof.reason.endswith("(exit code 134): terminate called after throwing an instance of "
                                 "'out_of_memory_error'")


def test_z3s_memory_limit_is_set_in_the_workers_only(monkeypatch):
    real = jobs_module.run

    def run(prover, task, loops):
        prover.options.progress(f"limit {z3.get_param('memory_max_size')}")
        return real(prover, task, loops)

    monkeypatch.setattr(jobs_module, "run", run)
    before = z3.get_param("memory_max_size")
    lines = []
    assert prove(_program("pipeline_db"), ProofOptions(jobs=2, worker_memory_mb=20_000, progress=lines.append,
                                                             start_method="fork")).status \
        == PROVED
    assert {line for line in lines if line.startswith("limit ")} == {"limit 20000"}
    assert z3.get_param("memory_max_size") == before


def test_an_error_in_a_worker_is_raised_with_its_traceback(monkeypatch):
    program = _program("design_example")
    _fault(monkeypatch, lambda task: task.kind == "exact", lambda: _raise(ValueError("a bug in an obligation")))
    with pytest.raises(RuntimeError, match="ValueError: a bug in an obligation"):
        prove(program, ProofOptions(jobs=2, start_method="fork"))


def test_forkserver_workers_do_not_inherit_the_callers_state(monkeypatch):
    """The default start: workers fork from a server started fresh, not from the caller,
    so nothing the caller did (here: a broken `run`) reaches them; forked ones see it."""
    program = _program("pipeline_db")

    def run(prover, task, loops):
        raise ValueError("the caller's state")

    monkeypatch.setattr(jobs_module, "run", run)
    assert prove(program, ProofOptions(jobs=2)).status == PROVED
    with pytest.raises(RuntimeError, match="the caller's state"):
        prove(program, ProofOptions(jobs=2, start_method="fork"))


def test_a_budget_that_ends_in_the_workers_is_unknown():
    """The clock reaches the workers with the options (pickled): each job's copy passes
    the budget at its own 5th reading, long before the job is done."""
    program = get_strategy("threshold")(parse_file(str(KERNELS / "suite" / "attention_cte_query_outer.sync"))).program
    proof = prove(program, ProofOptions(jobs=2, timeout=600, clock=FakeClock(jump_at=5)))
    assert proof.status == UNKNOWN and "wall-clock cap of 600 s set by --proof-timeout ran out" in proof.reason


def test_a_jobs_dumped_queries_are_named_after_its_task(tmp_path):
    prover = Prover(parse_file(KERNELS / "pipeline_db.sync"), ProofOptions(dump_smt=str(tmp_path), query_rlimit=1),
                    dump_prefix="prove-t1")
    a, b = z3.Int("a", prover.ctx), z3.Int("b", prover.ctx)
    status, reason = prover.query([a * b == 7, a > 1, b > 1], "probe")
    assert status == "unknown"
    assert [p.name for p in tmp_path.iterdir()] == ["prove-t1-001-probe.smt2"]


def test_cli_proof_jobs_is_validated_and_gives_the_same_verdict(capsys):
    path = str(KERNELS / "masked_wait.sync")
    for bad in ("0", "65", "two"):
        assert main(["verify", path, "--proof-jobs", bad]) == 2
        assert "--proof-jobs" in capsys.readouterr().err
    outputs = []
    for jobs in ("1", "2"):
        assert main(["verify", path, "--proof-jobs", jobs]) == 0
        outputs.append(capsys.readouterr().out.splitlines())
    assert [line.split(" (")[0] for line in outputs[0]] == [line.split(" (")[0] for line in outputs[1]]
    assert any("all parameter values: proved" in line for line in outputs[1])



def test_a_worker_that_failed_before_its_first_job_is_reported_by_its_failure_not_as_lost():
    """Regression: with a 10 ms cap a worker's budget ran out while it built its prover;
    it sent its failure and ended before the proof sent it a job, the send failed, and
    the proof said "a proof worker process ended without an answer (exit code 0)"."""
    import multiprocessing

    from verify.engines.deadline import DeadlineReached

    mine, theirs = multiprocessing.Pipe(duplex=True)
    theirs.send(("deadline", None))
    theirs.close()
    assert isinstance(jobs_module._gone((mine, None, None)), DeadlineReached)
    mine.close()
