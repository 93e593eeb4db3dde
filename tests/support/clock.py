"""A fake clock for the `clock` fields of the options (ProofOptions, Z3Options,
CheckOptions; verify/engines/deadline.py): time budgets are tested without real time,
so no answer depends on the machine's load.

Reading k (1-based) returns `step * (k - 1)`, plus `jump` from reading `jump_at` on:
`FakeClock(jump_at=300)` stands still for 299 readings and then is far past any
budget; `FakeClock(step=0.01)` advances by 10 ms per reading. It keeps its readings,
so a test says how far code ran on past a deadline in readings, not in seconds.
The class is at module level: a clock pickles into worker processes (each worker
then counts from the readings made before it started).
"""

from __future__ import annotations


class FakeClock:
    def __init__(self, step: float = 0.0, jump_at: int | None = None, jump: float = 1e9):
        self.step = step
        self.jump_at = jump_at
        self.jump = jump
        self.readings: list[float] = []

    def __call__(self) -> float:
        k = len(self.readings) + 1
        value = self.step * (k - 1)
        if self.jump_at is not None and k >= self.jump_at:
            value += self.jump
        self.readings.append(value)
        return value

    def late(self, deadline: float) -> int:
        """How many readings were at or past `deadline` (on this clock's scale)."""
        return sum(1 for value in self.readings if value >= deadline)

    @property
    def after_jump(self) -> int:
        """How many readings were made from the jump on (0 before it)."""
        return 0 if self.jump_at is None else max(0, len(self.readings) - self.jump_at + 1)
