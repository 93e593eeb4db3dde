"""Lark's reductions of a kernel file -> line items with IR expressions inside
(semantics/parser.py rebuilds the blocks). Split from the parser to keep modules small.

`ToIR` runs inside Lark's LALR parser (`Lark(transformer=...)`): each rule is turned into
IR as it is reduced, so no parse tree is built: a parse tree of a long kernel costs as
much time again as the reductions, and more memory than the IR. Lark
gives such a transformer no positions (`meta`), so the grammar keeps every token
(`keep_all_tokens`) and a rule's location is where its first token or sub-rule starts,
which is what Lark's `propagate_positions` computed: a parenthesized group starts at
its '(' (`_Group` carries that start to the rule that contains the group)."""

from __future__ import annotations

from lark import Token, Transformer

from semantics.errors import KernelError
from semantics.ir import (
    Access,
    And,
    BinOp,
    Compare,
    Const,
    Count,
    IfExpr,
    Iters,
    Loc,
    Max,
    Min,
    Neg,
    Not,
    Op,
    Or,
    Param,
    Queue,
    Range,
    Register,
    Sync,
    Var,
    Wait,
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


class _Group:
    """A parenthesized expression on its way up: the expression, and where its '(' is
    (the start of a rule whose first part the group is)."""

    __slots__ = ("node", "start")

    def __init__(self, node, start: Loc):
        self.node, self.start = node, start


# Tokens the rules read; every other kept token (keywords, punctuation, line ends) only
# marks where a rule starts.
_VALUE_TOKENS = frozenset({"NAME", "INT", "DECIMAL"})


def _tok_loc(token) -> Loc:
    return Loc(token.line, token.column)


def _start(child) -> Loc:
    if isinstance(child, Token):
        return _tok_loc(child)
    if isinstance(child, _Group):
        return child.start
    return child.loc


def _parts(children) -> tuple[Loc, list]:
    """(where the rule starts, its value children: names, numbers, sub-rules)."""
    values = [c.node if isinstance(c, _Group) else c for c in children
              if not (isinstance(c, Token) and c.type not in _VALUE_TOKENS)]
    return _start(children[0]), values


class ToIR(Transformer):
    """Lark's reductions -> a list of line items, with IR expressions inside. Stateless:
    one instance serves every parse."""

    def atom(self, children):  # "(" expr ")"
        start, (inner,) = _parts(children)
        return _Group(inner, start)

    # ---- expressions
    def int(self, raw):
        (tok,) = raw
        return Const(int(tok), loc=_tok_loc(tok))

    def decimal(self, raw):
        (tok,) = raw
        return _Decimal(str(tok), _tok_loc(tok))

    def name(self, raw):
        (tok,) = raw
        return Var(str(tok), loc=_tok_loc(tok))

    def call(self, raw):
        _, (fn, *args) = _parts(raw)
        loc = _tok_loc(fn)
        if fn == "iters":
            if len(args) != 1 or not isinstance(args[0], Var):
                raise KernelError("iters takes exactly one loop variable name, as in `iters(i)`", loc)
            return Iters(args[0].name, loc=loc)
        if fn == "count":
            if len(args) != 1 or not isinstance(args[0], Var):
                raise KernelError("count takes exactly one engine name, as in `count(DVE)`", loc)
            return Count(args[0].name, loc=loc)
        if fn in ("min", "max"):
            if len(args) < 2:
                raise KernelError(f"{fn} takes at least two arguments", loc)
            node = Min if fn == "min" else Max
            result = _expect_expr(args[0])
            for arg in args[1:]:
                result = node(result, _expect_expr(arg), loc=loc)
            return result
        raise KernelError(f"unknown function '{fn}' (functions are min, max, iters and count)", loc)

    def neg(self, raw):
        start, children = _parts(raw)
        (operand,) = children
        return Neg(_expect_expr(operand), loc=start)

    def binop(self, raw):
        start, children = _parts(raw)
        left, op, right = children
        return BinOp(str(op.children[0]), _expect_expr(left), _expect_expr(right), loc=start,
                     op_loc=_tok_loc(op.children[0]))

    def compare(self, raw):
        start, children = _parts(raw)
        left, op, right = children
        return Compare(str(op.children[0]), _expect_expr(left), _expect_expr(right), loc=start)

    def and_(self, raw):
        start, children = _parts(raw)
        left, right = children
        return And(_expect_cond(left), _expect_cond(right), loc=start)

    def or_(self, raw):
        start, children = _parts(raw)
        left, right = children
        return Or(_expect_cond(left), _expect_cond(right), loc=start)

    def not_(self, raw):
        start, children = _parts(raw)
        (operand,) = children
        return Not(_expect_cond(operand), loc=start)

    def ifexpr(self, raw):
        start, children = _parts(raw)
        cond, then, else_ = children
        return IfExpr(_expect_cond(cond), _expect_expr(then), _expect_expr(else_), loc=start)

    # ---- clauses
    def range_index(self, raw):
        start, children = _parts(raw)
        lo, hi = children
        return Range(_expect_expr(lo, "an integer range bound"), _expect_expr(hi, "an integer range bound"),
                     loc=start)

    def access(self, raw):
        _, children = _parts(raw)
        name, *indices = children
        return Access(str(name), tuple(i if isinstance(i, Range) else _expect_expr(i, "an integer index")
                                       for i in indices), loc=_tok_loc(name))

    def reads(self, raw):
        start, children = _parts(raw)
        return ("reads", tuple(children), start)

    def writes(self, raw):
        start, children = _parts(raw)
        return ("writes", tuple(children), start)

    def lat(self, raw):
        start, children = _parts(raw)
        (value,) = children
        match value:
            case Const(value=v):
                return ("lat", v, start)
            case Neg(operand=Const(value=v)):
                raise KernelError(f"negative latency -{v}: a latency is a non-negative integer", value.loc)
            case _Decimal(text=text):
                raise KernelError(f"non-integer latency {text}: a latency is a non-negative integer", value.loc)
            case _:
                # A latency expression (timing only); negative values are run-time errors.
                return ("lat", _expect_expr(value, "an integer latency"), start)

    def wait_item(self, raw):
        _, children = _parts(raw)
        engine, threshold = children
        return Wait(str(engine), _expect_expr(threshold, "an integer threshold"), loc=_tok_loc(engine))

    def wait(self, raw):
        start, children = _parts(raw)
        return ("waits", tuple(children), start)

    # Peer sync clauses (docs/peers.md): each item is (engine name, id expression, loc).
    def sync_item(self, raw):
        _, children = _parts(raw)
        engine, *ident = children
        ident = _expect_expr(ident[0], "an integer flag or queue id") if ident else Const(0)
        return (str(engine), ident, _tok_loc(engine))

    @staticmethod
    def _syncs(kind, raw):
        start, children = _parts(raw)
        return ("syncs", tuple(Sync(kind, e, i, loc=l) for e, i, l in children), start)

    def setflag(self, raw):
        return self._syncs("setflag", raw)

    def waitflag(self, raw):
        return self._syncs("waitflag", raw)

    def push(self, raw):
        return self._syncs("push", raw)

    def pop(self, raw):
        return self._syncs("pop", raw)

    # ---- lines: (kind, loc, payload)
    def kernel_decl(self, raw):
        start, children = _parts(raw)
        (name,) = children
        return ("kernel", start, (str(name), _tok_loc(name)))

    def engines_decl(self, raw):
        start, children = _parts(raw)
        return ("engines", start, tuple((str(t), _tok_loc(t)) for t in children))

    def param_lower(self, raw):
        _, children = _parts(raw)
        return ("lower", _param_int(children[0], "a parameter's lower bound"))

    def param_default(self, raw):
        _, children = _parts(raw)
        return ("default", _param_int(children[0], "a parameter default"))

    def param_item(self, raw):
        _, children = _parts(raw)
        name, *parts = children
        given = dict(parts)
        return Param(str(name), given.get("default"), loc=_tok_loc(name), lower=given.get("lower", 0))

    def param_decl(self, raw):
        start, children = _parts(raw)
        return ("param", start, tuple(children))

    def via(self, raw):
        start, children = _parts(raw)
        (queue,) = children
        return ("queue", str(queue), start)

    def queue_increment(self, raw):
        start, children = _parts(raw)
        (value,) = children
        match value:
            case Const(value=v) if v >= 1:
                return v
            case _:
                raise KernelError("a queue's increment is a positive integer literal", getattr(value, "loc", None)
                                  or start)

    def queue_decl(self, raw):
        start, children = _parts(raw)
        name, *increment = children
        return ("queue", start, Queue(str(name), increment[0] if increment else 1, loc=_tok_loc(name)))

    def replica(self, raw):
        start, children = _parts(raw)
        (group,) = children
        return ("replica", str(group), start)

    def op_line(self, raw):
        start, children = _parts(raw)
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
        op = Op(str(engine), str(name), loc=_tok_loc(engine), name_loc=_tok_loc(name), **fields)
        return ("op", start, (op, _tok_loc(name)))

    def loop_register(self, raw):
        _, children = _parts(raw)
        name, init, *step = children
        return Register(str(name), _expect_expr(init, "a register's initial value"),
                        _expect_expr(step[0], "a register's step") if step else None, loc=_tok_loc(name))

    def loop_registers(self, raw):
        _, children = _parts(raw)
        return ("registers", tuple(children))

    def for_open(self, raw):
        start, children = _parts(raw)
        var, lo, hi, *registers = children
        return ("for", start, (str(var), _tok_loc(var), _expect_expr(lo, "an integer bound"),
                               _expect_expr(hi, "an integer bound"), registers[0][1] if registers else ()))

    def if_open(self, raw):
        start, children = _parts(raw)
        (cond,) = children
        return ("if", start, _expect_cond(cond))

    def else_line(self, raw):
        start, _ = _parts(raw)
        return ("else", start, None)

    def close(self, raw):
        start, _ = _parts(raw)
        return ("close", start, None)

    def barrier(self, raw):
        start, _ = _parts(raw)
        return ("barrier", start, None)

    def start(self, raw):
        return [c for c in raw if not isinstance(c, Token)]
