"""Index equations of the nest stage's candidates (nest_candidates.py): where x's index,
over the free index of a candidate and names fixed at y's values, equals y's index, as
a constraint on that free index (a congruence, a point, a part of its range) or a
condition over y's indices."""

from __future__ import annotations

from semantics.context import Site
from semantics.ir import And, BinOp, Compare, Const, Range, Var, walk_expr
from semantics.simplify import simplify
from algorithm.threshold.flat import Index
from algorithm.threshold.nest_guards import never
from algorithm.threshold.reasoning import FALSE, TRUE, NotNest, minus, plus, proves, settled


def range_equation(nest, x: Site, y: Site, ix, iy, pinned: set, loops: dict):
    """A dimension where a side is a range (over parameters and loop indices): the
    condition over y's indices (or FALSE) under which the two meet, None when they
    always do, ("within", u, low, high) where x's free index u must lie in low .. high
    (part of its range), ("mod", u, r, p) where u must be r modulo p (an index periodic
    in u whose values in the range are those of one residue), NotNest where x's range
    reads a free index."""
    if isinstance(ix, Range) and any(isinstance(n, Var) and n.name in loops and n.name not in pinned
                                     for e in (ix.lo, ix.hi) for n in walk_expr(e)):
        raise NotNest("a range over a free loop index")
    if isinstance(ix, Range) and isinstance(iy, Range):  # (two ranges meet where both hold an element)
        return settled(And(And(Compare("<", ix.lo, iy.hi), Compare("<", iy.lo, ix.hi)),
                           And(Compare("<", ix.lo, ix.hi), Compare("<", iy.lo, iy.hi))))
    if isinstance(ix, Range):
        return settled(And(Compare("<=", ix.lo, iy), Compare("<", iy, ix.hi)))
    moving = sorted({n.name for n in walk_expr(ix) if isinstance(n, Var) and n.name in loops and n.name not in pinned})
    if not moving:
        return settled(And(Compare("<=", iy.lo, ix), Compare("<", ix, iy.hi)))
    if len(moving) > 1:
        raise NotNest("a point index over two free loop indices against a range")
    loop = loops[moving[0]]  # x's free index u: u + c over its whole range must lie in y's
    offset = minus(ix, Var(loop.var))
    inside = nest.domain(y)
    if any(isinstance(n, Var) and n.name == loop.var for n in walk_expr(offset)):
        if {n.name for n in walk_expr(ix) if isinstance(n, Var)} == {loop.var}:
            fx = nest.index(ix, loop.var)  # (periodic in u alone, `x[j % 2]` against `x[0..2]`)
            if fx.a == 0:
                held = {r: proves(inside, Compare("<=", iy.lo, Const(fx(r)))) and proves(inside, Compare("<", Const(fx(r)), iy.hi))
                        for r in range(fx.p)}
                out = {r: not held[r] and (proves(inside, Compare(">", iy.lo, Const(fx(r))))
                                           or proves(inside, Compare(">=", Const(fx(r)), iy.hi))) for r in range(fx.p)}
                if all(held.values()):
                    return None  # (every value it takes lies in the range)
                if all(held[r] or out[r] for r in held):
                    inside_residues = [r for r in held if held[r]]
                    if not inside_residues:
                        return FALSE
                    if len(inside_residues) == 1:  # (`x[1..2]` against `x[j % 2]`: u % 2 == 1)
                        return ("mod", loop.var, Const(inside_residues[0]), fx.p)
        raise NotNest("a range against an index of slope other than 1")
    if proves(inside, Compare("<=", iy.lo, plus(loop.lo, offset))) and \
            proves(inside, Compare("<=", plus(loop.hi, offset), iy.hi)):
        return None
    return ("within", loop.var, minus(iy.lo, offset), minus(minus(iy.hi, offset), Const(1)))

def pinned_equation(nest, ix, iy, names: set):
    """x's index (over common loop indices at y's values and parameters) equals y's:
    TRUE or FALSE where both are periodic in one loop index (`names`: the index's, None
    where it reads a parameter) or constant and the residues decide it, else the
    equation."""
    import math

    y_names = {n.name for n in walk_expr(iy) if isinstance(n, Var)}
    var = next(iter(names), None) if names else None
    if names is not None and len(names) <= 1 and y_names <= ({var} if var else set()):
        fx, fy = nest.index(ix, var), nest.index(iy, var)
        if fx.a == fy.a:
            seen = {fx(r) == fy(r) for r in range(math.lcm(fx.p, fy.p))}
            if len(seen) == 1:
                return TRUE if seen.pop() else FALSE
    ix, iy = simplify(ix), simplify(iy)
    if isinstance(ix, BinOp) and isinstance(iy, BinOp) and ix.op == iy.op == "%" and ix.right == iy.right \
            and not isinstance(ix.right, Const) and isinstance(minus(ix.left, iy.left), Const):
        k = abs(minus(ix.left, iy.left).value)  # (equal residues: P divides k, P >= 1)
        return TRUE if k == 0 else settled(Compare("==", ix.right, Const(1))) if k == 1 else \
            settled(Compare("==", BinOp("%", Const(k), ix.right), Const(0)))
    equation = settled(Compare("==", ix, iy))
    return FALSE if never(equation) else equation

def equation(nest, ix, iy, var):
    """x's index over its free index `var` equals y's: ("mod", r, p) (var % p == r %
    p), ("at", e) (var == e), "any" (always), None (never), ("cases", [(condition over
    y's indices, one of those), ...]) (x's index periodic, y's of slope other than 0: one
    case per value x's index takes, `k == v`), or NotNest."""
    fx = nest.index(ix, var)
    y_names = [n.name for n in walk_expr(iy) if isinstance(n, Var)]
    y_var = y_names[0] if y_names else None
    if fx.a == 0:
        if y_var is not None:
            fy = nest.index(iy, y_var)
            shift = _shift(fx, fy)
            if shift is None and fy.a != 0 and fy.range is None:
                return ("cases", [(settled(Compare("==", iy, Const(v))), ("mod", Const(r), fx.p))
                                  for v, r in _values(fx)])
            if shift is None:
                raise NotNest("periodic indices that meet at some residues only")
            return ("mod", simplify(BinOp("+", Var(y_var), Const(shift))) if shift else Var(y_var), fx.p)
        value = simplify(iy).value
        residues = [r for r in range(fx.p) if fx.base[r] == value]
        if not residues:
            return None
        if len(residues) == fx.p:
            return "any"
        if len(residues) > 1:
            raise NotNest("an index equation with several residues")
        return ("mod", Const(residues[0]), fx.p)
    if fx.p == 1 and fx.a in (1, -1):
        return ("at", simplify(BinOp("*", Const(fx.a), BinOp("-", iy, Const(fx.base[0])))))
    raise NotNest("an index of slope other than +-1")

def _values(fx: Index) -> list:
    """[(value, its one residue)] of a periodic index, or NotNest where a value has
    several residues."""
    out: dict = {}
    for r in range(fx.p):
        if fx.base[r] in out:
            raise NotNest("an index equation with several residues")
        out[fx.base[r]] = r
    return sorted(out.items())


def offset_equation(ix, iy, var):
    """x's index over its free index `var` beside fixed names (common indices at y's
    values, parameters) equals y's: `(a * var + E) % p == G % p` is ("mod", a * (G - E), p),
    and `a * var + E == G` is ("at", a * (G - E)), for a = +-1; else NotNest."""
    from semantics.simplify import expr, linear

    ix, iy = simplify(ix), simplify(iy)
    modular = isinstance(ix, BinOp) and ix.op == "%" and (isinstance(ix.right, Const) and ix.right.value > 0 or not any(
        isinstance(n, Var) and n.name == var for n in walk_expr(ix.right)))  # (a divisor over parameters: >= 1, check_nest)
    lin = linear(ix.left if modular else ix)
    a = lin.pop((Var(var),), 0)
    rest = expr(lin)
    if a not in (1, -1) or any(isinstance(n, Var) and n.name == var for n in walk_expr(rest)):
        raise NotNest("an index of slope other than +-1 beside other names")
    if not modular:
        return ("at", simplify(BinOp("*", Const(a), BinOp("-", iy, rest))))
    p = ix.right.value if isinstance(ix.right, Const) else ix.right
    if isinstance(iy, BinOp) and iy.op == "%" and simplify(iy.right) == ix.right:
        target = iy.left
    elif isinstance(iy, Const) and 0 <= iy.value and (iy.value == 0 or isinstance(p, int) and iy.value < p):
        target = iy
    else:
        raise NotNest("a periodic index against one of another period")
    return ("mod", simplify(BinOp("*", Const(a), BinOp("-", target, rest))), p)


def _shift(fx: Index, fy: Index) -> int | None:
    """s when fx(u) == fy(w) exactly where u % p == (w + s) % p (p: fx's period), for
    fx periodic in u and fy periodic in w; else None."""
    import math

    if fy.a != 0 or fy.range is not None:
        return None
    span = math.lcm(fx.p, fy.p)
    found = None
    for w in range(span):
        residues = [r for r in range(fx.p) if fx.base[r] == fy(w)]
        if len(residues) != 1:
            return None
        s = (residues[0] - w) % fx.p
        if found is not None and s != found:
            return None
        found = s
    return found
