"""Print the IR back in the kernel language, with as few parentheses as the
precedence rules allow. `parse(print_program(p)) == p` for every parsed program."""

from __future__ import annotations

import functools

from semantics.collector import fewer_collections
from semantics.ir import (
    Access, And, Barrier, BinOp, Compare, Const, Count, For, If, IfExpr, Iters, Max, Min, Neg, Not,
    Op, Or, Param, Program, Range, Sync, Var, Wait, compute_engines,
)

# Precedence levels, loosest first (docs/design.md section 5; as in Python).
_IF, _OR, _AND, _NOT, _CMP, _SUM, _TERM, _UNARY, _ATOM = range(9)
_BINOP_LEVEL = {"+": _SUM, "-": _SUM, "*": _TERM, "//": _TERM, "%": _TERM}


def _level(node) -> int:
    match node:
        case Const(value=v):
            return _UNARY if v < 0 else _ATOM
        case Var() | Iters() | Count() | Min() | Max():
            return _ATOM
        case Neg():
            return _UNARY
        case BinOp(op=op):
            return _BINOP_LEVEL[op]
        case Compare():
            return _CMP
        case Not():
            return _NOT
        case And():
            return _AND
        case Or():
            return _OR
        case IfExpr():
            return _IF
    raise TypeError(f"not an expression: {node!r}")


def print_expr(node, min_level: int = _IF) -> str:
    """The text of an expression or condition, parenthesized if its level is below `min_level`."""
    text = _print_bare(node)
    return f"({text})" if _level(node) < min_level else text


@functools.lru_cache(maxsize=1 << 16)
def _print_bare(node) -> str:
    # Memoized (a pure function of an immutable node): the simplifier orders the atoms
    # of a polynomial by their text, and large atoms share most of their sub-terms.
    match node:
        case Const(value=v):
            return str(v)
        case Var(name=name):
            return name
        case Iters(var=var):
            return f"iters({var})"
        case Count(engine=engine):
            return f"count({engine})"
        case Neg(operand=a):
            inner = print_expr(a, _UNARY)
            return f"-({inner})" if inner.startswith("-") else f"-{inner}"
        case BinOp(op=op, left=a, right=b):
            level = _BINOP_LEVEL[op]
            return f"{print_expr(a, level)} {op} {print_expr(b, level + 1)}"
        case Min(left=a, right=b):
            return f"min({print_expr(a)}, {print_expr(b)})"
        case Max(left=a, right=b):
            return f"max({print_expr(a)}, {print_expr(b)})"
        case Compare(op=op, left=a, right=b):
            return f"{print_expr(a, _SUM)} {op} {print_expr(b, _SUM)}"
        case Not(operand=a):
            return f"not {print_expr(a, _NOT)}"
        case And(left=a, right=b):
            return f"{print_expr(a, _AND)} and {print_expr(b, _NOT)}"
        case Or(left=a, right=b):
            return f"{print_expr(a, _OR)} or {print_expr(b, _AND)}"
        case IfExpr(cond=c, then=a, else_=b):
            return f"if {print_expr(c, _OR)} then {print_expr(a, _OR)} else {print_expr(b, _IF)}"
    raise TypeError(f"not an expression: {node!r}")


def print_index(index) -> str:
    if isinstance(index, Range):
        return f"{print_expr(index.lo)}..{print_expr(index.hi)}"
    return print_expr(index)


def print_access(access: Access) -> str:
    if not access.indices:
        return access.buffer
    return f"{access.buffer}[{', '.join(print_index(i) for i in access.indices)}]"


def print_wait(wait: Wait) -> str:
    # An `if` threshold in a comma-separated list reads better in parentheses.
    return f"{wait.engine} >= {print_expr(wait.threshold, _OR)}"


def print_sync(sync: Sync) -> str:
    # Token queue 0 is the default queue and prints bare (`push B`); flags always name their id.
    if sync.kind in ("push", "pop") and sync.id == Const(0):
        return sync.engine
    return f"{sync.engine}:{print_expr(sync.id, _OR)}"


def print_op(op: Op) -> str:
    parts = [op.engine, op.name]
    if op.reads:
        parts.append("reads " + ", ".join(print_access(a) for a in op.reads))
    if op.writes:
        parts.append("writes " + ", ".join(print_access(a) for a in op.writes))
    if op.lat != 1:
        parts.append(f"lat {op.lat if isinstance(op.lat, int) else print_expr(op.lat)}")
    if op.waits:
        parts.append("wait " + ", ".join(print_wait(w) for w in op.waits))
    runs: list[list[Sync]] = []  # consecutive clauses of one kind print as one clause (order kept)
    for sync in op.syncs:
        if runs and runs[-1][0].kind == sync.kind:
            runs[-1].append(sync)
        else:
            runs.append([sync])
    for run in runs:
        parts.append(run[0].kind + " " + ", ".join(print_sync(s) for s in run))
    if op.replica is not None:
        parts.append(f"replica {op.replica}")
    if op.queue is not None:
        parts.append(f"via {op.queue}")
    return " ".join(parts)


def print_registers(registers) -> str:
    """A loop header's `with` clause (empty without registers)."""
    if not registers:
        return ""
    return " with " + ", ".join(f"{r.name} = {print_expr(r.init)}" + (f" step {print_expr(r.step)}" if r.step is not None else "")
                                for r in registers)


def print_param(param: Param) -> str:
    lower = f" >= {param.lower}" if param.lower else ""
    default = f" = {param.default}" if param.default is not None else ""
    return f"{param.name}{lower}{default}"


def _print_body(body, indent: int, out: list[str]) -> None:
    pad = "  " * indent
    for stmt in body:
        match stmt:
            case Op():
                out.append(pad + print_op(stmt))
            case Barrier():
                out.append(pad + "barrier")
            case For(var=var, lo=lo, hi=hi, body=inner, registers=registers):
                out.append(f"{pad}for {var} in {print_expr(lo)}..{print_expr(hi)}{print_registers(registers)} {{")
                _print_body(inner, indent + 1, out)
                out.append(pad + "}")
            case If(cond=cond, then=then, else_=else_):
                out.append(f"{pad}if {print_expr(cond)} {{")
                _print_body(then, indent + 1, out)
                if else_:
                    out.append(pad + "} else {")
                    _print_body(else_, indent + 1, out)
                out.append(pad + "}")


@fewer_collections()
def print_program(program: Program) -> str:
    # Fewer collections: printing a 100,000-op program allocates enough to trigger full
    # collections over the whole program, which would cost more than the printing.
    out: list[str] = []
    if program.name is not None:
        out.append(f"kernel {program.name}")
    out.append("engines " + " ".join(compute_engines(program)))
    for queue in program.queues:
        out.append(f"queue {queue.name}" + (f" increment {queue.increment}" if queue.increment != 1 else ""))
    if program.params:
        out.append("param " + ", ".join(print_param(p) for p in program.params))
    _print_body(program.body, 0, out)
    return "\n".join(out) + "\n"
