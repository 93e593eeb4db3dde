"""The strategies by name. A strategy is a pure function Program -> Program whose
output carries explicit waits and barriers."""

from __future__ import annotations

from typing import Callable

from semantics.errors import UsageError
from semantics.ir import Program


def manual(program: Program) -> Program:
    """The waits and barriers written in the kernel file, unchanged."""
    return program


STRATEGIES: dict[str, Callable[[Program], Program]] = {"manual": manual}

# Named in DESIGN.md but built by a later issue.
PLANNED = {"threshold": "issue 3", "barrier": "issue 3", "flags": "issue 6", "tokens": "issue 6",
           "snax-barrier": "issue 8"}


def get_strategy(name: str) -> Callable[[Program], Program]:
    if name in STRATEGIES:
        return STRATEGIES[name]
    if name in PLANNED:
        raise UsageError(f"strategy '{name}' is not yet available (planned in {PLANNED[name]})")
    raise UsageError(f"unknown strategy '{name}' (available: {', '.join(STRATEGIES)})")
