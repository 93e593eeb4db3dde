"""Evaluation of expressions and conditions, with Python's floor division and modulo."""

from __future__ import annotations

from typing import Mapping

from semantics.errors import EvalError
from semantics.ir import And, BinOp, Compare, Const, Count, IfExpr, Iters, Max, Min, Neg, Not, Or, Var, count_key, fold_expr

_COMPARE = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


def eval_expr(node, env: Mapping[str, int], iters: Mapping[str, int] | None = None) -> int:
    """Value of an integer expression; `env` maps parameters and loop variables,
    `iters` maps loop variables to their tracked iteration counts and `count_key(F)` to
    the tracked count of engine F (`count(F)`)."""
    match node:
        case Const(value=v):
            return v
        case Var(name=name):
            return env[name]
        case Iters(var=var):
            if iters is None:
                raise EvalError("iters(...) has no value outside a wait threshold", node.loc)
            return iters.get(var, 0)
        case Count(engine=engine):
            if iters is None:
                raise EvalError("count(...) has no value outside a wait threshold", node.loc)
            return iters.get(count_key(engine), 0)
        case BinOp(op=op, left=a, right=b):
            x, y = eval_expr(a, env, iters), eval_expr(b, env, iters)
            match op:
                case "+":
                    return x + y
                case "-":
                    return x - y
                case "*":
                    return x * y
                case "//" | "%":
                    if y == 0:
                        raise EvalError(f"division by zero ('{op}' with a right operand of 0)", node.op_loc or node.loc)
                    return x // y if op == "//" else x % y
            raise ValueError(f"unknown operator {op!r}")
        case Neg(operand=a):
            return -eval_expr(a, env, iters)
        case Min(left=a, right=b):
            return min(eval_expr(a, env, iters), eval_expr(b, env, iters))
        case Max(left=a, right=b):
            return max(eval_expr(a, env, iters), eval_expr(b, env, iters))
        case IfExpr(cond=c, then=a, else_=b):
            return eval_expr(a if eval_cond(c, env, iters) else b, env, iters)
    raise TypeError(f"not an integer expression: {node!r}")


def eval_cond(node, env: Mapping[str, int], iters: Mapping[str, int] | None = None) -> bool:
    match node:
        case Compare(op=op, left=a, right=b):
            return _COMPARE[op](eval_expr(a, env, iters), eval_expr(b, env, iters))
        case And(left=a, right=b):
            return eval_cond(a, env, iters) and eval_cond(b, env, iters)
        case Or(left=a, right=b):
            return eval_cond(a, env, iters) or eval_cond(b, env, iters)
        case Not(operand=a):
            return not eval_cond(a, env, iters)
    raise TypeError(f"not a condition: {node!r}")


def shared_evaluation(env: Mapping[str, int], iters: Mapping[str, int] | None = None):
    """(expression evaluator, condition evaluator) at one point, each distinct sub-term
    (by identity) evaluated once: `eval_expr` and `eval_cond` on a large term whose
    sub-terms are shared (a tree walk repeats them). The same values and errors, in the
    same order (an `if` evaluates its condition, then the branch it takes)."""
    memo: dict = {}

    def expr(node) -> int:
        hit = memo.get(id(node))
        if hit is not None and hit[0] is node:  # (the node itself: an id outlives a freed node)
            return hit[1]
        match node:
            case Const() | Var() | Iters() | Count():
                value = eval_expr(node, env, iters)
            case BinOp(op=op, left=a, right=b):
                x, y = expr(a), expr(b)
                match op:
                    case "+":
                        value = x + y
                    case "-":
                        value = x - y
                    case "*":
                        value = x * y
                    case "//" | "%":
                        if y == 0:
                            raise EvalError(f"division by zero ('{op}' with a right operand of 0)", node.op_loc or node.loc)
                        value = x // y if op == "//" else x % y
                    case _:
                        raise ValueError(f"unknown operator {op!r}")
            case Neg(operand=a):
                value = -expr(a)
            case Min(left=a, right=b):
                value = min(expr(a), expr(b))
            case Max(left=a, right=b):
                value = max(expr(a), expr(b))
            case IfExpr(cond=c, then=a, else_=b):
                value = expr(a if cond(c) else b)
            case _:
                raise TypeError(f"not an integer expression: {node!r}")
        memo[id(node)] = (node, value)
        return value

    def cond(node) -> bool:
        hit = memo.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        match node:
            case Compare(op=op, left=a, right=b):
                value = _COMPARE[op](expr(a), expr(b))
            case And(left=a, right=b):
                value = cond(a) and cond(b)
            case Or(left=a, right=b):
                value = cond(a) or cond(b)
            case Not(operand=a):
                value = not cond(a)
            case _:
                raise TypeError(f"not a condition: {node!r}")
        memo[id(node)] = (node, value)
        return value

    return expr, cond


def _arithmetic_ops(node, inner: tuple) -> int:
    if not inner:  # a literal or a name
        return 0
    if isinstance(node, IfExpr):  # the condition, then the branch taken (the costlier)
        cond, then, else_ = inner
        return 1 + cond + max(then, else_)
    return 1 + sum(inner)


def arithmetic_ops(node) -> int:
    """Arithmetic operations evaluating an expression costs at run time, as the timing
    model and the cost function count them: a literal or a name (a parameter, a loop
    variable or register, `iters(v)`, `count(F)`) is free, an `if` costs one plus its
    condition and its costlier branch, every other operator one."""
    return fold_expr(node, _arithmetic_ops)
