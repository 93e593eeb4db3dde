"""NKI kernels on the command line (docs/nki.md): `import-nki FILE.py[:FUNCTION]`, and the
`--nki-engine CALL=ENGINE` option of every command that reads a kernel. Reading a `.py`
FILE is the API's (verify/api/programs.py `load_spec`), so check, sync, verify, simulate,
bench and lean all take one."""

from __future__ import annotations

import contextlib

from semantics.errors import UsageError
from semantics.printer import print_program
from verify.api.programs import NKI_ENGINES, is_nki, load_nki
from verify.cli.common import write_output

# the commands that read a kernel, besides import-nki
READERS = ("check", "sync", "verify", "simulate", "bench", "lean")
_HELP = ("engine for an NKI call whose engine the compiler picks, e.g. nl.exp=ACT (repeatable; "
         "docs/nki.md lists the calls and their defaults)")


def add_parsers(sub) -> None:
    p = sub.add_parser("import-nki", help="import an NKI kernel (Python) into the kernel language")
    p.add_argument("file", help="a .py file with @nki.jit kernels; FILE.py:FUNCTION names one")
    p.add_argument("-o", "--output", metavar="OUT.sync", help="write the kernel here")
    for name in READERS + ("import-nki",):
        sub.choices[name].add_argument("--nki-engine", action="append", default=[], metavar="CALL=ENGINE",
                                       help=_HELP)


@contextlib.contextmanager
def engines_in_force(args):
    """The command's `--nki-engine` options, in force while it reads its kernels."""
    token = NKI_ENGINES.set(tuple(getattr(args, "nki_engine", None) or ()))
    try:
        yield
    finally:
        NKI_ENGINES.reset(token)


def cmd_import(args) -> int:
    if not is_nki(args.file):
        raise UsageError(f"import-nki reads a .py file (FILE.py or FILE.py:FUNCTION); {args.file} is not one")
    imported = load_nki(args.file, args.nki_engine)
    header = [f"# imported from {args.file} ({imported.function}) by syncproof import-nki (docs/nki.md)"]
    header += [f"# shape parameter: {note}" for note in imported.notes]
    text = "\n".join(header) + "\n" + print_program(imported.program)
    write_output(args.output, text)
    return 0
