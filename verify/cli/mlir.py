"""MLIR on the command line: `import-mlir`, `.mlir` files as kernels for
check/sync/verify/simulate/bench, and `sync --emit mlir`.

An `.mlir` FILE with several `// -----` cases names one as `FILE:N` (N from 1).
"""

from __future__ import annotations

import sys

from semantics.errors import UsageError
from semantics.ir import Program
from semantics.printer import print_program
# Reading FILE (FILE.mlir:N names a case) is the API's: verify/api/programs.py.
from verify.api.programs import file_of, is_mlir, load_imported, pick_case
from verify.api.programs import load_spec as load

__all__ = ["add_parsers", "cmd_import", "emit_text", "file_of", "is_mlir", "load", "load_imported"]


def add_parsers(sub) -> None:
    p = sub.add_parser("import-mlir", help="import a snax-mlir program (MLIR) into the kernel language")
    p.add_argument("file", help="an .mlir file; `// -----` separates cases")
    p.add_argument("-o", "--output", metavar="OUT.sync",
                   help="write the kernel here (a file with several cases: OUT.N.sync per case)")
    p.add_argument("--case", type=int, metavar="N", help="import only case N (from 1)")


def cmd_import(args) -> int:
    from semantics.mlir.importer import import_file

    if not args.file.endswith(".mlir"):
        raise UsageError(f"import-mlir reads an .mlir file; {args.file} is not one "
                         "(a .sync kernel needs no import: give it to check, sync or verify)")
    cases = import_file(args.file)
    if args.case is not None:
        cases = [pick_case(cases, args.case, args.file)]
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
