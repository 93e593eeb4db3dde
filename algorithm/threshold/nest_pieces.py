"""The nest stage's thresholds from its candidates (nest.py): the chain `if c1 then
count(F) - B1 else if c2 ... else 0`, latest candidate first, made short by proofs by
bounds (merged and dropped pieces, dropped conditions, no `else 0`, `max`), each piece written in the
cheapest of its equal forms. docs/planner.md, "The nest stage"."""

from __future__ import annotations

import itertools

from typing import TYPE_CHECKING

import attrs

from semantics.context import Site
from semantics.ir import BinOp, Compare, Const, Count, IfExpr, Iters, Max, Var, map_expr, walk_expr
from semantics.simplify import simplify
from algorithm.threshold.facts import subst
from algorithm.threshold.nest_floors import floor_steps, folded_floors
from algorithm.threshold.nest_guards import decided, unperiodic
from algorithm.threshold.nest_order import later_first, later_than_below
from algorithm.threshold.reasoning import (
    FALSE, TRUE, NotNest, conjunction, conjuncts, contradictory, disjunction, finite_values, minus, negated, pin, proves,
    proves_where, refuted, settled, spelled,
)
from algorithm.threshold.thresholds import operators

if TYPE_CHECKING:
    from algorithm.threshold.nest_candidates import Candidate, Nest


@attrs.define
class Piece:
    """`if conditions then count(F) - gap else (the next piece)`."""

    conditions: list  # disjuncts
    gap: object  # or ("max", gap1, gap2)
    pins: dict  # what holds where the earlier pieces' conditions fail
    facts: list  # what else holds there: each earlier condition of one conjunct, negated
    known: tuple = ()  # what holds where its first condition does (its candidate's facts)
    whole: object = None  # its gap without the pins (where its conditions hold, earlier ones or not)
    dropped: list = attrs.field(factory=list)  # conditions dropped (each as disjuncts): where one fails, count <= 0


def threshold_of(nest: Nest, y: Site, engine: str, cands: list[Candidate]):
    """The pieces of y's threshold on `engine` from its producers' candidates, latest
    first, or None (no producer instance precedes y)."""
    domain = nest.domain(y)
    lowers = nest.lowers(y)
    below = [c for c in cands if c.below is not None]
    cands = [c for c in cands if c.below is None]
    pieces: list[Piece] = []  # latest first
    failed: list = []  # each condition of one conjunct so far, negated
    pins: dict = {}  # what holds where every candidate so far is missing
    several: list = []  # each condition of several conjuncts so far
    seen = set()
    for cand in later_first(cands, domain, lowers):
        if (cand.condition, cand.gap) in seen:
            continue
        seen.add((cand.condition, cand.gap))
        gap = simplify(subst(cand.gap, pins)) if pins else cand.gap
        condition = settled(subst(cand.condition, pins)) if pins else cand.condition
        if condition == FALSE or failed and any(refuted([*domain, *failed], k) for k in conjuncts(condition)) \
                or _missing_where_failed(several, condition, [*domain, *failed], lowers):
            continue  # missing wherever the earlier ones are
        where = [*domain, *failed, *conjuncts(condition)]
        gap = floor_steps(unperiodic(gap, where), where)
        mine = set(conjuncts(condition))
        if any(set(conjuncts(d)) <= mine for piece in pieces for d in piece.conditions):
            continue  # it exists only where an earlier one does
        if pieces and (pieces[-1].gap in (gap, decided(gap, where, by_bounds=False))
                       or _equal_where_new(pieces[-1], gap, condition, [*domain, *failed], pins, lowers)):
            pieces[-1].conditions.append(condition)  # (equal gaps where it applies)
        else:
            pieces.append(Piece([condition], gap, dict(pins), list(failed), cand.facts, cand.gap))
        if condition == TRUE:
            break
        parts = conjuncts(condition)
        if len(parts) == 1:
            pins.update(pin(negated(parts[0]), lowers) or _only_value(negated(parts[0]), domain, lowers)
                        or _pinned_by_domain(settled(negated(parts[0])), domain))
            failed.append(settled(negated(parts[0])))
        else:
            several.append(condition)
    for u in below:  # (where it exists, a later candidate must: else its place is unknown)
        later = [c for c in cands if later_than_below(c, u)]
        if not any(_missing_where_failed([c.condition for c in group], u.condition, domain, lowers)
                   for group in ([c for c in later if c.key == u.key], later) if group):
            raise NotNest("a guard with a period over the parameters beside an index equation")
    if not pieces:
        return None
    # A conjunct every candidate needs: where it fails there is no candidate (no wait), so
    # a piece whose count is <= 0 there too needs no test of it.
    shared = set.intersection(*(set(conjuncts(c.condition)) for c in cands))
    needed = [k for k in conjuncts(cands[0].condition) if k in shared]  # (in program text order, not a set's)
    for piece in pieces:
        for d in needed:
            if _at_most_0(nest, y, engine, piece.gap, [negated(d)], [*domain, *piece.facts], piece.pins, lowers):
                piece.conditions = [conjunction(*[k for k in conjuncts(c) if k != d]) for c in piece.conditions]
                piece.dropped.append([d])
    for piece in pieces:  # conditions that cover every point where the piece applies
        ways = _ways_to_fail(piece.conditions)
        if TRUE not in piece.conditions and ways is not None and (len(piece.conditions) > 1 or piece.facts) and all(
                contradictory(way, [*domain, *piece.facts], lowers) for way in ways):
            piece.conditions = [TRUE]
            del pieces[pieces.index(piece) + 1:]
            break
        common = [k for k in conjuncts(piece.conditions[0]) if all(k in conjuncts(c) for c in piece.conditions[1:])]
        rests = [[k for k in conjuncts(c) if k not in common] for c in piece.conditions]
        ways = _ways_to_fail([conjunction(*r) for r in rests]) if common and all(rests) else None
        if len(piece.conditions) > 1 and ways is not None and all(
                contradictory(way, [*domain, *piece.facts, *common], lowers) for way in ways):
            piece.conditions = [conjunction(*common)]  # (its other conjuncts: one of them holds where these do)
    last = pieces[-1]
    if TRUE not in last.conditions and _at_most_0_where_missing(nest, y, engine, last, [*domain, *last.facts], pins,
                                                                 lowers):
        last.dropped.append(last.conditions)
        last.conditions = [TRUE]
    while len(pieces) >= 2 and pieces[-1].conditions == [TRUE] and not pieces[-1].pins and \
            not any(isinstance(p.gap, tuple) for p in pieces[-2:]) and all(
                proves_where(Compare("==", pieces[-2].gap, pieces[-1].gap), conjuncts(c), [*domain, *pieces[-2].facts],
                             pieces[-2].pins, lowers) for c in pieces[-2].conditions):
        del pieces[-2]  # (its count is the last piece's wherever it applies)
    if len(pieces) >= 2 and pieces[-1].conditions == [TRUE] and \
            _max_of_last_two(nest, y, engine, pieces, [*domain, *pieces[-2].facts], lowers):
        a, b = pieces[-2:]
        pieces[-2:] = [Piece([TRUE], ("max", a.gap, b.whole), a.pins, a.facts)]
    return pieces


def _missing_where_failed(several: list, condition, facts, lowers) -> bool:
    """Whether bounds show the condition false each way the earlier conditions of
    several conjuncts all fail (at most 16 ways)."""
    ways = _ways_to_fail(several) if several else None
    return ways is not None and len(ways) <= 16 and all(
        contradictory([*way, *conjuncts(condition)], facts, lowers) for way in ways)


def _equal_where_new(last: Piece, gap, condition, facts, pins, lowers) -> bool:
    """Whether the last piece's gap equals `gap` wherever `condition` holds and the last
    piece's conditions fail (one way at a time): then the last piece covers it too."""
    ways = _ways_to_fail(last.conditions)
    if isinstance(last.gap, tuple) or ways is None or TRUE in last.conditions:
        return False
    return all(contradictory([*way, *conjuncts(condition)], facts, lowers)
               or proves_where(Compare("==", last.gap, gap), [*way, *conjuncts(condition)], facts, pins, lowers)
               for way in ways)


def _pinned_by_domain(c, domain) -> dict:
    """{v: e} when `c` bounds a variable v by e on one side and the domain bounds it by e
    on the other (`16 * j >= i` where y's guard is `i >= 16 * j`: i is 16 * j)."""
    from semantics.simplify import expr, linear

    if not isinstance(c, Compare) or c.op not in ("<=", ">=", "<", ">"):
        return {}
    form = linear(BinOp("-", c.left, c.right) if c.op in ("<=", "<") else BinOp("-", c.right, c.left))
    if c.op in ("<", ">"):
        form[None] = form.get(None, 0) + 1  # form <= 0
    for mono, coef in list(form.items()):
        if mono is None or len(mono) != 1 or not isinstance(mono[0], Var) or coef not in (1, -1):
            continue
        rest = expr({k: v for k, v in form.items() if k != mono})
        if any(n == mono[0] for n in walk_expr(rest)):
            continue
        value = simplify(BinOp("*", Const(-coef), rest))  # c: v <= value (coef 1) or v >= value (coef -1)
        if proves(domain, Compare(">=" if coef == 1 else "<=", mono[0], value)):
            return {mono[0].name: value}
    return {}


def _only_value(c, domain, lowers) -> dict:
    """{v: value} when `c` leaves its one variable v finitely many values and the facts
    over v alone (its loop's guards: `i % 2 == 0`) all but one of them."""
    from semantics.simplify import folded

    few = finite_values(c, domain, lowers)
    if few is None:
        return {}
    var, values = few
    alone = [f for f in domain if {n.name for n in walk_expr(f) if isinstance(n, Var)} == {var}]
    left = [v for v in values if all(folded(settled(subst(f, {var: Const(v)}))) is not False for f in alone)]
    return {var: Const(left[0])} if len(left) == 1 else {}


def _max_of_last_two(nest: Nest, y: Site, engine: str, pieces, domain, lowers) -> bool:
    """Whether `if C then A else B` (the last two pieces) is max(A, B): A >= B where C
    holds and A <= B where it fails (`max(1, count(DMA) - (N - 1) % 3)`: the last
    conflicting instance in the loop, or the op before it)."""
    (disjuncts, gap1, pins1), (gap2, pins2) = (pieces[-2].conditions, pieces[-2].gap, pieces[-2].pins), \
        (pieces[-1].whole, pieces[-1].pins)
    if isinstance(gap1, tuple) or gap2 is None or pieces[-1].dropped and pieces[-1].whole != pieces[-1].gap:
        return False
    before = nest.before_y(y, engine)
    a, b = minus(before, gap1), minus(before, gap2)
    known = list(pieces[-2].known) if len(disjuncts) == 1 else []
    if not all(proves_where(Compare(">=", a, b), conjuncts(d), [*domain, *known], pins1, lowers) for d in disjuncts):
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


def piece_forms(nest: Nest, y: Site, engine: str, piece: Piece, count_registers: bool, untracked: frozenset):
    """The piece's equal forms (equal_forms), decided under what holds where it applies;
    for a last piece whose conditions were dropped, the forms decided under them instead
    where those are cheaper and still <= 0 wherever the conditions fail."""
    where = [*nest.domain(y), *piece.facts]
    own = [k for k in conjuncts(piece.conditions[0]) if k != TRUE] if len(piece.conditions) == 1 else []
    forms = each(piece.gap, lambda g: equal_forms(nest, y, engine, g, count_registers, untracked, [*where, *own],
                                                  piece.pins))
    ways = [_ways_to_fail(d) for d in piece.dropped]
    if not piece.dropped or isinstance(piece.gap, tuple) or None in ways:
        return forms
    ways = [w for way in ways for w in way]
    dropped = [k for d in piece.dropped if len(d) == 1 for k in conjuncts(d[0])]
    lowers = nest.lowers(y)
    before = nest.before_y(y, engine)

    def at_most_0(form) -> bool:
        if any(isinstance(n, Iters) for n in walk_expr(form)):
            return False
        value = simplify(map_expr(form, lambda n: before if n == Count(engine) else n))
        return all(proves_where(Compare("<=", value, Const(0)), missing, where, piece.pins, lowers) for missing in ways)

    alt = [f for f in equal_forms(nest, y, engine, piece.gap, count_registers, untracked, [*where, *dropped],
                                  piece.pins) if at_most_0(f)]
    return alt if alt and operators(alt[0]) < operators(forms[0]) else forms


def written(pieces, choice):
    """The chain of the pieces, each condition in its spelling of least arithmetic."""
    out = Const(0)
    for disjuncts, forms in reversed(pieces):
        form = Max(choice(forms[1]), choice(forms[2])) if forms[0] == "max" else choice(forms)
        either = TRUE if TRUE in disjuncts else disjunction([spelled(d) for d in disjuncts])
        out = form if either == TRUE else IfExpr(either, form, out)
    return out


def _at_most_0_where_missing(nest: Nest, y: Site, engine: str, piece, domain, pins, lowers) -> bool:
    """Whether `count(F) - gap` is <= 0 wherever the piece's conditions all fail (there,
    the count is its closed form before y): then the last piece needs no `else 0`. Each
    way of failing them (one conjunct of each condition false) is decided by bounds."""
    disjuncts, gap = piece.conditions, piece.gap
    ways = _ways_to_fail(disjuncts)
    return ways is not None and all(contradictory(missing, domain, lowers)
                                    or _at_most_0(nest, y, engine, gap, missing, domain, pins, lowers) for missing in ways)


def _at_most_0(nest: Nest, y: Site, engine: str, gap, missing: list, domain, pins, lowers) -> bool:
    """Whether `count(F) - gap` is <= 0 where the conditions `missing` hold (and the pins;
    an index they leave only its lower bound pinned there too). The proof takes each way
    of the count's `min`/`max` (a sum clamps at a bound: `min(i, N)` where i < N)."""
    before = nest.before_y(y, engine)
    if proves_where(Compare("<=", minus(before, gap), Const(0)), missing, domain, pins, lowers):
        return True
    lowest = {v: Const(low) for v, low in sorted(lowers.items()) if v not in pins  # (`max(i, M) < 1`: i and M at 0)
              and proves([*domain, *missing], Compare("<=", Var(v), Const(low)))}
    return bool(lowest) and proves_where(Compare("<=", minus(before, gap), Const(0)), missing, domain, {**pins, **lowest},
                                         lowers)


def equal_forms(nest: Nest, y: Site, engine: str, gap, count_registers: bool, untracked: frozenset = frozenset(),
                where: list = (), pins: dict | None = None) -> list:
    """count(F) - gap in its equal forms of least arithmetic, in order of preference:
    over indices and parameters (no register to keep), against count(F), against iters
    (none where an op of F is under a guard); the pins substituted, `if`-expressions
    decided under `where`."""
    iters = nest.iters_count(y, engine)
    pins = pins or {}
    where = [*where, *(Compare("==", Var(v), e) for v, e in pins.items())]
    # (a floor pinned at a lower bound, `(i - 1) // K` at i = 0, folded again: -1)
    forms = [unperiodic(decided(folded_floors(simplify(subst(f, pins)), nest.params) if pins else f, where), where)
             for f in (
        minus(nest.before_y(y, engine), gap),
        *([minus(Count(engine), gap)] if count_registers else []),
        *([minus(iters, gap)] if iters is not None else []))]
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
