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

from verify.cli import limits
from verify.cli.main import main

ROOT = Path(__file__).parents[3]
KERNEL = str(ROOT / "kernels" / "tile_transpose_2d.sync")  # its sync asks Z3


def cancel_before(monkeypatch, method: str) -> list:
    """Each Z3 context the sync makes under the limit (the ones its watchdog cancels) is
    cancelled just before each call of `z3.Solver.METHOD`, as the watchdog's cancellation
    lands between two calls, and the sync's checkpoints let it go on (they do not raise),
    so it runs into the cancellation. Returns the exceptions Z3 raised."""
    raised: list = []
    original_init, original_check = z3.Z3Exception.__init__, limits.CommandLimit.check
    original = getattr(z3.Solver, method)

    def noting_init(self, *args):
        original_init(self, *args)
        raised.append(self)

    def cancelled(self, *args, **kwargs):
        if type(self.ctx).__name__ == "Tracked":  # made while the limit runs (limits.TrackedContexts)
            self.ctx.interrupt()
        return original(self, *args, **kwargs)

    monkeypatch.setattr(limits.CommandLimit, "check", lambda self: None if self.syncing else original_check(self))
    monkeypatch.setattr(z3.Solver, method, cancelled)
    monkeypatch.setattr(z3.Z3Exception, "__init__", noting_init)
    return raised


def test_a_cancelled_push_after_the_limit_passed_is_the_time_limit(monkeypatch, capsys):
    raised = cancel_before(monkeypatch, "push")
    status = main(["verify", "--timeout", "0.001", "--scope", "bounded", KERNEL])
    out, err = capsys.readouterr()
    assert any("push canceled" in str(e) for e in raised), "the injection did not reach a Z3 call"
    assert status == 3, out + err
    assert "verdict: unknown (time limit reached: --timeout 0.001 s ran out while syncing" in out, out
    assert "internal error" not in err, err


@pytest.mark.parametrize("method", ["push", "pop", "add", "check", "model"])
def test_no_cancelled_z3_call_after_the_limit_passed_is_an_internal_error(monkeypatch, capsys, method):
    cancel_before(monkeypatch, method)
    status = main(["verify", "--timeout", "0.001", "--scope", "bounded", "--json", KERNEL])
    out, err = capsys.readouterr()
    assert status == 3, out + err
    data = json.loads(out)
    assert data["verdict"] == "unknown" and data["reason"].startswith("time limit reached"), data
    assert "internal error" not in err, err


def test_a_cancelled_push_before_the_limit_passed_is_not_taken_for_it(monkeypatch, capsys):
    """Teeth: the same cancelled push while the limit has not passed (nothing but a bug
    cancelled it) is not reported as the time limit: it is an internal error."""
    cancel_before(monkeypatch, "push")
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

