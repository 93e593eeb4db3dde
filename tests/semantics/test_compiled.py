"""Compiled expressions (semantics/compiled.py), and the evaluation that takes each
shared sub-term once (semantics/evaluate.py `shared_evaluation`), give exactly what the
tree-walking evaluator gives: the same value, or the same EvalError at the same
location."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from semantics.compiled import compile_expr, compiler
from semantics.errors import EvalError
from semantics.evaluate import eval_cond, eval_expr, shared_evaluation
from semantics.ir import BinOp, Compare, Const, IfExpr, Iters, Var
from verify.search.generators import conditions, expressions

NAMES = ("N", "i")
ITERS = ("i",)


def outcome(fn, *args):
    try:
        return ("value", fn(*args))
    except EvalError as err:
        return ("error", err.message, err.loc)


envs = st.fixed_dictionaries({"N": st.integers(-3, 5), "i": st.integers(-3, 5)})
iters = st.one_of(st.none(), st.fixed_dictionaries({"i": st.integers(0, 4)}))


@given(expressions(NAMES, ITERS), envs, iters)
def test_expressions_evaluate_alike(expr, env, counts):
    assert outcome(compile_expr(expr), env, counts) == outcome(eval_expr, expr, env, counts)


@given(conditions(NAMES, ITERS), envs, iters)
def test_conditions_evaluate_alike(cond, env, counts):
    assert outcome(compile_expr(cond, cond=True), env, counts) == outcome(eval_cond, cond, env, counts)


def _sharing(e, c):
    """A term over e and c that holds each of them several times (one object each)."""
    twice = BinOp("+", e, BinOp("*", e, Const(2)))
    return IfExpr(c, twice, BinOp("-", e, IfExpr(c, e, twice)))


@given(expressions(NAMES, ITERS), conditions(NAMES, ITERS), envs, iters)
def test_shared_evaluation_is_the_tree_walk(expr, cond, env, counts):
    for term in (expr, _sharing(expr, cond)):
        assert outcome(shared_evaluation(env, counts)[0], term) == outcome(eval_expr, term, env, counts)
    claim = Compare("<", _sharing(expr, cond), expr)
    assert outcome(shared_evaluation(env, counts)[1], claim) == outcome(eval_cond, claim, env, counts)


def test_shared_evaluation_takes_a_shared_sub_term_once():
    """Teeth: 30 levels of `e + e` over one object: a tree walk visits 2 ** 30 leaves."""
    term = Var("N")
    for _ in range(30):
        term = BinOp("+", term, term)
    assert shared_evaluation({"N": 1})[0](term) == 2 ** 30


def test_errors_and_deep_trees_are_the_evaluators():
    zero = BinOp("//", Var("N"), Const(0))
    assert outcome(compile_expr(zero), {"N": 1})[:2] == ("error", "division by zero ('//' with a right operand of 0)")
    assert outcome(compile_expr(Iters("i")), {}, None)[0] == "error"
    deep = Const(1)
    for _ in range(400):  # too deep for Python's parser (200 parentheses): the evaluator itself runs
        deep = BinOp("+", deep, Const(1))
    assert compile_expr(deep)({}) == 401
    cached = compiler()
    assert cached(zero) is cached(zero)


def test_an_unrolling_with_a_compiler_shared_across_valuations_is_the_unshared_one():
    # The bounded check shares one compiler among a program's valuations
    # (verify/engines/valuations.py); each unrolling must still be its own.
    import itertools
    from pathlib import Path

    from semantics.parser import parse_file
    from semantics.sequential import unroll

    root = Path(__file__).resolve().parents[2] / "kernels"
    for name in ("suite/matmul_fully_optimized.sync", "triangular_attention.sync", "masked_wait.sync",
                 "suite/flash_attention_causal.sync"):
        program = parse_file(str(root / name))
        shared = compiler()
        for combo in itertools.islice(itertools.product(range(3), repeat=len(program.params)), 40):
            values = {p.name: max(v, p.lower) for p, v in zip(program.params, combo)}
            assert unroll(program, values, compiled=shared) == unroll(program, values), (name, values)
