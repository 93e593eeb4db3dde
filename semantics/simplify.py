"""Expression simplification: readable, linear-normalized integer expressions.

Integer expressions are normalized to a linear combination of atoms (variables,
`iters(v)`, `count(F)`, and irreducible subterms such as `i % 2` or `max(a, b)`), with constant
folding everywhere; conditions are folded when constant. Folding follows the
evaluation rules of semantics/evaluate.py (floor `//` and `%`), so a simplified
expression has the same value as the original under every environment where the
original has one.
"""

from __future__ import annotations

import functools
import itertools
from fractions import Fraction

from semantics.evaluate import eval_cond
from semantics.ir import (
    And, BinOp, Compare, Const, Count, IfExpr, Iters, Max, Min, Neg, Not, Or, Var,
)

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}

Lin = dict  # monomial (a sorted tuple of atoms; None for the constant) -> coefficient


def _add(acc: Lin, other: Lin, scale: int = 1) -> Lin:
    out = dict(acc)
    for key, coef in other.items():
        out[key] = out.get(key, 0) + scale * coef
        if out[key] == 0 and key is not None:
            del out[key]
    return out


def _const(lin: Lin) -> int | None:
    if all(k is None for k in lin):
        return lin.get(None, 0)
    return None


def _mono(*atoms) -> tuple:
    return tuple(sorted(atoms, key=_sort_key))


def _mul(a: Lin, b: Lin) -> Lin:
    out: Lin = {}
    for ka, ca in a.items():
        for kb, cb in b.items():
            key = _mono(*(ka or ()), *(kb or ())) or None
            out = _add(out, {key: ca * cb})
    return out


def linear(node) -> Lin:
    """The linear form of an integer expression (sub-terms simplified); a fresh dict
    the caller may change."""
    return dict(_linear(node))


@functools.lru_cache(maxsize=1 << 16)
def _linear(node) -> Lin:
    """`linear`, memoized: nodes are immutable and hashed once (ir.py's cache_hash),
    and the same sub-terms recur across the planner's counts (the 100-op chain asks
    17,770 simplifications of 3,036 distinct nodes). Results are shared: never
    changed in place."""
    match node:
        case Const(value=v):
            return {None: v}
        case Var() | Iters() | Count():
            return {(node,): 1}
        case Neg(operand=a):
            return _add({}, _linear(a), -1)
        case BinOp(op="+", left=a, right=b):
            return _add(_linear(a), _linear(b))
        case BinOp(op="-", left=a, right=b):
            return _add(_linear(a), _linear(b), -1)
        case BinOp(op="*", left=a, right=b):
            return _mul(_linear(a), _linear(b))
        case BinOp(op=op, left=a, right=b):  # // and %
            la, lb = _linear(a), _linear(b)
            ca, cb = _const(la), _const(lb)
            if cb is not None and cb != 0:
                if ca is not None and isinstance(ca, int):
                    return {None: ca // cb if op == "//" else ca % cb}
                if op == "//" and cb == 1:
                    return la
                if op == "//" and cb > 0 and _always_divisible(la, cb):
                    # an exact division (a sum formula such as n * (n - 1) // 2)
                    return {k: Fraction(c) / cb for k, c in la.items()}
                if op == "%" and cb in (1, -1):
                    return {None: 0}
                if op == "%" and all(isinstance(c, int) and c % cb == 0 for k, c in la.items() if k is not None) \
                        and isinstance(la.get(None, 0), int):
                    # (k*m*x + c) % m == c % m
                    return {None: la.get(None, 0) % cb}
                whole = {k: c for k, c in la.items() if k is not None and isinstance(c, int) and c % cb == 0}
                if whole and len(whole) < len(la):
                    # (m*P + R) // m == P + R // m  and  (m*P + R) % m == R % m
                    rest = {k: c for k, c in la.items() if k not in whole}
                    inner = _linear(BinOp(op, expr(rest), Const(cb)))
                    if op == "%":
                        return inner
                    return _add(inner, {k: c // cb for k, c in whole.items()})
            if cb is None and op == "%":
                unwrapped = _unwrapped(la, lb)
                if unwrapped is not None:
                    return _linear(BinOp("%", expr(unwrapped), expr(lb)))
            if cb is None:
                shifted = _shifted(la, lb)
                if shifted is not None:
                    # (a + k*m) % m == a % m  and  (a + k*m) // m == a // m + k, for every
                    # m != 0 (floor division); m == 0 stays an error, the divisor is kept.
                    rest, k = shifted
                    inner = _linear(BinOp(op, expr(rest), expr(lb)))
                    return inner if op == "%" else _add(inner, {None: k})
            if op == "%" and list(la.values()) == [1]:
                mono = next(iter(la))
                if mono is not None and len(mono) == 1 and isinstance(mono[0], BinOp) \
                        and mono[0].op == "%" and _linear(mono[0].right) == lb:
                    return la  # (a % m) % m == a % m
            return {(BinOp(op, _operand(la), _operand(lb)),): 1}
        case Min() | Max():
            la, lb = _linear(node.left), _linear(node.right)
            ca, cb = _const(la), _const(lb)
            if ca is not None and cb is not None:
                return {None: min(ca, cb) if isinstance(node, Min) else max(ca, cb)}
            if la == lb:
                return la
            diff = _const(_add(la, lb, -1))
            if diff is not None:  # same up to a constant
                pick_left = (diff <= 0) == isinstance(node, Min)
                return la if pick_left else lb
            return {(type(node)(expr(la), expr(lb)),): 1}
        case IfExpr(cond=c, then=a, else_=b):
            c = cond(c)
            value = folded(c)
            if value is not None:
                return _linear(a if value else b)
            la, lb = _linear(a), _linear(b)
            if la == lb:
                return la
            return {(IfExpr(c, expr(la), expr(lb)),): 1}
    raise TypeError(f"not an integer expression: {node!r}")


def _operand(lin: Lin):
    """The expression of an operand of `//` or `%`: a negative constant as the text reads
    it back (`-2 % (D + 1)` parses as the negation of 2, not as the constant -2)."""
    c = _const(lin)
    if c is not None and c < 0:
        return Neg(Const(-c))
    return expr(lin)


def _unwrapped(la: Lin, lb: Lin) -> Lin | None:
    """a with each term `k * (e % m)` written `k * e`, for the divisor m: then
    `(a % m)` is unchanged, since e % m and e differ by a multiple of m (`(i % (D + 1)
    - 1) % (D + 1)` is `(i - 1) % (D + 1)`); None when a has no such term (or is one)."""
    inner = [mono for mono, c in la.items() if mono is not None and len(mono) == 1 and isinstance(mono[0], BinOp)
             and mono[0].op == "%" and isinstance(c, int) and _linear(mono[0].right) == lb]
    if not inner or la == {inner[0]: 1}:
        return None
    out = dict(la)
    for mono in inner:
        out = _add({k: c for k, c in out.items() if k != mono}, _linear(mono[0].left), la[mono])
    return out


def _shifted(la: Lin, lb: Lin) -> tuple[Lin, int] | None:
    """(a - k*m, k) for an integer k != 0 that leaves a with fewer terms, when the
    divisor m is not constant (`(i - D - 1) % (D + 1)` is `i % (D + 1)`); else None."""
    size = sum(1 for mono, c in la.items() if mono is not None and c)
    for mono, coef in lb.items():
        if mono is None or not coef or mono not in la:
            continue
        k = Fraction(la[mono]) / Fraction(coef)
        if k.denominator != 1:
            continue
        rest = _add(la, lb, -int(k))
        if all(isinstance(c, int) or Fraction(c).denominator == 1 for c in rest.values()) \
                and sum(1 for m, c in rest.items() if m is not None and c) < size:
            return {m: c for m, c in rest.items() if c}, int(k)
    return None


def _always_divisible(lin: Lin, d: int) -> bool:
    """Is the polynomial a multiple of d for every integer value of its atoms?
    Its value mod d is periodic with period d in each atom: check one period."""
    if any(not isinstance(c, int) and Fraction(c).denominator != 1 for c in lin.values()):
        return False
    atoms = sorted({a for mono in lin if mono for a in mono}, key=_sort_key)
    if len(atoms) > 4 or d > 6:
        return False
    for point in itertools.product(range(d), repeat=len(atoms)):
        value = dict(zip(atoms, point))
        total = 0
        for mono, coef in lin.items():
            term = int(coef)
            for a in mono or ():
                term *= value[a]
            total += term
        if total % d:
            return False
    return True


def folded(c) -> bool | None:
    """The value of a condition without free names (True or False); None otherwise."""
    try:
        return eval_cond(c, {})
    except (KeyError, Exception):  # a free name: not constant
        return None


def _conjuncts(node) -> list:
    """The operands of a left-nested chain of `and` (a condition as printed)."""
    out = []
    while isinstance(node, And):
        out.append(node.right)
        node = node.left
    out.append(node)
    return out


def cond(node):
    """A simplified condition (constant comparisons are folded where they occur)."""
    match node:
        case Compare(op=op, left=a, right=b):
            diff = _add(_linear(a), _linear(b), -1)
            value = _const(diff)
            if value is not None:
                return Compare(op, Const(value), Const(0))
            terms = [(k, c) for k, c in diff.items() if k is not None]
            if len(terms) == 1 and terms[0][1] in (1, -1) and isinstance(diff.get(None, 0), int):
                # m + k op 0  =>  m op -k ;  -m + k op 0  =>  m op' k
                (mono, coef), k = terms[0], diff.get(None, 0)
                if coef == 1:
                    return Compare(op, _mono_expr(mono), Const(-k))
                return Compare(_FLIP[op], _mono_expr(mono), Const(k))
            return Compare(op, simplify(a), simplify(b))
        case And(left=a, right=b):
            a, b = cond(a), cond(b)
            fa, fb = folded(a), folded(b)
            if fa is False or fb is False:
                return Compare("==", Const(0), Const(1))
            if fa is True:
                return b
            if fb is True or b in _conjuncts(a):
                return a
            return And(a, b)
        case Or(left=a, right=b):
            a, b = cond(a), cond(b)
            fa, fb = folded(a), folded(b)
            if fa is True or fb is True:
                return Compare("==", Const(0), Const(0))
            if fa is False:
                return b
            if fb is False:
                return a
            return Or(a, b)
        case Not(operand=a):
            a = cond(a)
            fa = folded(a)
            if fa is not None:
                return Compare("==", Const(0), Const(0 if not fa else 1))
            return Not(a)
    raise TypeError(f"not a condition: {node!r}")


@functools.lru_cache(maxsize=1 << 16)
def _sort_key(atom) -> tuple:
    match atom:
        case Var(name=n):
            return (0, n)
        case Iters(var=v):
            return (1, v)
        case Count(engine=e):
            return (2, e)
    from semantics.printer import print_expr

    return (3, print_expr(atom))


def _mono_key(mono: tuple) -> tuple:
    return (len(mono) == 1 and not isinstance(mono[0], (Var, Iters, Count)), -len(mono), [_sort_key(a) for a in mono])


def _mono_expr(mono: tuple):
    result = mono[0]
    for atom in mono[1:]:
        result = BinOp("*", result, atom)
    return result


def expr(lin: Lin):
    """An expression for a polynomial: positive terms first, the constant last;
    fractional coefficients become one exact division at the end."""
    scaled, scale = integral(lin)
    if scale != 1:
        return BinOp("//", expr(scaled), Const(scale))
    lin = {k: int(c) for k, c in lin.items()}
    terms = sorted(((k, c) for k, c in lin.items() if k is not None and c != 0),
                   key=lambda kc: (kc[1] < 0, _mono_key(kc[0])))
    constant = lin.get(None, 0)
    result = None
    for mono, coef in terms:
        atom = _mono_expr(mono)
        term = atom if abs(coef) == 1 else BinOp("*", Const(abs(coef)), atom)
        if result is None:
            result = term if coef > 0 else Neg(term)
        else:
            result = BinOp("+" if coef > 0 else "-", result, term)
    if result is None:
        return Const(constant)
    if constant > 0:
        return BinOp("+", result, Const(constant))
    if constant < 0:
        return BinOp("-", result, Const(-constant))
    return result


def integral(lin: Lin) -> tuple[Lin, int]:
    """A linear form scaled to integer coefficients, and the scale (the least common
    denominator; 1 when every coefficient is whole). A form with fractions is an
    integer as a whole, not term by term: written once over the scale, never part by
    part (each part would be floored)."""
    scale = 1
    for c in lin.values():
        d = Fraction(c).denominator
        scale = scale * d // _gcd(scale, d)
    return ({k: int(c * scale) for k, c in lin.items()} if scale != 1 else lin), scale


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a


@functools.lru_cache(maxsize=1 << 12)
def simplify(node):
    """A simplified, equivalent integer expression. Memoized as `_linear` is (a pure
    function of the node's value; locations are not part of it): the planner simplifies
    the same sums thousands of times per kernel, and rebuilding them (`expr`) was
    the simplifier's largest cost. 4,096 entries: as fast on the suite as a larger
    cache, which only holds more memory on long programs."""
    return expr(_linear(node))
