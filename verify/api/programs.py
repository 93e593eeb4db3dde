"""Kernels in and out: `load` reads a kernel file, `sync` runs a strategy on it.

A kernel file is a `.sync` file in the kernel language (docs/language.md) or an MLIR
file imported as docs/snax.md describes: `FILE.mlir`, or `FILE.mlir:N` for case N (from
1) of a file split by `// -----`. The command line reads its FILE argument the same way
(`load_spec`, re-exported by verify/cli/mlir.py).
"""

from __future__ import annotations

import os
import re

from algorithm.registry import SyncResult, get_strategy
from semantics.errors import UsageError
from semantics.ir import Program
from semantics.parser import parse_file

_SPEC = re.compile(r"^(?P<path>.*\.mlir)(?::(?P<case>\d+))?$")


def is_mlir(spec: str) -> bool:
    """Whether `spec` names an MLIR file (`FILE.mlir` or `FILE.mlir:N`)."""
    return bool(_SPEC.match(spec))


def file_of(spec: str) -> str:
    """The path of FILE.mlir:N (any other spec is a path)."""
    match = _SPEC.match(spec)
    return match.group("path") if match else spec


def pick_case(cases, n: int, path: str):
    """Case `n` (from 1) of the cases imported from the MLIR file `path`."""
    if not 1 <= n <= len(cases):
        raise UsageError(f"{path} has {len(cases)} case(s): no case {n}")
    return cases[n - 1]


def load_imported(spec: str):
    """The imported case named by `FILE.mlir` or `FILE.mlir:N` (semantics/mlir/importer.py):
    its program, and the MLIR it came from."""
    from semantics.mlir.importer import import_file

    match = _SPEC.match(spec)
    cases = import_file(match.group("path"))
    if match.group("case") is None:
        if len(cases) > 1:
            raise UsageError(f"{spec} has {len(cases)} cases (// -----): name one as {spec}:N, N = 1..{len(cases)}")
        return cases[0]
    return pick_case(cases, int(match.group("case")), match.group("path"))


def load_spec(spec: str) -> Program:
    """A kernel from a .sync file, or imported from an .mlir file (FILE.mlir[:N]): what
    the command line's FILE argument means."""
    return load_imported(spec).program if is_mlir(spec) else parse_file(spec)


def load(path: str | os.PathLike) -> Program:
    """The kernel in the file at `path`: a `.sync` file in the kernel language, or an
    MLIR file (`FILE.mlir`, or `FILE.mlir:N` for case N of a file split by `// -----`).

    An error in the kernel, or a file that cannot be read, raises
    `semantics.errors.KernelError` (its `render()` is `FILE:LINE:COL: error: MESSAGE`);
    a misnamed MLIR case or a file kind that is not read raises `UsageError`. Both are
    `SyncproofError`s.
    """
    spec = os.fspath(path)
    if spec.endswith(".py"):
        raise UsageError(f"{spec}: kernels written in Python are not read yet; give a .sync kernel "
                         "or an .mlir file (FILE.mlir or FILE.mlir:N)")
    return load_spec(spec)


def sync(program: Program, strategy: str = "threshold") -> SyncResult:
    """Insert synchronization into `program` with `strategy` (algorithm/registry.py:
    `threshold`, the default; `barrier`, `flags`, `tokens`, `snax-barrier`, or `manual`
    for the program as written). Returns the strategy's `SyncResult`: the synchronized
    program (printable with semantics.printer.print_program) and its statistics. An
    unknown strategy raises `UsageError`."""
    return get_strategy(strategy)(program)
