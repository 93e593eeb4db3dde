"""Expressions and conditions compiled to Python functions: the values and the errors of
`semantics.evaluate` (same evaluation order, same EvalError messages and locations),
several times faster where the unroller evaluates the same expression for every
dynamic instance. A tree Python cannot compile (nested too deeply) falls back to
`eval_expr` / `eval_cond` themselves."""

from __future__ import annotations

from typing import Callable, Mapping

from semantics.errors import EvalError, Unsupported  # Unsupported: re-exported
from semantics.evaluate import eval_cond, eval_expr
from semantics.ir import (
    And, BinOp, Compare, Const, Count, IfExpr, Iters, Max, Min, Neg, Not, Or, Var, count_key, fold_expr,
)

Compiled = Callable[..., int]  # (env, iters=None) -> value


def division(x: int, y: int, op: str, node) -> int:
    if y == 0:
        raise EvalError(f"division by zero ('{op}' with a right operand of 0)", node.op_loc or node.loc)
    return x // y if op == "//" else x % y


def iteration_count(iters: Mapping[str, int] | None, var: str, node) -> int:
    """The tracked value of `iters(var)` (key `var`) or `count(F)` (key `count_key(F)`)."""
    if iters is None:
        kind = "count" if isinstance(node, Count) else "iters"
        raise EvalError(f"{kind}(...) has no value outside a wait threshold", node.loc)
    return iters.get(var, 0)


def source(node, nodes: list) -> str:
    """Python source for `node`, reading `env` and `iters`; nodes needing a location for
    an error are appended to `nodes` (referred to as `_n[k]`)."""
    def ref(n) -> str:
        nodes.append(n)
        return f"_n[{len(nodes) - 1}]"

    def text(n, inner: tuple) -> str:  # `inner`: the sub-terms' source, expr_children's order
        match n:
            case Const(value=v) if isinstance(v, int):
                return f"({v!r})"
            case Var(name=name):
                return f"env[{name!r}]"
            case Iters(var=var):
                return f"_iters(iters, {var!r}, {ref(n)})"
            case Count(engine=engine):
                return f"_iters(iters, {count_key(engine)!r}, {ref(n)})"
            case BinOp(op=op) if op in ("+", "-", "*"):
                return f"({inner[0]} {op} {inner[1]})"
            case BinOp(op=op) if op in ("//", "%"):
                return f"_div({inner[0]}, {inner[1]}, {op!r}, {ref(n)})"
            case Neg():
                return f"(-{inner[0]})"
            case Min():
                return f"min({inner[0]}, {inner[1]})"
            case Max():
                return f"max({inner[0]}, {inner[1]})"
            case IfExpr():
                c, a, b = inner
                return f"({a} if {c} else {b})"
            case Compare(op=op) if op in ("==", "!=", "<", "<=", ">", ">="):
                return f"({inner[0]} {op} {inner[1]})"
            case And():
                return f"({inner[0]} and {inner[1]})"
            case Or():
                return f"({inner[0]} or {inner[1]})"
            case Not():
                return f"(not {inner[0]})"
        raise Unsupported(repr(n))  # a node not translated: the tree-walking evaluator handles it

    return fold_expr(node, text)


def compile_expr(node, cond: bool = False) -> Compiled:
    """A function (env, iters=None) giving what eval_expr (eval_cond when `cond`) gives."""
    nodes: list = []
    try:
        text = source(node, nodes)
        return eval(f"lambda env, iters=None: {text}",  # noqa: S307 - source built from the IR above
                    {"_n": nodes, "_div": division, "_iters": iteration_count, "min": min, "max": max})
    except (Unsupported, TypeError, RecursionError, SyntaxError, MemoryError):  # TypeError: not an expression
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
