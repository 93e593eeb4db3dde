"""MLIR on the command line (issue 8): `import-mlir`, `.mlir` files as kernels for
check/sync/verify/simulate/bench, and `sync --emit mlir`.

An `.mlir` FILE with several `// -----` cases names one as `FILE:N` (N from 1).
"""

from __future__ import annotations

import re
import sys

from semantics.errors import UsageError
from semantics.ir import Program
from semantics.parser import parse_file
from semantics.printer import print_program

_SPEC = re.compile(r"^(?P<path>.*\.mlir)(?::(?P<case>\d+))?$")


def is_mlir(spec: str) -> bool:
    return bool(_SPEC.match(spec))


def add_parsers(sub) -> None:
    p = sub.add_parser("import-mlir", help="import a snax-mlir program (MLIR) into the kernel language")
    p.add_argument("file", help="an .mlir file; `// -----` separates cases")
    p.add_argument("-o", "--output", metavar="OUT.sync",
                   help="write the kernel here (a file with several cases: OUT.N.sync per case)")
    p.add_argument("--case", type=int, metavar="N", help="import only case N (from 1)")


def load_imported(spec: str):
    """The imported case named by `FILE.mlir` or `FILE.mlir:N`."""
    from semantics.mlir.importer import import_file

    match = _SPEC.match(spec)
    cases = import_file(match.group("path"))
    if match.group("case") is None:
        if len(cases) > 1:
            raise UsageError(f"{spec} has {len(cases)} cases (// -----): name one as {spec}:N, N = 1..{len(cases)}")
        return cases[0]
    return _pick(cases, int(match.group("case")), match.group("path"))


def _pick(cases, n: int, path: str):
    if not 1 <= n <= len(cases):
        raise UsageError(f"{path} has {len(cases)} case(s): no case {n}")
    return cases[n - 1]


def file_of(spec: str) -> str:
    """The path of FILE.mlir:N (any other spec is a path)."""
    match = _SPEC.match(spec)
    return match.group("path") if match else spec


def load(spec: str) -> Program:
    """A kernel from a .sync file, or imported from an .mlir file (FILE.mlir[:N])."""
    return load_imported(spec).program if is_mlir(spec) else parse_file(spec)


def cmd_import(args) -> int:
    from semantics.mlir.importer import import_file

    if not args.file.endswith(".mlir"):
        raise UsageError(f"import-mlir reads an .mlir file; {args.file} is not one "
                         "(a .sync kernel needs no import: give it to check, sync or verify)")
    cases = import_file(args.file)
    if args.case is not None:
        cases = [_pick(cases, args.case, args.file)]
    for case in cases:
        text = print_program(case.program)
        if len(cases) > 1 or args.case is not None:
            text = f"# {args.file} case {case.chunk.index} (line {case.chunk.first_line})\n" + text
        if args.output:
            out = args.output
            if len(cases) > 1:
                stem = out[:-5] if out.endswith(".sync") else out
                out = f"{stem}.{case.chunk.index}.sync"
            _write(out, text)
        else:
            sys.stdout.write(text + ("\n" if len(cases) > 1 else ""))
    return 0


def emit_text(spec: str, synced: Program) -> str:
    from semantics.mlir.emit import emit

    if not is_mlir(spec):
        raise UsageError("--emit mlir needs an .mlir input (the MLIR the program was imported from)")
    return emit(load_imported(spec), synced)


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w") as handle:
            handle.write(text)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None
