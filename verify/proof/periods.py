"""Sums over a loop index under a period over the parameters (verify/proof/sums.py):
`if k % K == 0` (blocked accumulation), `k % K == K - 1`, `j % (D + 1) == D`, with P at
least 1 wherever the parameters are at least their lower bounds (Atoms.positive).

- A guard comparing the residue A = (w + e) % P with a value free of w picks residue
  classes: `A == r` one; `A >= 1`, `A < 1`, `A <= P - 2`, `A != r` (two atoms) a signed
  sum of a few (`[A >= 1] = 1 - [A == 0]`, `_indicator`). Each class pins w to
  P * t + r - e, summed over t by the caller's polynomial sum (`class_sum`).
- A floor `(w + e) // P` left in a summed value (a triangular nest under such a guard)
  is summed by its antidifference (`floor_sum`); a condition on it is a bound on w
  (`_unfloored`).
Anything else raises Unsupported with the reason. The checker's own: nothing here comes
from algorithm/.
"""

from __future__ import annotations

import itertools

import sympy as sp

from verify.proof.pieces import Atoms, Unsupported, simplify_pieces, sym

MAX_VALUES = 16  # residues one comparison with a constant may pick


def by_parameter(piece, w: sp.Symbol, atoms: Atoms, conds_only: bool = False) -> list:
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
    if n > MAX_VALUES:
        raise Unsupported(f"a residue over a parameter period compared with more than {MAX_VALUES} values")
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
        atoms_of_w = [s for s in by_parameter(((( kind, c),), sp.Integer(0)), w, atoms) if atoms.defs[s][0] == "fd"]
        if not atoms_of_w:
            out.append((kind, c))
            continue
        atom = atoms_of_w[0]
        _, dividend, period = atoms.defs[atom]
        poly = sp.Poly(c, atom)
        a = poly.coeff_monomial(atom)
        other = sp.expand(c - a * atom)
        x = sp.expand(dividend)
        on_w = sp.Poly(x, w)  # x linear in w with an integer slope, the rest free of w
        if poly.degree() != 1 or a not in (1, -1) or atoms.mentions(other, w) or on_w.degree() != 1 \
                or not on_w.coeff_monomial(w).is_Integer or atoms.mentions(x - on_w.coeff_monomial(w) * w, w):
            raise Unsupported(f"a condition on '//' of the loop index {w} by a parameter")
        bound = -other * a  # a == 1: atom >= bound (or ==); a == -1: atom <= bound
        if kind == "eq" or a == 1:
            out.append(("ge", x - period * bound))
        if kind == "eq" or a == -1:
            out.append(("ge", period * bound + period - 1 - x))
    return tuple(out), value


def class_sum(pieces, w: sp.Symbol, lo_part, hi_part, atoms: Atoms, loop_sum) -> tuple:
    """sum over w in [lo, hi) where a piece's conditions compare `(w + e) % P` (P over
    the parameters, e free of w) with a value free of w: each comparison is a signed sum
    of [A == r] (`_indicator`), and [A == r] pins w to P * t + r - e for t in
    [ceil((lo + e - r) / P), floor((hi - 1 + e - r) / P)], where 0 <= r < P; the
    piece's other atoms of w, with the same P, become atoms free of t."""
    t = sym(f"{w.name}~t")
    out = []
    for piece in pieces:
        piece = _unfloored(piece, w, atoms)
        compared = by_parameter(piece, w, atoms, conds_only=True)
        if not compared:
            out += loop_sum((piece,), w, lo_part, hi_part, atoms)
            continue
        conds, value = piece
        atom = compared[0]  # the residue that pins w; the others follow it
        hits = [atom] + [s for s in by_parameter(piece, w, atoms) if s != atom]
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
                swap[other] = int(k) * t + atoms.floor_div(left, o_period) if o_kind == "fd" else \
                    atoms.residue(left, o_period)
            moved_piece = (tuple((k_, c.xreplace(swap)) for k_, c in tuple(rest) + extra)
                           + (("ge", r), ("ge", period - 1 - r)), value.xreplace(swap))
            lows = tuple((c, -atoms.floor_div(start - lo, period)) for c, lo in lo_part)
            highs = tuple((c, atoms.floor_div(hi - 1 - start, period) + 1) for c, hi in hi_part)
            out += [(c, sign * v) for c, v in loop_sum(simplify_pieces((moved_piece,)), t, lows, highs, atoms)]
    return simplify_pieces(out)


def antidifference(n: sp.Expr, period: sp.Expr, atoms: Atoms) -> sp.Expr:
    """G(n) = P * q * (q - 1) / 2 + q * (n - P * q), q = n // P: G(n + 1) - G(n) = n // P
    for every integer n (n = P * q + s: s < P - 1 leaves q, s = P - 1 adds P * q - q * (P - 1))."""
    q = atoms.floor_div(n, period)
    return period * q * (q - 1) / 2 + q * (n - period * q)


def floor_sum(value: sp.Expr, w: sp.Symbol, lo: sp.Expr, hi: sp.Expr, atoms: Atoms, polynomial_sum) -> sp.Expr:
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
        # x = w + e runs over lo + e .. hi + e; x = e - w over e - hi .. e - lo
        first, last = (lo + e, hi + e) if slope == 1 else (e - hi, e - lo)
        total += a * (antidifference(last + 1, period, atoms) - antidifference(first, period, atoms))
    return sp.expand(total + polynomial_sum(plain, w, lo, hi))
