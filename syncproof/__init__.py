"""syncproof: insert and verify cross-engine synchronization for multi-engine
accelerators, from Python (docs/api.md).

    import syncproof

    program = syncproof.load("docs/examples/double_buffer.sync")
    synced = syncproof.sync(program).program  # with the threshold strategy's waits
    report = syncproof.verify(program, syncproof.VerifyOptions(scope=syncproof.Scope.BOUNDED))
    assert report.verdict == syncproof.Verdict.BISIMILAR

This package only re-exports: the functions live in verify/api/, the errors in
semantics/errors.py, the verdicts in verify/verdicts.py.
"""

from semantics.errors import KernelError, SyncproofError, UsageError
from semantics.ir import Program
from verify.api import Report, Scope, Simulation, VerifyOptions, export_lean, load, simulate, sync, verify
from verify.verdicts import CheckResult, Property, Verdict, Witness

__all__ = [
    "CheckResult", "KernelError", "Program", "Property", "Report", "Scope", "Simulation",
    "SyncproofError", "UsageError", "Verdict", "VerifyOptions", "Witness",
    "export_lean", "load", "simulate", "sync", "verify",
]
