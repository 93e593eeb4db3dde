"""Divisors over the parameters in proofs by bounds (reasoning.py): the range of a
residue `e % P` (P >= 1 proved), its value where bounds place e in one period, the value
0 or -1 of a floor `e // P` there, and constant dividends (`-1 // K`) by their values.
Bounds read `e % P` and `e // P` as atoms; these facts tie the atoms to e and P."""

from __future__ import annotations

import functools

from semantics.ir import BinOp, Compare, Const, map_expr, walk_expr
from semantics.simplify import simplify
from algorithm.threshold.bounds import inequalities_of, proved


@functools.lru_cache(maxsize=1 << 14)
def moduli(c) -> frozenset:
    """The `e % P` and `e // P` terms of a condition whose divisor P is not a constant."""
    return frozenset(n for n in walk_expr(c) if isinstance(n, BinOp) and n.op in ("%", "//")
                     and not isinstance(n.right, Const))


def residue_ranges(facts: list, claim) -> list:
    """`0 <= e % P <= P - 1` for each term of the claim and the facts whose divisor P is
    not a constant, where the facts prove P >= 1 (a negative P would leave it in P + 1 ..
    0); and its value where they place e in 0 .. P - 1 or -P .. -1. For `e // P` there,
    its value 0 or -1 (a count of a guard with a parameter period, `i // K` where i < K)."""
    atoms = {a for c in (*facts, claim) for a in moduli(c)}
    if not atoms:
        return []
    forms, out = inequalities_of(facts), []
    floors = []
    for a in sorted(atoms, key=repr):
        if not proved(forms, Compare(">=", a.right, Const(1))):
            continue
        if a.op == "//":
            floors.append(a)  # (placed with the residues' ranges, below)
            continue
        value = placed(a.left, a.right, lambda c: proved(forms, c))
        out += [Compare("==", a, value)] if value is not None else \
            [Compare(">=", a, Const(0)), Compare("<=", a, simplify(BinOp("-", a.right, Const(1))))]
        if value is None and any(isinstance(f, Compare) and f.op == "!=" and {f.left, f.right} == {a, Const(0)}
                                 for f in facts):
            out.append(Compare(">=", a, Const(1)))  # (`e % P != 0`: at least 1)
    if floors:
        forms = inequalities_of([*facts, *out])
        for a in floors:
            value = placed(a.left, a.right, lambda c: proved(forms, c))
            if value is not None:
                out.append(Compare("==", a, Const(0) if value == a.left else Const(-1)))
    return out


def placed(e, p, holds):
    """`e % p` (p >= 1) where `holds` places e in 0 .. p - 1 (e itself) or in -p .. -1
    (e + p), else None."""
    if holds(Compare(">=", e, Const(0))) and holds(Compare("<", e, p)):
        return e
    if holds(Compare("<", e, Const(0))) and holds(Compare(">=", simplify(BinOp("+", e, p)), Const(0))):
        return simplify(BinOp("+", e, p))
    return None


def constant_floors(claim, holds):
    """The claim with `k // P` and `k % P` (k a constant, P over the parameters) written
    as their values where `holds` (a proof under the facts) places k in 0 .. P - 1 or -P ..
    -1 (`-1 // K` is -1 for K >= 1: a count at a loop's first iteration). A product of
    such a term cannot be bounded as an atom; its value can."""
    def value(n):
        if not (isinstance(n, BinOp) and n.op in ("//", "%") and not isinstance(n.right, Const)):
            return n
        k = simplify(n.left)
        if not isinstance(k, Const) or not holds(Compare(">=", n.right, Const(1))):
            return n
        found = placed(k, n.right, holds)
        if found is None:
            return n
        if n.op == "%":
            return found
        return Const(0) if found == k else Const(-1)

    return map_expr(claim, value)
