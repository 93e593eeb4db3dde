"""Reading MLIR text with xdsl: `// -----` case splitting, unregistered ops allowed,
source positions of every op, and xdsl's errors turned into `FILE:LINE:COL` errors.

xdsl keeps no source position on an op, so the parser records where each op's text
starts; positions are 1-based lines of the whole file (a case's offset added).
"""

from __future__ import annotations

import attrs

from semantics.errors import KernelError
from semantics.ir import Loc

SPLIT = "// -----"


@attrs.frozen
class Chunk:
    """One `// -----` case: its text and the file line its first line is on."""

    text: str
    first_line: int
    index: int  # 1-based case number


def split_cases(text: str) -> list[Chunk]:
    """Cases as `--split-input-file` cuts them; cases holding no op are dropped."""
    chunks, line = [], 1
    for n, part in enumerate(text.split(SPLIT)):
        body = "\n".join(l for l in part.splitlines() if not l.lstrip().startswith("//"))
        if body.strip():
            chunks.append(Chunk(part, line, n + 1))
        line += part.count("\n")
    return chunks


def context():
    from xdsl.context import Context
    from xdsl.dialects import get_all_dialects

    ctx = Context(allow_unregistered=True)
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    return ctx


def _position_parser():
    from xdsl.parser import Parser

    class PositionParser(Parser):
        """xdsl's parser, remembering the text offset where each op starts."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.op_offsets: dict = {}

        def parse_operation(self):
            start = self._current_token.span.start
            op = super().parse_operation()
            self.op_offsets[op] = start
            return op

    return PositionParser


def loc_of(chunk: Chunk, offset: int) -> Loc:
    before = chunk.text[:offset]
    line = before.count("\n")
    col = offset - (before.rfind("\n") + 1) + 1
    return Loc(chunk.first_line + line, col)


def parse_chunk(chunk: Chunk, filename: str, ctx=None):
    """(module, {op: Loc}) for one case; a parse error becomes a KernelError."""
    from xdsl.utils.exceptions import ParseError

    parser = _position_parser()(ctx or context(), chunk.text, filename)
    try:
        module = parser.parse_module()
    except ParseError as err:
        message = err.msg.splitlines()[0] if err.msg else "syntax error"
        raise KernelError(f"MLIR: {message}", loc_of(chunk, err.span.start), filename) from None
    except Exception as err:  # xdsl raises plain exceptions for some malformed input
        text = str(err).strip().splitlines()
        raise KernelError(f"MLIR: {text[-1] if text else type(err).__name__}", Loc(chunk.first_line, 1),
                          filename) from None
    locs = {op: loc_of(chunk, offset) for op, offset in parser.op_offsets.items()}
    return module, locs


def op_name(op) -> str:
    """The op's name as written (unregistered ops keep theirs in an attribute)."""
    from xdsl.dialects.builtin import UnregisteredOp

    if isinstance(op, UnregisteredOp):
        return op.op_name.data
    return op.name


def prop(op, key: str):
    """A property or attribute of the op (`is not None`: some attributes are falsy)."""
    value = op.properties.get(key)
    return value if value is not None else op.attributes.get(key)
