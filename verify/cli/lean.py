"""The `lean` command (docs/design.md section 6): write a Lake project with the kernel, its
semantics and its theorems (lean_export/ does the work)."""

from __future__ import annotations

import sys
from pathlib import Path

from semantics.errors import UsageError
from verify.cli.args import check_strategy, strategy_help
from verify.cli.common import EXIT_OK

MANIFEST = ".syncproof-export"  # the files of the last export into a folder


def _remove_stale(out: Path, files: dict) -> None:
    """Files of an earlier export into `out` that this one does not write: those the
    earlier export's manifest lists, and any module under Kernels/ (a folder only the
    export writes). Nothing else in the folder is touched."""
    stale = set()
    try:
        stale.update(line.strip() for line in (out / MANIFEST).read_text().splitlines() if line.strip())
    except OSError:
        pass
    if (out / "Kernels").is_dir():
        stale.update(p.relative_to(out).as_posix() for p in (out / "Kernels").rglob("*.lean"))
    for rel in sorted(stale - set(files)):
        target = out / rel
        if ".." in Path(rel).parts or not target.is_file():
            continue
        try:
            target.unlink()
        except OSError as exc:
            raise UsageError(f"cannot remove the stale {target}: {exc.strerror}") from None


def add_parsers(sub) -> None:
    p = sub.add_parser("lean", help="export the kernel, its semantics and theorems as a Lean 4 (Lake) project")
    p.add_argument("file", help="a .sync kernel, or an .mlir file (FILE.mlir:N names one of its cases)")
    p.add_argument("--strategy", default="threshold", help=strategy_help())
    p.add_argument("-o", "--output", metavar="DIR", required=True, help="directory of the Lake project to write")
    p.add_argument("--max-param", type=int, default=2, metavar="K",
                   help="bounded instances are proved for parameters within 0..K (default 2)")


def cmd_lean(args) -> int:
    from lean_export.export import export_files, write_project

    from verify.cli.lean_plan import plan_instances

    from verify.cli.mlir import file_of, load

    if args.max_param < 0:
        raise UsageError("--max-param must be non-negative")
    check_strategy(args.strategy)
    program = load(args.file)
    files = export_files(program, file_of(args.file), args.strategy, args.max_param, planner=plan_instances)
    _remove_stale(Path(args.output), files)
    write_project({**files, MANIFEST: "".join(f"{rel}\n" for rel in sorted(files))}, args.output)
    kernel = next(path for path in files if path.startswith("Kernels/"))
    print(f"lean: wrote {len(files)} files to {args.output} (kernel module {kernel}); "
          f"check with `lake build` there", file=sys.stderr)
    return EXIT_OK
