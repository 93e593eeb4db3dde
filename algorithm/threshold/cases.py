"""A second case analysis for the access pairs the first one misses.

The first analysis (candidates.py) guesses the latest conflicting producer instance
from the equations, congruences and bounds that involve one free index at a time; Z3
then checks the guess. Two shapes of kernel defeat it (docs/planner.md, "Exactness
on generated kernels"):

- **piecewise indices** (`b[max(i, 1)]`, `a[if i < 1 then 0 else i - 1]`): no single
  equation solves for the free index. `piecewise_cases` splits the producer's access
  into cases, each a plain index under a condition on the producer's own indices
  (`i >= 1 -> b[i]`, `i < 1 -> b[1]`). Each case is a producer in its own right (the
  x-instances where its condition holds), with its own latest instance; the threshold
  is the max over the cases, exactly as it is the max over producers.
- **bounds hidden below the free index** (flash_fwd's causal guard `i >= 16 * j` on the
  inner query loop: the latest K/V tile j that has any query tile is bounded by
  `16 * j <= QT - 1`, which no condition on j alone says). `project` eliminates the
  deeper indices from their loop ranges and guards, Fourier-Motzkin style, and hands
  the resulting bounds on the free index to the candidate generator.

Both only make guesses: every candidate is still proved exact by Z3
(candidates.prove_candidates) before it is used, and the plan only asks for this
second analysis where the first one failed, so outputs that were exact before are
unchanged (tests/algorithm/test_sync_outputs.py holds them).
"""

from __future__ import annotations

from semantics.ir import Access, And, BinOp, Compare, Const, IfExpr, Iters, Max, Min, Neg, Not, Or, Range, Var
from semantics.simplify import cond as simplify_cond
from algorithm.threshold.counting import as_interval, mentions



def _lift(node) -> list[tuple[tuple, object]]:
    """`node` as (conditions, piece) cases: pieces free of min/max/if, the conditions
    (conjoined) exhaustive and disjoint."""
    match node:
        case Const() | Var() | Iters():
            return [((), node)]
        case BinOp(op=op, left=a, right=b):
            return [(ca + cb, BinOp(op, pa, pb)) for ca, pa in _lift(a) for cb, pb in _lift(b)]
        case Neg(operand=a):
            return [(ca, Neg(pa)) for ca, pa in _lift(a)]
        case Max(left=a, right=b) | Min(left=a, right=b):
            first = ">=" if isinstance(node, Max) else "<="
            other = "<" if isinstance(node, Max) else ">"
            out = []
            for ca, pa in _lift(a):
                for cb, pb in _lift(b):
                    out.append((ca + cb + (Compare(first, pa, pb),), pa))
                    out.append((ca + cb + (Compare(other, pa, pb),), pb))
            return out
        case IfExpr(cond=c, then=a, else_=b):
            return [(ca + (c,), pa) for ca, pa in _lift(a)] + [(cb + (Not(c),), pb) for cb, pb in _lift(b)]
    raise TypeError(f"not an integer expression: {node!r}")


def _lift_index(index) -> list[tuple[tuple, object]]:
    if isinstance(index, Range):
        return [(cl + ch, Range(lo, hi)) for cl, lo in _lift(index.lo) for ch, hi in _lift(index.hi)]
    return _lift(index)


def piecewise_cases(access: Access, max_cases: int) -> list[tuple[tuple, Access]] | None:
    """The access split into (conditions, plain access) cases, or None when it has no
    piecewise index (nothing to split) or more than `max_cases` cases."""
    cases = [((), ())]
    for index in access.indices:
        cases = [(conds + more, indices + (piece,)) for conds, indices in cases for more, piece in _lift_index(index)]
        if len(cases) > max_cases:
            return None
    if len(cases) == 1:
        return None
    out = []
    for conds, indices in cases:
        conds = tuple(simplify_cond(c) for c in conds)
        if any(_constant(c) is False for c in conds):
            continue
        out.append((conds, Access(access.buffer, indices)))
    return out


def _constant(c) -> bool | None:
    """The value of a comparison of two constants (simplify's folded form), else None."""
    if isinstance(c, Compare) and isinstance(c.left, Const) and isinstance(c.right, Const):
        a, b = c.left.value, c.right.value
        return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[c.op]
    return None


def project(constraints: list, eliminate: list[str]) -> list:
    """Conditions implied by `exists eliminate: constraints` (the names eliminated last
    to first), Fourier-Motzkin style: every lower bound of a name below every upper
    bound. A constraint that is not an interval of the name (a congruence, `!=`, a
    product) is left out, which only weakens the result: each returned condition is
    still implied, so it may guide a guess, never decide one."""
    current = list(constraints)
    for name in reversed(eliminate):
        lows, highs, rest = [], [], []
        for c in current:
            if not mentions(c, name):
                rest.append(c)
                continue
            interval = as_interval(c, name)
            if interval is None:
                continue
            lo, hi = interval
            if lo is not None:
                lows.append(lo)
            if hi is not None:
                highs.append(hi)
        for lo in lows:
            for hi in highs:
                rest.append(simplify_cond(Compare("<", lo, hi)))
        current = [c for c in rest if _constant(c) is not True]
    return current


def flatten(cond) -> list:
    """The conjuncts of a condition."""
    if isinstance(cond, And):
        return flatten(cond.left) + flatten(cond.right)
    return [cond]


_NEGATED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}


def conjuncts(cond, holds: bool = True) -> list:
    """The conjuncts of `cond` (of `not cond` when `holds` is False) with negations
    pushed to the comparisons: an else branch of `if N < 0 or j >= 2` holds where
    `N >= 0` and `j < 2`, two bounds the case analysis reads. A disjunction that holds
    stays one conjunct."""
    match cond:
        case And(left=a, right=b) if holds:
            return conjuncts(a) + conjuncts(b)
        case Or(left=a, right=b) if not holds:
            return conjuncts(a, False) + conjuncts(b, False)
        case Not(operand=a):
            return conjuncts(a, not holds)
        case Compare(op=op, left=a, right=b) if not holds:
            return [Compare(_NEGATED[op], a, b)]
    return [cond] if holds else [Not(cond)]
