"""The values of the static NKI reading (semantics/nki/interp.py): what a Python name
can stand for while a kernel is read, never executed.

Integers are Python `int`s or `Sym` (an integer expression of the kernel language over
shape parameters and loop variables). Index sets (`nl.arange`, `nl.mgrid`, `nl.ds`) are
`Interval`s. Tensors are `Tensor`s (a kernel buffer) and `View`s (a window of one, in
the tensor's own coordinates). A call whose result is not yet stored anywhere is a
`Pending` instruction: it becomes an op when it is assigned (to a fresh tile, or into a
window) or used.
"""

from __future__ import annotations

import attrs

from semantics.ir import BinOp, Const, Expr, Loc, Max, Min, Var
from semantics.simplify import expr as lin_expr
from semantics.simplify import linear, simplify


@attrs.frozen
class Sym:
    """A symbolic integer: a kernel-language expression (never a constant)."""

    expr: Expr


def to_expr(value) -> Expr:
    return value.expr if isinstance(value, Sym) else Const(int(value))


def from_expr(expr: Expr):
    """`expr` simplified: an `int` when constant, else a `Sym`."""
    expr = simplify(expr)
    return expr.value if isinstance(expr, Const) else Sym(expr)


def is_int(value) -> bool:
    return isinstance(value, Sym) or (isinstance(value, int) and not isinstance(value, bool))


def arith(op: str, a, b):
    """`a op b` on ints and Syms (op one of + - * // % min max)."""
    if not isinstance(a, Sym) and not isinstance(b, Sym):
        return {"+": a + b, "-": a - b, "*": a * b, "//": a // b if b else None, "%": a % b if b else None,
                "min": min(a, b), "max": max(a, b)}[op]
    if op == "min":
        return from_expr(Min(to_expr(a), to_expr(b)))
    if op == "max":
        return from_expr(Max(to_expr(a), to_expr(b)))
    if op in ("//", "%") and isinstance(b, int) and b > 0:
        lin = linear(to_expr(a))
        if all(isinstance(c, int) and c % b == 0 for c in lin.values()):  # an exact division
            return from_expr(lin_expr({k: c // b for k, c in lin.items()})) if op == "//" else 0
    return from_expr(BinOp(op, to_expr(a), to_expr(b)))


@attrs.frozen
class Frac:
    """`a / b` of integers with a symbolic side: only `math.ceil` / `math.floor` /
    `int` of it mean something here."""

    num: object
    den: int


@attrs.frozen
class Interval:
    """The index set lo, lo + 1, ..., hi - 1 (`nl.arange`, a slice, `nl.ds`)."""

    lo: object
    hi: object


@attrs.frozen
class GridTuple:
    """`nl.mgrid[...]`: one Interval per axis; `.p` is the first, `.x` the second."""

    items: tuple


@attrs.frozen
class ArgShape:
    """`t.shape` of a kernel argument, whose rank the source never states: each
    dimension is a shape parameter, made when first read."""

    tensor: str  # the argument's name


@attrs.frozen(eq=False)
class Tensor:
    """A kernel buffer. `loops`: the loop variables around its allocation (a tensor
    allocated in a loop body is a new tensor per iteration). `shape`: a tuple of ints /
    Syms, an ArgShape (kernel arguments), or None (a result tile whose shape is not
    tracked: any window of it stands for the whole tile)."""

    name: str
    memory: str  # hbm, sbuf, psum
    shape: object
    loops: tuple = ()


@attrs.frozen
class View:
    """A window of `tensor`: per dimension an Interval (in the tensor's coordinates),
    for the leading dimensions; the rest are whole. `whole`: the whole tensor."""

    tensor: Tensor
    window: tuple = ()
    whole: bool = True
    iteration: tuple = ()  # (position, value): the tensor of that iteration of its loop


class TileList:
    """A Python list that a loop fills with the tile it allocates (`tiles.append(t)`),
    or with a list made in each iteration (a list of lists): element e is the item of
    iteration e (`tiles[k]` in a later loop)."""

    def __init__(self, depth: int):
        self.depth = depth  # loops around the list's creation
        self.item = None  # the Tensor or TileList appended in every iteration


@attrs.frozen(eq=False)
class ListView:
    """An element of a list of lists: `tiles[bm]`, an inner list with the iteration of
    the outer loop chosen."""

    tiles: TileList
    iteration: tuple


@attrs.frozen
class Pending:
    """An instruction whose result is not stored yet: `call` (e.g. `nisa.nc_matmul`) on
    `engine`, reading `reads` (Views). `accumulate`: `+=` into its destination."""

    call: str
    engine: str
    reads: tuple
    loc: Loc
    memory: str = "sbuf"
    also_writes: tuple = ()  # Views written besides the destination (`reduce_res=`)


@attrs.frozen
class Alloc:
    """`nl.ndarray` / `nl.zeros` / ... not yet bound to a name; `fill`: the call that
    initializes it (an op), or None."""

    memory: str
    shape: object
    fill: str | None
    loc: Loc


@attrs.frozen
class Module:
    """An imported NKI module (`nl`, `nisa`, `nki`) or `math` / `np`."""

    name: str


@attrs.frozen
class Func:
    """A callable: `nl.exp`, `nisa.nc_matmul`, `range`, or a function of the file."""

    name: str


@attrs.frozen
class Bound:
    """`t.reshape`, `t.broadcast_to`, ...: a method of a tensor; calling it gives a view
    of the whole tensor."""

    tensor: object
    name: str


@attrs.frozen
class Record:
    """An instance of a dataclass of the file (a kernel's configuration): its fields."""

    cls: str
    fields: tuple  # (name, value) pairs

    def get(self, name: str, default=None):
        return dict(self.fields).get(name, default)


@attrs.frozen
class Opaque:
    """A value the reading carries without looking inside (dtypes, memory kinds,
    engines, activation functions, floats)."""

    what: str


@attrs.frozen
class Conflict:
    """A name bound differently by the branches of a shape-dependent `if`."""

    name: str
    loc: Loc


def var(name: str) -> Sym:
    return Sym(Var(name))
