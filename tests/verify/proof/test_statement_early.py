"""`verify` starts the proof's 32-bit statement in a worker right after the strategy, so
that it runs beside the bounded check (one core) instead of beside the proof's workers;
the proof then uses it, and a check that fails ends it (verify/api/checking.py,
verify/proof/prove.py `start_statement`)."""

from __future__ import annotations

import syncproof
from verify.api import checking
from verify.engines import select as engine_select
from verify.proof import prove as prove_module
from verify.proof.workers import Started

from tests.support.corpus import ROOT

KERNELS = ROOT / "kernels"


def _spy(monkeypatch) -> tuple[list, list]:
    events, started = [], []
    real_start, real_check = prove_module.start_statement, engine_select.check

    def start(program, options):
        handle = real_start(program, options)
        events.append("statement")
        started.append(handle)
        return handle

    def check(*args, **kwargs):
        events.append("bounded check")
        return real_check(*args, **kwargs)

    monkeypatch.setattr(prove_module, "start_statement", start)
    monkeypatch.setattr(checking.engine_select, "check", check)
    return events, started


def test_the_statement_starts_before_the_bounded_check_and_the_proof_uses_it(monkeypatch):
    events, started = _spy(monkeypatch)
    asked = []
    real = prove_module.start_in_worker

    def start_in_worker(*args, **kwargs):
        asked.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(prove_module, "start_in_worker", start_in_worker)
    report = syncproof.verify(syncproof.load(KERNELS / "pipeline_db.sync"), syncproof.VerifyOptions(proof_jobs=2))
    assert events == ["statement", "bounded check"]
    assert isinstance(started[0], Started)
    assert len(asked) == 1  # the proof did not start a second one
    assert report.proof.status == "proved" and report.proof.int32 is not None
    assert report.proof.int32.status == "up-to"
    assert started[0].workers == []  # ended once read


def test_a_failing_bounded_check_ends_the_statement(monkeypatch):
    events, started = _spy(monkeypatch)
    options = syncproof.VerifyOptions(strategy="manual", proof_jobs=2)
    report = syncproof.verify(syncproof.load(KERNELS / "bugs" / "zero_trip_missing_wait.sync"), options)
    assert report.holds is False and report.proof is None
    assert events == ["statement", "bounded check"]
    assert started[0].workers == []  # its worker ended: nothing is left running


def test_no_statement_is_started_early_without_workers_or_with_a_wall_clock_cap(monkeypatch):
    events, started = _spy(monkeypatch)
    program = syncproof.load(KERNELS / "pipeline_db.sync")
    for options in (syncproof.VerifyOptions(proof_jobs=1), syncproof.VerifyOptions(scope=syncproof.Scope.BOUNDED)):
        syncproof.verify(program, options)
    assert "statement" not in events
    # With a cap the statement shares the proof's deadline: the proof starts it itself.
    report = syncproof.verify(program, syncproof.VerifyOptions(proof_timeout=600.0))
    assert started == [None] and report.proof.int32 is not None
