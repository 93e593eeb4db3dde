"""The order of the nest stage's candidates (nest_pieces.py): latest first, by level
and, within a level, by their gaps where proofs by bounds decide it; two instances of
one producer by their loop indices; candidates that bounds cannot order joined (the
smaller gap) or covered by one of both conditions. docs/planner.md, "The nest stage"."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from semantics.ir import Compare
from semantics.simplify import simplify
from algorithm.threshold.facts import subst
from algorithm.threshold.reasoning import NotNest, conjunction, conjuncts, contradictory, fixed_value, proves

if TYPE_CHECKING:
    from algorithm.threshold.nest_candidates import Candidate


def later_first(cands: list[Candidate], domain: list, lowers: dict) -> list[Candidate]:
    """The candidates latest first: by level, and within a level by their gaps (a smaller
    gap is a later instance) where bounds decide it for every point both exist at; two
    that never exist together (exclusive conditions) need no order. A topological order
    of what bounds decide, ties by level and then as given. Two of one level and one
    condition that bounds do not order are one candidate, the smaller of their gaps
    (`count(F) - min(B1, B2)`: whichever is later where both exist). Two of one level
    and other conditions A, B that bounds do not order get a third before them, of
    condition `A and B` and the smaller gap: after it, at most one of them exists."""
    cands = _joined(cands, domain)
    cands, apart = _both(cands, domain, lowers)
    before: dict = {k: set() for k in range(len(cands))}  # k comes after each of these
    for i, a in enumerate(cands):
        for k in range(i + 1, len(cands)):
            b = cands[k]
            if (id(a), id(b)) in apart or (id(b), id(a)) in apart:
                continue
            if a.key != b.key:
                first, then = (i, k) if a.key > b.key else (k, i)
            elif a.gap == b.gap or \
                    contradictory([*conjuncts(a.condition), *conjuncts(b.condition)], domain, lowers):
                continue
            else:
                facts = [*domain, a.condition, b.condition, *a.facts, *b.facts]
                if _equal_at(facts, a.gap, b.gap):
                    continue  # (one instance where both exist)
                later = _later(a, b, facts)
                if later:
                    first, then = (i, k) if later > 0 else (k, i)
                elif proves(facts, Compare("<=", a.gap, b.gap)):
                    first, then = i, k
                elif proves(facts, Compare("<=", b.gap, a.gap)):
                    first, then = k, i
                else:
                    raise NotNest("producers whose instances tie at one level")
            before[then].add(first)
    out, placed = [], set()
    while len(out) < len(cands):
        ready = [k for k in range(len(cands)) if k not in placed and before[k] <= placed]
        if not ready:
            raise NotNest("producers whose instances tie at one level")
        k = min(ready, key=lambda k: (tuple(-v for v in cands[k].key), k))
        out.append(cands[k])
        placed.add(k)
    return out


def _ordered(facts: list, g, h) -> bool:
    """Whether bounds order two gaps under the facts (either way)."""
    return _equal_at(facts, g, h) or proves(facts, Compare("<=", g, h)) or proves(facts, Compare("<=", h, g))


def _later(a: Candidate, b: Candidate, facts: list) -> int:
    """1 where bounds show a later than b, -1 where earlier, 0 undecided: two instances
    of one producer are in program order as their loop indices are lexicographically
    (the first index, outermost first, that differs decides: a linear comparison where
    their gaps may be polynomials). A joined candidate (whichever of two is later) has
    no values of its own: undecided."""
    if a.site is not b.site:
        return 0
    for loop in a.site.loops:
        u, v = a.values.get(loop.var), b.values.get(loop.var)
        if u is None or v is None:
            return 0
        if u == v or proves(facts, Compare("==", u, v)):
            continue
        if proves(facts, Compare(">", u, v)):
            return 1
        return -1 if proves(facts, Compare("<", u, v)) else 0
    return 0


def _equal_at(facts: list, g, h) -> bool:
    """Whether two gaps are one term where the facts fix variables (`i == 0`)."""
    at = {v: e for f in facts for k in conjuncts(f) for v, e in fixed_value(k).items()}
    return bool(at) and simplify(subst(g, at)) == simplify(subst(h, at))


def _both(cands: list[Candidate], domain: list, lowers: dict):
    """(the candidates, with one `A and B` candidate of the smaller gap for each two of
    one level whose conditions may hold together and whose gaps bounds do not order
    there; the pairs so covered, by identity: they need no order of their own)."""
    from semantics.ir import Min

    extra, apart = [], set()
    for i, a in enumerate(cands):
        for b in cands[i + 1:]:
            if a.key != b.key or a.condition == b.condition or a.gap == b.gap or \
                    contradictory([*conjuncts(a.condition), *conjuncts(b.condition)], domain, lowers):
                continue
            facts = [*domain, a.condition, b.condition, *a.facts, *b.facts]
            if _later(a, b, facts) or _ordered(facts, a.gap, b.gap):
                continue
            extra.append(attrs.evolve(a, condition=conjunction(a.condition, b.condition), values={},
                                      gap=simplify(Min(a.gap, b.gap)), facts=(*a.facts, *b.facts)))
            apart.add((id(a), id(b)))
    return extra + cands, apart


def _joined(cands: list[Candidate], domain: list) -> list[Candidate]:
    """The candidates with those of one level and one condition that bounds do not order
    joined into one whose gap is the least of theirs (later_first); one whose gap bounds
    prove at least another's there is an earlier instance, left out of the join."""
    from semantics.ir import Min

    groups: dict = {}
    for c in cands:
        groups.setdefault((c.key, c.condition), []).append(c)
    out, done = [], set()
    for c in cands:
        group = groups[(c.key, c.condition)]
        if len(group) == 1:
            out.append(c)
            continue
        if id(group) in done:
            continue
        done.add(id(group))
        facts = [*domain, c.condition, *(f for g in group for f in g.facts)]
        kept: list = []
        for g in group:
            if any(k.gap == g.gap or proves(facts, Compare("<=", k.gap, g.gap)) for k in kept):
                continue  # (an instance no later than one kept)
            kept = [k for k in kept if not proves(facts, Compare("<=", g.gap, k.gap))] + [g]
        if len(kept) == 1 or all(_ordered(facts, a.gap, b.gap) for a in kept for b in kept):
            out += group  # (ordered by bounds: later_first's order)
            continue
        gap = kept[0].gap
        for k in kept[1:]:
            gap = simplify(Min(gap, k.gap))
        out.append(attrs.evolve(kept[0], gap=gap, facts=tuple(f for k in kept for f in k.facts), values={}))
    return out


def later_than_below(c: Candidate, u: Candidate) -> bool:
    """Whether c is later than every instance u stands for (its loop index `u.below` below
    the value u names): a later level, or the same values of u's loops around that index
    and at it."""
    if c.key != u.key:
        return c.key > u.key
    for loop in u.site.loops:
        if not any(other is loop for other in c.site.loops) or c.values.get(loop.var) is None \
                or simplify(c.values[loop.var]) != simplify(u.values[loop.var]):
            return False
        if loop.var == u.below:
            return True
    return False
