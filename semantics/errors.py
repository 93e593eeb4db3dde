"""Exceptions are for misuse; verdicts are values. One root: SyncproofError."""

from __future__ import annotations

from semantics.ir import Loc


class SyncproofError(Exception):
    """Root of every error syncproof raises on purpose."""


class KernelError(SyncproofError):
    """An error in a kernel, reported as `FILE:LINE:COL: error: MESSAGE`."""

    def __init__(self, message: str, loc: Loc | None = None, filename: str | None = None):
        super().__init__(message)
        self.message = message
        self.loc = loc
        self.filename = filename

    def render(self, filename: str | None = None) -> str:
        name = filename or self.filename or "<input>"
        line, col = (self.loc.line, self.loc.col) if self.loc else (1, 1)
        return f"{name}:{line}:{col}: error: {self.message}"

    def __str__(self) -> str:
        return self.render()


class EvalError(KernelError):
    """A kernel that is well formed but goes wrong at run time for some parameter
    values (a negative loop bound, a division by zero)."""


class UsageError(SyncproofError):
    """Bad command-line usage (unknown parameter, bad bound, unknown strategy)."""


class Unsupported(SyncproofError):
    """A construct the code at hand has no way to handle (no closed form for a count, a
    node an expression compiler does not translate): the caller falls back to another
    method or says why it stopped. The one class of that name: semantics.compiled,
    algorithm.threshold.facts and verify.proof.pieces re-export it."""


class LimitReached(SyncproofError):
    """A budget or capacity ran out (instances unrolled, a deadline, hardware queues or
    flag ids, a worker process lost): not an error in the input. Every raiser's caller
    turns it into `unknown` or a fallback; one that escapes is a bug in syncproof, and
    the command line reports it as one (exit 3), never as bad input (exit 2)."""
