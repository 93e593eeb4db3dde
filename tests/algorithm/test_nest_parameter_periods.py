"""The nest stage on guards whose period is over the parameters (`k % K == K - 1`,
`i % (D + 1) == D`): the guard is one residue class of its index, counted with floors
by the period. Expected values come from brute force (tests/support/nest_plans.py)."""

from __future__ import annotations

import pytest

from algorithm.registry import get_strategy
from algorithm.threshold import nest, nest_candidates, nest_counts, nest_floors, nest_guards, reasoning
from algorithm.threshold.reasoning import NotNest, proves
from semantics.ir import BinOp, Compare, Const, IfExpr, Var
from semantics.parser import parse
from semantics.printer import print_expr
from syncproof import load

from tests.support.corpus import ROOT
from tests.support.nest_plans import problems

KERNEL = "tests/data/nest/period_over_parameters.sync"
TRIANGULAR = "tests/data/nest/period_over_parameters_triangular.sync"
ELSE = "tests/data/nest/period_over_parameters_else.sync"
ELSE_ONLY = "tests/data/nest/period_over_parameters_else_only.sync"


def _kernel():
    return load(str(ROOT / KERNEL))


def test_guards_with_a_parameter_period_are_planned_exactly_by_the_nest_stage(monkeypatch):
    import algorithm.threshold.pipeline as pipeline

    program = _kernel()
    assert problems(program, hi=4) == []

    def refuse(*_):
        raise AssertionError("the general stage ran")

    monkeypatch.setitem(pipeline.STAGES, "general", refuse)
    result = get_strategy("threshold")(program)
    assert not result.stats.conservative
    # the consumer of the partial result waits on the engine's own count: no arithmetic
    mm = next(s for s in result.program.body[0].body[0].body if getattr(s, "name", None) == "mm")
    assert "count(ACT)" in print_expr(next(w.threshold for w in mm.waits if w.engine == "ACT"))


@pytest.mark.parametrize("guard, why", [
    ("i % K == K", "residue"),  # K is never a residue of K
    ("i % K == 1", "residue"),  # 1 is not a residue of K = 1
    ("i % (K - 2) == 0", "residue"),  # the period may be below 1
])
def test_a_guard_whose_residue_may_lie_outside_its_period_is_outside_the_class(guard, why):
    program = parse(f"engines A B\nparam N, K >= 1\nfor i in 0..N {{\n  A w writes x\n"
                    f"  if {guard} {{\n    B r reads x\n  }}\n}}\n")
    with pytest.raises(NotNest, match=why):
        nest.check_nest(program)


def test_the_else_of_a_guard_with_a_parameter_period_is_planned_exactly():
    """`if k % K == 0 {...} else {...}`: the else holds at every residue but one (its free
    index: the top where it holds, else the one below). Every wait is a register or an
    index (the general stage leaves the load's wait conservative here)."""
    from semantics.evaluate import arithmetic_ops
    from semantics.ir import Op, walk_stmts

    program = load(str(ROOT / ELSE))
    assert problems(program, hi=5) == []
    assert _closed_form_problems(ELSE) == []
    result = get_strategy("threshold")(program)
    assert not result.stats.conservative
    assert sum(arithmetic_ops(w.threshold) for s in walk_stmts(result.program.body) if isinstance(s, Op)
               for w in s.waits) == 0


def test_the_else_alone_is_planned_exactly_for_every_period():
    """The else holds the only op of its engine: at K = 1 it never runs, and the index
    below a top the guard takes is no candidate (a regression: it was, at K = 1)."""
    program = load(str(ROOT / ELSE_ONLY))
    assert problems(program, hi=5) == []
    assert _closed_form_problems(ELSE_ONLY) == []
    assert not get_strategy("threshold")(program).stats.conservative


def test_a_floor_one_step_back_is_written_against_the_later_one(monkeypatch):
    """`(k - 2) // K` beside `(k - 1) // K` is `(k - 1) // K - (if (k - 1) % K < 1 then 1
    else 0)`, decided where `(k - 1) % K != 0`: the reset after an accumulation waits on
    the register alone where a producer exists. Broken (no step back): caught."""
    program = load(str(ROOT / ELSE_ONLY))
    reset = _waits(get_strategy("threshold")(program).program)["reset"]
    assert "count(PE)" in reset and "//" not in reset
    monkeypatch.setattr(nest_floors, "steps_back", lambda base, d: base)
    assert problems(program, hi=5) != []


def _waits(program) -> dict:
    from semantics.ir import Op, walk_stmts

    return {s.name: "; ".join(print_expr(w.threshold) for w in s.waits) for s in walk_stmts(program.body)
            if isinstance(s, Op)}


def test_teeth_the_else_taking_its_top_always_is_caught(monkeypatch):
    """Broken: the free index under `k % K != r` at its top whether the guard holds there or not."""
    real = nest_guards.holds_at
    monkeypatch.setattr(nest_candidates, "holds_at", lambda g, v: reasoning.TRUE if g.op == "!mod" else real(g, v))
    assert problems(load(str(ROOT / ELSE_ONLY)), hi=5) != []


def test_an_index_divided_by_a_parameter_is_in_the_class_only_on_a_buffer_of_one_engine():
    text = "engines A B\nparam N, K >= 1\nfor i in 0..N {{\n  A w writes o[i // K]\n  B r reads {read}\n}}\n"
    nest.check_nest(parse(text.format(read="x")))
    with pytest.raises(NotNest, match="divisor"):
        nest.check_nest(parse(text.format(read="o[i // K]")))


def test_teeth_a_count_of_a_residue_class_off_by_one_is_caught(monkeypatch):
    """Broken: the count of a residue class over [s, t) taken over [s, t]."""
    from semantics.ir import BinOp as B

    real = nest_guards.count_where

    def one_more(g, start, stop):
        if isinstance(g.period, int):
            return real(g, start, stop)
        return real(g, start, B("+", stop, Const(1)))

    for module in (nest_guards, nest_counts):
        monkeypatch.setattr(module, "count_where", one_more)
    assert problems(_kernel(), hi=4) != []


def test_teeth_a_floor_by_the_period_read_as_zero_is_caught(monkeypatch):
    """Broken: `-1 // P` folded to 0 (it is -1 for every P >= 1)."""
    real = nest_floors.small_floor
    monkeypatch.setattr(nest_floors, "small_floor", lambda op, c, p: Const(0) if op == "//" else real(op, c, p))
    assert problems(_kernel(), hi=4) != []


def test_a_way_of_an_if_that_a_fact_excludes_is_not_asked():
    """Bounds take an `if`-expression each way its condition goes; the way a fact `a != b`
    excludes (`a == b`) is not one: `(if i % P == D then 1 else 0) <= 0` where
    `i % P - D != 0`."""
    p = BinOp("%", Var("i"), BinOp("+", Var("D"), Const(1)))
    cond = Compare("==", p, Var("D"))
    facts = [Compare(">=", Var("D"), Const(0)), Compare(">=", Var("i"), Const(0)),
             reasoning.settled(reasoning.negated(cond))]
    assert proves(facts, Compare("<=", IfExpr(cond, Const(1), Const(0)), Const(0)))
    assert not proves(facts[:2], Compare("<=", IfExpr(cond, Const(1), Const(0)), Const(0)))


def test_a_floor_of_an_index_below_its_parameter_divisor_is_zero():
    """`i // K` is 0 where the facts place i in 0 .. K - 1 (through `i % K`'s range)."""
    k = Var("K")
    facts = [Compare(">=", k, Const(1)), Compare(">=", Var("i"), Const(0)),
             Compare("<=", BinOp("-", Var("i"), BinOp("%", Var("i"), k)), Const(0))]
    assert proves(facts, Compare("<=", BinOp("//", Var("i"), k), Const(0)))
    assert not proves(facts[:2], Compare("<=", BinOp("//", Var("i"), k), Const(0)))


def _closed_form_problems(path: str) -> list[str]:
    """Where the stage's closed forms (no `count(F)` register: the sums themselves) differ
    from T_min."""
    from algorithm.threshold.plan import Plan, PlanEntry
    from tests.support.exactness import exactness_problems

    program = load(str(ROOT / path))
    planned, _ = nest.plan_nest(program, count_registers=False)
    return exactness_problems(program, Plan([PlanEntry(op, engine, t, True) for op, engine, t, *_ in planned]), hi=5)


def test_a_sum_of_floors_by_a_parameter_period_is_exact():
    assert _closed_form_problems(TRIANGULAR) == []
    assert _closed_form_problems(KERNEL) == []


def test_teeth_a_sum_of_floors_by_a_parameter_off_by_one_is_caught(monkeypatch):
    """Broken: the sum of `(j + c) // P` over a range one more than it is, for P over the
    parameters (constant periods as they are)."""
    real = nest_counts._periodic_sum12

    def one_more(atom, var, start, stop, f12):
        found = real(atom, var, start, stop, f12)
        return found if isinstance(atom.right, Const) else BinOp("+", found, Const(12))

    monkeypatch.setattr(nest_counts, "_periodic_sum12", one_more)
    assert _closed_form_problems(TRIANGULAR) != []


def test_bounds_read_a_constant_over_a_parameter_divisor_as_its_value():
    """`-1 // K` is -1 and `-1 % K` is K - 1 for K >= 1: a sum's closed form at a loop's
    first iteration holds products of them, which bounds cannot bound as atoms."""
    k = Var("K")
    floor = BinOp("//", Const(-1), k)
    claim = Compare("<=", BinOp("+", BinOp("*", k, BinOp("*", floor, floor)), BinOp("*", k, floor)), Const(0))
    assert proves([Compare(">=", k, Const(1))], claim)
    assert proves([Compare(">=", k, Const(1))], Compare("==", BinOp("%", Const(-1), k), BinOp("-", k, Const(1))))
    assert not proves([Compare(">=", k, Const(0))], claim)  # (K = 0: no value)


def test_a_fact_settled_false_proves_any_claim():
    """Where a condition settles false (`0 >= 1` at a pinned index), there is no point to
    refute a claim: two candidates' counts need not agree where neither exists."""
    k = Var("k")
    facts = [Compare(">=", Var("K"), Const(1)), Compare(">=", k, Const(0))]
    claim = Compare("==", Const(0), BinOp("%", BinOp("-", k, Const(1)), Var("K")))
    assert reasoning.proves_where(claim, [Compare("<", k, Const(1)), Compare(">=", k, Const(1))], facts, {},
                                  {"k": 0, "K": 1})
    assert not reasoning.proves_where(claim, [Compare("<", k, Const(1))], facts, {}, {"k": 0, "K": 1})


def test_a_disjunction_of_a_condition_and_its_negation_is_true():
    c = Compare("==", BinOp("%", Var("k"), Var("K")), Const(0))
    assert reasoning.disjunction([c, reasoning.negated(c)]) == reasoning.TRUE
    assert reasoning.disjunction([c, Compare(">=", Var("k"), Const(1))]) != reasoning.TRUE


def test_bounds_read_a_residue_by_a_parameter_other_than_zero_as_at_least_one():
    k, p = Var("k"), Var("K")
    residue = BinOp("%", BinOp("-", k, Const(1)), p)
    facts = [Compare(">=", p, Const(1)), Compare("!=", residue, Const(0))]
    assert proves(facts, Compare(">=", residue, Const(1)))
    assert not proves(facts[:1], Compare(">=", residue, Const(1)))


@pytest.mark.parametrize("guard", ["i % K != 0", "not i % K == 0", "not (i + 1) % K == K - 1"])
def test_a_guard_with_a_parameter_period_written_negated_is_planned_exactly(guard):
    """Regression: `if i % K != 0` (the else of `i % K == 0`, written so) ended the class
    check in a TypeError (the residue was read from the condition as written)."""
    program = parse(f"engines A B\nparam N, K >= 1\nfor i in 0..N {{\n  A w writes x\n"
                    f"  if {guard} {{\n    B r reads x writes y\n  }}\n  A u reads y\n}}\n")
    nest.check_nest(program)
    assert problems(program, hi=5) == []
    assert not get_strategy("threshold")(program).stats.conservative


def test_teeth_the_else_counted_as_the_guard_is_caught(monkeypatch):
    """Broken: the iterations where `i % K != 0` counted as those where it is 0 (a sum
    over i of ops under `if i % K != 0`)."""
    import attrs

    real = nest_guards.count_where

    def as_the_guard(g, start, stop):
        return real(attrs.evolve(g, op="mod", cond=None) if g.op == "!mod" else g, start, stop)

    monkeypatch.setattr(nest_guards, "count_where", as_the_guard)
    monkeypatch.setattr(nest_counts, "count_where", as_the_guard)
    program = parse("engines A B\nparam N, K >= 1\nfor i in 0..N {\n  A w writes x\n"
                    "  if i % K != 0 {\n    B r reads x writes y\n  }\n  A u reads y\n}\n")
    planned, _ = nest.plan_nest(program, count_registers=False)
    from algorithm.threshold.plan import Plan, PlanEntry
    from tests.support.exactness import exactness_problems

    assert exactness_problems(program, Plan([PlanEntry(op, engine, t, True) for op, engine, t, *_ in planned]), hi=5)


def test_a_redundancy_query_dividing_by_a_parameter_gets_the_divided_budget(monkeypatch):
    """Regression: a guard `j % K != 0` in a triangular loop left the redundancy proof a
    query of non-linear division that Z3 spent 112 s on (20M units, unknown). Such a
    query gets PlannerOptions.divided_rlimit; the output stays exact."""
    from algorithm.threshold import facts
    from algorithm.threshold.options import PlannerOptions

    asked = []
    real = facts.Session.check_alone
    monkeypatch.setattr(facts.Session, "check_alone",
                        lambda self, assertions, rlimit: asked.append(rlimit) or real(self, assertions, rlimit))
    program = parse("engines A B\nparam N, K >= 1\nfor i in 0..N {\n  for j in 0..i {\n    A w writes x\n"
                    "    if j % K != 0 {\n      B r reads x writes y\n    }\n    A u reads y\n  }\n  B v reads y\n}\n")
    result = get_strategy("threshold")(program)
    assert asked and max(asked) <= PlannerOptions().divided_rlimit
    assert not result.stats.conservative
    assert problems(program, hi=4) == []


BLOCK_IN_TRIANGLE = """\
engines DMA PE ACT
param N, K >= 1
for i in 0..N {
  for k in 0..i + 1 {
    DMA ld writes a lat 400
    if k % K == 0 {
      PE mm reads a writes acc lat 256
    }
  }
  ACT evac reads acc writes o[i] lat 128
}
"""


def _small_floors(program) -> list:
    """The floors `0 // P` and `-1 // P` (P not a constant) in the program's waits and
    loop registers: 0 and -1 wherever P >= 1."""
    from semantics.ir import For, Op, walk_expr, walk_stmts
    from semantics.simplify import simplify

    roots = []
    for stmt in walk_stmts(program.body):
        if isinstance(stmt, Op):
            roots += [w.threshold for w in stmt.waits]
        if isinstance(stmt, For):
            roots += [r.init for r in stmt.registers] + [r.step for r in stmt.registers if r.step is not None]
    return [n for root in roots for n in walk_expr(root) if isinstance(n, BinOp) and n.op in ("//", "%")
            and not isinstance(n.right, Const) and simplify(n.left) in (Const(0), Const(-1))]


def test_a_floor_pinned_at_a_loop_start_is_folded_to_its_value():
    """The `ld` wait at k = 0 pins the triangular loop's index, which leaves `(i - 1) //
    K` at i = 0 as `-1 // K`: folded to -1 (K >= 1), the output is shorter and stays
    exact."""
    program = parse(BLOCK_IN_TRIANGLE)
    assert problems(program, hi=4) == []
    synced = get_strategy("threshold")(program).program
    assert _small_floors(synced) == []


def test_teeth_without_the_fold_after_the_pins_the_floor_stays(monkeypatch):
    from algorithm.threshold import nest_pieces

    monkeypatch.setattr(nest_pieces, "folded_floors", lambda value, params: value)
    synced = get_strategy("threshold")(parse(BLOCK_IN_TRIANGLE)).program
    assert _small_floors(synced) != []
