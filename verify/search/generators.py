"""Hypothesis strategies for kernels (docs/design.md section 4, "property search").

A small public facade, in the style of `hypothesis.strategies`:

- `programs(...)` generates IR `Program`s that pass `semantics.validate.validate`
  and unroll without run-time errors for every parameter value in `0..max_param`:
  nested `for` loops (up to `max_depth`) with dynamic (`0..N`), triangular
  (`0..i + 1`, `i..N`), clamped (`0..min(N, 2)`) and zero-trip-capable bounds, loops
  after loops, ops between loops, `if`/`else` over parameters and loop variables,
  multi-buffered (`a[i % 2]`) and 2-D (`m[i, j]`) accesses on a handful of buffers so
  that dependences are frequent. With `synced=True`, ops also carry random `wait`
  clauses (thresholds over constants, loop variables, parameters, `iters(v)` and
  `count(E)`) and
  `barrier` statements appear.
- `valuations(program, hi)` generates parameter dicts with every value in `0..hi`.
- `expressions(names, iters)` / `conditions(names, iters)` generate arbitrary
  expression and condition trees over every node type (for printer/parser and
  evaluation tests; no guarantee about their values: they may divide by zero).
- `param_bounds(program, hi)` (a plain function) gives the inclusive bounds tuple
  `verify.engines.explicit.check` takes, `((name, 0, hi), ...)`.

Size is bounded statically: every op costs the product of the worst-case trip counts
of its enclosing loops (parameters at `max_param`), and a program never costs more
than `max_instances`, so every valuation has at most that many dynamic instances and
explicit-state exploration stays small. Loops whose bounds could run longer are
clamped with `min(..., c)`.

Everything is drawn so that Hypothesis shrinks toward fewer statements (each
block's statement count is drawn first and shrinks toward its minimum), toward ops
rather than loops or ifs (the first alternative of every choice), toward fewer
engines and parameters, the first engine, the scalar buffer `s`, constant `0`
indices, constant `0..c` bounds and smaller constants. Hypothesis's own minimal
counterexamples are therefore small, typically two ops on two engines.

Only non-negative `Const` values are generated (the printer prints negative
numbers as `Neg`), loop bounds are non-negative at run time by construction
(constants, parameters, loop variables, sums, `2 * N`, `min`/`max` of those,
`max(N - 1, 0)`, `if` expressions choosing among those),
and `//` and `%` only ever divide by positive constants.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from semantics.ir import (
    Access, And, Barrier, BinOp, Compare, Const, Count, For, If, IfExpr, Iters, Max, Min, Neg, Not, Op,
    Or, Param, Program, Range, Var, Wait,
)
from semantics.validate import validate

__all__ = ["programs", "valuations", "param_bounds", "expressions", "conditions", "ENGINE_NAMES", "PARAM_NAMES",
           "BUFFERS"]

#: Engine names, in the order engines are declared (a program with n engines uses the first n).
ENGINE_NAMES = ("LD", "PE", "ACT", "ST", "POOL", "DMA")
#: Parameter names (a program with n parameters uses the first n).
PARAM_NAMES = ("N", "M")
#: Buffer name -> number of indices. The scalar comes first so that shrinking goes there.
BUFFERS = {"s": 0, "a": 1, "b": 1, "m": 2}
_LOOP_VARS = ("i", "j", "k", "l", "p", "q", "r", "t", "u", "v", "w", "x", "y", "z")
_MAX_TRIP = 3


def param_bounds(program: Program, hi: int, lo: int = 0) -> tuple[tuple[str, int, int], ...]:
    """Inclusive bounds `((name, lo, hi), ...)` for every parameter of `program`,
    in declaration order (the format `verify.engines.explicit.check` takes); a
    parameter's declared lower bound (`param K >= 1`) raises both ends to at least it."""
    return tuple((p.name, max(lo, p.lower), max(hi, p.lower)) for p in program.params)


def valuations(program: Program, hi: int = 2) -> st.SearchStrategy[dict[str, int]]:
    """Parameter valuations of `program`: a dict with every parameter in `lower..hi`,
    lower its declared lower bound (default 0; shrinks toward the lower bounds)."""
    return st.fixed_dictionaries({p.name: st.integers(p.lower, max(hi, p.lower)) for p in program.params})


def programs(
    *,
    engines: tuple[int, int] = (2, 5),
    max_depth: int = 3,
    synced: bool = False,
    params: tuple[int, int] = (1, 2),
    max_param: int = 2,
    max_instances: int = 12,
    max_statements: int = 5,
    max_waits: int = 2,
    named: bool | None = None,
    ranges: bool = False,
) -> st.SearchStrategy[Program]:
    """Random valid kernels.

    engines:        (min, max) number of engines, at most len(ENGINE_NAMES).
    max_depth:      maximal loop nesting depth (0: straight-line code).
    synced:         also generate random `wait` clauses and `barrier` statements.
                    Unsynced programs have neither.
    params:         (min, max) number of parameters, at most len(PARAM_NAMES).
    max_param:      the largest parameter value the size bound accounts for; every
                    valuation with parameters in 0..max_param has at most
                    `max_instances` dynamic instances.
    max_statements: maximal number of statements per block (top level: at least two).
    max_waits:      maximal number of wait clauses per op (synced only).
    named:          whether the program has a `kernel` name; None: either.
    ranges:         also generate range indices `lo..hi` (one index in four): fixed,
                    sliding, parameter-long, possibly empty (docs/design.md section 5).
    """
    lo_e, hi_e = engines
    if not 1 <= lo_e <= hi_e <= len(ENGINE_NAMES):
        raise ValueError(f"engines must be (min, max) within 1..{len(ENGINE_NAMES)}")
    lo_p, hi_p = params
    if not 0 <= lo_p <= hi_p <= len(PARAM_NAMES):
        raise ValueError(f"params must be (min, max) within 0..{len(PARAM_NAMES)}")
    if max_instances < 1 or max_depth < 0 or max_param < 0 or max_statements < 1:
        raise ValueError("max_instances, max_statements must be positive; max_depth, max_param non-negative")
    return _programs(lo_e, hi_e, max_depth, synced, lo_p, hi_p, max_param, max_instances, max_statements,
                     max_waits, named, ranges)


def expressions(names: tuple[str, ...] = ("N", "i"), iters: tuple[str, ...] = (), max_depth: int = 4,
                if_expressions: bool = True, counts: tuple[str, ...] = ()) -> st.SearchStrategy:
    """Arbitrary integer expression trees up to `max_depth` levels: non-negative
    constants, the given names, `iters(v)` for v in `iters`, `count(E)` for E in
    `counts`, `+ - * // %`, unary minus, `min`, `max` and (unless `if_expressions` is
    False) `if ... then ... else` with arbitrary conditions, nested freely; shrinks
    toward the constant 0."""
    return _trees(names, iters, max_depth, False, if_expressions, counts)


def conditions(names: tuple[str, ...] = ("N", "i"), iters: tuple[str, ...] = (), max_depth: int = 4,
               if_expressions: bool = True, counts: tuple[str, ...] = ()) -> st.SearchStrategy:
    """Arbitrary condition trees: comparisons of `expressions(...)`, `and`, `or`, `not`."""
    return _trees(names, iters, max_depth, True, if_expressions, counts)


@st.composite
def _trees(draw, names, iters, max_depth, cond, ifs, counts):
    return (_cond_tree if cond else _expr_tree)(draw, (tuple(names), tuple(iters), ifs, tuple(counts)), max_depth)


def _expr_tree(draw, ctx, depth):
    names, iters, ifs, counts = ctx
    kinds = (["const"] + (["name"] if names else []) + (["iters"] if iters else [])
             + (["count"] if counts else []))
    if depth > 0:
        kinds += ["binop", "neg", "min", "max"] + (["if"] if ifs else [])
    kind = draw(st.sampled_from(kinds))
    sub = depth - 1
    if kind == "const":
        return Const(draw(st.integers(0, 12)))
    if kind == "name":
        return Var(draw(st.sampled_from(names)))
    if kind == "iters":
        return Iters(draw(st.sampled_from(iters)))
    if kind == "count":
        return Count(draw(st.sampled_from(counts)))
    if kind == "binop":
        op = draw(st.sampled_from(["+", "-", "*", "//", "%"]))
        return BinOp(op, _expr_tree(draw, ctx, sub), _expr_tree(draw, ctx, sub))
    if kind == "neg":
        return Neg(_expr_tree(draw, ctx, sub))
    if kind in ("min", "max"):
        node = Min if kind == "min" else Max
        return node(_expr_tree(draw, ctx, sub), _expr_tree(draw, ctx, sub))
    return IfExpr(_cond_tree(draw, ctx, sub), _expr_tree(draw, ctx, sub), _expr_tree(draw, ctx, sub))


def _cond_tree(draw, ctx, depth):
    kinds = ["cmp"] + (["and", "or", "not"] if depth > 0 else [])
    kind = draw(st.sampled_from(kinds))
    sub = max(depth - 1, 0)
    if kind == "cmp":
        op = draw(st.sampled_from(["==", "!=", "<", "<=", ">", ">="]))
        return Compare(op, _expr_tree(draw, ctx, sub), _expr_tree(draw, ctx, sub))
    if kind == "not":
        return Not(_cond_tree(draw, ctx, sub))
    node = And if kind == "and" else Or
    return node(_cond_tree(draw, ctx, sub), _cond_tree(draw, ctx, sub))


# --------------------------------------------------------------------- internals


class _Ctx:
    """Mutable generation state: the instance budget, fresh names, known loops."""

    def __init__(self, engines, params, max_param, budget, max_depth, max_statements, synced, max_waits):
        self.engines = engines
        self.params = params
        self.max_param = max_param
        self.budget = budget
        self.max_depth = max_depth
        self.max_statements = max_statements
        self.synced = synced
        self.max_waits = max_waits
        self.ops = 0
        self.statements = 4 * max_statements  # statements in the whole program
        self.loops: list[str] = []  # every loop variable allocated so far (for iters)
        self.ranges = False  # also draw range indices

    def op_name(self) -> str:
        name = f"op{self.ops}"
        self.ops += 1
        return name

    def loop_var(self) -> str | None:
        if len(self.loops) >= len(_LOOP_VARS):
            return None
        var = _LOOP_VARS[len(self.loops)]
        self.loops.append(var)
        return var


def _upper(expr, ubs: dict[str, int]) -> int:
    """An upper bound of a non-negative expression given upper bounds of its names."""
    match expr:
        case Const(value=v):
            return v
        case Var(name=n):
            return ubs[n]
        case BinOp(op="+", left=a, right=b):
            return _upper(a, ubs) + _upper(b, ubs)
        case BinOp(op="-", left=a):  # only ever `x - c` with c >= 0, inside max(.., 0)
            return _upper(a, ubs)
        case BinOp(op="*", left=a, right=b):
            return _upper(a, ubs) * _upper(b, ubs)
        case Min(left=a, right=b):
            return min(_upper(a, ubs), _upper(b, ubs))
        case Max(left=a, right=b):
            return max(_upper(a, ubs), _upper(b, ubs))
        case IfExpr(then=a, else_=b):
            return max(_upper(a, ubs), _upper(b, ubs))
    raise TypeError(f"no upper bound for {expr!r}")


def _lower(expr) -> int:
    """A lower bound of a non-negative loop bound expression."""
    return expr.value if isinstance(expr, Const) else 0


@st.composite
def _programs(draw, lo_e, hi_e, max_depth, synced, lo_p, hi_p, max_param, max_instances, max_statements,
              max_waits, named, ranges=False):
    n_engines = draw(st.integers(lo_e, hi_e))
    engines = ENGINE_NAMES[:n_engines]
    n_params = draw(st.integers(lo_p, hi_p))
    params = tuple(
        Param(name, draw(st.one_of(st.none(), st.integers(0, 4)))) for name in PARAM_NAMES[:n_params]
    )
    name = None
    if named is None:
        named = draw(st.booleans())
    if named:
        name = "gen"
    ctx = _Ctx(engines, [p.name for p in params], max_param, max_instances, max_depth, max_statements, synced,
               max_waits)
    ctx.ranges = ranges
    ubs = {p: max_param for p in ctx.params}
    body = _block(draw, ctx, depth=0, mult=1, scope=[], ubs=ubs, min_size=min(2, max_statements))
    program = Program(engines=engines, params=params, body=body, name=name)
    validate(program)  # a strategy bug if this raises
    return program


def _block(draw, ctx: _Ctx, depth: int, mult: int, scope: list[str], ubs: dict[str, int], min_size: int = 0,
           ifs: int = 0):
    """A list of statements; every op costs `mult` instances of the budget, every
    statement one of the statement budget; `ifs` enclosing `if`s (at most 2)."""
    # sampled_from draws the count uniformly (integers() favours tiny values) and
    # still shrinks toward min_size.
    count = draw(st.sampled_from(range(min_size, max(min_size, ctx.max_statements) + 1)))
    out = []
    for _ in range(count):
        if ctx.budget < mult or ctx.statements <= 0:
            break
        ctx.statements -= 1
        kinds = ["op", "op", "op"]
        if depth < ctx.max_depth:
            kinds.append("for")
        if ifs < 2:
            kinds.append("if")
        if ctx.synced:
            kinds.append("barrier")
        kind = draw(st.sampled_from(kinds))
        if kind == "op":
            out.append(_op(draw, ctx, scope, mult))
        elif kind == "barrier":
            out.append(Barrier())
        elif kind == "for":
            loop = _for(draw, ctx, depth, mult, scope, ubs)
            if loop is not None:
                out.append(loop)
        else:
            cond = _cond(draw, ctx, scope, nest=0)
            then = _block(draw, ctx, depth, mult, scope, ubs, min_size=0, ifs=ifs + 1)
            else_ = _block(draw, ctx, depth, mult, scope, ubs, min_size=0, ifs=ifs + 1) if draw(st.booleans()) else ()
            out.append(If(cond, then, else_))
    return tuple(out)


def _for(draw, ctx: _Ctx, depth: int, mult: int, scope: list[str], ubs: dict[str, int]):
    var = ctx.loop_var()
    if var is None:
        return None
    outer = scope[-1] if scope else None  # the innermost enclosing loop variable
    param = draw(st.sampled_from(ctx.params)) if ctx.params else None
    lo_choices: list[Any] = [Const(0), Const(0), Const(0), Const(1)]
    hi_choices: list[Any] = [Const(1), Const(2)]
    if param is not None:
        lo_choices += [Var(param), IfExpr(Compare(">", Var(param), Const(0)), Const(1), Const(0))]
        hi_choices += [Var(param), Min(Var(param), Const(2)), Max(BinOp("-", Var(param), Const(1)), Const(0)),
                       BinOp("+", Var(param), Const(1)), BinOp("*", Const(2), Var(param)),
                       IfExpr(Compare(">", Var(param), Const(1)), Const(1), Var(param))]
    if outer is not None:
        lo_choices.append(Var(outer))  # i..N
        hi_choices += [BinOp("+", Var(outer), Const(1)), Var(outer)]  # 0..i+1, 0..i
    lo = draw(st.sampled_from(lo_choices))
    hi = draw(st.sampled_from(hi_choices))
    if hi == Const(2) and draw(st.booleans()):
        hi = Const(0)  # a statically zero-trip loop now and then
    # Keep the worst-case trip count within both the per-loop cap and the budget.
    cap = min(_MAX_TRIP, ctx.budget // mult)
    if _upper(hi, ubs) - _lower(lo) > cap:
        hi = Min(hi, Const(cap))
    trip = max(0, _upper(hi, ubs) - _lower(lo))
    inner_ubs = dict(ubs)
    inner_ubs[var] = max(0, _upper(hi, ubs) - 1)
    body = _block(draw, ctx, depth + 1, mult * max(trip, 1), scope + [var], inner_ubs, min_size=1)
    return For(var, lo, hi, body)


def _names(ctx: _Ctx, scope: list[str]) -> list[str]:
    """Names usable in expressions here: enclosing loop variables (innermost first), parameters."""
    return list(reversed(scope)) + list(ctx.params)


def _index(draw, ctx: _Ctx, scope: list[str]):
    names = _names(ctx, scope)
    choices: list[Any] = [Const(0), Const(1)]
    if scope:  # the innermost loop variable, plain and double-buffered, most often
        choices += [Var(scope[-1]), BinOp("%", Var(scope[-1]), Const(2))] * 2
    for n in names:
        choices += [Var(n), BinOp("%", Var(n), Const(2)), BinOp("+", Var(n), Const(1)),
                    BinOp("-", Var(n), Const(1)), BinOp("//", Var(n), Const(2))]
    if len(scope) >= 2:
        choices.append(BinOp("%", BinOp("+", Var(scope[-1]), Var(scope[-2])), Const(2)))
    if names and draw(st.sampled_from([False, False, False, False, True])):
        # rarer shapes (one index in five), for the printer and evaluation
        n = names[0]
        choices = [Neg(Var(n)), BinOp("*", Const(2), Var(n)), Max(Var(n), Const(1)),
                   BinOp("-", Const(1), Var(n)), BinOp("%", Neg(Var(n)), Const(2)),
                   IfExpr(Compare("<", Var(n), Const(1)), Const(0), BinOp("-", Var(n), Const(1)))]
    return draw(st.sampled_from(choices))


def _range(draw, ctx: _Ctx, scope: list[str]) -> Range:
    """A range index: a fixed window, one sliding with the innermost loop, a prefix of a
    parameter's or loop variable's length, or an empty one."""
    names = _names(ctx, scope)
    choices: list[Any] = [Range(Const(0), Const(2)), Range(Const(1), Const(3)), Range(Const(1), Const(1))]
    if scope:
        v = Var(scope[-1])
        choices += [Range(v, BinOp("+", v, Const(2))), Range(Const(0), v), Range(Const(0), BinOp("+", v, Const(1))),
                    Range(BinOp("*", Const(2), v), BinOp("+", BinOp("*", Const(2), v), Const(2)))]
    for n in names:
        choices += [Range(Const(0), Var(n)), Range(Var(n), BinOp("+", Var(n), Const(1)))]
    return draw(st.sampled_from(choices))


def _access(draw, ctx: _Ctx, scope: list[str]) -> Access:
    buffer = draw(st.sampled_from(list(BUFFERS)))
    indices = []
    for _ in range(BUFFERS[buffer]):
        if ctx.ranges and draw(st.sampled_from([False, False, False, True])):
            indices.append(_range(draw, ctx, scope))
        else:
            indices.append(_index(draw, ctx, scope))
    return Access(buffer, tuple(indices))


def _cond(draw, ctx: _Ctx, scope: list[str], nest: int):
    kinds = ["cmp", "cmp", "mod"]
    if nest == 0:
        kinds += ["not", "and", "or"]
    kind = draw(st.sampled_from(kinds))
    names = _names(ctx, scope) or ["__none__"]
    if kind == "cmp":
        left = draw(st.sampled_from(names))
        op = draw(st.sampled_from(["<", "==", ">", ">=", "!=", "<="]))
        rights: list[Any] = [Const(0), Const(1), Const(2)]
        if scope and ctx.params:
            rights.append(BinOp("-", Var(ctx.params[0]), Const(1)))
        rights += [Var(n) for n in names if n != left and n != "__none__"]
        right = draw(st.sampled_from(rights))
        if left == "__none__":
            return Compare(op, Const(draw(st.integers(0, 2))), right)
        return Compare(op, Var(left), right)
    if kind == "mod":
        left = draw(st.sampled_from(names))
        base = Const(0) if left == "__none__" else Var(left)
        return Compare("==", BinOp("%", base, Const(2)), Const(draw(st.integers(0, 1))))
    if kind == "not":
        return Not(_cond(draw, ctx, scope, nest + 1))
    a = _cond(draw, ctx, scope, nest + 1)
    b = _cond(draw, ctx, scope, nest + 1)
    return And(a, b) if kind == "and" else Or(a, b)


def _threshold(draw, ctx: _Ctx, scope: list[str], engine: str):
    choices: list[Any] = [Const(0), Const(1), Const(2), Const(3)]
    for v in reversed(scope):
        choices += [BinOp("+", Var(v), Const(1)), Var(v), BinOp("-", Var(v), Const(1))]
    for v in ctx.loops:
        choices += [Iters(v), BinOp("+", Iters(v), Const(1)), BinOp("//", Iters(v), Const(2)),
                    BinOp("-", BinOp("*", Const(2), Iters(v)), Const(1))]
    # count(E) of the waited engine: every E-instance before (exact when all precede the
    # consumer's producers), one fewer, one more; and another engine's count
    choices += [Count(engine), BinOp("-", Count(engine), Const(1)), BinOp("+", Count(engine), Const(1)),
                Count(ctx.engines[0])]
    for p in ctx.params:
        choices += [Var(p), Min(Var(p), Const(1))]
    choices.append("if")
    choice = draw(st.sampled_from(choices))
    if choice == "if":
        cond = _cond(draw, ctx, scope, nest=1)
        return IfExpr(cond, Const(draw(st.integers(0, 3))), Const(draw(st.integers(0, 3))))
    return choice


def _op(draw, ctx: _Ctx, scope: list[str], mult: int) -> Op:
    ctx.budget -= mult
    engine = draw(st.sampled_from(ctx.engines))
    name = ctx.op_name()
    n_reads = draw(st.sampled_from([0, 1, 1, 2]))
    reads = tuple(_access(draw, ctx, scope) for _ in range(n_reads))
    n_writes = draw(st.sampled_from([1, 0, 2]))
    writes = tuple(_access(draw, ctx, scope) for _ in range(n_writes))
    lat = draw(st.sampled_from([1, 0, 4, 256]))
    waits: tuple[Wait, ...] = ()
    if ctx.synced:
        n_waits = draw(st.integers(0, ctx.max_waits))
        drawn = []
        for _ in range(n_waits):
            on = draw(st.sampled_from(ctx.engines))
            drawn.append(Wait(on, _threshold(draw, ctx, scope, on)))
        waits = tuple(drawn)
    return Op(engine, name, reads, writes, lat, waits)
