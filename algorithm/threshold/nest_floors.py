"""Floors by a period over the parameters in the nest stage's counts (nest_counts.py,
nest_candidates.py, nest_pieces.py): a guard `u % P == e` counts its residue class with
floors by P, and its free index's latest value is `top - (top - r) % P`, so the counts
and gaps carry floors such as `(i - 1 - i % K) // K` and `(k - 2) // K - (k - 1) // K`.
Written in fewer terms here, they cancel where they are equal, and bounds can decide what
is left. Every P met here is at least 1 (nest.check_nest proves it of every guard period
and index divisor)."""

from __future__ import annotations

from semantics.ir import BinOp, Compare, Const, IfExpr, map_expr, walk_expr
from semantics.simplify import expr, linear, simplify
from algorithm.threshold.nest_guards import decided
from algorithm.threshold.reasoning import minus, product, proves


def folded_floors(value, params: list):
    """The value with its floors by a divisor P over the parameters that their bounds
    (`params`) place at 1 or more written in fewer terms, for the counts of a guard with
    a parameter period (`(i - 1 - i % K) // K`, the iterations before the latest of a
    residue class, is `i // K - 1`):
    - `(a + k * (e % P)) // P` as `(a + k * e) // P - k * (e // P)` where a + k * e has
      fewer terms (e % P is e - P * (e // P); (b + P * n) // P is b // P + n);
    - `0 // P`, `-1 // P`, `0 % P` and `-1 % P` as 0, -1, 0 and P - 1."""
    def constant(e):
        form = linear(e)
        return form.get(None, 0) if set(form) <= {None} else None

    def at_least_1(p) -> bool:
        return proves(params, Compare(">=", p, Const(1)))

    def fold(n):
        if not isinstance(n, BinOp) or n.op not in ("//", "%") or isinstance(n.right, Const) or not at_least_1(n.right):
            return n
        c = constant(n.left)
        if c in (0, -1):
            return small_floor(n.op, c, n.right)
        if n.op == "%":
            return n
        form = linear(n.left)
        size = sum(1 for m in form if m is not None)
        for mono, k in form.items():
            if mono is None or len(mono) != 1 or not isinstance(k, int) or not isinstance(mono[0], BinOp) \
                    or mono[0].op != "%" or simplify(mono[0].right) != simplify(n.right):
                continue
            rest = {m: v for m, v in form.items() if m != mono}
            for m, v in linear(mono[0].left).items():
                rest[m] = rest.get(m, 0) + k * v
            rest = {m: v for m, v in rest.items() if v}
            if sum(1 for m in rest if m is not None) < size:
                inner = fold(BinOp("//", simplify(expr(rest)), n.right))
                return minus(inner, product(Const(k), BinOp("//", mono[0].left, n.right)))
        return n

    if not any(isinstance(n, BinOp) and n.op in ("//", "%") and not isinstance(n.right, Const) for n in walk_expr(value)):
        return value
    return simplify(map_expr(value, fold))


def floor_steps(value, facts: list):
    """The value with each floor `(L + c1) // P` by a divisor over the parameters written
    against another floor of it, `(L + c2) // P` with c1 < c2 and c2 - c1 <= P (by the
    facts): `(L + c2) // P - (if (L + c2) % P < c2 - c1 then 1 else 0)`, the `if` decided
    by the facts where they can (`(k - 2) // K - (k - 1) // K` is 0 where `(k - 1) % K !=
    0`: the else of a guard with a parameter period, one step back); else itself."""
    floors = {n for n in walk_expr(value) if isinstance(n, BinOp) and n.op == "//" and not isinstance(n.right, Const)}
    if len(floors) < 2:
        return value
    groups: dict = {}
    for f in floors:
        form = linear(f.left)
        c = form.pop(None, 0)
        if type(c) is int:
            groups.setdefault((simplify(f.right), simplify(expr(form))), []).append((c, f))
    swap = {}
    for (p, rest), members in groups.items():
        if len(members) < 2:
            continue
        top, base = max(members, key=lambda m: m[0])
        for c, f in members:
            d = top - c
            if d and proves(facts, Compare(">=", p, Const(d))):
                swap[f] = steps_back(base, d)
    if not swap:
        return value
    return decided(simplify(map_expr(value, lambda n: swap.get(n, n))), facts)


def steps_back(base, d: int):
    """`(x - d) // P` against `base` = `x // P`, for 0 <= d <= P: one less where x % P < d."""
    return minus(base, IfExpr(Compare("<", BinOp("%", base.left, base.right), Const(d)), Const(1), Const(0)))


def small_floor(op: str, c: int, p):
    """`c // p` or `c % p` for c in {0, -1} and p >= 1: 0 or -1, and 0 or p - 1."""
    if op == "//":
        return Const(c)
    return Const(0) if c == 0 else minus(p, Const(1))
