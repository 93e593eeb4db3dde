"""Sums of counts over a loop index (verify/proof/counts.py): a piece's atoms on the
index become its bounds and the polynomial is summed by Faulhaber's formulas; an index
under `//` or `%` is first split by residue class. The checker's own: nothing here
comes from algorithm/."""

from __future__ import annotations

import functools
import itertools
import math

import sympy as sp

from verify.proof.periods import by_parameter, class_sum, floor_sum
from verify.proof.pieces import Atoms, Unsupported, simplify_pieces, sym


@functools.lru_cache(maxsize=None)
def _power_sum(k: int) -> sp.Expr:
    """S_k(n) = sum of w**k for w in 0..n-1, as a polynomial in n."""
    n, w = sym("_n"), sym("_w")
    return sp.expand(sp.summation(w ** k, (w, 0, n - 1)))


def _faulhaber(value: sp.Expr, w: sp.Symbol, lo: sp.Expr, hi: sp.Expr) -> sp.Expr:
    """sum of value for w in lo..hi inclusive (lo <= hi + 1)."""
    poly = sp.Poly(value, w)
    total = sp.Integer(0)
    n = sym("_n")
    for (k,), coeff in poly.terms():
        s = _power_sum(k)
        total += coeff * (s.subs(n, hi + 1) - s.subs(n, lo))
    return sp.expand(total)


def _bound(kind: str, e: sp.Expr, w: sp.Symbol, atoms: Atoms):
    """An atom on w as ('lo'|'hi'|'eq', bound, conditions free of w that it also
    needs), or None when it does not mention w."""
    if not atoms.mentions(e, w):
        return None
    if any(s in atoms.defs and atoms.mentions(atoms.defs[s][1], w) for s in e.free_symbols):
        raise Unsupported(f"'//' or '%' of the loop index {w}")
    poly = sp.Poly(e, w)
    if poly.degree() != 1:
        raise Unsupported(f"a condition non-linear in the loop index {w}")
    c = poly.coeff_monomial(w)
    rest = sp.expand(e - c * w)
    if c == 1:  # w + rest >= 0 / == 0
        return ("eq" if kind == "eq" else "lo", -rest, ())
    if c == -1:  # rest - w >= 0 / == 0
        return ("eq" if kind == "eq" else "hi", rest, ())
    if kind == "eq" and c.is_Integer:
        # c * w + rest == 0 with |c| > 1 (`if i == 0` summed over the residue class
        # i = 2 * t + 1): w = -rest / c, where c divides rest; nowhere else.
        m = abs(int(c))
        quotient = atoms.floor_div(rest if c < 0 else -rest, m)
        return ("eq", quotient, (("eq", atoms.residue(rest, m)),))
    if kind != "eq" and (c.is_Integer or atoms.positive(c) or atoms.positive(-c)):
        # c * w + rest >= 0 with |c| > 1 (`if i >= 16 * j`, summed over j; `w >= lo`
        # with w = K * t + s, summed over t): a bound by floor division, an atom over the
        # other names (rest is free of w).
        if c.is_Integer and c > 0 or not c.is_Integer and atoms.positive(c):  # w >= -floor(rest / c)
            return ("lo", -atoms.floor_div(rest, _divisor(c)), ())
        return ("hi", atoms.floor_div(rest, _divisor(-c)), ())  # w <= floor(rest / -c)
    raise Unsupported(f"a condition with coefficient {c} on the loop index {w}")


def _divisor(c: sp.Expr) -> int | sp.Expr:
    return int(c) if c.is_Integer else c


MAX_PERIOD = 16  # residue classes a sum over an index under `//` or `%` is split into


def _symbols(pieces) -> set:
    out = set()
    for conds, value in pieces:
        out |= value.free_symbols
        for _, e in conds:
            out |= e.free_symbols
    return out


def _period(pieces, w: sp.Symbol, atoms: Atoms):
    """The atoms whose dividend mentions w (directly or through another atom) and the
    least period p such that w = p * t + s turns each into a term linear in t plus an
    atom free of t (its divisor divides its dividend's coefficient on t); None when no
    atom mentions w."""
    hits, seen, by_parameter = [], set(), []

    def visit(symbol):  # inner atoms first: their replacements go into the outer ones
        if symbol in seen or symbol not in atoms.defs or not atoms.mentions(atoms.defs[symbol][1], w):
            return
        if not isinstance(atoms.defs[symbol][2], int):  # (a parameter period: _class_sum, _floor_sum)
            by_parameter.append(symbol)
            return
        seen.add(symbol)
        for inner in sorted(atoms.defs[symbol][1].free_symbols, key=str):
            visit(inner)
        hits.append(symbol)

    for symbol in sorted(_symbols(pieces), key=str):
        visit(symbol)
    del visit  # a recursive closure is a reference cycle: `atoms`' terms would wait for the collector
    if not hits:
        return None
    if by_parameter:
        raise Unsupported(f"'//' or '%' of the loop index {w} by a constant beside one by a parameter")
    period = 1
    while True:
        short = _moved(hits, w, period, 0, atoms)
        if short == 1:
            return hits, period
        period *= short
        if period > MAX_PERIOD:
            raise Unsupported(f"'//' or '%' of the loop index {w} with a period over {MAX_PERIOD}")


def _moved(hits, w: sp.Symbol, period: int, s: int, atoms: Atoms, swap: dict | None = None):
    """With w = period * t + s, each atom of `hits` (inner first) as a term linear in t
    plus an atom free of t, into `swap`; 1 when that works, else the factor the period
    lacks (a dividend's coefficient on t that its divisor does not divide)."""
    t = sym(f"{w.name}~t")
    swap = {} if swap is None else swap
    swap[w] = period * t + s
    for atom in hits:
        kind, dividend, m = atoms.defs[atom]
        moved = sp.expand(dividend.xreplace(swap))
        poly = sp.Poly(moved, t)
        q = poly.coeff_monomial(t)
        if poly.degree() > 1 or not q.is_Integer:
            raise Unsupported(f"'//' or '%' of a non-linear term in the loop index {w}")
        if int(q) % m:
            return m // math.gcd(int(q), m)
        rest = sp.expand(moved - q * t)
        swap[atom] = (int(q) // m) * t + atoms.floor_div(rest, m) if kind == "fd" else atoms.residue(rest, m)
    return 1


def _residue_sum(pieces, w: sp.Symbol, lo_part, hi_part, atoms: Atoms, hits, period: int) -> tuple:
    """sum over w in [lo, hi) by residue class: for each s in 0..p-1, w = p * t + s with
    t over [ceil((lo - s) / p), floor((hi - 1 - s) / p)]; there `e // m` and `e % m` of
    the atoms that mention w are linear in t plus atoms free of t (`_period`)."""
    t = sym(f"{w.name}~t")
    out = []
    for s in range(period):
        swap: dict = {}
        _moved(hits, w, period, s, atoms, swap)
        moved_pieces = simplify_pieces((tuple((k, e.xreplace(swap)) for k, e in conds), value.xreplace(swap))
                                 for conds, value in pieces)
        lows = tuple((c, -atoms.floor_div(s - lo, period)) for c, lo in lo_part)
        highs = tuple((c, atoms.floor_div(hi - 1 - s, period) + 1) for c, hi in hi_part)
        out += loop_sum(moved_pieces, t, lows, highs, atoms)
    return simplify_pieces(out)


def loop_sum(pieces, w: sp.Symbol, lo_part, hi_part, atoms: Atoms) -> tuple:
    """sum over w in [lo, hi) of a count; lo and hi are partitions free of w."""
    if any(by_parameter(piece, w, atoms, conds_only=True) for piece in pieces):  # `k % K == K - 1`
        return class_sum(pieces, w, lo_part, hi_part, atoms, loop_sum)
    periodic = _period(pieces, w, atoms)
    if periodic is not None:  # `i % 2`, `c // 4`: split the sum by residue class
        return _residue_sum(pieces, w, lo_part, hi_part, atoms, *periodic)
    out = []
    for (clo, lo), (chi, hi), (conds, value) in itertools.product(lo_part, hi_part, pieces):
        lows, highs, free = [lo], [hi - 1], list(clo + chi)
        for kind, e in conds:
            b = _bound(kind, e, w, atoms)
            if b is None:
                free.append((kind, e))
            else:
                free += b[2]
                if b[0] in ("lo", "eq"):
                    lows.append(b[1])
                if b[0] in ("hi", "eq"):
                    highs.append(b[1])
        lows = list(dict.fromkeys(sp.expand(x) for x in lows))
        highs = list(dict.fromkeys(sp.expand(x) for x in highs))
        if atoms.mentions(sum(lows) + sum(highs), w):
            raise Unsupported(f"a bound of the loop over {w} depends on {w}")
        for a, la in enumerate(lows):
            for b, ub in enumerate(highs):
                extra = [("ge", la - lk - (1 if k < a else 0)) for k, lk in enumerate(lows) if k != a]
                extra += [("ge", uk - ub - (1 if k < b else 0)) for k, uk in enumerate(highs) if k != b]
                extra.append(("ge", ub - la))
                out.append((tuple(free + extra), floor_sum(value, w, la, ub, atoms, _faulhaber)))
    return simplify_pieces(out)
