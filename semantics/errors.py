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
