"""The `lean` command (docs/design.md section 6): write a Lake project with the kernel, its
semantics and its theorems (lean_export/ does the work)."""

from __future__ import annotations

import sys

from semantics.errors import UsageError
from semantics.parser import parse_file

from verify.cli.common import EXIT_OK


def add_parsers(sub) -> None:
    p = sub.add_parser("lean", help="export the kernel, its semantics and theorems as a Lean 4 (Lake) project")
    p.add_argument("file")
    p.add_argument("--strategy", default="threshold")
    p.add_argument("-o", "--output", metavar="DIR", required=True, help="directory of the Lake project to write")
    p.add_argument("--max-param", type=int, default=2, metavar="K",
                   help="bounded instances are proved for parameters within 0..K (default 2)")


def cmd_lean(args) -> int:
    from lean_export.export import export_files, write_project

    from verify.cli.lean_plan import plan_instances

    if args.max_param < 0:
        raise UsageError("--max-param must be non-negative")
    program = parse_file(args.file)
    files = export_files(program, args.file, args.strategy, args.max_param, planner=plan_instances)
    write_project(files, args.output)
    kernel = next(path for path in files if path.startswith("Kernels/"))
    print(f"lean: wrote {len(files)} files to {args.output} (kernel module {kernel}); "
          f"check with `lake build` there", file=sys.stderr)
    return EXIT_OK
