"""Counts as guarded sums (verify/proof/counts.py): the piece representation, the
atoms standing for `e // m` and `e % m`, and their normalisation. The checker's own:
nothing here comes from algorithm/.

An atom: ("ge", e) for e >= 0 or ("eq", e) for e == 0, e an integer-valued sympy
expression. A piece: (tuple of atoms, sympy value). A count or partition: a tuple of
pieces.
"""

from __future__ import annotations

import collections
import itertools

import sympy as sp

from semantics.errors import Unsupported  # noqa: F401  (re-exported: no closed form this module can build)

MAX_PIECES = 4_000
SMALL_COUNT = 8  # pieces up to which `coalesced` leaves a count as built


def sym(name: str) -> sp.Symbol:
    return sp.Symbol(name, integer=True)


class Atoms:
    """The fresh symbols standing for `e // m` and `e % m`, with their definitions. A
    divisor is a positive constant, or an expression over the parameters that is at
    least 1 wherever each parameter is at least its lower bound (`lower`: symbol ->
    declared lower bound; `positive`)."""

    def __init__(self, lower: dict | None = None):
        self.lower: dict[sp.Symbol, int] = dict(lower or {})
        self.defs: dict[sp.Symbol, tuple[str, sp.Expr, int | sp.Expr]] = {}
        self._by_key: dict = {}
        self.templates: dict = {}  # (count, context) -> (its Z3 term, placeholder per name: counts.py `to_z3`)
        self.normal: dict = {}  # count -> its pieces' expanded numerators and denominators (counts.py `_normal`)

    def positive(self, e: sp.Expr) -> bool:
        """Whether e is at least 1 wherever every parameter is at least its lower bound:
        a constant, or affine with non-negative coefficients on parameters only."""
        e = sp.expand(e)
        if e.is_Integer:
            return e >= 1
        if not e.free_symbols <= self.lower.keys():
            return False
        poly = sp.Poly(e, *sorted(e.free_symbols, key=str))
        if poly.total_degree() > 1:
            return False
        coeffs = [poly.coeff_monomial(s) for s in poly.gens]
        if any(not c.is_Integer or c < 0 for c in coeffs):
            return False
        return e.xreplace(self.lower) >= 1

    def make(self, kind: str, dividend: sp.Expr, divisor: int | sp.Expr) -> sp.Symbol:
        divisor = divisor if isinstance(divisor, int) else sp.expand(divisor)
        if isinstance(divisor, sp.Integer):
            divisor = int(divisor)
        key = (kind, sp.expand(dividend), divisor)
        if key not in self._by_key:
            s = sym(f"_{kind}{len(self._by_key)}")
            self._by_key[key] = s
            self.defs[s] = key
        return self._by_key[key]

    def floor_div(self, e: sp.Expr, m: int | sp.Expr) -> sp.Expr:
        """floor(e / m) for a positive m (a constant, or over the parameters: `positive`):
        a number, or a floor-division atom."""
        e = sp.expand(e)
        if m == 1:
            return e
        if e.is_Integer and (isinstance(m, int) or e in (0, -1)):  # (m >= 1: 0 // m == 0, -1 // m == -1)
            return sp.Integer(int(e) // m if isinstance(m, int) else int(e))
        return self.make("fd", e, m)

    def residue(self, e: sp.Expr, m: int | sp.Expr) -> sp.Expr:
        """e mod m for a positive m: a number, or a residue atom."""
        e = sp.expand(e)
        if m == 1:
            return sp.Integer(0)
        if e.is_Integer and isinstance(m, int):
            return sp.Integer(int(e) % m)
        return self.make("md", e, m)

    def mentions(self, expr: sp.Expr, var: sp.Symbol) -> bool:
        """Does `expr` depend on `var`, also through a floor-division atom?"""
        for s in expr.free_symbols:
            if s == var or (s in self.defs and self.mentions(self.defs[s][1], var)):
                return True
        return False


def simplify_pieces(pieces) -> tuple:
    out = []
    for conds, value in pieces:
        value = sp.expand(value)
        if value == 0:
            continue
        kept, dead = [], False
        for kind, e in conds:
            e = sp.expand(e)
            if e.is_number:
                if (kind == "ge" and e < 0) or (kind == "eq" and e != 0):
                    dead = True
                    break
                continue
            if (kind, e) not in kept:
                kept.append((kind, e))
        if not dead:
            out.append((tuple(kept), value))
    if len(out) > MAX_PIECES:
        raise Unsupported(f"more than {MAX_PIECES} case splits in a count")
    return tuple(out)


def coalesced(count, nonneg, small: int = SMALL_COUNT) -> tuple:
    """A count (a guarded sum: not a partition, whose pieces are alternatives) in fewer
    pieces, equal wherever the symbols `nonneg` are non-negative. A count built
    statement by statement repeats a piece per op of a loop body, and the same piece
    under an engine's guard (`NK * QT * j` under `NK >= 1`, beside `QT * j`). So:
    - a guard `s - 1 >= 0` (s in `nonneg`) whose piece adds 0 at s = 0 anyway is
      dropped (`redundant_guard`), where that lets the piece join another: a guard
      that joins nothing is kept (Z3 splits cases on it: matmul's proof spends more
      units without those guards);
    - the pieces with the same atoms are one piece, their values summed.
    A count of at most `small` pieces is left as built: there the rewriting buys little,
    and Z3's effort moves with a term's shape (the quantified exactness query of
    tests/data/threshold_cases/inner_loop_max_lower_bound_sum ends unknown with its
    four-piece count coalesced, and is proved as built)."""
    if len(count) <= small:
        return count
    bare = [(tuple(a for a in conds if not redundant_guard(a, value, nonneg)), conds, value) for conds, value in count]
    joins = collections.Counter(frozenset(atoms) for atoms, _, _ in bare)
    merged: dict = {}
    for atoms, conds, value in bare:
        kept = atoms if joins[frozenset(atoms)] > 1 else conds
        key = frozenset(kept)
        merged[key] = (merged[key][0], merged[key][1] + value) if key in merged else (kept, value)
    return simplify_pieces(merged.values())


def redundant_guard(atom, value, nonneg) -> bool:
    """Whether `atom` is `s - 1 >= 0` for a symbol s of `nonneg` and `value` is 0 at
    s = 0: then [s >= 1] * value = value wherever s >= 0."""
    kind, e = atom
    s = e + 1
    return kind == "ge" and s in nonneg and sp.expand(value.xreplace({s: 0})) == 0


def combine(a, b, fn) -> tuple:
    """Pointwise fn of two partitions."""
    return simplify_pieces((ca + cb, fn(va, vb)) for (ca, va), (cb, vb) in itertools.product(a, b))


def const(value) -> tuple:
    return (((), sp.Integer(value)),)
