"""Proofs by bounds one case at a time (reasoning.py): where bounds read a term as an
atom that a few cases decide, the proof in each case. A `min`/`max` each way it goes, a
small constant over a parameter divisor one value of the divisor at a time, an index of
a few values in a product one value at a time."""

from __future__ import annotations

import functools

from semantics.ir import BinOp, Compare, Const, Max, Min, Var, map_expr, walk_expr
from semantics.simplify import linear, simplify
from algorithm.threshold.divisors import moduli


@functools.lru_cache(maxsize=1 << 14)
def _choices_in(e) -> frozenset:
    return frozenset(n for n in walk_expr(e) if isinstance(n, (Min, Max)))


def each_way_of_a_choice(facts: list, claim) -> bool:
    """Where a fact or the claim reads `min(a, b)` or `max(a, b)` (bounds read it as an
    atom: a clamped loop bound, `min(i + 1, M) >= 1`), the proof each way it goes (`a <=
    b` with a for the min, `a > b` with b), at most four such terms."""
    from algorithm.threshold.reasoning import proves, refuted, settled  # (reasoning imports this module)

    choices = sorted({n for f in (*facts, claim) for n in _choices_in(f)}, key=repr)
    if not choices or len(choices) > 4:
        return False
    m = choices[0]
    low = isinstance(m, Min)
    ways = ((Compare("<=", m.left, m.right), m.left if low else m.right),
            (Compare(">", m.left, m.right), m.right if low else m.left))

    def holds(way, value) -> bool:
        known = [settled(map_expr(f, lambda n: value if n == m else n)) for f in facts]
        return refuted(known, way) or proves([*known, way], settled(map_expr(claim, lambda n: value if n == m else n)))

    return all(holds(way, value) for way, value in ways)


def small_dividend(facts: list, claim):
    """(P, k) for a term `k // P` or `k % P` of the claim left unplaced, k 1 or 2 and P a
    parameter the facts prove at least 1: its values 1 .. k one at a time, the rest in
    one case where k lies in 0 .. P - 1."""
    from algorithm.threshold.reasoning import proves

    for a in sorted(moduli(claim), key=repr):
        k = simplify(a.left)
        if isinstance(k, Const) and k.value in (1, 2) and isinstance(a.right, Var) \
                and proves(facts, Compare(">=", a.right, Const(1))):
            return a.right.name, k.value
    return None


def few_values(facts: list, claim):
    """(v, its values) for a variable v of a product in the claim (`r * H`, non-linear)
    that the facts place in a constant range of at most 4 values, else None. At most two
    such variables in a claim (each value of one leaves the other's products): at most
    16 proofs, whatever the number of loops."""
    if not isinstance(claim, Compare):
        return None
    names = sorted({a.name for mono in linear(BinOp("-", claim.left, claim.right)) if mono is not None and len(mono) > 1
                    for a in mono if isinstance(a, Var)})
    if len(names) > 2:
        return None
    for name in names:
        low = high = None
        for f in facts:
            if not isinstance(f, Compare) or f.op not in ("<", "<=", ">", ">="):
                continue
            for var, k, op in ((f.left, f.right, f.op), (f.right, f.left, {"<": ">", "<=": ">=", ">": "<", ">=": "<="}[f.op])):
                if var == Var(name) and isinstance(k, Const) and type(k.value) is int:
                    if op in (">", ">="):
                        low = max(low if low is not None else k.value, k.value + (op == ">"))
                    else:
                        high = min(high if high is not None else k.value, k.value - (op == "<"))
        if low is not None and high is not None and 0 <= high - low < 4:
            return name, range(low, high + 1)
    return None
