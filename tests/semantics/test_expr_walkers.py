"""The expression walkers of semantics/ir.py: `expr_children` / `with_children` know each
node kind's sub-terms; `walk_expr`, `fold_expr` and `map_expr` recurse through them."""

from __future__ import annotations

import pytest
from hypothesis import given, find, settings
from hypothesis import strategies as st

from semantics.ir import (
    And, BinOp, Compare, Const, Count, IfExpr, Iters, Loc, Max, Min, Neg, Not, Or, Range, Var,
    expr_children, fold_expr, map_expr, walk_expr, with_children,
)
from verify.search.generators import conditions, expressions

TREES = st.one_of(expressions(("N", "i"), ("i",), max_depth=5, counts=("A",)),
                  conditions(("N", "i"), ("i",), max_depth=5, counts=("A",)))


def _size_by_hand(node) -> int:
    """The number of nodes, written out per kind: the reference the fold is checked against."""
    match node:
        case Const() | Var() | Iters() | Count():
            return 1
        case Neg(operand=a) | Not(operand=a):
            return 1 + _size_by_hand(a)
        case IfExpr(cond=c, then=a, else_=b):
            return 1 + _size_by_hand(c) + _size_by_hand(a) + _size_by_hand(b)
        case BinOp(left=a, right=b) | Min(left=a, right=b) | Max(left=a, right=b) \
                | Compare(left=a, right=b) | And(left=a, right=b) | Or(left=a, right=b):
            return 1 + _size_by_hand(a) + _size_by_hand(b)
    raise TypeError(node)


def _size(node, inner) -> int:
    return 1 + sum(inner)


@given(TREES)
def test_fold_visits_every_node_as_the_walk_does(tree):
    assert fold_expr(tree, _size) == _size_by_hand(tree) == len(list(walk_expr(tree)))
    # the leaves, left to right: the order a fold's effects happen in
    order: list = []
    fold_expr(tree, lambda n, inner: order.append(n) if not inner else None)
    assert order == [n for n in walk_expr(tree) if not expr_children(n)]


@given(TREES)
def test_map_identity_and_rebuild(tree):
    assert map_expr(tree, lambda e: e) is tree  # nothing changed: the same objects
    assert fold_expr(tree, with_children) == tree


@given(TREES)
def test_map_replaces_every_occurrence_bottom_up(tree):
    renamed = map_expr(tree, lambda e: Var("M") if e == Var("N") else e)
    assert Var("N") not in walk_expr(renamed)
    assert sum(n == Var("M") for n in walk_expr(renamed)) == sum(n == Var("N") for n in walk_expr(tree))
    assert fold_expr(renamed, _size) == fold_expr(tree, _size)
    # fn sees the node rebuilt on mapped children: a parent of a renamed name shows it
    seen: list = []
    map_expr(tree, lambda e: (seen.append(e), Var("M") if e == Var("N") else e)[1])
    assert not any(Var("N") in expr_children(e) for e in seen)


def test_map_keeps_kind_operator_and_locations():
    loc, op_loc = Loc(3, 4), Loc(3, 6)
    tree = IfExpr(Compare("<", Var("i"), Const(2)), BinOp("//", Var("N"), Const(2), loc=loc, op_loc=op_loc),
                  Max(Neg(Var("N")), Iters("i")), loc=loc)
    out = map_expr(tree, lambda e: Const(1) if e == Var("N") else e)
    assert out == IfExpr(Compare("<", Var("i"), Const(2)), BinOp("//", Const(1), Const(2)),
                         Max(Neg(Const(1)), Iters("i")))
    assert out.loc == loc and out.then.loc == loc and out.then.op_loc == op_loc and out.then.op == "//"
    assert out.cond is tree.cond  # an unchanged sub-tree is kept as it is
    # what fn returns is not mapped again
    assert map_expr(Var("N"), lambda e: BinOp("+", Var("N"), Const(1)) if e == Var("N") else e) \
        == BinOp("+", Var("N"), Const(1))


def test_not_an_expression():
    for bad in (Range(Const(0), Var("N")), 3, "N"):
        with pytest.raises(TypeError, match="not an expression"):
            fold_expr(bad, _size)
        with pytest.raises(TypeError, match="not an expression"):
            map_expr(BinOp("+", Const(1), bad), lambda e: e)
    with pytest.raises(ValueError):
        with_children(BinOp("+", Const(1), Const(2)), (Const(1),))


def test_a_fold_that_forgets_a_kind_is_caught_on_a_generated_tree():
    """Teeth: a hand-written walk that treats `if` as a leaf (it forgets the condition and
    the branches) gives another answer than the fold on some generated tree, which the
    equality test above would have caught."""
    def forgetful(node) -> int:
        match node:
            case Const() | Var() | Iters() | Count() | IfExpr():
                return 1
            case Neg(operand=a) | Not(operand=a):
                return 1 + forgetful(a)
        return 1 + forgetful(node.left) + forgetful(node.right)

    found = find(TREES, lambda t: forgetful(t) != fold_expr(t, _size), settings=settings(max_examples=2000))
    assert isinstance(found, IfExpr) or any(isinstance(n, IfExpr) for n in walk_expr(found))
