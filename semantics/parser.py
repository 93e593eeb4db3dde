"""Parse the kernel language (docs/design.md section 5) into the IR.

Lark parses the file as a sequence of lines, turning each rule into IR as it is reduced
(semantics/transform.py: no parse tree); `_build` then rebuilds the block
structure with a stack so that brace errors name the line that opened the block,
and `validate` checks names, engines and scopes. Every error is a KernelError with
a location; nothing else escapes `parse`.
"""

from __future__ import annotations

from importlib import resources

import lark

from semantics.collector import fewer_collections
from semantics.errors import KernelError
from semantics.ir import Barrier, For, If, Loc, Param, Program, Queue
from semantics.transform import ToIR
from semantics.validate import validate

_parser: lark.Lark | None = None


def _lark() -> lark.Lark:
    global _parser
    if _parser is None:
        grammar = resources.files("semantics").joinpath("kernel.lark").read_text()
        # Every token kept: locations come from them (semantics/transform.py).
        _parser = lark.Lark(grammar, parser="lalr", keep_all_tokens=True, maybe_placeholders=False,
                            transformer=ToIR())
    return _parser


def _decode(data: bytes | str) -> str:
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        line = before.count(b"\n") + 1
        col = exc.start - (before.rfind(b"\n") + 1) + 1
        raise KernelError(f"invalid UTF-8 byte 0x{data[exc.start]:02x}: a kernel file is text", Loc(line, col)) from None


def _describe_terminal(parser: lark.Lark, name: str) -> str:
    if name == "$END":
        return "end of line"
    if name in ("NAME", "INT", "_NL", "DECIMAL"):
        return {"NAME": "a name", "INT": "an integer", "_NL": "end of line", "DECIMAL": "a number"}[name]
    try:
        pattern = parser.get_terminal(name).pattern
    except KeyError:
        return name
    return f"'{pattern.value}'" if pattern.type == "str" else name


def _syntax_error(parser: lark.Lark, exc: lark.exceptions.UnexpectedInput) -> KernelError:
    loc = Loc(exc.line if exc.line > 0 else 1, exc.column if exc.column > 0 else 1)
    if isinstance(exc, lark.exceptions.UnexpectedCharacters):
        char = exc.char
        shown = repr(char) if not char.isprintable() else f"'{char}'"
        return KernelError(f"unexpected character {shown}", loc)
    token = getattr(exc, "token", None)
    expected = sorted({_describe_terminal(parser, t) for t in getattr(exc, "expected", ()) or ()})
    if token is None or token.type == "$END":
        found = "end of file"
    elif token.type == "_NL":
        found = "end of line"
    else:
        found = f"'{token}'"
        if str(token) in ("==", "!=", "<", "<=", ">", ">=") and "'and'" in expected:
            return KernelError("comparisons cannot be chained: use `and` (as in `a < b and b < c`)", loc)
        if "a name" in expected and token.type not in ("NAME", "INT") and str(token).isidentifier():
            return KernelError(f"'{token}' is a reserved word and cannot be used as a name", loc)
    hint = f"; expected {', '.join(expected[:8])}" + (", ..." if len(expected) > 8 else "") if expected else ""
    return KernelError(f"unexpected {found}{hint}", loc)


def _build(items: list, end: Loc) -> Program:
    """Rebuild blocks from the line items, checking braces and header placement."""
    name = None
    name_loc = None
    engines = None
    params: list[Param] = []
    queues: list[Queue] = []
    # frames: [kind, loc, header payload, then-list, else-list or None]
    stack: list[list] = [["root", None, None, [], None]]
    seen_statement = False
    for kind, loc, payload in items:
        if kind in ("kernel", "engines", "param", "queue"):
            if seen_statement:
                raise KernelError(f"'{kind}' declarations must come before the first statement", loc)
            if kind == "kernel":
                if name is not None:
                    raise KernelError("the kernel name is declared twice", loc)
                name, name_loc = payload
            elif kind == "engines":
                if engines is not None:
                    raise KernelError(f"engines are declared twice (first at {engines[0]})", loc)
                engines = (loc, payload)
            elif kind == "queue":
                queues.append(payload)
            else:
                params.extend(payload)
            continue
        seen_statement = True
        top = stack[-1]
        body = top[4] if top[4] is not None else top[3]
        match kind:
            case "op":
                body.append(payload[0])
            case "barrier":
                body.append(Barrier(loc=loc))
            case "for" | "if":
                stack.append([kind, loc, payload, [], None])
            case "else":
                if top[0] != "if":
                    what = "nothing" if top[0] == "root" else f"the 'for' opened at {top[1]}"
                    raise KernelError(f"'}} else {{' without a matching 'if' (this '}}' closes {what})", loc)
                if top[4] is not None:
                    raise KernelError(f"second 'else' for the 'if' opened at {top[1]}", loc)
                top[4] = []
            case "close":
                if top[0] == "root":
                    raise KernelError("unmatched '}'", loc)
                stack.pop()
                parent = stack[-1][4] if stack[-1][4] is not None else stack[-1][3]
                parent.append(_close_frame(top))
    if len(stack) > 1:
        kind, loc = stack[-1][0], stack[-1][1]
        raise KernelError(f"the '{{' of this '{kind}' is never closed (missing '}}')", loc)
    if engines is None:
        raise KernelError("missing 'engines' declaration (for example `engines LD PE ST`)", Loc(1, 1))
    engine_locs = {n: l for n, l in engines[1]}
    for queue in queues:  # a queue is a counter of its own, after the engines
        if queue.name in engine_locs:
            what = "an engine" if queue.name in dict(engines[1]) else "a queue"
            raise KernelError(f"'{queue.name}' is already declared as {what} (at {engine_locs[queue.name]})",
                              queue.loc)
        engine_locs[queue.name] = queue.loc
    return Program(
        engines=tuple(n for n, _ in engines[1]) + tuple(q.name for q in queues),
        params=tuple(params),
        body=tuple(stack[0][3]),
        name=name,
        loc=Loc(1, 1),
        name_loc=name_loc,
        queues=tuple(queues),
    ), engine_locs


def _close_frame(frame) -> For | If:
    kind, loc, payload, then, else_ = frame
    if kind == "for":
        var, var_loc, lo, hi, registers = payload
        return For(var, lo, hi, tuple(then), loc=loc, var_loc=var_loc, registers=registers)
    return If(payload, tuple(then), tuple(else_ or ()), loc=loc)


_RECURSION_LIMIT = 50_000


def parse(data: bytes | str, filename: str | None = None) -> Program:
    """Parse and validate a kernel. Raises KernelError (with `filename` set).
    Deeply nested kernels need deep recursion; see `deep_recursion`."""
    try:
        with deep_recursion(), fewer_collections():  # semantics/collector.py says why
            return _parse(data)
    except RecursionError:
        raise KernelError("the kernel is nested too deeply to process", Loc(1, 1), filename) from None
    except KernelError as err:
        if err.filename is None:
            err.filename = filename
        raise


class deep_recursion:
    """Raise the interpreter's recursion limit for a block (expression trees of
    generated kernels can be thousands of levels deep)."""

    def __enter__(self):
        import sys

        self.old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(self.old, _RECURSION_LIMIT))

    def __exit__(self, *exc):
        import sys

        sys.setrecursionlimit(self.old)
        return False


def _parse(data: bytes | str) -> Program:
    text = _decode(data)
    if not text.endswith("\n"):
        text += "\n"
    parser = _lark()
    try:
        # Line items straight from the parser: no tree, so a long file needs no more
        # memory than its IR (a whole lark tree of a long kernel is several times larger).
        items = parser.parse(text)
    except lark.exceptions.UnexpectedInput as exc:
        raise _syntax_error(parser, exc) from None
    lines = text.count("\n")
    program, engine_locs = _build(items, Loc(lines, 1))
    validate(program, engine_locs)
    return program


def parse_file(path: str) -> Program:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise KernelError(f"cannot read file: {exc.strerror}", None, path) from None
    return parse(data, path)
