"""The access reduction of the NKI import (semantics/nki/build.py: missing dimensions
filled, shared dimensions dropped, dimensions divided by the gcd of their bounds, unit
ranges made points) keeps exactly which windows intersect: checked by brute force over
the elements of generated windows of one buffer, for every pair of loop iterations;
and a reduction that divides by a wrong factor is caught (teeth)."""

from __future__ import annotations

import itertools

from hypothesis import find, given
from hypothesis import strategies as st

from semantics.evaluate import eval_expr
from semantics.ir import Access, BinOp, Const, For, Op, Range, Var
from semantics.nki import build
from semantics.nki import values as v
from semantics.sequential import elements
from semantics.simplify import simplify

# Small sizes keep the brute force fast; the reduction's arithmetic is the same at 128.
SIZES = [Const(8), Const(32), BinOp("*", Const(8), Var("P"))]


@st.composite
def cases(draw):
    """A buffer of rank 1-2 and 2-4 accesses in a loop over i: each whole, or a window
    `c * i + d .. c * i + d + w` on its leading dimensions."""
    rank = draw(st.integers(1, 2))
    sizes = tuple(draw(st.sampled_from(SIZES)) for _ in range(rank))
    accesses = []
    for _ in range(draw(st.integers(2, 4))):
        windowed = draw(st.integers(0, rank))
        indices = []
        for _ in range(windowed):
            c, d = draw(st.sampled_from([0, 4, 8, 16])), draw(st.sampled_from([0, 4, 8]))
            w = draw(st.sampled_from([1, 4, 8, 16]))
            lo = simplify(BinOp("+", BinOp("*", Const(c), Var("i")), Const(d)))
            indices.append(Range(lo, simplify(BinOp("+", lo, Const(w)))))
        accesses.append(Access("x", tuple(indices)))
    return sizes, tuple(accesses)


def _original(access: Access, sizes, env) -> set:
    axes = [range(eval_expr(r.lo, env), eval_expr(r.hi, env)) for r in access.indices]
    axes += [range(eval_expr(size, env)) for size in sizes[len(access.indices):]]
    return set(itertools.product(*axes))


def mismatch(case) -> bool:
    """Whether some pair of accesses, at some pair of iterations and some P, intersects
    before the reduction and not after, or the other way round."""
    sizes, accesses = case
    tensor = v.Tensor("x", "sbuf", tuple(v.from_expr(s) for s in sizes))
    ops = tuple(Op("E", f"op{n}", writes=(a,)) for n, a in enumerate(accesses))
    body = (For("i", Const(0), Const(3), ops),)
    reduced = [op.writes[0] for op in build.normalize(body, {"x": tensor}, lambda t, d: t.shape[d])[0].body]
    for p in (1, 2):
        for (a, ra), (b, rb) in itertools.combinations_with_replacement(list(zip(accesses, reduced)), 2):
            for i, j in itertools.product(range(3), repeat=2):
                before = bool(_original(a, sizes, {"P": p, "i": i}) & _original(b, sizes, {"P": p, "i": j}))
                after = bool(set(elements(ra, {"P": p, "i": i})) & set(elements(rb, {"P": p, "i": j})))
                if before != after:
                    return True
    return False


@given(cases())
def test_reduced_accesses_intersect_exactly_when_the_windows_do(case):
    assert not mismatch(case)


def test_reduction_shrinks_tiles_to_their_coordinates():
    sizes = (BinOp("*", Const(8), Var("P")), Const(32))
    tile = Range(simplify(BinOp("*", Const(8), Var("i"))), simplify(BinOp("+", BinOp("*", Const(8), Var("i")), Const(8))))
    case = (sizes, (Access("x", (tile,)), Access("x", ())))
    tensor = v.Tensor("x", "sbuf", tuple(v.from_expr(s) for s in sizes))
    ops = tuple(Op("E", f"op{n}", writes=(a,)) for n, a in enumerate(case[1]))
    out = build.normalize((For("i", Const(0), Const(3), ops),), {"x": tensor}, lambda t, d: t.shape[d])
    assert [op.writes[0].indices for op in out[0].body] == [(Var("i"),), (Range(Const(0), Var("P")),)]
    assert not mismatch(case)


def test_teeth_dividing_by_a_wrong_factor_is_caught(monkeypatch):
    right = build._gcd
    monkeypatch.setattr(build, "_gcd", lambda ranges: 2 * right(ranges))
    found = find(cases(), mismatch)
    assert mismatch(found)
