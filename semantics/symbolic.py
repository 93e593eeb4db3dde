"""Z3 encodings of the sequential meaning, over symbolic parameters and loop indices.

Small plain functions: an expression or condition to a Z3 term (with Python's floor
`//` and `%`), the iteration domain of a static instance, program order between two
instances, and element equality of two accesses. The threshold algorithm proves its
case analysis with these; the Z3 checker (verify/engines/z3_*.py) builds on them.
"""

from __future__ import annotations

from typing import Mapping

import z3

from semantics.context import Site, common_depth, static_order
from semantics.ir import (
    Access, And, BinOp, Compare, Const, Count, For, IfExpr, Iters, Max, Min, Neg, Not, Or, Program, Range, Var,
    count_key,
)


def py_floordiv(a, b):
    # SMT-LIB `div` is Euclidean; it agrees with Python's floor for b > 0.
    return z3.If(b > 0, a / b, (-a) / (-b))


def py_mod(a, b):
    return a - b * py_floordiv(a, b)


def to_z3(node, env: Mapping[str, z3.ArithRef], iters: Mapping[str, z3.ArithRef] | None = None,
          cache: dict | None = None, ctx: z3.Context | None = None):
    """The Z3 term of an expression or condition; names are looked up in `env`, `iters(v)`
    in `iters` under `v` and `count(F)` under `count_key(F)`.
    `cache` (optional) memoizes terms of shared subexpressions for one env; `ctx` is the
    Z3 context of the constants (default: z3's main context)."""
    if cache is not None:
        term = cache.get(node)
        if term is None:
            term = cache[node] = _to_z3(node, env, iters, cache, ctx)
        return term
    return _to_z3(node, env, iters, None, ctx)


def _to_z3(node, env, iters, cache, ctx=None):
    match node:
        case Const(value=v):
            return z3.IntVal(v, ctx)
        case Var(name=name):
            return env[name]
        case Iters(var=var):
            if iters is None or var not in iters:
                raise KeyError(f"no symbolic value for iters({var})")
            return iters[var]
        case Count(engine=engine):
            if iters is None or count_key(engine) not in iters:
                raise KeyError(f"no symbolic value for count({engine})")
            return iters[count_key(engine)]
        case BinOp(op=op, left=a, right=b):
            x, y = to_z3(a, env, iters, cache, ctx), to_z3(b, env, iters, cache, ctx)
            match op:
                case "+":
                    return x + y
                case "-":
                    return x - y
                case "*":
                    return x * y
                case "//":
                    return py_floordiv(x, y)
                case "%":
                    return py_mod(x, y)
        case Neg(operand=a):
            return -to_z3(a, env, iters, cache, ctx)
        case Min(left=a, right=b):
            x, y = to_z3(a, env, iters, cache, ctx), to_z3(b, env, iters, cache, ctx)
            return z3.If(x <= y, x, y)
        case Max(left=a, right=b):
            x, y = to_z3(a, env, iters, cache, ctx), to_z3(b, env, iters, cache, ctx)
            return z3.If(x >= y, x, y)
        case IfExpr(cond=c, then=a, else_=b):
            return z3.If(to_z3(c, env, iters, cache, ctx), to_z3(a, env, iters, cache, ctx), to_z3(b, env, iters, cache, ctx))
        case Compare(op=op, left=a, right=b):
            x, y = to_z3(a, env, iters, cache, ctx), to_z3(b, env, iters, cache, ctx)
            return {"==": x == y, "!=": x != y, "<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[op]
        case And(left=a, right=b):
            return z3.And(to_z3(a, env, iters, cache, ctx), to_z3(b, env, iters, cache, ctx))
        case Or(left=a, right=b):
            return z3.Or(to_z3(a, env, iters, cache, ctx), to_z3(b, env, iters, cache, ctx))
        case Not(operand=a):
            return z3.Not(to_z3(a, env, iters, cache, ctx))
    raise TypeError(f"cannot encode {node!r}")


def param_env(program: Program, ctx: z3.Context | None = None) -> dict[str, z3.ArithRef]:
    return {p.name: z3.Int(p.name, ctx) for p in program.params}


def params_nonnegative(program: Program, ctx: z3.Context | None = None):
    """The parameters' assumptions: each at least its declared lower bound (0 if none)."""
    return [z3.Int(p.name, ctx) >= p.lower for p in program.params]


param_assumptions = params_nonnegative


def instance_env(site: Site, tag: str, base: Mapping[str, z3.ArithRef],
                 ctx: z3.Context | None = None) -> dict[str, z3.ArithRef]:
    """Parameters from `base`, and one fresh integer per enclosing loop of `site`."""
    env = dict(base)
    for loop in site.loops:
        env[loop.var] = z3.Int(f"{loop.var}@{tag}", ctx)
    return env


def domain(site: Site, env: Mapping[str, z3.ArithRef], ctx: z3.Context | None = None) -> list:
    """The instance exists: every enclosing loop index in range, every guard as taken."""
    facts = []
    for step in site.trail[:-1]:
        stmt = step.stmt
        if isinstance(stmt, For):
            v = env[stmt.var]
            facts += [to_z3(stmt.lo, env, ctx=ctx) <= v, v < to_z3(stmt.hi, env, ctx=ctx)]
        else:
            cond = to_z3(stmt.cond, env, ctx=ctx)
            facts.append(cond if step.branch else z3.Not(cond))
    return facts


def precedes(x: Site, x_env, y: Site, y_env, ctx: z3.Context | None = None):
    """x's instance comes before y's instance in program order."""
    depth = common_depth(x, y)
    shared = [s.stmt.var for s in x.trail[:depth] if isinstance(s.stmt, For)]
    cases = []
    for level, var in enumerate(shared):
        equal = [x_env[v] == y_env[v] for v in shared[:level]]
        cases.append(z3.And(*equal, x_env[var] < y_env[var]))
    if static_order(x, y) == "before":
        equal = [x_env[v] == y_env[v] for v in shared]
        cases.append(z3.And(*equal) if equal else z3.BoolVal(True, ctx))
    return z3.Or(*cases) if cases else z3.BoolVal(False, ctx)


def index_overlap(i, i_env, j, j_env, ctx: z3.Context | None = None):
    """Index i (in i_env) and index j (in j_env) share a value: equal points, a point
    inside a half-open range, or two ranges whose intervals intersect (both non-empty)."""
    if not isinstance(i, Range) and not isinstance(j, Range):
        return to_z3(i, i_env, ctx=ctx) == to_z3(j, j_env, ctx=ctx)
    if not isinstance(i, Range):
        p, lo, hi = to_z3(i, i_env, ctx=ctx), to_z3(j.lo, j_env, ctx=ctx), to_z3(j.hi, j_env, ctx=ctx)
        return z3.And(lo <= p, p < hi)
    if not isinstance(j, Range):
        p, lo, hi = to_z3(j, j_env, ctx=ctx), to_z3(i.lo, i_env, ctx=ctx), to_z3(i.hi, i_env, ctx=ctx)
        return z3.And(lo <= p, p < hi)
    a_lo, a_hi = to_z3(i.lo, i_env, ctx=ctx), to_z3(i.hi, i_env, ctx=ctx)
    b_lo, b_hi = to_z3(j.lo, j_env, ctx=ctx), to_z3(j.hi, j_env, ctx=ctx)
    return z3.And(a_lo < a_hi, b_lo < b_hi, a_lo < b_hi, b_lo < a_hi)


def same_element(a: Access, a_env, b: Access, b_env, ctx: z3.Context | None = None):
    """The two accesses touch a common element (for range indices: their element sets
    intersect, which is the overlap of the intervals in every dimension)."""
    if a.buffer != b.buffer or len(a.indices) != len(b.indices):
        return z3.BoolVal(False, ctx)
    overlaps = [index_overlap(i, a_env, j, b_env, ctx) for i, j in zip(a.indices, b.indices)]
    return z3.And(*overlaps) if overlaps else z3.BoolVal(True, ctx)


def conflicting_pairs(x, y) -> list[tuple[Access, Access]]:
    """Access pairs of ops x and y on one buffer where at least one writes; none for
    two replicas of one logical op (`replica G`, docs/snax.md)."""
    if x.replica is not None and x.replica == y.replica:
        return []
    pairs = []
    for ax, x_writes in [(a, False) for a in x.reads] + [(a, True) for a in x.writes]:
        for ay, y_writes in [(a, False) for a in y.reads] + [(a, True) for a in y.writes]:
            if ax.buffer == ay.buffer and len(ax.indices) == len(ay.indices) and (x_writes or y_writes):
                pairs.append((ax, ay))
    return pairs


def conflict(x, x_env, y, y_env, ctx: z3.Context | None = None):
    """Some element is accessed by both instances and written by at least one."""
    terms = [same_element(ax, x_env, ay, y_env, ctx) for ax, ay in conflicting_pairs(x, y)]
    return z3.Or(*terms) if terms else z3.BoolVal(False, ctx)
