"""The `lean` command (docs/design.md section 6): write a Lake project with the kernel, its
semantics and its theorems (verify/api/lean.py `export_lean`; lean_export/ does the work)."""

from __future__ import annotations

import sys

from semantics.errors import UsageError
from verify.cli.args import check_strategy, strategy_help
from verify.cli.common import EXIT_OK


def add_parsers(sub) -> None:
    p = sub.add_parser("lean", help="export the kernel, its semantics and theorems as a Lean 4 (Lake) project")
    p.add_argument("file", help="a .sync kernel, or an .mlir file (FILE.mlir:N names one of its cases)")
    p.add_argument("--strategy", default="threshold", help=strategy_help())
    p.add_argument("-o", "--output", metavar="DIR", required=True, help="directory of the Lake project to write")
    p.add_argument("--max-param", type=int, default=2, metavar="K",
                   help="bounded instances are proved for parameters within 0..K (default 2)")


def cmd_lean(args) -> int:
    from verify.api.lean import export_lean
    from verify.cli.mlir import file_of, load

    if args.max_param < 0:
        raise UsageError("--max-param must be non-negative")
    check_strategy(args.strategy)
    program = load(args.file)
    files = export_lean(program, args.output, args.strategy, args.max_param, source=file_of(args.file))
    kernel = next(path for path in files if path.startswith("Kernels/"))
    print(f"lean: wrote {len(files)} files to {args.output} (kernel module {kernel}); "
          f"check with `lake build` there", file=sys.stderr)
    return EXIT_OK
