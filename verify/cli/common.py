"""What every command group shares: exit statuses and parameter bounds
(docs/design.md section 6)."""

from __future__ import annotations

import re
import sys

from semantics.errors import KernelError, UsageError
from semantics.ir import Program

# 0 the property holds (or the command succeeded), 1 it fails (a counterexample is
# printed), 2 bad input or usage, 3 unknown (a time or state limit) or an internal error.
EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_UNKNOWN = 0, 1, 2, 3


_BOUND = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(\d+)\s*(?:\.\.\s*(\d+)\s*)?$")


def parse_bounds(program: Program, specs: list[str], max_param: int | None,
                 filename: str | None = None) -> tuple[tuple[str, int, int], ...]:
    """Inclusive bounds for every parameter: --param values, else from its lower bound
    (`param K >= 1`, default 0) to max(max_param, lower bound), max_param default 3.
    A --param value below the lower bound is an error at the declaration."""
    if max_param is not None and max_param < 0:
        raise UsageError("--max-param must be non-negative")
    declared = {p.name: p for p in program.params}
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
        param = declared[name]
        if lo < param.lower:
            raise KernelError(f"--param {spec.strip()}: {name} = {lo} is below its lower bound {param.lower} "
                              f"(declared `{name} >= {param.lower}`)", param.loc, filename)
        given[name] = (lo, hi)
    top = 3 if max_param is None else max_param
    return tuple((p.name, *given.get(p.name, (p.lower, max(top, p.lower)))) for p in program.params)


def write_output(path: str | None, text: str) -> None:
    """`text` to the file at `path` (`-o OUT`), else to stdout; an unwritable file is a
    usage error."""
    if path:
        try:
            with open(path, "w") as handle:
                handle.write(text)
        except OSError as exc:
            raise UsageError(f"cannot write {path}: {exc.strerror}") from None
    else:
        sys.stdout.write(text)
