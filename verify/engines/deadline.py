"""A wall-clock deadline that long pure-Python work polls at its own safe points.

The z3 engine spends most of a large check building its encoding (potential
instances, event-time terms) in Python loops over every potential instance, before
Z3 sees a query whose own timeout could stop it (without polling, a large bound's
encoding overruns `--timeout` severalfold); the all-values proof builds its obligations' terms the same way. Those
loops call `Deadline.check()`, which raises `DeadlineReached` once the deadline has
passed; the caller turns it into `unknown`.

Why polling, not an interruption from outside: the exception must never land inside
z3's Python wrappers. They pair a C object with a reference count in several Python
steps (`AstRef.__init__` stores the pointer, then increments the count); an
exception between the two leaves an object whose finalizer decrements a count it
never took, and Z3 frees a term still in use. An asynchronous exception
(PyThreadState_SetAsyncExc from a timer thread) can land there and crash the process
(a SIGSEGV), and with millisecond deadlines one can also escape after its block has
ended. A check at a
loop head runs between two complete z3 calls, where every wrapper is whole.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import attrs

from semantics.errors import LimitReached


class DeadlineReached(LimitReached):
    """Raised by `Deadline.check()` once the deadline has passed."""


@attrs.frozen
class Deadline:
    """`at` on `clock`'s scale (seconds); None: no limit."""

    at: float | None = None
    clock: Callable[[], float] = time.monotonic

    @classmethod
    def after(cls, seconds: float | None, clock: Callable[[], float] = time.monotonic) -> "Deadline":
        """The deadline `seconds` from now (None: no limit)."""
        return cls(None if seconds is None else clock() + seconds, clock)

    def left(self) -> float | None:
        """Seconds left (at most 0 once passed); None without a limit."""
        return None if self.at is None else self.at - self.clock()

    def passed(self) -> bool:
        return self.at is not None and self.clock() >= self.at

    def check(self) -> None:
        """Raise DeadlineReached once the deadline has passed."""
        if self.at is not None and self.clock() >= self.at:
            raise DeadlineReached()


NO_DEADLINE = Deadline()
