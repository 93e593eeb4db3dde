"""What every command group shares: exit statuses and parameter bounds
(docs/design.md section 6)."""

from __future__ import annotations

import re

from semantics.errors import UsageError
from semantics.ir import Program

# 0 the property holds (or the command succeeded), 1 it fails (a counterexample is
# printed), 2 bad input or usage, 3 unknown (a time or state limit) or an internal error.
EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_UNKNOWN = 0, 1, 2, 3


_BOUND = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(\d+)\s*(?:\.\.\s*(\d+)\s*)?$")


def parse_bounds(program: Program, specs: list[str], max_param: int | None) -> tuple[tuple[str, int, int], ...]:
    """Inclusive bounds for every parameter: --param values, else 0..max_param (default 3)."""
    if max_param is not None and max_param < 0:
        raise UsageError("--max-param must be non-negative")
    declared = [p.name for p in program.params]
    given: dict[str, tuple[int, int]] = {}
    for spec in specs:
        match = _BOUND.match(spec)
        if not match:
            raise UsageError(f"bad --param '{spec}': expected NAME=LO..HI or NAME=VALUE with non-negative integers")
        name, lo, hi = match.group(1), int(match.group(2)), match.group(3)
        hi = lo if hi is None else int(hi)
        if name in given:
            raise UsageError(f"--param {name} is given twice")
        if name not in declared:
            raise UsageError(f"--param {name}: the kernel has no parameter '{name}' "
                             f"(parameters: {', '.join(declared) or 'none'})")
        if hi < lo:
            raise UsageError(f"--param {spec}: empty range")
        given[name] = (lo, hi)
    top = 3 if max_param is None else max_param
    return tuple((name, *given.get(name, (0, top))) for name in declared)
