"""One vocabulary of exceptions: every exception class our packages define is a
SyncproofError (semantics/errors.py), there is one class named Unsupported, and a
limit (LimitReached) that escapes to the command line is reported as a bug (exit 3),
never as bad input (exit 2)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

from semantics.errors import LimitReached, SyncproofError, Unsupported, UsageError
from semantics.sequential import UnrollLimit
from verify.engines.deadline import DeadlineReached

PACKAGES = ("semantics", "algorithm", "verify", "lean_export")


def _modules():
    for name in PACKAGES:
        package = importlib.import_module(name)
        yield package
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{name}."):
            if info.name.rsplit(".", 1)[-1] == "__main__":  # runs the command when imported
                continue
            yield importlib.import_module(info.name)


def _exception_classes() -> dict[str, type]:
    """Every exception class defined (not just imported) in our packages, by qualified name."""
    found = {}
    for module in _modules():
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__ == module.__name__:
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return found


def test_the_walk_sees_the_exceptions_it_must():
    found = _exception_classes()
    # teeth: a walk that missed subpackages or imported nothing would pass vacuously
    for name in ("semantics.errors.SyncproofError", "semantics.sequential.UnrollLimit",
                 "verify.engines.deadline.DeadlineReached", "verify.proof.workers.WorkerLost",
                 "algorithm.tokens.OutOfQueues", "algorithm.flags.OutOfIds"):
        assert name in found, name


def test_every_exception_is_a_syncproof_error():
    outside = sorted(name for name, cls in _exception_classes().items() if not issubclass(cls, SyncproofError))
    assert outside == [], f"exceptions outside the SyncproofError root: {outside}"


def test_one_class_named_unsupported():
    named = {cls for cls in _exception_classes().values() if cls.__name__ == "Unsupported"}
    assert named == {Unsupported}
    from algorithm.threshold import facts
    from semantics import compiled
    from verify.proof import counts, pieces

    for module in (compiled, facts, pieces, counts):  # the old names, re-exported
        assert module.Unsupported is Unsupported


def test_limits_are_not_unsupported():
    """prove.py and jobs.py catch Unsupported before DeadlineReached and WorkerLost: the
    two families must stay apart."""
    from algorithm.flags import OutOfIds
    from algorithm.tokens import OutOfQueues
    from verify.proof.jobs import WorkerLost

    for cls in (UnrollLimit, DeadlineReached, WorkerLost, OutOfQueues, OutOfIds):
        assert issubclass(cls, LimitReached) and not issubclass(cls, Unsupported), cls


@pytest.mark.parametrize("raised, status", [
    (UnrollLimit("more than 1 instances"), 3),
    (DeadlineReached(), 3),
    (UsageError("bad usage"), 2),
    (Unsupported("no closed form"), 2),
], ids=lambda v: type(v).__name__ if isinstance(v, BaseException) else str(v))
def test_cli_exit_status_of_an_escaped_exception(monkeypatch, capsys, raised, status):
    """Before they were SyncproofErrors, an escaped limit fell to the catch-all (internal
    error, exit 3); it still does. Other SyncproofErrors stay bad input (exit 2)."""
    cli = importlib.import_module("verify.cli.main")  # the attribute `verify.cli.main` is the function

    def command(args):
        raise raised

    monkeypatch.setitem(cli._COMMANDS, "check", command)
    assert cli.main(["check", "tests/data/cli/tiny.sync"]) == status
    err = capsys.readouterr().err
    assert ("internal error" in err) == (status == 3), err
