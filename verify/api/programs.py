"""Kernels in and out: `load` reads a kernel file, `sync` runs a strategy on it.

A kernel file is a `.sync` file in the kernel language (docs/language.md), an MLIR
file imported as docs/snax.md describes: `FILE.mlir`, or `FILE.mlir:N` for case N (from
1) of a file split by `// -----`, or an NKI kernel written in Python, imported as
docs/nki.md describes: `FILE.py`, or `FILE.py:FUNCTION` for one of several kernels. The
command line reads its FILE argument the same way (`load_spec`, re-exported by
verify/cli/mlir.py); its `--nki-engine CALL=ENGINE` options reach the NKI import through
`NKI_ENGINES`.
"""

from __future__ import annotations

import os
import re
from contextvars import ContextVar

from algorithm.registry import SyncResult, get_strategy
from semantics.errors import UsageError
from semantics.ir import Program
from semantics.parser import parse_file

_SPEC = re.compile(r"^(?P<path>.*\.mlir)(?::(?P<case>\d+))?$")
_NKI_SPEC = re.compile(r"^(?P<path>.*\.py)(?::(?P<function>[A-Za-z_]\w*))?$")
# `--nki-engine CALL=ENGINE` specs in force for the NKI kernels read now (docs/nki.md)
NKI_ENGINES: ContextVar[tuple[str, ...]] = ContextVar("NKI_ENGINES", default=())


def is_nki(spec: str) -> bool:
    """Whether `spec` names an NKI kernel in Python (`FILE.py` or `FILE.py:FUNCTION`)."""
    return bool(_NKI_SPEC.match(spec))


def load_nki(spec: str, nki_engines=None):
    """The NKI kernel named by `FILE.py` or `FILE.py:FUNCTION`, imported
    (semantics/nki/importer.py): a `semantics.nki.NkiImport`. `nki_engines`:
    `CALL=ENGINE` specs (default: those in `NKI_ENGINES`)."""
    from semantics.nki import import_file
    from semantics.nki.calls import parse_overrides

    match = _NKI_SPEC.match(spec)
    specs = NKI_ENGINES.get() if nki_engines is None else tuple(nki_engines)
    return import_file(match.group("path"), match.group("function"), parse_overrides(specs))


def is_mlir(spec: str) -> bool:
    """Whether `spec` names an MLIR file (`FILE.mlir` or `FILE.mlir:N`)."""
    return bool(_SPEC.match(spec))


def file_of(spec: str) -> str:
    """The path of FILE.mlir:N (any other spec is a path)."""
    match = _SPEC.match(spec) or _NKI_SPEC.match(spec)
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


def load_spec(spec: str, nki_engines=None) -> Program:
    """A kernel from a .sync file, imported from an .mlir file (FILE.mlir[:N]) or from
    an NKI kernel in Python (FILE.py[:FUNCTION]): what the command line's FILE argument
    means."""
    if is_nki(spec):
        return load_nki(spec, nki_engines).program
    return load_imported(spec).program if is_mlir(spec) else parse_file(spec)


def load(path: str | os.PathLike, nki_engines=None) -> Program:
    """The kernel in the file at `path`: a `.sync` file in the kernel language, an MLIR
    file (`FILE.mlir`, or `FILE.mlir:N` for case N of a file split by `// -----`), or an
    NKI kernel in Python (`FILE.py`, or `FILE.py:FUNCTION`; `nki_engines`: `CALL=ENGINE`
    overrides of the engines the importer picks, docs/nki.md).

    An error in the kernel, or a file that cannot be read, raises
    `semantics.errors.KernelError` (its `render()` is `FILE:LINE:COL: error: MESSAGE`);
    a misnamed MLIR case or NKI function raises `UsageError`. Both are
    `SyncproofError`s.
    """
    return load_spec(os.fspath(path), nki_engines)


def sync(program: Program, strategy: str = "threshold") -> SyncResult:
    """Insert synchronization into `program` with `strategy` (algorithm/registry.py:
    `threshold`, the default; `barrier`, `flags`, `tokens`, `snax-barrier`, or `manual`
    for the program as written). Returns the strategy's `SyncResult`: the synchronized
    program (printable with semantics.printer.print_program) and its statistics. An
    unknown strategy raises `UsageError`."""
    return get_strategy(strategy)(program)
