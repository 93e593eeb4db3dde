"""The Lark tree of a kernel file -> line items with IR expressions inside
(semantics/parser.py rebuilds the blocks). Split from the parser to keep modules small."""

from __future__ import annotations

from lark import Transformer, v_args

from semantics.errors import KernelError
from semantics.ir import (
    Access, And, BinOp, Compare, Const, IfExpr, Iters, Loc, Max, Min,
    Neg, Not, Op, Or, Param, Queue, Range, Sync, Var, Wait,
)

_COND_TYPES = (Compare, And, Or, Not)

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


def _param_int(node, what: str) -> int:
    match node:
        case Const(value=v):
            return v
        case _:
            raise KernelError(f"{what} is a non-negative integer literal", node.loc)


@v_args(meta=True)
class ToIR(Transformer):
    """Lark tree -> a list of line items, with IR expressions inside. `line_offset`: the
    lines before the parsed text in its file (the parser parses a long file a block of
    lines at a time)."""

    def __init__(self, line_offset: int = 0):
        super().__init__()
        self.line_offset = line_offset

    def _loc(self, meta_or_token) -> Loc:
        return Loc(meta_or_token.line + self.line_offset, meta_or_token.column)

    # ---- expressions
    def int(self, meta, children):
        (tok,) = children
        return Const(int(tok), loc=self._loc(tok))

    def decimal(self, meta, children):
        (tok,) = children
        return _Decimal(str(tok), self._loc(tok))

    def name(self, meta, children):
        (tok,) = children
        return Var(str(tok), loc=self._loc(tok))

    def call(self, meta, children):
        fn, *args = children
        loc = self._loc(fn)
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
        return Neg(_expect_expr(operand), loc=self._loc(meta))

    def binop(self, meta, children):
        left, op, right = children
        return BinOp(str(op.children[0]), _expect_expr(left), _expect_expr(right), loc=self._loc(meta),
                     op_loc=self._loc(op.children[0]))

    def compare(self, meta, children):
        left, op, right = children
        return Compare(str(op.children[0]), _expect_expr(left), _expect_expr(right), loc=self._loc(meta))

    def and_(self, meta, children):
        left, right = children
        return And(_expect_cond(left), _expect_cond(right), loc=self._loc(meta))

    def or_(self, meta, children):
        left, right = children
        return Or(_expect_cond(left), _expect_cond(right), loc=self._loc(meta))

    def not_(self, meta, children):
        (operand,) = children
        return Not(_expect_cond(operand), loc=self._loc(meta))

    def ifexpr(self, meta, children):
        cond, then, else_ = children
        return IfExpr(_expect_cond(cond), _expect_expr(then), _expect_expr(else_), loc=self._loc(meta))

    # ---- clauses
    def range_index(self, meta, children):
        lo, hi = children
        return Range(_expect_expr(lo, "an integer range bound"), _expect_expr(hi, "an integer range bound"),
                     loc=self._loc(meta))

    def access(self, meta, children):
        name, *indices = children
        return Access(str(name), tuple(i if isinstance(i, Range) else _expect_expr(i, "an integer index")
                                       for i in indices), loc=self._loc(name))

    def reads(self, meta, children):
        return ("reads", tuple(children), self._loc(meta))

    def writes(self, meta, children):
        return ("writes", tuple(children), self._loc(meta))

    def lat(self, meta, children):
        (value,) = children
        match value:
            case Const(value=v):
                return ("lat", v, self._loc(meta))
            case Neg(operand=Const(value=v)):
                raise KernelError(f"negative latency -{v}: a latency is a non-negative integer", value.loc)
            case _Decimal(text=text):
                raise KernelError(f"non-integer latency {text}: a latency is a non-negative integer", value.loc)
            case _:
                # A latency expression (timing only); negative values are run-time errors.
                return ("lat", _expect_expr(value, "an integer latency"), self._loc(meta))

    def wait_item(self, meta, children):
        engine, threshold = children
        return Wait(str(engine), _expect_expr(threshold, "an integer threshold"), loc=self._loc(engine))

    def wait(self, meta, children):
        return ("waits", tuple(children), self._loc(meta))

    # Peer sync clauses (docs/peers.md): each item is (engine name, id expression, loc).
    def sync_item(self, meta, children):
        engine, *ident = children
        ident = _expect_expr(ident[0], "an integer flag or queue id") if ident else Const(0)
        return (str(engine), ident, self._loc(engine))

    def _syncs(self, kind, meta, children):
        return ("syncs", tuple(Sync(kind, e, i, loc=l) for e, i, l in children), self._loc(meta))

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
        return ("kernel", self._loc(meta), (str(name), self._loc(name)))

    def engines_decl(self, meta, children):
        return ("engines", self._loc(meta), tuple((str(t), self._loc(t)) for t in children))

    def param_lower(self, meta, children):
        return ("lower", _param_int(children[0], "a parameter's lower bound"))

    def param_default(self, meta, children):
        return ("default", _param_int(children[0], "a parameter default"))

    def param_item(self, meta, children):
        name, *parts = children
        given = dict(parts)
        return Param(str(name), given.get("default"), loc=self._loc(name), lower=given.get("lower", 0))

    def param_decl(self, meta, children):
        return ("param", self._loc(meta), tuple(children))

    def via(self, meta, children):
        (queue,) = children
        return ("queue", str(queue), self._loc(meta))

    def queue_increment(self, meta, children):
        (value,) = children
        match value:
            case Const(value=v) if v >= 1:
                return v
            case _:
                raise KernelError("a queue's increment is a positive integer literal", getattr(value, "loc", None)
                                  or self._loc(meta))

    def queue_decl(self, meta, children):
        name, *increment = children
        return ("queue", self._loc(meta), Queue(str(name), increment[0] if increment else 1, loc=self._loc(name)))

    def replica(self, meta, children):
        (group,) = children
        return ("replica", str(group), self._loc(meta))

    def op_line(self, meta, children):
        engine, name, *clauses = children
        fields: dict = {"reads": (), "writes": (), "waits": (), "syncs": ()}
        lat_seen = None
        for kind, payload, loc in clauses:
            if kind in ("replica", "queue"):
                if kind in fields:
                    raise KernelError(f"duplicate '{'replica' if kind == 'replica' else 'via'}' clause", loc)
                fields[kind] = payload
            elif kind == "lat":
                if lat_seen is not None:
                    raise KernelError(f"duplicate 'lat' clause (first at {lat_seen})", loc)
                lat_seen = loc
                fields["lat"] = payload
            else:
                fields[kind] = fields[kind] + payload
        op = Op(str(engine), str(name), loc=self._loc(engine), name_loc=self._loc(name), **fields)
        return ("op", self._loc(meta), (op, self._loc(name)))

    def for_open(self, meta, children):
        var, lo, hi = children
        return ("for", self._loc(meta), (str(var), self._loc(var), _expect_expr(lo, "an integer bound"), _expect_expr(hi, "an integer bound")))

    def if_open(self, meta, children):
        (cond,) = children
        return ("if", self._loc(meta), _expect_cond(cond))

    def else_line(self, meta, children):
        return ("else", self._loc(meta), None)

    def close(self, meta, children):
        return ("close", self._loc(meta), None)

    def barrier(self, meta, children):
        return ("barrier", self._loc(meta), None)

    def start(self, meta, children):
        return list(children)
