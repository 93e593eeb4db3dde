"""Closed forms of sums over a loop range.

A summand free of the loop index gives a product; a polynomial of degree <= 2 gives
Faulhaber's formulas; `if` terms split the range by their condition (intervals narrow
it, one congruence `w % m == r` changes variable to w = first + m*t, negations and
disjunctions subtract and add); `e // m` and `e % m` of the index split the range by
residue, `min`/`max` at the point where their sides cross. Anything else raises
`Unsupported`.
"""

from __future__ import annotations

from semantics.ir import (
    And, BinOp, Compare, Const, IfExpr, Max, Min, Neg, Not, Or, Var,
)
from semantics.simplify import cond as simplify_cond, integral, linear, simplify
from algorithm.threshold.facts import Facts, Unsupported, mentions, nonneg_diff, refine, subst, tidy

# ------------------------------------------------------------ guard counting

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


def _solve_linear(side, w: str):
    """side == coef * w + rest, with coef in {1, -1}: (coef, rest) or None."""
    lin = linear(side)
    coef = lin.get((Var(w),), 0)
    rest = {k: c for k, c in lin.items() if k != (Var(w),)}
    from semantics.simplify import expr as lin_expr

    rest_expr = lin_expr(rest)
    if coef in (1, -1) and not mentions(rest_expr, w):
        return coef, rest_expr
    return None


def as_interval(c, w: str):
    """A comparison of w with a w-free expression, as a half-open interval (lo, hi); None bound = unbounded."""
    if not isinstance(c, Compare) or c.op in ("!=",):
        return None
    diff = simplify(BinOp("-", c.left, c.right))  # diff op 0
    solved = _solve_linear(diff, w)
    if solved is None:
        return _scaled_interval(diff, c.op, w) or _floor_interval(c, w)
    coef, rest = solved  # coef*w + rest op 0
    op = c.op if coef == 1 else _FLIP[c.op]
    bound = simplify(Neg(rest)) if coef == 1 else rest  # w op bound
    one = Const(1)
    return {
        "==": (bound, simplify(BinOp("+", bound, one))),
        "<": (None, bound),
        "<=": (None, simplify(BinOp("+", bound, one))),
        ">": (simplify(BinOp("+", bound, one)), None),
        ">=": (bound, None),
    }[op]


def without_extrema(c, w: str):
    """A comparison with a `min` or `max` of index w on a side, as the comparisons of its
    arguments: `max(w, b) < e` holds when `w < e and b < e`, `a < max(w, e)` when
    `a < w or a < e` (and so on for `min` and the other orders); None when neither side
    is such a `min` or `max`."""
    if not isinstance(c, Compare) or c.op not in ("<", "<=", ">", ">="):
        return None
    small, large, op = (c.left, c.right, c.op) if c.op in ("<", "<=") else (c.right, c.left, _FLIP[c.op])
    for side, is_small in ((small, True), (large, False)):
        if isinstance(side, (Min, Max)) and mentions(side, w):
            parts = [Compare(op, arg, large) if is_small else Compare(op, small, arg) for arg in (side.left, side.right)]
            parts = [without_extrema(part, w) or part for part in parts]
            both = isinstance(side, Max) == is_small  # max below, min above: each argument
            return And(*parts) if both else Or(*parts)
    return None


def _scaled_interval(diff, op: str, w: str):
    """`m*w + rest  op  0` with an integer |m| > 1 and rest free of w, as an interval of
    w with floor-division ends (`==` gives an empty interval when m does not divide)."""
    from semantics.simplify import expr as lin_expr

    lin = linear(diff)
    m = lin.get((Var(w),), 0)
    rest = lin_expr({k: c for k, c in lin.items() if k != (Var(w),)})
    if not isinstance(m, int) or abs(m) < 2 or mentions(rest, w):
        return None
    if m < 0:
        m, rest, op = -m, simplify(Neg(rest)), _FLIP[op]
    a = simplify(Neg(rest))  # m*w op a
    floor = lambda e: simplify(BinOp("//", e, Const(m)))
    ceil = floor(BinOp("+", a, Const(m - 1)))
    after = lambda e: simplify(BinOp("+", e, Const(1)))
    return {
        "==": (ceil, after(floor(a))),
        "<": (None, after(floor(BinOp("-", a, Const(1))))),
        "<=": (None, after(floor(a))),
        ">": (after(floor(a)), None),
        ">=": (ceil, None),
    }[op]


def _floor_interval(c, w: str):
    """`(w + k) // m  op  e` (constant m > 0, e free of w) as an interval of w:
    (w + k) // m == e  <=>  m*e - k <= w < m*e - k + m, and so on."""
    for left, right, op in ((c.left, c.right, c.op), (c.right, c.left, _FLIP[c.op])):
        if not (isinstance(left, BinOp) and left.op == "//" and isinstance(left.right, Const)
                and left.right.value > 0 and not mentions(right, w)):
            continue
        solved = _solve_linear(left.left, w)
        if solved is None or solved[0] != 1:
            continue
        m, k = left.right.value, solved[1]
        start = lambda e: simplify(BinOp("-", BinOp("*", Const(m), e), k))  # least w with (w + k) // m >= e
        nxt = simplify(BinOp("+", right, Const(1)))
        return {
            "==": (start(right), start(nxt)),
            "<": (None, start(right)),
            "<=": (None, start(nxt)),
            ">": (start(nxt), None),
            ">=": (start(right), None),
        }.get(op)
    return None


def as_congruence(c, w: str):
    """`(w + k) % m == r` or `(-w + k) % m == r` (m free of w, assumed > 0): (m, r,
    residue of w) or None."""
    if not isinstance(c, Compare) or c.op != "==":
        return None
    for left, right in ((c.left, c.right), (c.right, c.left)):
        if isinstance(left, BinOp) and left.op == "%" and not mentions(right, w) and not mentions(left.right, w):
            m = left.right
            solved = _solve_linear(left.left, w)
            if solved and solved[0] == 1:
                # w + k == r (mod m)  <=>  w % m == (r - k) % m, when 0 <= r < m
                return m, right, simplify(BinOp("%", BinOp("-", right, solved[1]), m))
            if solved and solved[0] == -1:
                # -w + k == r (mod m)  <=>  w % m == (k - r) % m, when 0 <= r < m
                return m, right, simplify(BinOp("%", BinOp("-", solved[1], right), m))
    return None


def guard_count(c, w: str, lo, hi, facts: Facts):
    """Closed form of #{w in [lo, hi) : c}."""
    c = simplify_cond(c)
    whole = nonneg_diff(hi, lo, facts)
    if not mentions(c, w):
        return simplify(IfExpr(c, whole, Const(0)))
    match c:
        case Not(operand=a):
            return simplify(BinOp("-", whole, guard_count(a, w, lo, hi, facts)))
        case Or(left=a, right=b):
            both = guard_count(And(a, b), w, lo, hi, facts)
            return simplify(BinOp("-", BinOp("+", guard_count(a, w, lo, hi, facts), guard_count(b, w, lo, hi, facts)), both))
        case And(left=a, right=b):
            for first, second in ((a, b), (b, a)):
                if not mentions(first, w):
                    return simplify(IfExpr(first, guard_count(second, w, lo, hi, facts), Const(0)))
                interval = as_interval(first, w)
                if interval is not None:
                    new_lo = lo if interval[0] is None else simplify(Max(lo, interval[0]))
                    new_hi = hi if interval[1] is None else simplify(Min(hi, interval[1]))
                    return guard_count(second, w, refine(new_lo, facts), refine(new_hi, facts), facts)
            raise Unsupported("cannot count the iterations where a conjunction holds")
        case Compare(op="!="):
            return simplify(BinOp("-", whole, guard_count(Compare("==", c.left, c.right), w, lo, hi, facts)))
    interval = as_interval(c, w)
    if interval is not None:
        new_lo = lo if interval[0] is None else Max(lo, interval[0])
        new_hi = hi if interval[1] is None else Min(hi, interval[1])
        return nonneg_diff(refine(simplify(new_hi), facts), refine(simplify(new_lo), facts), facts)
    congruence = as_congruence(c, w)
    if congruence is not None:
        m, r, residue = congruence
        if not facts.proves(Compare(">", m, Const(0))):
            raise Unsupported("a congruence modulo a value that may be <= 0")

        def upto(n):  # #{v < n : v % m == residue} - (same at 0), Python floors
            return BinOp("//", BinOp("+", BinOp("-", n, residue), BinOp("-", m, Const(1))), m)

        count = Max(Const(0), BinOp("-", upto(hi), upto(lo)))
        valid = And(Compare("<=", Const(0), r), Compare("<", r, m))
        return tidy(IfExpr(valid, count, Const(0)), facts)
    raise Unsupported("cannot count the iterations where a condition holds")


# ------------------------------------------------------------------- sums


def loop_sum(summand, w: str, lo, hi, facts: Facts):
    """Closed form of the sum of `summand` for w in [lo, hi) (0 when empty)."""
    inner = facts.with_(Compare("<=", lo, Var(w)), Compare("<", Var(w), hi))
    summand = tidy(summand, inner)
    if not mentions(summand, w):
        return simplify(BinOp("*", nonneg_diff(hi, lo, facts), summand))
    return simplify(_sum_under(summand, [], w, lo, hi, facts))


MAX_RESIDUE_SPLIT = 6


def _atoms(node):
    """Every subexpression of an integer expression (conditions included)."""
    yield node
    match node:
        case BinOp(left=a, right=b) | Min(left=a, right=b) | Max(left=a, right=b) \
                | Compare(left=a, right=b) | And(left=a, right=b) | Or(left=a, right=b):
            yield from _atoms(a)
            yield from _atoms(b)
        case Neg(operand=a) | Not(operand=a):
            yield from _atoms(a)
        case IfExpr(cond=c, then=a, else_=b):
            yield from _atoms(c)
            yield from _atoms(a)
            yield from _atoms(b)


def _replace(node, target, replacement):
    if node == target:
        return replacement
    match node:
        case BinOp(op=op, left=a, right=b):
            return BinOp(op, _replace(a, target, replacement), _replace(b, target, replacement))
        case Compare(op=op, left=a, right=b):
            return Compare(op, _replace(a, target, replacement), _replace(b, target, replacement))
        case Min(left=a, right=b) | Max(left=a, right=b) | And(left=a, right=b) | Or(left=a, right=b):
            return type(node)(_replace(a, target, replacement), _replace(b, target, replacement))
        case Neg(operand=a) | Not(operand=a):
            return type(node)(_replace(a, target, replacement))
        case IfExpr(cond=c, then=a, else_=b):
            return IfExpr(_replace(c, target, replacement), _replace(a, target, replacement),
                          _replace(b, target, replacement))
    return node


def _split(summand, conds: list, w: str, lo, hi, facts: Facts, depth: int):
    """Remove one non-polynomial use of w by splitting the range: `e // m` and `e % m`
    (constant m) by the residue of w (w = m*t + s makes them affine in t), and
    `min`/`max` at the point where their sides cross. None if there is none."""
    for atom in _atoms(BinOp("+", summand, _conjoin_all(conds))):
        match atom:
            case BinOp(op="//" | "%", left=a, right=Const(value=m)) if 1 < m <= MAX_RESIDUE_SPLIT and mentions(a, w):
                total = Const(0)
                for residue in range(m):
                    t = f"{w}#r{residue}"  # w's residue class: a name per (w, residue)
                    shift = {w: BinOp("+", BinOp("*", Const(m), Var(t)), Const(residue))}
                    t_lo = simplify(BinOp("//", BinOp("+", BinOp("-", lo, Const(residue)), Const(m - 1)), Const(m)))
                    t_hi = simplify(BinOp("//", BinOp("+", BinOp("-", hi, Const(residue)), Const(m - 1)), Const(m)))
                    part = _sum_under(simplify(subst(summand, shift)), [simplify_cond(subst(c, shift)) for c in conds],
                                      t, t_lo, t_hi, facts, depth + 1)
                    total = BinOp("+", total, part)
                return total
            case Min(left=a, right=b) | Max(left=a, right=b) if mentions(atom, w):
                first = Compare("<=", a, b)  # min takes a here, max takes b
                take_first, take_second = (a, b) if isinstance(atom, Min) else (b, a)
                return BinOp("+",
                             _sum_under(simplify(_replace(summand, atom, take_first)), conds + [first], w, lo, hi, facts,
                                        depth + 1),
                             _sum_under(simplify(_replace(summand, atom, take_second)), conds + [Not(first)], w, lo, hi,
                                        facts, depth + 1))
    return None


def _conjoin_all(conds):
    # Conditions only matter to _split for the atoms they hold; wrap them in an if.
    out = Const(0)
    for c in conds:
        out = IfExpr(c, out, Const(0))
    return out


def _sum_under(summand, conds: list, w: str, lo, hi, facts: Facts, depth: int = 0):
    """Sum of `summand` over the w in [lo, hi) where every condition in `conds` holds;
    `if` terms of the summand split the conditions (then / else)."""
    try:
        return _sum_under_polynomial(summand, conds, w, lo, hi, facts)
    except Unsupported:
        if depth > 3:
            raise
        split = _split(summand, conds, w, lo, hi, facts, depth)
        if split is None:
            raise
        return split


def _sum_under_polynomial(summand, conds: list, w: str, lo, hi, facts: Facts):
    lin, scale = integral(linear(summand))
    if scale > 1:
        from semantics.simplify import expr as lin_expr

        inner = _sum_under_polynomial(lin_expr(lin), conds, w, lo, hi, facts)
        return simplify(BinOp("//", inner, Const(scale)))
    poly: dict = {}
    total = Const(0)
    for mono, coef in lin.items():
        atoms = mono or ()
        branches = [a for a in atoms if isinstance(a, IfExpr) and mentions(a, w)]
        others = [a for a in atoms if a not in branches]
        if any(a != Var(w) and mentions(a, w) for a in others):
            raise Unsupported("a sum over a loop whose terms depend on the index in a non-polynomial way")
        if not branches:
            poly[mono] = poly.get(mono, 0) + coef
            continue
        if len(branches) != 1 or any(a == Var(w) for a in others):
            raise Unsupported("a sum over a loop of products of index-dependent conditions")
        ite = branches[0]
        scale = _product(others, coef)
        total = BinOp("+", total, BinOp("*", scale, BinOp(
            "+", _sum_under(ite.then, conds + [ite.cond], w, lo, hi, facts),
            _sum_under(ite.else_, conds + [Not(ite.cond)], w, lo, hi, facts))))
    if poly:
        from semantics.simplify import expr as lin_expr

        total = BinOp("+", total, guarded_sum(conds, lin_expr(poly), w, lo, hi, facts))
    return total


def _product(atoms, coef):
    result = Const(coef)
    for atom in atoms:
        result = BinOp("*", result, atom)
    return result


def guarded_sum(conds: list, poly, w: str, lo, hi, facts: Facts):
    """Sum of a polynomial in w (degree <= 2) over the w in [lo, hi) where all of
    `conds` hold: intervals narrow the range, one congruence w = w0 + m*t changes
    variable, negations and disjunctions subtract and add."""
    conds = [simplify_cond(c) for c in conds]
    for n, c in enumerate(conds):
        rest = conds[:n] + conds[n + 1:]
        if not mentions(c, w):
            return IfExpr(c, guarded_sum(rest, poly, w, lo, hi, facts), Const(0))
        match c:
            case And(left=a, right=b):
                return guarded_sum(rest + [a, b], poly, w, lo, hi, facts)
            case Or(left=a, right=b):
                return BinOp("-", BinOp("+", guarded_sum(rest + [a], poly, w, lo, hi, facts),
                                        guarded_sum(rest + [b], poly, w, lo, hi, facts)),
                             guarded_sum(rest + [a, b], poly, w, lo, hi, facts))
            case Not(operand=a):
                return BinOp("-", guarded_sum(rest, poly, w, lo, hi, facts), guarded_sum(rest + [a], poly, w, lo, hi, facts))
            case Compare(op="!="):
                return BinOp("-", guarded_sum(rest, poly, w, lo, hi, facts),
                             guarded_sum(rest + [Compare("==", c.left, c.right)], poly, w, lo, hi, facts))
        interval = as_interval(c, w)
        if interval is None and (plain := without_extrema(c, w)) is not None:
            return guarded_sum(rest + [plain], poly, w, lo, hi, facts)
        if interval is not None:
            new_lo = lo if interval[0] is None else simplify(Max(lo, interval[0]))
            new_hi = hi if interval[1] is None else simplify(Min(hi, interval[1]))
            return guarded_sum(rest, poly, w, refine(new_lo, facts), refine(new_hi, facts), facts)
    congruences = [as_congruence(c, w) for c in conds]
    if any(c is None for c in congruences) or len(congruences) > 1:
        raise Unsupported("a sum over a loop under a condition this algorithm cannot count")
    if not congruences:
        return _power_sum(poly, w, lo, hi, facts)
    m, r, residue = congruences[0]
    if not facts.proves(Compare(">", m, Const(0))):
        raise Unsupported("a congruence modulo a value that may be <= 0")
    # w = first + m*t for t in [0, count): first is the least w >= lo with w % m == residue.
    first = BinOp("+", lo, BinOp("%", BinOp("-", residue, lo), m))
    count = Max(Const(0), BinOp("//", BinOp("+", BinOp("-", hi, first), BinOp("-", m, Const(1))), m))
    t = f"{w}#t"  # w = first + m * t: a name per summed index
    shifted = simplify(subst(poly, {w: BinOp("+", first, BinOp("*", m, Var(t)))}))
    valid = And(Compare("<=", Const(0), r), Compare("<", r, m))
    return IfExpr(valid, _power_sum(shifted, t, Const(0), simplify(count), facts), Const(0))


def _power_sum(poly, w: str, lo, hi, facts: Facts):
    """Sum of a polynomial of degree <= 2 in w for w in [lo, hi) (0 when empty)."""
    lin, scale = integral(linear(poly))
    if scale > 1:
        from semantics.simplify import expr as lin_expr

        return simplify(BinOp("//", _power_sum(lin_expr(lin), w, lo, hi, facts), Const(scale)))
    by_degree: dict[int, dict] = {}
    for mono, coef in lin.items():
        atoms = mono or ()
        degree = sum(1 for a in atoms if a == Var(w))
        rest = tuple(a for a in atoms if a != Var(w))
        if any(mentions(a, w) for a in rest):
            raise Unsupported("a sum over a loop whose terms depend on the index in a non-polynomial way")
        if degree > 2:
            raise Unsupported("a sum of a polynomial of degree > 2 in the loop index")
        by_degree.setdefault(degree, {})
        by_degree[degree][rest or None] = by_degree[degree].get(rest or None, 0) + coef
    from semantics.simplify import expr as lin_expr

    a, b = lo, hi
    power_sums = {
        0: BinOp("-", b, a),
        1: BinOp("//", BinOp("*", BinOp("-", b, a), BinOp("-", BinOp("+", a, b), Const(1))), Const(2)),
        2: BinOp("-", _sq_sum(b), _sq_sum(a)),
    }
    total = Const(0)
    for degree, coefs in by_degree.items():
        total = BinOp("+", total, BinOp("*", lin_expr(coefs), power_sums[degree]))
    total = simplify(total)
    if not facts.proves(Compare(">=", hi, lo)):
        total = IfExpr(Compare(">", hi, lo), total, Const(0))
    return total


def _sq_sum(n):
    # sum of v*v for v in [0, n): (n - 1) n (2n - 1) / 6
    return BinOp("//", BinOp("*", BinOp("*", BinOp("-", n, Const(1)), n), BinOp("-", BinOp("*", Const(2), n), Const(1))), Const(6))
