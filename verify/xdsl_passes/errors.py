"""Why a syncproof pass failed: both are xdsl PassFailedExceptions (xdsl-opt reports
them, `--verify-diagnostics` prints them) and SyncproofErrors."""

from __future__ import annotations

from xdsl.utils.exceptions import PassFailedException

from semantics.errors import SyncproofError


class PassInputError(SyncproofError, PassFailedException):
    """The module cannot be imported or synchronized (an unsupported op, a malformed
    wait, an unknown strategy): bad input, `FILE:LINE:COL: error: ...` in the message."""


class SyncCheckFailed(SyncproofError, PassFailedException):
    """`syncproof-verify-sync`: the property does not hold (or is unknown, which is never
    success); the message holds the verdict and the counterexample trace."""

    def __init__(self, message: str, verdict: str):
        super().__init__(message)
        self.verdict = verdict
