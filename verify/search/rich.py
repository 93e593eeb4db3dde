"""A richer Hypothesis strategy for kernels: today's generator plus the language's
additions (docs/language.md).

`rich_programs(...)` draws a kernel from `verify.search.generators.programs` (with range
indices on) and enriches it, every step drawn so that it shrinks back to the plain kernel:

- **parameter lower bounds** (`param N >= 1`), used where they matter: `N - 1` as a
  loop bound and `x[i % N]` as an index are drawn only for a parameter with a lower
  bound of at least 1;
- **loop bounds** reshaped to triangular (`for j in 0..i + 1`, `i..N`, `0..N - i`) and
  `min`/`max` forms (`0..min(i + 1, N)`, `max(i, 1)..N`, `0..max(N - 1, 1)`);
- **`if`/`else`** on affine conditions of loop variables and parameters (`i + j < N`,
  `2 * i >= N - 1`, `i % 2 == 0`, combined with `and`/`or`/`not` now and then) around
  an op or a loop, the `else` branch often the same op on another engine (a work split
  between engines, as kernels/if_else_split.sync);
- **range accesses** (`a[0..N]`, `m[i % 2, 0..2]`: the base generator's ranges);
- **DMA queues** with triggers and increments: `queue q0 increment 16`, ops of the
  queue's one triggering engine turned into DMA ops `E x via q0 ...`
  (docs/language.md "DMA queues", kernels/dma_trigger.sync).

Every kernel is printed and parsed back (so it is valid text, not only valid IR), and
unrolls without run-time errors for every parameter value from its lower bound to
`max_param`, with at most `2 * max_instances` dynamic instances (a DMA op is two: its
trigger and its transfer). A reshaped bound that would exceed that is clamped to the
original one with `min`/`max` instead (which never lengthens a loop).

`features(program)` names the rich features a kernel exercises (for tests and
bench/exact_bench.py).
"""

from __future__ import annotations

import itertools
from typing import Any

import attrs
from hypothesis import strategies as st

from semantics.errors import SyncproofError
from semantics.ir import map_ops
from semantics.ir import (
    Access, And, BinOp, Compare, Const, For, If, Max, Min, Not, Op, Or, Param, Program, Queue, Range, Var,
    walk_expr, walk_stmts,
)
from semantics.parser import parse
from semantics.printer import print_program
from semantics.sequential import unroll
from verify.search.generators import programs

__all__ = ["rich_programs", "features", "FEATURES", "QUEUE_NAMES"]

#: DMA queue names (a kernel with n queues declares the first n).
QUEUE_NAMES = ("q0", "q1")
#: What `features` can report, in a fixed order.
FEATURES = ("range", "dma", "increment", "if", "else", "affine_if", "min", "max", "triangular", "lower_bound",
            "mod_param")


def rich_programs(
    *,
    engines: tuple[int, int] = (2, 4),
    max_depth: int = 3,
    max_statements: int = 4,
    max_instances: int = 12,
    max_param: int = 2,
    max_queues: int = 2,
    max_ops: int = 6,
) -> st.SearchStrategy[Program]:
    """Random valid kernels with the rich features (module docstring).

    engines, max_depth, max_statements, max_instances, max_param: as
    `verify.search.generators.programs` (the base kernel's shape and size).
    max_queues: at most this many DMA queues (0..len(QUEUE_NAMES)).
    max_ops:    at most this many ops (an `else` copy counts): the kernel is cut after
                its first `max_ops` ops in program text order.
    """
    if not 0 <= max_queues <= len(QUEUE_NAMES):
        raise ValueError(f"max_queues must be within 0..{len(QUEUE_NAMES)}")
    if max_ops < 1:
        raise ValueError("max_ops must be positive")
    base = programs(engines=engines, max_depth=max_depth, params=(1, 2), max_param=max_param,
                    max_instances=max_instances, max_statements=max_statements, named=False, ranges=True)
    return _rich(base, max_param, max_instances, max_queues, max_ops)


def features(program: Program) -> frozenset[str]:
    """The rich features `program` exercises (a subset of FEATURES)."""
    found: set[str] = set()
    if any(p.lower > 0 for p in program.params):
        found.add("lower_bound")
    if any(q.increment != 1 for q in program.queues):
        found.add("increment")
    params = {p.name for p in program.params}

    def visit(body, scope: frozenset[str]) -> None:
        for stmt in body:
            if isinstance(stmt, Op):
                if stmt.queue is not None:
                    found.add("dma")
                for access in stmt.reads + stmt.writes:
                    for index in access.indices:
                        if isinstance(index, Range):
                            found.add("range")
                        parts = (index.lo, index.hi) if isinstance(index, Range) else (index,)
                        for node in (n for part in parts for n in walk_expr(part)):
                            if (isinstance(node, BinOp) and node.op == "%" and isinstance(node.right, Var)
                                    and node.right.name in params):
                                found.add("mod_param")
            elif isinstance(stmt, For):
                for bound in (stmt.lo, stmt.hi):
                    for node in walk_expr(bound):
                        if isinstance(node, Min):
                            found.add("min")
                        elif isinstance(node, Max):
                            found.add("max")
                        elif isinstance(node, Var) and node.name in scope:
                            found.add("triangular")
                visit(stmt.body, scope | {stmt.var})
            elif isinstance(stmt, If):
                found.add("if")
                if stmt.else_:
                    found.add("else")
                if any(isinstance(n, Var) and n.name in scope for n in walk_expr(stmt.cond)):
                    found.add("affine_if")
                visit(stmt.then, scope)
                visit(stmt.else_, scope)

    visit(program.body, frozenset())
    return frozenset(found)


# --------------------------------------------------------------------- internals


def _plus(e, c: int):
    return BinOp("+", e, Const(c)) if c > 0 else BinOp("-", e, Const(-c)) if c < 0 else e


class _State:
    """What the enrichment knows: parameter names and lower bounds, engines, reshaped
    loops (var -> (original lo, original hi)), fresh-name counter."""

    def __init__(self, params: tuple[Param, ...], engines: tuple[str, ...]):
        self.lower = {p.name: p.lower for p in params}
        self.params = [p.name for p in params]
        self.engines = engines
        self.reshaped: dict[str, tuple[Any, Any]] = {}
        self.copies = 0

    def positive(self) -> list[str]:
        """Parameters with a lower bound of at least 1."""
        return [p for p in self.params if self.lower[p] >= 1]


@st.composite
def _rich(draw, base, max_param: int, max_instances: int, max_queues: int, max_ops: int):
    program = draw(base)
    # Parameter lower bounds (0 first: shrinks to none); a default stays at or above it.
    params = []
    for p in program.params:
        lower = draw(st.sampled_from([0, 1, 1, 2]))
        lower = min(lower, max_param)
        default = p.default if p.default is None or p.default >= lower else lower
        params.append(attrs.evolve(p, lower=lower, default=default))
    params = tuple(params)
    state = _State(params, program.engines)
    body, _ = _cut(_enrich(draw, state, program.body, scope=[], depth=0), max_ops)
    rich = attrs.evolve(program, params=params, body=body)
    # DMA queues: each with one triggering engine (one that has ops) and an increment.
    rich = _add_queues(draw, rich, max_queues)
    limit = 2 * max_instances
    if state.reshaped and not _fits(rich, max_param, limit):
        rich = attrs.evolve(rich, body=_clamp(rich.body, state.reshaped))
    if not _fits(rich, max_param, limit):
        raise AssertionError("rich_programs: a drawn kernel does not unroll within its size (a strategy bug):\n"
                             + print_program(rich))
    text = print_program(rich)
    parsed = parse(text)  # validates; a strategy bug if this raises
    if parsed != rich:
        raise AssertionError("rich_programs: the kernel does not print and parse back to itself:\n" + text)
    return parsed


def _fits(program: Program, max_param: int, limit: int) -> bool:
    """Every valuation from the lower bounds to max_param unrolls, within `limit` instances."""
    ranges = [range(p.lower, max(max_param, p.lower) + 1) for p in program.params]
    for combo in itertools.product(*ranges):
        values = {p.name: v for p, v in zip(program.params, combo)}
        try:
            unroll(program, values, limit=limit)
        except SyncproofError:  # an unroll limit or a run-time error of the kernel
            return False
    return True


def _cut(body, room: int):
    """The statements of `body` up to its first `room` ops in text order (a loop or an
    `if` that does not fit whole is cut inside; nothing after it is kept), and the ops kept."""
    out, used = [], 0
    for stmt in body:
        if used >= room:
            break
        if isinstance(stmt, Op):
            out.append(stmt)
            used += 1
            continue
        if isinstance(stmt, For):
            inner, n = _cut(stmt.body, room - used)
            stmt = attrs.evolve(stmt, body=inner)
        elif isinstance(stmt, If):
            then, n = _cut(stmt.then, room - used)
            else_, m = _cut(stmt.else_, room - used - n)
            stmt, n = attrs.evolve(stmt, then=then, else_=else_), n + m
        else:
            n = 0
        out.append(stmt)
        used += n
    return tuple(out), used


def _clamp(body, reshaped: dict[str, tuple[Any, Any]]):
    """The reshaped loops with bounds that never run longer than the original ones:
    `max(original lo, new lo)..min(original hi, new hi)`."""
    out = []
    for stmt in body:
        if isinstance(stmt, For):
            inner = _clamp(stmt.body, reshaped)
            if stmt.var in reshaped:
                lo0, hi0 = reshaped[stmt.var]
                lo = stmt.lo if stmt.lo == lo0 else Max(lo0, stmt.lo)
                hi = stmt.hi if stmt.hi == hi0 else Min(stmt.hi, hi0)
                stmt = attrs.evolve(stmt, lo=lo, hi=hi, body=inner)
            else:
                stmt = attrs.evolve(stmt, body=inner)
        elif isinstance(stmt, If):
            stmt = attrs.evolve(stmt, then=_clamp(stmt.then, reshaped), else_=_clamp(stmt.else_, reshaped))
        out.append(stmt)
    return tuple(out)


def _enrich(draw, state: _State, body, scope: list[str], depth: int):
    out = []
    for stmt in body:
        if isinstance(stmt, For):
            stmt = _reshape(draw, state, stmt, scope)
            stmt = attrs.evolve(stmt, body=_enrich(draw, state, stmt.body, scope + [stmt.var], depth + 1))
        elif isinstance(stmt, If):
            stmt = attrs.evolve(stmt, then=_enrich(draw, state, stmt.then, scope, depth + 1),
                                else_=_enrich(draw, state, stmt.else_, scope, depth + 1))
        elif isinstance(stmt, Op):
            stmt = _mod_param(draw, state, stmt, scope)
        # Wrap an op or a loop in an `if` (one in three), not too deep.
        if isinstance(stmt, (Op, For)) and depth < 3 and draw(st.sampled_from([False, False, True])):
            stmt = _wrap(draw, state, stmt, scope)
        out.append(stmt)
    return tuple(out)


def _reshape(draw, state: _State, loop: For, scope: list[str]) -> For:
    """The loop, or one with a triangular or min/max bound (first choice: unchanged)."""
    choices: list[Any] = ["keep", "keep"]
    outer = Var(scope[-1]) if scope else None
    params = [Var(p) for p in state.params]
    if outer is not None:
        choices += [("hi", _plus(outer, 1)), ("hi", outer), ("lo", outer), ("lo", Max(outer, Const(1)))]
        for p in params:
            choices += [("hi", Min(_plus(outer, 1), p)), ("hi", BinOp("-", p, outer)),
                        ("hi", Max(BinOp("-", p, outer), Const(1))), ("lohi", outer, p)]
    for p in params:
        choices += [("hi", Min(p, Const(2))), ("hi", Max(p, Const(1))), ("lo", Max(_plus(p, -1), Const(0)))]
    for name in state.positive():
        choices += [("hi", _plus(Var(name), -1)), ("lohi", Const(1), Var(name))]
    choice = draw(st.sampled_from(choices))
    if choice == "keep":
        return loop
    state.reshaped[loop.var] = (loop.lo, loop.hi)
    if choice[0] == "hi":
        return attrs.evolve(loop, hi=choice[1])
    if choice[0] == "lo":
        return attrs.evolve(loop, lo=choice[1])
    return attrs.evolve(loop, lo=choice[1], hi=choice[2])


def _mod_param(draw, state: _State, op: Op, scope: list[str]) -> Op:
    """Now and then (one op in six, with a loop and a parameter >= 1), an index
    `v % P` for a parameter P >= 1: a buffer of P slots."""
    positive = state.positive()
    if not scope or not positive or not draw(st.sampled_from([False] * 5 + [True])):
        return op
    p = draw(st.sampled_from(positive))
    v = draw(st.sampled_from(list(reversed(scope))))

    def rewrite(access: Access) -> Access:
        if not access.indices or isinstance(access.indices[0], Range):
            return access
        return attrs.evolve(access, indices=(BinOp("%", Var(v), Var(p)),) + access.indices[1:])

    return attrs.evolve(op, reads=tuple(rewrite(a) for a in op.reads), writes=tuple(rewrite(a) for a in op.writes))


def _affine(draw, state: _State, scope: list[str]):
    """An affine expression over the loop variables in scope (innermost first) and parameters."""
    names = [Var(v) for v in reversed(scope)] + [Var(p) for p in state.params]
    a = draw(st.sampled_from(names))
    shape = draw(st.sampled_from(["plain", "plain", "sum", "twice", "plus1"]))
    if shape == "sum" and len(names) > 1:
        b = draw(st.sampled_from([n for n in names if n != a]))
        return BinOp("+", a, b)
    if shape == "twice":
        return BinOp("*", Const(2), a)
    if shape == "plus1":
        return _plus(a, 1)
    return a


def _condition(draw, state: _State, scope: list[str], nest: int = 0):
    """An affine condition over loop variables and parameters: `i < N`, `i + j >= N - 1`,
    `2 * i == M`, `i % 2 == 0`, `N > 1`, combined with and/or/not (rarely)."""
    kinds = ["cmp", "cmp", "cmp", "parity"]
    if nest == 0:
        kinds += ["and", "or", "not"]
    kind = draw(st.sampled_from(kinds))
    if kind == "cmp":
        left = _affine(draw, state, scope)
        rights: list[Any] = [Const(0), Const(1), Const(2)]
        for p in state.params:
            rights += [Var(p), _plus(Var(p), -1)]
        rights += [Var(v) for v in scope]
        right = draw(st.sampled_from([r for r in rights if r != left] or [Const(1)]))
        op = draw(st.sampled_from(["<", "<=", ">", ">=", "==", "!="]))
        return Compare(op, left, right)
    if kind == "parity":
        name = draw(st.sampled_from(list(reversed(scope)) + state.params))
        return Compare("==", BinOp("%", Var(name), Const(2)), Const(draw(st.integers(0, 1))))
    if kind == "not":
        return Not(_condition(draw, state, scope, nest + 1))
    a = _condition(draw, state, scope, nest + 1)
    b = _condition(draw, state, scope, nest + 1)
    return And(a, b) if kind == "and" else Or(a, b)


def _wrap(draw, state: _State, stmt, scope: list[str]) -> If:
    """`if COND { stmt }`, with an `else` branch: nothing, the same op on another engine
    (a work split), or (for a loop) nothing."""
    cond = _condition(draw, state, scope)
    if not isinstance(stmt, Op) or len(state.engines) < 2:
        return If(cond, (stmt,), ())
    kind = draw(st.sampled_from(["split", "none", "split"]))
    if kind == "none":
        return If(cond, (stmt,), ())
    engine = draw(st.sampled_from([e for e in state.engines if e != stmt.engine]))
    state.copies += 1
    other = attrs.evolve(stmt, engine=engine, name=f"{stmt.name}_e{state.copies}")
    return If(cond, (stmt,), (other,))


def _linked(op: Op, every: list[Op]) -> bool:
    """Whether an op of another engine accesses a buffer `op` accesses, one of the two writing."""
    reads, writes = {a.buffer for a in op.reads}, {a.buffer for a in op.writes}
    for other in every:
        if other.engine == op.engine:
            continue
        theirs_r, theirs_w = {a.buffer for a in other.reads}, {a.buffer for a in other.writes}
        if writes & (theirs_r | theirs_w) or reads & theirs_w:
            return True
    return False


def _add_queues(draw, program: Program, max_queues: int) -> Program:
    n_queues = draw(st.sampled_from([0] + [n for n in (1, 1, 2) if n <= max_queues]))
    queues = []
    via: dict[str, str] = {}  # op name -> queue
    every = [s for s in walk_stmts(program.body) if isinstance(s, Op)]
    for k in range(n_queues):
        ops = [op for op in every if op.name not in via]
        if not ops:
            break
        # Prefer ops whose data another engine touches (a load feeding compute, a store
        # of a result): their transfers are what consumers and producers wait on.
        linked = [op for op in ops if _linked(op, every)]
        engines = sorted({op.engine for op in (linked or ops)}, key=program.engines.index)
        trigger = draw(st.sampled_from(engines))
        name = QUEUE_NAMES[k]
        increment = draw(st.sampled_from([1, 16, 2, 4]))
        queues.append(Queue(name, increment))
        mine = [op for op in ops if op.engine == trigger]
        chosen = [op for op in mine if draw(st.booleans())]
        if not any(op in linked for op in chosen):
            chosen.append(next((op for op in mine if op in linked), mine[0]))
        for op in chosen:
            via[op.name] = name
    if not queues:
        return program

    return attrs.evolve(program, body=map_ops(program.body, lambda op: attrs.evolve(op, queue=via[op.name])
                                              if op.name in via else op), queues=tuple(queues),
                        engines=program.engines + tuple(q.name for q in queues))
