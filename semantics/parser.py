"""Parse the kernel language (docs/design.md section 5) into the IR.

Lark parses the file as a sequence of lines; `_build` then rebuilds the block
structure with a stack so that brace errors name the line that opened the block,
and `validate` checks names, engines and scopes. Every error is a KernelError with
a location; nothing else escapes `parse`.
"""

from __future__ import annotations

from importlib import resources

import lark
from lark import Transformer, v_args

from semantics.errors import KernelError
from semantics.ir import (
    Access, And, Barrier, BinOp, Compare, Const, For, If, IfExpr, Iters, Loc, Max, Min,
    Neg, Not, Op, Or, Param, Program, Sync, Var, Wait,
)
from semantics.validate import validate

_COND_TYPES = (Compare, And, Or, Not)

_parser: lark.Lark | None = None


def _lark() -> lark.Lark:
    global _parser
    if _parser is None:
        grammar = resources.files("semantics").joinpath("kernel.lark").read_text()
        _parser = lark.Lark(grammar, parser="lalr", propagate_positions=True, maybe_placeholders=False)
    return _parser


def _loc(meta_or_token) -> Loc:
    return Loc(meta_or_token.line, meta_or_token.column)


def _is_cond(node) -> bool:
    return isinstance(node, _COND_TYPES)


class _Decimal:
    """A non-integer literal, kept until its context can name the error."""

    def __init__(self, text: str, loc: Loc):
        self.text, self.loc = text, loc


def _expect_expr(node, what: str = "an integer expression"):
    if isinstance(node, _Decimal):
        raise KernelError(f"non-integer literal '{node.text}': only integers are allowed", node.loc)
    if _is_cond(node):
        raise KernelError(f"expected {what}, found a condition", node.loc)
    return node


def _expect_cond(node):
    if isinstance(node, _Decimal) or not _is_cond(node):
        raise KernelError("expected a condition (a comparison such as `i < N`), found an integer expression", node.loc)
    return node


@v_args(meta=True)
class _ToIR(Transformer):
    """Lark tree -> a list of line items, with IR expressions inside."""

    # ---- expressions
    def int(self, meta, children):
        (tok,) = children
        return Const(int(tok), loc=_loc(tok))

    def decimal(self, meta, children):
        (tok,) = children
        return _Decimal(str(tok), _loc(tok))

    def name(self, meta, children):
        (tok,) = children
        return Var(str(tok), loc=_loc(tok))

    def call(self, meta, children):
        fn, *args = children
        loc = _loc(fn)
        if fn == "iters":
            if len(args) != 1 or not isinstance(args[0], Var):
                raise KernelError("iters takes exactly one loop variable name, as in `iters(i)`", loc)
            return Iters(args[0].name, loc=loc)
        if fn in ("min", "max"):
            if len(args) < 2:
                raise KernelError(f"{fn} takes at least two arguments", loc)
            node = Min if fn == "min" else Max
            result = _expect_expr(args[0])
            for arg in args[1:]:
                result = node(result, _expect_expr(arg), loc=loc)
            return result
        raise KernelError(f"unknown function '{fn}' (functions are min, max and iters)", loc)

    def neg(self, meta, children):
        (operand,) = children
        return Neg(_expect_expr(operand), loc=_loc(meta))

    def binop(self, meta, children):
        left, op, right = children
        return BinOp(str(op.children[0]), _expect_expr(left), _expect_expr(right), loc=_loc(meta),
                     op_loc=_loc(op.children[0]))

    def compare(self, meta, children):
        left, op, right = children
        return Compare(str(op.children[0]), _expect_expr(left), _expect_expr(right), loc=_loc(meta))

    def and_(self, meta, children):
        left, right = children
        return And(_expect_cond(left), _expect_cond(right), loc=_loc(meta))

    def or_(self, meta, children):
        left, right = children
        return Or(_expect_cond(left), _expect_cond(right), loc=_loc(meta))

    def not_(self, meta, children):
        (operand,) = children
        return Not(_expect_cond(operand), loc=_loc(meta))

    def ifexpr(self, meta, children):
        cond, then, else_ = children
        return IfExpr(_expect_cond(cond), _expect_expr(then), _expect_expr(else_), loc=_loc(meta))

    # ---- clauses
    def access(self, meta, children):
        name, *indices = children
        return Access(str(name), tuple(_expect_expr(i, "an integer index") for i in indices), loc=_loc(name))

    def reads(self, meta, children):
        return ("reads", tuple(children), _loc(meta))

    def writes(self, meta, children):
        return ("writes", tuple(children), _loc(meta))

    def lat(self, meta, children):
        (value,) = children
        match value:
            case Const(value=v):
                return ("lat", v, _loc(meta))
            case Neg(operand=Const(value=v)):
                raise KernelError(f"negative latency -{v}: a latency is a non-negative integer", value.loc)
            case _Decimal(text=text):
                raise KernelError(f"non-integer latency {text}: a latency is a non-negative integer", value.loc)
            case _:
                raise KernelError("a latency is a non-negative integer literal", value.loc)

    def wait_item(self, meta, children):
        engine, threshold = children
        return Wait(str(engine), _expect_expr(threshold, "an integer threshold"), loc=_loc(engine))

    def wait(self, meta, children):
        return ("waits", tuple(children), _loc(meta))

    # Peer sync clauses (docs/peers.md): each item is (engine name, id expression, loc).
    def sync_item(self, meta, children):
        engine, *ident = children
        ident = _expect_expr(ident[0], "an integer flag or queue id") if ident else Const(0)
        return (str(engine), ident, _loc(engine))

    def _syncs(self, kind, meta, children):
        return ("syncs", tuple(Sync(kind, e, i, loc=l) for e, i, l in children), _loc(meta))

    def setflag(self, meta, children):
        return self._syncs("setflag", meta, children)

    def waitflag(self, meta, children):
        return self._syncs("waitflag", meta, children)

    def push(self, meta, children):
        return self._syncs("push", meta, children)

    def pop(self, meta, children):
        return self._syncs("pop", meta, children)

    # ---- lines: (kind, loc, payload)
    def kernel_decl(self, meta, children):
        (name,) = children
        return ("kernel", _loc(meta), (str(name), _loc(name)))

    def engines_decl(self, meta, children):
        return ("engines", _loc(meta), tuple((str(t), _loc(t)) for t in children))

    def param_item(self, meta, children):
        name, *default = children
        value = None
        if default:
            match default[0]:
                case Const(value=v):
                    value = v
                case other:
                    raise KernelError("a parameter default is a non-negative integer literal", other.loc)
        return Param(str(name), value, loc=_loc(name))

    def param_decl(self, meta, children):
        return ("param", _loc(meta), tuple(children))

    def op_line(self, meta, children):
        engine, name, *clauses = children
        fields: dict = {"reads": (), "writes": (), "waits": (), "syncs": ()}
        lat_seen = None
        for kind, payload, loc in clauses:
            if kind == "lat":
                if lat_seen is not None:
                    raise KernelError(f"duplicate 'lat' clause (first at {lat_seen})", loc)
                lat_seen = loc
                fields["lat"] = payload
            else:
                fields[kind] = fields[kind] + payload
        op = Op(str(engine), str(name), loc=_loc(engine), name_loc=_loc(name), **fields)
        return ("op", _loc(meta), (op, _loc(name)))

    def for_open(self, meta, children):
        var, lo, hi = children
        return ("for", _loc(meta), (str(var), _loc(var), _expect_expr(lo, "an integer bound"), _expect_expr(hi, "an integer bound")))

    def if_open(self, meta, children):
        (cond,) = children
        return ("if", _loc(meta), _expect_cond(cond))

    def else_line(self, meta, children):
        return ("else", _loc(meta), None)

    def close(self, meta, children):
        return ("close", _loc(meta), None)

    def barrier(self, meta, children):
        return ("barrier", _loc(meta), None)

    def start(self, meta, children):
        return list(children)


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
    # frames: [kind, loc, header payload, then-list, else-list or None]
    stack: list[list] = [["root", None, None, [], None]]
    seen_statement = False
    for kind, loc, payload in items:
        if kind in ("kernel", "engines", "param"):
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
    return Program(
        engines=tuple(n for n, _ in engines[1]),
        params=tuple(params),
        body=tuple(stack[0][3]),
        name=name,
        loc=Loc(1, 1),
        name_loc=name_loc,
    ), {n: l for n, l in engines[1]}


def _close_frame(frame) -> For | If:
    kind, loc, payload, then, else_ = frame
    if kind == "for":
        var, var_loc, lo, hi = payload
        return For(var, lo, hi, tuple(then), loc=loc, var_loc=var_loc)
    return If(payload, tuple(then), tuple(else_ or ()), loc=loc)


_RECURSION_LIMIT = 50_000


def parse(data: bytes | str, filename: str | None = None) -> Program:
    """Parse and validate a kernel. Raises KernelError (with `filename` set).
    Deeply nested kernels need deep recursion; see `deep_recursion`."""
    try:
        with deep_recursion():
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
        tree = parser.parse(text)
    except lark.exceptions.UnexpectedInput as exc:
        raise _syntax_error(parser, exc) from None
    try:
        items = _ToIR().transform(tree)
    except lark.exceptions.VisitError as exc:
        if isinstance(exc.orig_exc, (KernelError, RecursionError)):
            raise exc.orig_exc from None
        raise
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
