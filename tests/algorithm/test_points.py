"""The concrete refutation of irredundancy queries (algorithm/threshold/points.py): a
"refuted" answer is a model of the Z3 query the proof would ask (so skipping the query
changes no answer), and a returned cover covers every point it was sampled on.
Z3 (its own context, plain kernel) and a brute-force walk of the instances decide;
neither calls the planner."""

from __future__ import annotations

import itertools

import z3
from hypothesis import given, strategies as st

from algorithm.threshold.options import PlannerOptions
from algorithm.threshold.points import sample_cover

OPTIONS = PlannerOptions()
from semantics.context import sites
from semantics.evaluate import eval_cond, eval_expr
from semantics.ir import BinOp, Compare, Const, Var
from semantics.parser import parse
from semantics.symbolic import domain, to_z3

KERNEL = """engines A B
param N
param M >= 1
for i in 0..N {
  for j in 0..i + M {
    if j % 2 == 0 {
      A y
    }
  }
}
"""
PROGRAM = parse(KERNEL)
Y = sites(PROGRAM)["y"]
NAMES = ("i", "j", "N", "M")


def _query_is_sat(target, parts) -> bool:
    """The irredundancy query as algorithm/threshold/irredundant.py builds it."""
    ctx = z3.Context()
    env = {n: z3.Int(n, ctx) for n in NAMES}
    z = lambda node: to_z3(node, env, ctx=ctx)  # noqa: E731
    disjuncts = [z3.And(z(c), z(g) >= z(target)) for c, g in parts]
    solver = z3.SimpleSolver(ctx=ctx)
    solver.add(env["N"] >= 0, env["M"] >= 1, *domain(Y, env, ctx))
    solver.add(z3.Not(z3.Or(z(target) <= 0, *disjuncts)))
    result = solver.check()
    assert result != z3.unknown  # linear and tiny: Z3 decides these
    return result == z3.sat


def _points(top: int):
    """y's instances for N, M <= top (a plain walk, independent of points.py)."""
    for n, m in itertools.product(range(top + 1), range(1, top + 1)):
        for i in range(n):
            for j in range(i + m):
                if j % 2 == 0:
                    yield {"N": n, "M": m, "i": i, "j": j}


def _covered_everywhere(target, parts, cover, top: int = 3) -> bool:
    for env in _points(top):
        t = eval_expr(target, env)
        if t > 0 and not any(eval_cond(parts[k][0], env) and eval_expr(parts[k][1], env) >= t for k in cover):
            return False
    return True


def _linear():
    coefficient = st.integers(-2, 2)
    return st.builds(
        lambda a, b, c, d: BinOp("+", BinOp("+", BinOp("*", Const(a), Var("i")), BinOp("*", Const(b), Var("j"))),
                                 BinOp("+", BinOp("*", Const(c), Var("N")), Const(d))),
        coefficient, coefficient, coefficient, st.integers(-3, 3))


_conditions = st.builds(Compare, st.sampled_from(["<", "<=", "==", ">=", ">"]), _linear(), _linear())
_parts = st.lists(st.tuples(_conditions, _linear()), min_size=1, max_size=4)


def _refutation_is_a_model(cover_fn, target, parts) -> bool:
    return cover_fn(PROGRAM, Y, target, parts, OPTIONS) is not None or _query_is_sat(target, parts)


@given(_linear(), _parts)
def test_refuted_query_is_satisfiable_and_cover_covers_the_samples(target, parts):
    cover = sample_cover(PROGRAM, Y, target, parts, OPTIONS)
    assert _refutation_is_a_model(sample_cover, target, parts)
    if cover is not None:
        assert all(0 <= k < len(parts) for k in cover)
        assert _covered_everywhere(target, parts, cover)


def test_needed_wait_is_refuted_and_covered_wait_is_not():
    target = BinOp("+", Var("i"), Const(1))
    exact = [(Compare(">=", Var("i"), Const(0)), BinOp("+", Var("i"), Const(1)))]
    short = [(Compare(">=", Var("i"), Const(0)), Var("i"))]
    assert sample_cover(PROGRAM, Y, target, exact, OPTIONS) == [0]
    assert sample_cover(PROGRAM, Y, target, short, OPTIONS) is None
    assert _query_is_sat(target, short) and not _query_is_sat(target, exact)


def test_cover_keeps_only_the_parts_the_samples_need():
    target = BinOp("+", Var("i"), Const(1))
    useless = (Compare("<", Var("i"), Const(0)), Const(100))  # never applies
    low = (Compare("<", Var("i"), Const(2)), Const(2))
    high = (Compare(">=", Var("i"), Const(1)), BinOp("+", Var("i"), Const(1)))
    assert sample_cover(PROGRAM, Y, target, [useless, low, high], OPTIONS) == [1, 2]


def test_teeth_an_off_by_one_refutation_is_caught():
    """A deliberately broken variant (it asks for one more than the target) refutes a
    query Z3 proves unsatisfiable: the property above fails on it."""
    def broken(program, y, target, parts, options):
        return sample_cover(program, y, BinOp("+", target, Const(1)), parts, options)

    target = BinOp("+", Var("i"), Const(1))
    parts = [(Compare(">=", Var("i"), Const(0)), BinOp("+", Var("i"), Const(1)))]
    assert _refutation_is_a_model(sample_cover, target, parts)
    assert not _refutation_is_a_model(broken, target, parts)


def test_points_that_do_not_evaluate_decide_nothing():
    """Division by zero at every point: no refutation, no part chosen."""
    target = BinOp("//", Const(1), BinOp("-", Var("i"), Var("i")))
    assert sample_cover(PROGRAM, Y, target, [(Compare(">=", Var("i"), Const(0)), Const(0))], OPTIONS) == []



SKEWED = parse("""engines A B
param N = 8
param K = 4
for j in 0..K {
  for i in 0..N {
    if i >= 16 * j {
      A y
    }
  }
}
""")


def test_a_witness_needing_one_parameter_large_and_another_small_is_found():
    """Only an instance with j >= 1 breaks the claim, and it exists only for N > 16:
    past the grid near the lower bounds (offsets below cover_grid) and the defaults.
    The spread valuations (each parameter low, at its default or large) reach N = 17."""
    y = sites(SKEWED)["y"]
    target = Const(1)
    parts = [(Compare("==", Var("j"), Const(0)), Const(1))]
    assert OPTIONS.cover_grid <= 16 and 2 * 8 + 1 > 16  # the witness lies past the grid
    assert sample_cover(SKEWED, y, target, parts, OPTIONS) is None
    ctx = z3.Context()
    env = {n: z3.Int(n, ctx) for n in ("i", "j", "N", "K")}
    solver = z3.SimpleSolver(ctx=ctx)
    solver.add(env["N"] >= 0, env["K"] >= 0, *domain(y, env, ctx))
    solver.add(z3.Not(z3.Or(to_z3(target, env, ctx=ctx) <= 0, z3.And(env["j"] == 0, True))))
    assert solver.check() == z3.sat  # the refutation is a model of the query
