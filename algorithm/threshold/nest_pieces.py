"""The nest stage's thresholds from its candidates (nest.py): the chain `if c1 then
count(F) - B1 else if c2 ... else 0`, latest candidate first, made short by proofs by
bounds (merged pieces, dropped conditions, no `else 0`, `max`), each piece written in the
cheapest of its equal forms. docs/planner.md, "The nest stage"."""

from __future__ import annotations

import functools
import itertools
from typing import TYPE_CHECKING

from semantics.context import Site
from semantics.ir import Compare, Const, Count, IfExpr, Iters, Max, walk_expr
from semantics.simplify import simplify
from algorithm.threshold.facts import domain_conds, subst
from algorithm.threshold.reasoning import (
    FALSE, TRUE, NotNest, conjunction, conjuncts, disjunction, minus, negated, pin, proves, proves_where, settled,
)
from algorithm.threshold.thresholds import operators

if TYPE_CHECKING:
    from algorithm.threshold.nest import Candidate, Nest


def _later_first(cands: list[Candidate], domain: list) -> list[Candidate]:
    """The candidates latest first: by level, and within a level by their gaps (a smaller
    gap is a later instance) where bounds decide it for every point both exist at."""
    def later(a: Candidate, b: Candidate) -> int:
        if a.key != b.key:
            return -1 if a.key > b.key else 1
        if a.gap == b.gap:
            return 0
        facts = [*domain, a.condition, b.condition]
        if proves(facts, Compare("<=", a.gap, b.gap)):
            return -1
        if proves(facts, Compare("<=", b.gap, a.gap)):
            return 1
        raise NotNest("producers whose instances tie at one level")

    out = sorted(cands, key=functools.cmp_to_key(later))
    for a, b in zip(out, out[1:]):  # (a comparison sort asks only some pairs)
        if later(a, b) > 0:
            raise NotNest("producers whose instances tie at one level")
    return out


def threshold_of(nest: Nest, y: Site, engine: str, cands: list[Candidate]):
    """The pieces [conditions, gap, pins] of y's threshold on `engine` from its
    producers' candidates, latest first, or None (no producer instance precedes y)."""
    domain = [*nest.params, *domain_conds(y)]
    lowers = {p.name: p.lower for p in nest.program.params} | {l.var: simplify(l.lo).value for l in y.loops}
    pieces: list = []  # [disjuncts (conditions), gap], latest first
    pins: dict = {}  # what holds where every candidate so far is missing
    seen = set()
    for cand in _later_first(cands, domain):
        if (cand.condition, cand.gap) in seen:
            continue
        seen.add((cand.condition, cand.gap))
        gap = simplify(subst(cand.gap, pins)) if pins else cand.gap
        if pins and settled(subst(cand.condition, pins)) == FALSE:
            continue  # missing wherever the earlier ones are
        mine = set(conjuncts(cand.condition))
        if any(set(conjuncts(d)) <= mine for piece in pieces for d in piece[0]):
            continue  # it exists only where an earlier one does
        if pieces and gap == pieces[-1][1]:
            pieces[-1][0].append(cand.condition)
        else:
            pieces.append([[cand.condition], gap, dict(pins)])  # (pins: where the earlier ones fail)
        if cand.condition == TRUE:
            break
        parts = conjuncts(cand.condition)
        if len(parts) == 1:
            pins.update(pin(negated(parts[0]), lowers))
    if not pieces:
        return None
    # A conjunct every candidate needs: where it fails there is no candidate (no wait), so
    # a piece whose count is <= 0 there too needs no test of it.
    shared = set.intersection(*(set(conjuncts(c.condition)) for c in cands))
    needed = [k for k in conjuncts(cands[0].condition) if k in shared]  # (in program text order, not a set's)
    for piece in pieces:
        for d in needed:
            if _at_most_0(nest, y, engine, piece[1], [negated(d)], domain, piece[2], lowers):
                piece[0] = [conjunction(*[k for k in conjuncts(c) if k != d]) for c in piece[0]]
    if TRUE not in pieces[-1][0] and _at_most_0_where_missing(nest, y, engine, pieces[-1], domain, pins, lowers):
        pieces[-1][0] = [TRUE]
    if len(pieces) >= 2 and pieces[-1][0] == [TRUE] and _max_of_last_two(nest, y, engine, pieces, domain, lowers):
        (_, gap1, pins1), (_, gap2, _) = pieces[-2:]
        pieces[-2:] = [[[TRUE], ("max", gap1, gap2), pins1]]
    return pieces


def _max_of_last_two(nest: Nest, y: Site, engine: str, pieces, domain, lowers) -> bool:
    """Whether `if C then A else B` (the last two pieces) is max(A, B): A >= B where C
    holds and A <= B where it fails (`max(1, count(DMA) - (N - 1) % 3)`: the last
    conflicting instance in the loop, or the op before it)."""
    (disjuncts, gap1, pins1), (_, gap2, pins2) = pieces[-2:]
    if isinstance(gap1, tuple) or isinstance(gap2, tuple):
        return False
    before = nest.before_y(y, engine)
    a, b = minus(before, gap1), minus(before, gap2)
    if not all(proves_where(Compare(">=", a, b), conjuncts(d), domain, pins1, lowers) for d in disjuncts):
        return False
    ways = _ways_to_fail(disjuncts)
    return ways is not None and all(proves_where(Compare("<=", a, b), missing, domain, pins2, lowers)
                                    for missing in ways)


def _ways_to_fail(disjuncts) -> list | None:
    """Each way the conditions all fail, as the negated conjuncts (one of each condition);
    None past 12 conjuncts in all (the product would grow past use)."""
    choices = [conjuncts(d) for d in disjuncts]
    if sum(len(c) for c in choices) > 12:
        return None
    return [[negated(c) for c in failing] for failing in itertools.product(*choices)]


def each(gap, fn):
    """fn of a piece's gap, or ("max", fn(g1), fn(g2)) for a piece that is a max of two."""
    return ("max", fn(gap[1]), fn(gap[2])) if isinstance(gap, tuple) else fn(gap)


def written(pieces, choice):
    out = Const(0)
    for disjuncts, forms in reversed(pieces):
        form = Max(choice(forms[1]), choice(forms[2])) if forms[0] == "max" else choice(forms)
        out = form if TRUE in disjuncts else IfExpr(disjunction(disjuncts), form, out)
    return out


def _at_most_0_where_missing(nest: Nest, y: Site, engine: str, piece, domain, pins, lowers) -> bool:
    """Whether `count(F) - gap` is <= 0 wherever the piece's conditions all fail (there,
    the count is its closed form before y): then the last piece needs no `else 0`. Each
    way of failing them (one conjunct of each condition false) is decided by bounds."""
    disjuncts, gap, _ = piece
    ways = _ways_to_fail(disjuncts)
    return ways is not None and all(_at_most_0(nest, y, engine, gap, missing, domain, pins, lowers)
                                    for missing in ways)


def _at_most_0(nest: Nest, y: Site, engine: str, gap, missing: list, domain, pins, lowers) -> bool:
    """Whether `count(F) - gap` is <= 0 where the conditions `missing` hold (and the pins)."""
    value = minus(nest.before_y(y, engine), gap)
    return proves_where(Compare("<=", value, Const(0)), missing, domain, pins, lowers)


def equal_forms(nest: Nest, y: Site, engine: str, gap, count_registers: bool, untracked: frozenset = frozenset()) -> list:
    """count(F) - gap in its equal forms of least arithmetic, in order of preference:
    over indices and parameters (no register to keep), against count(F), against iters."""
    forms = [minus(nest.before_y(y, engine), gap),
             *([minus(Count(engine), gap)] if count_registers else []),
             minus(nest.iters_count(y, engine), gap)]
    forms = [f for f in forms if not any(isinstance(n, Iters) and n.var in untracked for n in walk_expr(f))]
    least = min(operators(f) for f in forms)
    return [f for f in forms if operators(f) == least]


def _tracked(form) -> frozenset:
    return frozenset(n for n in walk_expr(form) if isinstance(n, (Iters, Count)))


def chooser(all_forms: list):
    """Pick each piece's form among its equally cheap ones: one that tracks nothing new
    where it can (the counts and loops that forms with no alternative track already are
    paid for: verify/timing), else the first."""
    tracked: set = set()
    for forms in all_forms:
        if len(forms) == 1:
            tracked |= _tracked(forms[0])

    def choice(forms):
        for f in forms:
            if _tracked(f) <= tracked:
                return f
        tracked.update(_tracked(forms[0]))
        return forms[0]
    return choice
