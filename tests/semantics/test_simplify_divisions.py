"""semantics/simplify.py: a `%` or `//` by a divisor that is not constant drops the
multiples of the divisor from its left operand (`(i - D - 1) % (D + 1)` is
`i % (D + 1)`: a multi-buffered slot read D + 1 iterations earlier), and keeps its
meaning at every valuation: the same value wherever the divisor is not 0 (floor
division, for negative divisors too), an error wherever it is 0."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from semantics import simplify as simplify_module
from semantics.errors import EvalError
from semantics.evaluate import eval_expr
from semantics.ir import BinOp, Compare, Const, Var
from semantics.parser import parse
from semantics.printer import print_expr
from semantics.simplify import cond, simplify

NAMES = ("i", "D", "N")
GRID = [dict(zip(NAMES, values)) for values in itertools.product(range(-3, 4), repeat=len(NAMES))]


def linear_terms(draw_coef):
    return st.tuples(*[draw_coef for _ in NAMES], st.integers(-4, 4))


def as_expr(coefs) -> object:
    *scales, constant = coefs
    out = Const(constant)
    for name, scale in zip(NAMES, scales):
        if scale:
            out = BinOp("+", out, BinOp("*", Const(scale), Var(name)))
    return out


def value(node, env):
    try:
        return eval_expr(node, env)
    except EvalError:
        return "error"


@st.composite
def divisions(draw):
    """`(a + k*m) op m` with m a linear form over the names (not constant)."""
    m = draw(linear_terms(st.integers(-2, 2)).filter(lambda c: any(c[:-1])))
    a = draw(linear_terms(st.integers(-3, 3)))
    k = draw(st.integers(-3, 3))
    left = as_expr(tuple(x + k * y for x, y in zip(a, m)))
    scale = draw(st.integers(-2, 2))
    if scale:  # a term `scale * (e % m)` in the left operand
        inner = BinOp("%", as_expr(draw(linear_terms(st.integers(-2, 2)))), as_expr(m))
        left = BinOp("+", left, BinOp("*", Const(scale), inner))
    return BinOp(draw(st.sampled_from(["%", "//"])), left, as_expr(m))


def test_a_shifted_slot_index_is_the_slot_index():
    i, d = Var("i"), Var("D")
    depth = BinOp("+", d, Const(1))
    earlier = BinOp("-", BinOp("-", i, d), Const(1))
    assert print_expr(simplify(BinOp("%", earlier, depth))) == "i % (D + 1)"
    assert print_expr(simplify(BinOp("//", earlier, depth))) == "i // (D + 1) - 1"
    # The candidate's condition "the same slot" is then true without a solver.
    assert print_expr(cond(Compare("==", BinOp("%", earlier, depth), BinOp("%", i, depth)))) == "0 == 0"


def test_a_slot_inside_a_slot_is_unwrapped():
    i, d = Var("i"), Var("D")
    depth = BinOp("+", d, Const(1))
    before = BinOp("%", BinOp("-", BinOp("%", i, depth), Const(1)), depth)
    assert print_expr(simplify(before)) == "(i - 1) % (D + 1)"
    prefetched = BinOp("%", BinOp("+", i, Const(1)), depth)
    back = BinOp("%", BinOp("-", BinOp("-", i, Const(1)), prefetched), depth)
    assert print_expr(simplify(back)) == "-2 % (D + 1)"


def test_a_divisor_that_is_a_multiple_of_itself_stays_an_error_at_zero():
    d = BinOp("+", Var("D"), Const(1))
    simplified = simplify(BinOp("%", d, d))
    assert value(simplified, {"D": -1}) == "error"
    assert value(simplified, {"D": 2}) == 0


def keeps_the_value_everywhere(node):
    simplified = simplify(node)
    for env in GRID:
        assert value(simplified, env) == value(node, env), (print_expr(node), print_expr(simplified), env)


def read_back(node):
    """The expression as the parser reads its printed text (an index of an op)."""
    program = parse(f"kernel k\nengines E\nparam i, D, N\nE op writes x[{print_expr(node)}]\n")
    (index,) = program.body[0].writes[0].indices
    return index


@given(divisions())
def test_dropping_multiples_of_the_divisor_keeps_the_value_everywhere(node):
    keeps_the_value_everywhere(node)


@given(divisions())
def test_a_simplified_division_reads_back_as_itself(node):
    """A negative constant left of `%` is the negation the text reads (outputs are
    printed and must re-parse to themselves)."""
    simplified = simplify(node)
    assert read_back(simplified) == simplified, print_expr(simplified)


def _clear_caches():
    simplify_module._linear.cache_clear()
    simplify_module.simplify.cache_clear()


def _break(monkeypatch, name, broken_result):
    real = getattr(simplify_module, name)

    def broken(la, lb):
        found = real(la, lb)
        return None if found is None else broken_result(found, lb)

    _clear_caches()
    monkeypatch.setattr(simplify_module, name, broken)


@pytest.mark.parametrize("broken", [
    lambda found, lb: (simplify_module._add(found[0], {None: 1}), found[1]),  # a wrong remainder
    lambda found, lb: (found[0], found[1] + 1),  # a wrong quotient
], ids=["remainder", "quotient"])
def test_teeth_a_wrong_shift_is_caught(monkeypatch, broken):
    _break(monkeypatch, "_shifted", broken)
    _caught()


def test_teeth_an_unwrapping_one_off_is_caught(monkeypatch):
    _break(monkeypatch, "_unwrapped", lambda found, lb: simplify_module._add(found, {None: 1}))
    _caught()


def _caught():
    try:
        with pytest.raises(AssertionError):
            settings(phases=[Phase.generate], database=None)(given(divisions())(keeps_the_value_everywhere))()
    finally:
        _clear_caches()
