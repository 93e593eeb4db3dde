"""A pass's module as syncproof sees it: its generic MLIR text imported as one case,
and a module's body replaced by parsed text.

Positions in errors are lines of the module printed in generic form (xdsl keeps no
source position on ops); the name `<module>` says so."""

from __future__ import annotations

import io

from semantics.errors import KernelError, UsageError
from verify.xdsl_passes.errors import PassInputError

MODULE_NAME = "<module>"


def generic_text(module) -> str:
    from xdsl.printer import Printer

    out = io.StringIO()
    Printer(stream=out, print_generic_format=True).print_op(module)
    return out.getvalue() + "\n"


def imported(module):
    """The module imported (semantics/mlir/importer.py `Imported`); a PassInputError
    when it cannot be."""
    from semantics.mlir.importer import import_text

    with input_errors():
        (case,) = import_text(generic_text(module), MODULE_NAME)
    return case


def replace_body(module, text: str, ctx) -> None:
    """Make `module` the module `text` holds, parsed in the pass's context (its own
    dialects registered: SNAX's ops stay SNAX's), unregistered ops allowed, the
    syncproof dialect loaded."""
    from xdsl.parser import Parser

    from semantics.mlir.dialect import SYNCPROOF

    ctx = ctx.clone()
    ctx.allow_unregistered = True
    if SYNCPROOF.name not in set(ctx.registered_dialect_names):
        ctx.load_dialect(SYNCPROOF)
    new = Parser(ctx, text, MODULE_NAME).parse_module()
    for block in list(module.body.blocks):
        module.body.detach_block(block).erase()
    new.body.move_blocks(module.body)
    module.attributes.clear()
    module.attributes.update(new.attributes)
    module.properties.clear()
    module.properties.update(new.properties)


class input_errors:
    """KernelError and UsageError raised inside become PassInputErrors."""

    def __enter__(self):
        return self

    def __exit__(self, kind, err, tb):
        if isinstance(err, KernelError):
            raise PassInputError(err.render(MODULE_NAME)) from err
        if isinstance(err, UsageError):
            raise PassInputError(f"error: {err}") from err
        return False
