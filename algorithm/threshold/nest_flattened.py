"""Flattened indices in the nest stage (nest_candidates.py): an index over two free loop
indices read as one, the position of an iteration in a rectangular pair of loops.

For loops `for m in 0..M { for n in 0..W { ... } }` (W over the parameters, at least 1)
the iterations (m, n) in program order are the numbers `W * m + n` in increasing order.
An index `(W * m + n + E) % p` (or `W * m + n + E`) of an op inside them is an index of
slope 1 in that one number, L: its latest value allowed is found as for one loop index
(L ranging over 0 .. W * M - 1, or W * m_y - 1 below y's m), and then m = L // W and
n = L % W. The gap between that instance and y is linear in W * m + n where no op of the
producer's engine runs in m's body outside n's loop and no count under n varies with m
or n; then it is a function of L. Anything else: NotNest.
"""

from __future__ import annotations

from semantics.ir import BinOp, Compare, Const, Var, walk_expr
from semantics.simplify import expr, linear, simplify
from algorithm.threshold.reasoning import NotNest, minus, plus, product, proves

Q, R = Var("#q"), Var("#r")  # the outer and inner index of a flattened pair, while the gap is built


def joint_name(outer: str) -> str:
    return "#" + outer


def flattened(ix, moving: list, loops: dict, x_loops: tuple, inside: list):
    """(outer, inner, width, the index over the joint name) for an index over the free
    indices `moving` (outermost first), or NotNest. `inside`: what holds where the
    consumer runs (the inner loop's width must be at least 1 there)."""
    if len(moving) != 2:
        raise NotNest("an index over more than two free loop indices")
    outer, inner = moving
    order = [l.var for l in x_loops]
    lo, li = loops[outer], loops[inner]
    if order.index(inner) != order.index(outer) + 1 or simplify(lo.lo) != Const(0) or simplify(li.lo) != Const(0):
        raise NotNest("an index over two free loop indices that are not a pair of adjacent loops from 0")
    width = simplify(li.hi)
    if any(isinstance(n, Var) and n.name in loops for n in walk_expr(width)) or \
            not proves(inside, Compare(">=", width, Const(1))):
        raise NotNest("an index over two free loop indices, the inner one's range not over the parameters")
    ix = simplify(ix)
    modular = isinstance(ix, BinOp) and ix.op == "%"
    form = linear(ix.left if modular else ix)
    if form.pop((Var(inner),), 0) != 1:
        raise NotNest("an index over two free loop indices of slope other than 1 in the inner one")
    with_outer = {m: c for m, c in form.items() if m is not None and Var(outer) in m}
    if simplify(minus(expr(with_outer) if with_outer else Const(0), product(width, Var(outer)))) != Const(0):
        raise NotNest("an index over two free loop indices that is not their position")
    rest = expr({m: c for m, c in form.items() if m not in with_outer}) if len(form) > len(with_outer) else Const(0)
    if any(isinstance(n, Var) and n.name in (outer, inner) for n in walk_expr(rest)):
        raise NotNest("an index over two free loop indices beyond their position")
    joint = plus(Var(joint_name(outer)), rest)
    return outer, inner, width, (simplify(BinOp("%", joint, ix.right)) if modular else joint)


def rejoined(gap, width, value):
    """The gap (over Q and R, the pair's indices) as a function of their position `value`
    (W * Q + R), or NotNest where it is not one."""
    per_r = _coefficient(gap, R)
    per_q = _coefficient(gap, Q)
    if simplify(minus(per_q, product(width, per_r))) != Const(0):
        raise NotNest("a gap that is not a function of the position in a flattened pair of loops")
    rest = simplify(minus(gap, plus(product(per_q, Q), product(per_r, R))))
    if _reads(rest, Q) or _reads(rest, R):
        raise NotNest("a gap that is not a function of the position in a flattened pair of loops")
    return plus(rest, product(per_r, value))


def _coefficient(e, var):
    """c where e = c * var + (terms without var), c free of var; else NotNest."""
    from semantics.ir import map_expr

    form = linear(e)
    terms = {m: c for m, c in form.items() if m is not None and any(_reads(a, var) for a in m)}
    if not terms:
        return Const(0)
    part = expr(terms)
    c = simplify(map_expr(part, lambda n: Const(1) if n == var else n))
    if _reads(c, var) or simplify(minus(part, product(c, var))) != Const(0):
        raise NotNest("a gap that is not linear in a flattened loop index")
    return c


def _reads(e, var) -> bool:
    return any(n == var for n in walk_expr(e))
