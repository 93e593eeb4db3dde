"""A Z3 context that `verify --timeout`'s watchdog cancelled (verify/cli/limits.py) makes
Z3 raise on its next call (`Z3Exception: push canceled`). Once the limit has passed,
that is the limit's `unknown` (exit 3), never an internal error. The cancellation is
injected before the sync's Z3 calls, and its checkpoints let it run on into them, so no
answer depends on timing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import z3

from algorithm.threshold import facts
from verify.cli import limits
from verify.cli.main import main

ROOT = Path(__file__).parents[3]
KERNEL = str(ROOT / "tests" / "data" / "threshold_cases" / "varying_count_war.sync")  # its sync asks Z3 (the general stage)


# The planner's calls into Z3, each interrupted just before it runs: Facts.proves (a
# claim that bounds do not decide goes to check_alone) and Session.check_alone (a fresh
# solver's assertions and check).
SITES = {"proves": (facts.Facts, "proves", lambda self: self.session.ctx),
         "check_alone": (facts.Session, "check_alone", lambda self: self.ctx)}


def cancel_before(monkeypatch, site: str) -> list:
    """Each call of the planner's Z3 site SITE cancels its Z3 context first, as the
    watchdog's cancellation lands between two calls, and the sync's checkpoints let it go
    on (they do not raise), so it runs into the cancellation. Injected through the
    project's own functions, never by patching z3. Returns the exceptions Z3 raised, after
    a first entry counting the calls that were cancelled (a cancelled check answers
    `unknown` instead of raising: check_alone then asks again in a fresh context)."""
    raised: list = [0]
    owner, name, context_of = SITES[site]
    original, original_check = getattr(owner, name), limits.CommandLimit.check

    def cancelled(self, *args, **kwargs):
        context = context_of(self)
        if type(context).__name__ == "Tracked":  # made while the limit runs (limits.TrackedContexts)
            context.interrupt()
            raised[0] += 1
        try:
            return original(self, *args, **kwargs)
        except z3.Z3Exception as error:
            raised.append(error)
            raise

    monkeypatch.setattr(limits.CommandLimit, "check", lambda self: None if self.syncing else original_check(self))
    monkeypatch.setattr(owner, name, cancelled)
    return raised


def raise_cancelled(monkeypatch) -> list:
    """The planner's first Z3 claim raises what Z3 raises for a call on a cancelled
    context (a cancelled push; the planner's own calls answer `unknown` instead), and
    the sync's checkpoints let it go on into it. Returns the claims that raised."""
    raised: list = []
    original_check = limits.CommandLimit.check

    def cancelled(self, claim):
        raised.append(claim)
        raise z3.Z3Exception(b"push canceled")

    monkeypatch.setattr(limits.CommandLimit, "check", lambda self: None if self.syncing else original_check(self))
    monkeypatch.setattr(facts.Facts, "proves", cancelled)
    return raised


def test_a_cancelled_z3_call_after_the_limit_passed_is_the_time_limit(monkeypatch, capsys):
    raised = raise_cancelled(monkeypatch)
    status = main(["verify", "--timeout", "0.001", "--scope", "bounded", KERNEL])
    out, err = capsys.readouterr()
    assert raised, "the injection did not reach a Z3 call"
    assert status == 3, out + err
    assert "verdict: unknown (time limit reached: --timeout 0.001 s ran out while syncing" in out, out
    assert "internal error" not in err, err


@pytest.mark.parametrize("site", sorted(SITES))
def test_no_cancelled_z3_call_after_the_limit_passed_is_an_internal_error(monkeypatch, capsys, site):
    raised = cancel_before(monkeypatch, site)
    status = main(["verify", "--timeout", "0.001", "--scope", "bounded", "--json", KERNEL])
    out, err = capsys.readouterr()
    assert status == 3, out + err
    data = json.loads(out)
    assert data["verdict"] == "unknown" and data["reason"].startswith("time limit reached"), data
    assert "internal error" not in err, err
    assert raised[0], "the injection did not reach a Z3 call"


def test_a_cancelled_z3_call_before_the_limit_passed_is_not_taken_for_it(monkeypatch, capsys):
    """Teeth: the same cancelled call while the limit has not passed (nothing but a bug
    cancelled it) is not reported as the time limit: it is an internal error."""
    raise_cancelled(monkeypatch)
    status = main(["verify", "--timeout", "3600", "--scope", "bounded", KERNEL])
    out, err = capsys.readouterr()
    assert status == 3 and "internal error (a bug in syncproof): Z3Exception" in err and "push canceled" in err, err
    assert "time limit reached" not in out


def test_the_watchdog_survives_the_error_of_a_cancelled_push():
    """z3 reports a context's last error after every call: Z3_interrupt, called by the
    watchdog while the sync's cancelled push has left `push canceled` on the context,
    raises it in the watchdog's thread. The watchdog goes on (it must interrupt the
    contexts until the command stops, and print no traceback)."""
    context = z3.Context()
    solver = z3.Solver(ctx=context)
    context.interrupt()
    with pytest.raises(z3.Z3Exception, match="push canceled"):
        solver.push()
    with pytest.raises(z3.Z3Exception, match="push canceled"):  # the teeth: a bare interrupt raises it
        context.interrupt()
    solver.check()  # a successful call clears the error ...
    context.interrupt()
    with pytest.raises(z3.Z3Exception, match="push canceled"):
        solver.push()  # ... and the error is back
    contexts = limits.TrackedContexts()
    contexts.track(context)
    contexts.interrupt()  # does not raise
    contexts.interrupt()

