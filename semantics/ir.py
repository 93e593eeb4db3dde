"""The kernel IR: small frozen attrs classes with tuple children.

Behaviour lives in functions elsewhere (parser, printer, evaluation, unrolling);
these classes only hold structure. Every node may carry a source location `loc`
which is excluded from equality and hashing, so `parse(print(p)) == p` compares
structure only.
"""

from __future__ import annotations

from typing import Union

import attrs


@attrs.frozen(cache_hash=True)
class Loc:
    """A 1-based source position."""

    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.line}:{self.col}"


def _loc():
    return attrs.field(default=None, eq=False, repr=False, kw_only=True)


# ---------------------------------------------------------------- expressions


@attrs.frozen(cache_hash=True)
class Const:
    value: int
    loc: Loc | None = _loc()


@attrs.frozen(cache_hash=True)
class Var:
    """A parameter or an enclosing loop variable."""

    name: str
    loc: Loc | None = _loc()


@attrs.frozen(cache_hash=True)
class Iters:
    """Tracked iteration count of the loop with variable `var` (wait thresholds only)."""

    var: str
    loc: Loc | None = _loc()


@attrs.frozen(cache_hash=True)
class Count:
    """Tracked count of engine `engine` (wait thresholds only): the instances of its ops
    (a DMA op `via Q` counts for its queue Q) before the current instance in program order."""

    engine: str
    loc: Loc | None = _loc()


def count_key(engine: str) -> str:
    """The key of `count(engine)` in a mapping of tracked values (beside loop variables for
    `iters`): its printed text, which no loop variable can be named."""
    return f"count({engine})"


@attrs.frozen(cache_hash=True)
class BinOp:
    op: str  # one of + - * // %
    left: Expr
    right: Expr
    loc: Loc | None = _loc()  # where the expression starts
    op_loc: Loc | None = _loc()  # the operator (division by zero is reported there)


@attrs.frozen(cache_hash=True)
class Neg:
    operand: Expr
    loc: Loc | None = _loc()


@attrs.frozen(cache_hash=True)
class Min:
    left: Expr
    right: Expr
    loc: Loc | None = _loc()


@attrs.frozen(cache_hash=True)
class Max:
    left: Expr
    right: Expr
    loc: Loc | None = _loc()


@attrs.frozen(cache_hash=True)
class IfExpr:
    cond: Cond
    then: Expr
    else_: Expr
    loc: Loc | None = _loc()


Expr = Union[Const, Var, Iters, Count, BinOp, Neg, Min, Max, IfExpr]

BINOPS = ("+", "-", "*", "//", "%")


# ----------------------------------------------------------------- conditions


@attrs.frozen(cache_hash=True)
class Compare:
    op: str  # one of == != < <= > >=
    left: Expr
    right: Expr
    loc: Loc | None = _loc()


@attrs.frozen(cache_hash=True)
class And:
    left: Cond
    right: Cond
    loc: Loc | None = _loc()


@attrs.frozen(cache_hash=True)
class Or:
    left: Cond
    right: Cond
    loc: Loc | None = _loc()


@attrs.frozen(cache_hash=True)
class Not:
    operand: Cond
    loc: Loc | None = _loc()


Cond = Union[Compare, And, Or, Not]

COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")


# ----------------------------------------------------------------- statements


@attrs.frozen(cache_hash=True)
class Range:
    """An index `lo..hi` of an access: every value lo <= v < hi (empty when hi <= lo)."""

    lo: Expr
    hi: Expr
    loc: Loc | None = _loc()


Index = Union[Expr, Range]


@attrs.frozen(cache_hash=True)
class Access:
    """`buffer` or `buffer[i1, i2, ...]`; each index an expression or a Range."""

    buffer: str
    indices: tuple[Index, ...] = ()
    loc: Loc | None = _loc()


def index_exprs(index: Index) -> tuple[Expr, ...]:
    """The expressions of an index: itself, or a range's two bounds."""
    return (index.lo, index.hi) if isinstance(index, Range) else (index,)


def has_range(access: Access) -> bool:
    return any(isinstance(i, Range) for i in access.indices)


def op_has_range(op) -> bool:
    return any(has_range(a) for a in op.reads + op.writes)


@attrs.frozen(cache_hash=True)
class Wait:
    """`wait ENGINE >= threshold`: issue only once C[engine] >= threshold."""

    engine: str
    threshold: Expr
    loc: Loc | None = _loc()


SYNC_KINDS = ("setflag", "waitflag", "push", "pop")
# Completion-time kinds act after the instance completes; the others are part of its issue.
SIGNAL_KINDS = ("setflag", "push")
FLAG_IDS = 8  # 1-bit flags per ordered engine pair (Ascend: 8 event ids)
QUEUES = 8  # token queues per ordered engine pair
TOKEN_DEPTH = 8  # tokens a queue holds; a push onto a full queue blocks the pusher


@attrs.frozen(cache_hash=True)
class Sync:
    """A peer's sync primitive on an op (docs/peers.md):
    `setflag E:id` / `push E:q` act when the instance completes, towards engine E;
    `waitflag E:id` / `pop E:q` are part of its issue, on the flag or queue from E.
    E may be a DMA queue. On a DMA op `via Q` the op's end of the channel is Q:
    `waitflag` / `pop` are part of its trigger's issue, `setflag` / `push` act when its
    transfer completes (docs/peers.md, "DMA ops")."""

    kind: str  # one of SYNC_KINDS
    engine: str
    id: Expr
    loc: Loc | None = _loc()


@attrs.frozen(cache_hash=True)
class Op:
    engine: str
    name: str
    reads: tuple[Access, ...] = ()
    writes: tuple[Access, ...] = ()
    lat: int | Expr = 1  # cycles: an int literal, or an expression (timing only)
    waits: tuple[Wait, ...] = ()
    loc: Loc | None = _loc()
    name_loc: Loc | None = _loc()
    syncs: tuple[Sync, ...] = ()  # flag and token clauses, in source order
    # `replica G`: the op is one replica of logical op G (a global MLIR op run by every
    # core); ops of one replica group never conflict with each other (docs/snax.md).
    replica: str | None = None
    # `via Q`: a DMA op triggered by this op's engine; the transfer runs on queue Q
    # (docs/language.md, "DMA queues"). None: the op runs on its own engine.
    queue: str | None = None


@attrs.frozen(cache_hash=True)
class Register:
    """`NAME = init [step STEP]` in a loop header (`for v in lo..hi with ... {`): a
    register every engine that reads it keeps, set to `init` when the loop is entered and
    advanced by `step` at each back-edge, so in iteration v it holds
    `init + step * (v - lo)` (docs/language.md, "Loop registers"). Read only in wait
    thresholds (and other registers' headers) inside the loop."""

    name: str
    init: Expr
    step: Expr | None = None
    loc: Loc | None = _loc()


@attrs.frozen(cache_hash=True)
class For:
    """`for var in lo..hi { body }`, half-open; `registers`: its header's `with` clause."""

    var: str
    lo: Expr
    hi: Expr
    body: tuple[Stmt, ...]
    loc: Loc | None = _loc()
    var_loc: Loc | None = _loc()
    registers: tuple[Register, ...] = attrs.field(default=(), kw_only=True)


@attrs.frozen(cache_hash=True)
class If:
    cond: Cond
    then: tuple[Stmt, ...]
    else_: tuple[Stmt, ...] = ()
    loc: Loc | None = _loc()


@attrs.frozen(cache_hash=True)
class Barrier:
    loc: Loc | None = _loc()


Stmt = Union[Op, For, If, Barrier]


@attrs.frozen(cache_hash=True)
class Param:
    """`param NAME [>= LOWER] [= DEFAULT]`: every valuation has NAME >= lower."""

    name: str
    default: int | None = None
    loc: Loc | None = _loc()
    lower: int = 0


@attrs.frozen(cache_hash=True)
class Queue:
    """`queue NAME [increment INT]`: a DMA queue, a counting in-order stream whose transfers
    are triggered by compute engines (`via NAME`); each completion adds `increment` to its
    counter."""

    name: str
    increment: int = 1
    loc: Loc | None = _loc()


@attrs.frozen(cache_hash=True)
class Program:
    """`engines` lists the declared engines, then the DMA queues (one counter each):
    `queues` names which of them are queues, in declaration order."""

    engines: tuple[str, ...]
    params: tuple[Param, ...]
    body: tuple[Stmt, ...]
    name: str | None = None
    loc: Loc | None = _loc()
    name_loc: Loc | None = _loc()
    queues: tuple[Queue, ...] = ()


INT32_MIN, INT32_MAX = -(2 ** 31), 2 ** 31 - 1  # a semaphore is a signed 32-bit register


def compute_engines(program: Program) -> tuple[str, ...]:
    """The declared engines, without the DMA queues."""
    names = {q.name for q in program.queues}
    return tuple(e for e in program.engines if e not in names)


def increments(program: Program) -> tuple[int, ...]:
    """Per counter (engine or queue, in `program.engines` order): what one completion adds."""
    by_name = {q.name: q.increment for q in program.queues}
    return tuple(by_name.get(e, 1) for e in program.engines)


# ------------------------------------------------------------------- walkers


def walk_stmts(body: tuple[Stmt, ...]):
    """Yield every statement of `body` in source order, depth first."""
    for stmt in body:
        yield stmt
        match stmt:
            case For(body=inner):
                yield from walk_stmts(inner)
            case If(then=then, else_=else_):
                yield from walk_stmts(then)
                yield from walk_stmts(else_)
            case Op() | Barrier():
                pass


# The expression walkers: `expr_children` and `with_children` are the only places that
# know each node kind's sub-terms; `walk_expr`, `fold_expr` and `map_expr` recurse through
# them, so a walk written with them cannot forget a kind.


def expr_children(node) -> tuple:
    """The direct sub-terms of an expression or condition, in field order (IfExpr: cond,
    then, else_). TypeError for anything else."""
    match node:
        case Const() | Var() | Iters() | Count():
            return ()
        case BinOp() | Min() | Max() | Compare() | And() | Or():
            return (node.left, node.right)
        case Neg(operand=a) | Not(operand=a):
            return (a,)
        case IfExpr(cond=c, then=a, else_=b):
            return (c, a, b)
    raise TypeError(f"not an expression: {node!r}")


def with_children(node, children: tuple):
    """`node` with its sub-terms replaced by `children` (in `expr_children`'s order): the
    same kind, operator and locations; `node` itself when every child is unchanged."""
    old = expr_children(node)
    if len(children) != len(old):
        raise ValueError(f"{type(node).__name__} has {len(old)} sub-terms, not {len(children)}")
    if all(new is was for new, was in zip(children, old)):
        return node
    match node:
        case Neg() | Not():
            return attrs.evolve(node, operand=children[0])
        case IfExpr():
            return attrs.evolve(node, cond=children[0], then=children[1], else_=children[2])
    return attrs.evolve(node, left=children[0], right=children[1])


def walk_expr(node):
    """Yield an expression or condition and every subterm, pre-order."""
    yield node
    for child in expr_children(node):
        yield from walk_expr(child)


def fold_expr(node, fn):
    """Bottom-up fold: `fn(node, results)`, where `results` are the folds of `node`'s
    sub-terms in `expr_children`'s order (() for a leaf). Every sub-term is folded,
    conditions and both branches of an `if` included: not for a walk that must skip one
    (evaluation, which short-circuits)."""
    children = expr_children(node)
    results = []
    for child in children:  # a loop, not a comprehension: one frame per level of the tree
        results.append(fold_expr(child, fn))
    return fn(node, tuple(results))


def map_expr(node, fn):
    """Bottom-up rebuild: every sub-term is mapped first, then `fn` gets the node rebuilt
    on the mapped sub-terms (`with_children`: kind, operator and locations kept) and
    returns its replacement (the node itself to keep it). What `fn` returns is not
    mapped again."""
    children = expr_children(node)
    mapped = []
    for child in children:
        mapped.append(map_expr(child, fn))
    return fn(with_children(node, tuple(mapped)) if children else node)


def as_read(node):
    """The expression as the parser reads it back once printed: a negative constant
    prints as `-v` and reads as the negation of v (`Neg(Const(v))`), so a program built
    with `Const(-v)` would not re-parse to itself."""
    return map_expr(node, lambda n: Neg(Const(-n.value, loc=n.loc), loc=n.loc)
                    if isinstance(n, Const) and n.value < 0 else n)


def ops(program: Program) -> list[Op]:
    """All ops of the program in source order."""
    return [s for s in walk_stmts(program.body) if isinstance(s, Op)]


def peer_clause(program: Program) -> Sync | None:
    """The first peer sync clause (setflag, waitflag, push, pop) of the program, if any."""
    return next((s for op in ops(program) for s in op.syncs), None)


def loops(program: Program) -> list[For]:
    return [s for s in walk_stmts(program.body) if isinstance(s, For)]


def map_loops(body: tuple[Stmt, ...], fn) -> tuple[Stmt, ...]:
    """Rebuild `body` with every loop replaced by `fn(loop)`, inner loops first (the
    loop `fn` sees holds its mapped body)."""
    out = []
    for stmt in body:
        match stmt:
            case For():
                out.append(fn(attrs.evolve(stmt, body=map_loops(stmt.body, fn))))
            case If():
                out.append(attrs.evolve(stmt, then=map_loops(stmt.then, fn), else_=map_loops(stmt.else_, fn)))
            case _:
                out.append(stmt)
    return tuple(out)


def map_ops(body: tuple[Stmt, ...], fn) -> tuple[Stmt, ...]:
    """Rebuild `body` with every op replaced by `fn(op)` (structure unchanged)."""
    out = []
    for stmt in body:
        match stmt:
            case Op():
                out.append(fn(stmt))
            case For():
                out.append(attrs.evolve(stmt, body=map_ops(stmt.body, fn)))
            case If():
                out.append(attrs.evolve(stmt, then=map_ops(stmt.then, fn), else_=map_ops(stmt.else_, fn)))
            case Barrier():
                out.append(stmt)
    return tuple(out)
