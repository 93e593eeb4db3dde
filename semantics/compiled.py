"""Expressions and conditions compiled to Python functions: the values and the errors of
`semantics.evaluate` (same evaluation order, same EvalError messages and locations),
several times faster where the unroller evaluates the same expression for every
dynamic instance. A tree Python cannot compile (nested too deeply) falls back to
`eval_expr` / `eval_cond` themselves."""

from __future__ import annotations

from typing import Callable, Mapping

from semantics.errors import EvalError, Unsupported  # Unsupported: re-exported
from semantics.evaluate import eval_cond, eval_expr
from semantics.ir import And, BinOp, Compare, Const, IfExpr, Iters, Max, Min, Neg, Not, Or, Var

Compiled = Callable[..., int]  # (env, iters=None) -> value


def division(x: int, y: int, op: str, node) -> int:
    if y == 0:
        raise EvalError(f"division by zero ('{op}' with a right operand of 0)", node.op_loc or node.loc)
    return x // y if op == "//" else x % y


def iteration_count(iters: Mapping[str, int] | None, var: str, node) -> int:
    if iters is None:
        raise EvalError("iters(...) has no value outside a wait threshold", node.loc)
    return iters.get(var, 0)


def source(node, nodes: list) -> str:
    """Python source for `node`, reading `env` and `iters`; nodes needing a location for
    an error are appended to `nodes` (referred to as `_n[k]`)."""
    def ref() -> str:
        nodes.append(node)
        return f"_n[{len(nodes) - 1}]"

    match node:
        case Const(value=v) if isinstance(v, int):
            return f"({v!r})"
        case Var(name=name):
            return f"env[{name!r}]"
        case Iters(var=var):
            return f"_iters(iters, {var!r}, {ref()})"
        case BinOp(op=op, left=a, right=b) if op in ("+", "-", "*"):
            return f"({source(a, nodes)} {op} {source(b, nodes)})"
        case BinOp(op=op, left=a, right=b) if op in ("//", "%"):
            return f"_div({source(a, nodes)}, {source(b, nodes)}, {op!r}, {ref()})"
        case Neg(operand=a):
            return f"(-{source(a, nodes)})"
        case Min(left=a, right=b):
            return f"min({source(a, nodes)}, {source(b, nodes)})"
        case Max(left=a, right=b):
            return f"max({source(a, nodes)}, {source(b, nodes)})"
        case IfExpr(cond=c, then=a, else_=b):
            return f"({source(a, nodes)} if {source(c, nodes)} else {source(b, nodes)})"
        case Compare(op=op, left=a, right=b) if op in ("==", "!=", "<", "<=", ">", ">="):
            return f"({source(a, nodes)} {op} {source(b, nodes)})"
        case And(left=a, right=b):
            return f"({source(a, nodes)} and {source(b, nodes)})"
        case Or(left=a, right=b):
            return f"({source(a, nodes)} or {source(b, nodes)})"
        case Not(operand=a):
            return f"(not {source(a, nodes)})"
    raise Unsupported(repr(node))  # a node not translated: the tree-walking evaluator handles it


def compile_expr(node, cond: bool = False) -> Compiled:
    """A function (env, iters=None) giving what eval_expr (eval_cond when `cond`) gives."""
    nodes: list = []
    try:
        text = source(node, nodes)
        return eval(f"lambda env, iters=None: {text}",  # noqa: S307 - source built from the IR above
                    {"_n": nodes, "_div": division, "_iters": iteration_count, "min": min, "max": max})
    except (Unsupported, RecursionError, SyntaxError, MemoryError):
        walk = eval_cond if cond else eval_expr
        return lambda env, iters=None: walk(node, env, iters)


def compiler() -> Callable[..., Compiled]:
    """A compiling function with its own cache, for one unrolling: nodes are keyed by
    identity, so the cache must not outlive the program it was used on."""
    cache: dict[int, tuple[object, Compiled]] = {}

    def compiled(node, cond: bool = False) -> Compiled:
        hit = cache.get(id(node))
        if hit is None or hit[0] is not node:
            hit = cache[id(node)] = (node, compile_expr(node, cond))
        return hit[1]

    return compiled
