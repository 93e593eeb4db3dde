"""Sums of counts over a loop index (verify/proof/counts.py): a piece's atoms on the
index become its bounds and the polynomial is summed by Faulhaber's formulas; an index
under `//` or `%` is first split by residue class. The checker's own: nothing here
comes from algorithm/."""

from __future__ import annotations

import functools
import itertools
import math

import sympy as sp

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
        quotient = _floor_div(rest if c < 0 else -rest, m, atoms)
        return ("eq", quotient, (("eq", _residue(rest, m, atoms)),))
    if kind != "eq" and (c.is_Integer or atoms.positive(c) or atoms.positive(-c)):
        # c * w + rest >= 0 with |c| > 1 (`if i >= 16 * j`, summed over j; `w >= lo`
        # with w = K * t + s, summed over t): a bound by floor division, an atom over the
        # other names (rest is free of w).
        if c.is_Integer and c > 0 or not c.is_Integer and atoms.positive(c):  # w >= -floor(rest / c)
            return ("lo", -_floor_div(rest, _divisor(c), atoms), ())
        return ("hi", _floor_div(rest, _divisor(-c), atoms), ())  # w <= floor(rest / -c)
    raise Unsupported(f"a condition with coefficient {c} on the loop index {w}")


def _divisor(c: sp.Expr) -> int | sp.Expr:
    return int(c) if c.is_Integer else c


def _floor_div(e: sp.Expr, m: int | sp.Expr, atoms: Atoms) -> sp.Expr:
    """floor(e / m) for a positive m (a constant, or over the parameters: Atoms.positive):
    a number, or a floor-division atom."""
    e = sp.expand(e)
    if m == 1:
        return e
    if e.is_Integer and (isinstance(m, int) or e in (0, -1)):  # (m >= 1: 0 // m == 0, -1 // m == -1)
        return sp.Integer(int(e) // m if isinstance(m, int) else int(e))
    return atoms.make("fd", e, m)


def _residue(e: sp.Expr, m: int, atoms: Atoms) -> sp.Expr:
    """e mod m for a positive constant m: a number, or a residue atom."""
    e = sp.expand(e)
    if m == 1:
        return sp.Integer(0)
    if e.is_Integer:
        return sp.Integer(int(e) % m)
    return atoms.make("md", e, m)


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
        swap[atom] = (int(q) // m) * t + _floor_div(rest, m, atoms) if kind == "fd" else _residue(rest, m, atoms)
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
        lows = tuple((c, -_floor_div(s - lo, period, atoms)) for c, lo in lo_part)
        highs = tuple((c, _floor_div(hi - 1 - s, period, atoms) + 1) for c, hi in hi_part)
        out += loop_sum(moved_pieces, t, lows, highs, atoms)
    return simplify_pieces(out)


def _by_parameter(piece, w: sp.Symbol, atoms: Atoms, conds_only: bool = False) -> list:
    """The atoms of the piece (of its conditions only, with `conds_only`) whose divisor
    is over the parameters and whose dividend mentions w."""
    conds, value = piece
    found = set().union(set() if conds_only else value.free_symbols, *(e.free_symbols for _, e in conds))
    return sorted((s for s in found if s in atoms.defs and not isinstance(atoms.defs[s][2], int)
                   and atoms.mentions(atoms.defs[s][1], w)), key=str)


def _indicator(kind: str, bound: sp.Expr, period: sp.Expr) -> list:
    """[A >= bound] (kind "lo") or [A <= bound] ("hi") for a residue A in 0..period-1,
    as a signed sum of terms (sign, r, conditions): r None for 1, else [A == r]. Where
    the bound is a small constant or `period` minus one, a few residues; else
    Unsupported."""
    one = [(1, None, ())]
    d, c = sp.expand(bound), sp.expand(period - bound)
    if d.is_Integer and kind == "lo":  # 1 - [A == 0] - ... - [A == d - 1]
        return one if d <= 0 else one + [(-1, sp.Integer(k), ()) for k in range(_small(int(d)))]
    if d.is_Integer:  # [A == 0] + ... + [A == d]
        return [(1, sp.Integer(k), ()) for k in range(_small(int(d) + 1))]
    if c.is_Integer and kind == "lo":  # A >= period - c: [A == period - 1] + ... + [A == period - c]
        return [(1, period - k, ()) for k in range(1, _small(int(c)) + 1)]
    if c.is_Integer:  # A <= period - c: 1 - [A == period - 1] - ... - [A == period - c + 1]
        return one if c <= 1 else one + [(-1, period - k, ()) for k in range(1, _small(int(c)))]
    raise Unsupported(f"a residue over a parameter period bounded by {bound}")


def _small(n: int) -> int:
    if n > MAX_PERIOD:
        raise Unsupported(f"a residue over a parameter period compared with more than {MAX_PERIOD} values")
    return max(n, 0)


def _times(a: list, b: list) -> list:
    """The product of two signed sums of residue terms (`_indicator`)."""
    out = []
    for (sa, ra, ca), (sb, rb, cb) in itertools.product(a, b):
        if ra is None or rb is None:
            out.append((sa * sb, ra if rb is None else rb, ca + cb))
        else:
            out.append((sa * sb, ra, ca + cb + (("eq", ra - rb),)))
    return out


def _unfloored(piece, w: sp.Symbol, atoms: Atoms) -> tuple:
    """The piece with each condition on `(w + e) // P` (P over the parameters, e free of
    w) written as a bound on w: `x // P >= c` is `x >= P * c`, `x // P <= c` is
    `x <= P * c + P - 1`, and `x // P == c` both."""
    conds, value = piece
    out = []
    for kind, c in conds:
        atoms_of_w = [s for s in _by_parameter(((( kind, c),), sp.Integer(0)), w, atoms) if atoms.defs[s][0] == "fd"]
        if not atoms_of_w:
            out.append((kind, c))
            continue
        atom = atoms_of_w[0]
        _, dividend, period = atoms.defs[atom]
        poly = sp.Poly(c, atom)
        a = poly.coeff_monomial(atom)
        other = sp.expand(c - a * atom)
        x = sp.expand(dividend)
        slope = sp.Poly(x, w).coeff_monomial(w) if not atoms.mentions(x - w * x.coeff(w), w) else None
        if poly.degree() != 1 or a not in (1, -1) or atoms.mentions(other, w) or slope is None \
                or not slope.is_Integer or sp.Poly(x, w).degree() != 1:
            raise Unsupported(f"a condition on '//' of the loop index {w} by a parameter")
        bound = -other * a  # a == 1: atom >= bound (or ==); a == -1: atom <= bound
        if kind == "eq" or a == 1:
            out.append(("ge", x - period * bound))
        if kind == "eq" or a == -1:
            out.append(("ge", period * bound + period - 1 - x))
    return tuple(out), value


def _class_sum(pieces, w: sp.Symbol, lo_part, hi_part, atoms: Atoms) -> tuple:
    """sum over w in [lo, hi) where a piece's conditions compare `(w + e) % P` (P over
    the parameters, e free of w) with a value free of w: each comparison is a signed sum
    of [A == r] (`_indicator`), and [A == r] pins w to P * t + r - e for t in
    [ceil((lo + e - r) / P), floor((hi - 1 + e - r) / P)], where 0 <= r < P; the
    piece's other atoms of w, with the same P, become atoms free of t."""
    t = sym(f"{w.name}~t")
    out = []
    for piece in pieces:
        piece = _unfloored(piece, w, atoms)
        if not _by_parameter(piece, w, atoms, conds_only=True):
            out += loop_sum((piece,), w, lo_part, hi_part, atoms)
            continue
        hits = _by_parameter(piece, w, atoms)
        conds, value = piece
        atom = _by_parameter(piece, w, atoms, conds_only=True)[0]
        hits.remove(atom)
        hits.insert(0, atom)
        kind, dividend, period = atoms.defs[atom]
        e = sp.expand(dividend - w)
        found = set().union(value.free_symbols, *(c.free_symbols for _, c in conds))
        if kind != "md" or any(
                atoms.mentions(sp.expand(atoms.defs[s][1] - w), w) for s in hits) or any(
                s in atoms.defs and s not in hits and atoms.mentions(atoms.defs[s][1], w) for s in found):
            raise Unsupported(f"'//' or '%' of the loop index {w} by a parameter, other than a residue compared")
        terms, rest = [(1, None, ())], []
        for c_kind, c in conds:
            if atom not in c.free_symbols:
                rest.append((c_kind, c))
                continue
            poly = sp.Poly(c, atom)
            a, other = poly.coeff_monomial(atom), sp.expand(c - poly.coeff_monomial(atom) * atom)
            if poly.degree() != 1 or a not in (1, -1) or atoms.mentions(other, w):
                raise Unsupported(f"a condition on a residue of the loop index {w} by a parameter")
            bound = -other * a  # the atom's value at the condition's edge
            if c_kind == "eq":
                terms = _times(terms, [(1, bound, ())])
            else:
                terms = _times(terms, _indicator("lo" if a == 1 else "hi", bound, period))
        for sign, r, extra in terms:
            if r is None:
                found = loop_sum(((tuple(rest) + extra, value),), w, lo_part, hi_part, atoms)
                out += [(c, sign * v) for c, v in found]
                continue
            start = sp.expand(r - e)  # w = period * t + start
            swap = {w: period * t + start, atom: r}
            for other in hits[1:]:
                o_kind, o_dividend, o_period = atoms.defs[other]
                moved = sp.expand(o_dividend.xreplace(swap))
                q = sp.Poly(moved, t).coeff_monomial(t)
                k = sp.cancel(q / o_period) if not isinstance(o_period, int) else None
                if k is None or not k.is_Integer or sp.Poly(moved, t).degree() > 1:
                    raise Unsupported(f"residues of the loop index {w} by different parameter periods")
                left = sp.expand(moved - q * t)
                swap[other] = int(k) * t + _floor_div(left, o_period, atoms) if o_kind == "fd" else \
                    atoms.make("md", left, o_period)
            moved_piece = (tuple((k_, c.xreplace(swap)) for k_, c in tuple(rest) + extra)
                           + (("ge", r), ("ge", period - 1 - r)), value.xreplace(swap))
            lows = tuple((c, -_floor_div(start - lo, period, atoms)) for c, lo in lo_part)
            highs = tuple((c, _floor_div(hi - 1 - start, period, atoms) + 1) for c, hi in hi_part)
            out += [(c, sign * v) for c, v in loop_sum(simplify_pieces((moved_piece,)), t, lows, highs, atoms)]
    return simplify_pieces(out)


def _floor_sum(value: sp.Expr, w: sp.Symbol, lo: sp.Expr, hi: sp.Expr, atoms: Atoms) -> sp.Expr:
    """sum of value for w in lo..hi inclusive (lo <= hi + 1), where value is a polynomial
    in w plus terms a * ((w + e) // P) or a * ((w + e) % P) (P over the parameters, a
    and e free of w): the sum of (x // P) for x in lo + e .. hi + e is G(hi + e + 1) -
    G(lo + e), G(n) = P * q * (q - 1) / 2 + q * (n - P * q) with q = n // P (G(n + 1) -
    G(n) = n // P for every integer n)."""
    hits = [s for s in value.free_symbols if s in atoms.defs and atoms.mentions(atoms.defs[s][1], w)]
    plain, total = value, sp.Integer(0)
    for atom in sorted(hits, key=str):
        kind, dividend, period = atoms.defs[atom]
        slope = sp.expand(dividend).coeff(w)
        e = sp.expand(dividend - slope * w)
        poly = sp.Poly(plain, atom)
        a = poly.coeff_monomial(atom)
        if isinstance(period, int) or poly.degree() != 1 or slope not in (1, -1) or atoms.mentions(e, w) \
                or atoms.mentions(a, w) or any(h in a.free_symbols for h in hits):
            raise Unsupported(f"a sum over {w} of a term non-linear in '//' or '%' of {w} by a parameter")
        plain = sp.expand(plain - a * atom)
        if kind == "md":  # x % P = x - P * (x // P)
            plain, a = sp.expand(plain + a * dividend), -a * period

        def antidifference(n):
            q = _floor_div(n, period, atoms)
            return period * q * (q - 1) / 2 + q * (n - period * q)
        # x = w + e runs over lo + e .. hi + e; x = e - w over e - hi .. e - lo
        first, last = (lo + e, hi + e) if slope == 1 else (e - hi, e - lo)
        total += a * (antidifference(last + 1) - antidifference(first))
    return sp.expand(total + _faulhaber(plain, w, lo, hi))


def loop_sum(pieces, w: sp.Symbol, lo_part, hi_part, atoms: Atoms) -> tuple:
    """sum over w in [lo, hi) of a count; lo and hi are partitions free of w."""
    if any(_by_parameter(piece, w, atoms, conds_only=True) for piece in pieces):  # `k % K == K - 1`
        return _class_sum(pieces, w, lo_part, hi_part, atoms)
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
                out.append((tuple(free + extra), _floor_sum(value, w, la, ub, atoms)))
    return simplify_pieces(out)
