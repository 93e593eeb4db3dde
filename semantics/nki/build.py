"""From the reading's provisional accesses to the kernel's: per buffer, every access
gets the same number of indices, and the indices are made as small as the conflicts
allow, without changing which accesses conflict.

Per buffer (its accesses are the allocation's loop variables, then one range per
windowed dimension):
1. a whole access, or one with fewer windowed dimensions, gets the full range
   `0..DIM` of each missing dimension;
2. a dimension where every access has the same range over parameters only (most
   often: the whole dimension) is dropped: it separates nothing;
3. a dimension whose bounds are all multiples of g (every coefficient and constant of
   their linear forms) is divided by g: two ranges with bounds in gZ intersect exactly
   when their quotients do (a 128-row tile `k * 128..k * 128 + 128` becomes `k`);
4. a range of one element `a..a + 1` is written `a`.
"""

from __future__ import annotations

import math
from fractions import Fraction

import attrs

from semantics.ir import Access, Const, For, Range, Var, map_ops, ops, walk_expr, walk_stmts
from semantics.simplify import expr as lin_expr
from semantics.simplify import linear, simplify


def normalize(body: tuple, tensors: dict, dim_of) -> tuple:
    """`body` with its accesses completed and reduced (steps 1-4 above). `tensors`:
    buffer name -> Tensor; `dim_of(tensor, d)`: dimension d of a tensor (int or Sym)."""
    accesses: dict = {}
    for op in ops_of(body):
        for acc in op.reads + op.writes:
            accesses.setdefault(acc.buffer, []).append(acc)
    loop_vars = {s.var for s in walk_stmts(body) if isinstance(s, For)}
    plans = {name: _plan(tensors[name], accs, dim_of, loop_vars) for name, accs in accesses.items()}

    def fix(op):
        return attrs.evolve(op, reads=tuple(plans[a.buffer](a) for a in op.reads),
                            writes=tuple(plans[a.buffer](a) for a in op.writes))

    return map_ops(body, fix)


def ops_of(body: tuple) -> list:
    from semantics.ir import Program

    return ops(Program(engines=(), params=(), body=body))


def _plan(tensor, accs: list, dim_of, loop_vars: set):
    k = len(tensor.loops)
    rank = max(len(a.indices) - k for a in accs)
    if isinstance(tensor.shape, tuple) and rank:
        rank = max(rank, len(tensor.shape))
    full = [Range(Const(0), _expr(dim_of(tensor, d))) for d in range(rank)]
    filled = [a.indices[k:] + tuple(full[len(a.indices) - k:]) for a in accs]
    keep = [d for d in range(rank)
            if not all(_same(row[d], filled[0][d]) for row in filled) or _names(filled[0][d]) & loop_vars]
    scale = {d: _gcd(row[d] for row in filled) for d in keep}

    def rebuild(acc: Access) -> Access:
        row = acc.indices[k:] + tuple(full[len(acc.indices) - k:])
        out = list(acc.indices[:k])
        for d in keep:
            out.append(_shrink(row[d], scale[d]))
        return attrs.evolve(acc, indices=tuple(out))

    return rebuild


def _names(r: Range) -> set:
    return {n.name for e in (r.lo, r.hi) if e is not None for n in walk_expr(e) if isinstance(n, Var)}


def _expr(value):
    from semantics.nki.values import to_expr

    return to_expr(value) if value is not None else None


def _same(a: Range, b: Range) -> bool:
    return b.hi is not None and simplify(a.lo) == simplify(b.lo) and simplify(a.hi) == simplify(b.hi)


def _gcd(ranges) -> int:
    g = 0
    for r in ranges:
        for e in (r.lo, r.hi):
            if e is None:
                return 1
            for c in linear(e).values():
                if isinstance(c, Fraction) and c.denominator != 1:
                    return 1
                g = math.gcd(g, int(c))
    return g or 1


def _shrink(r: Range, g: int):
    lo, hi = linear(r.lo), linear(r.hi)
    if g > 1:
        lo = {key: int(c) // g for key, c in lo.items()}
        hi = {key: int(c) // g for key, c in hi.items()}
    lo_e, hi_e = lin_expr(lo), lin_expr(hi)
    width = simplify(_minus(hi_e, lo_e))
    if width == Const(1):
        return lo_e
    return Range(lo_e, hi_e, loc=r.loc)


def _minus(a, b):
    from semantics.ir import BinOp

    return BinOp("-", a, b)
