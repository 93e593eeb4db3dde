"""Unit tests of the meaning of kernels: expression evaluation, unrolling (program
order, engine-local indices, iters, zero-trip loops), minimal thresholds and the
counter machine's barriers (docs/design.md sections 2 and 5)."""

from __future__ import annotations


import pytest

from semantics.errors import EvalError
from semantics.evaluate import eval_cond, eval_expr
from semantics.ir import (
    And, BinOp, Compare, Const, IfExpr, Iters, Max, Min, Neg, Not, Or, Var,
)
from semantics.machines import COMPLETE, ISSUE, Counter, Label, Reference
from semantics.parser import parse, parse_file
from semantics.sequential import depends_on, producers, requirements, unroll
from verify.engines.explicit import check
from verify.verdicts import Verdict

from tests.support.corpus import KERNELS_DIR

DESIGN_EXAMPLE = KERNELS_DIR / "design_example.sync"


def kernel(*lines: str) -> str:
    return "\n".join(lines) + "\n"


def run(text: str, **values):
    return unroll(parse(text), values)


def names(unrolled):
    return [i.describe() for i in unrolled.instances]


def element_of(expr: str, **values):
    """The element `a[expr]` evaluates to, through the whole pipeline."""
    params = ", ".join(values) if values else None
    src = kernel("engines A", *([f"param {params}"] if params else []), f"A x reads a[{expr}]")
    (instance,) = run(src, **values).instances
    ((element, _),) = instance.accesses
    return element[1]


# ------------------------------------------------------------------ evaluation


@pytest.mark.parametrize("a, b", [(-7, 2), (7, -2), (-7, -2), (7, 2), (-1, 2), (-4, 2), (0, -3)])
def test_floor_division_and_modulo_follow_python(a, b):
    def lit(v):
        return Const(v) if v >= 0 else Neg(Const(-v))

    assert eval_expr(BinOp("//", lit(a), lit(b)), {}) == a // b
    assert eval_expr(BinOp("%", lit(a), lit(b)), {}) == a % b
    assert element_of(f"{a} // {b}") == a // b
    assert element_of(f"{a} % {b}") == a % b


def test_modulo_of_negative_is_non_negative_for_positive_divisor():
    assert element_of("-1 % 2") == 1
    assert element_of("(0 - 3) // 2") == -2
    assert element_of("N - 3 % 2", N=0) == -1  # % binds tighter than -
    assert element_of("-N // 2", N=1) == -1  # unary minus binds tightest


def test_division_by_zero_is_an_eval_error():
    with pytest.raises(EvalError):
        eval_expr(BinOp("//", Const(1), Const(0)), {})
    with pytest.raises(EvalError):
        eval_expr(BinOp("%", Var("N"), Const(0)), {"N": 3})
    with pytest.raises(EvalError):
        run(kernel("engines A", "param N", "A x reads a[1 % N]"), N=0)


def test_min_max_and_conditions():
    assert eval_expr(Min(Var("N"), Const(2)), {"N": 5}) == 2
    assert eval_expr(Max(Neg(Const(1)), Const(0)), {}) == 0
    env = {"i": 1, "N": 3}
    assert eval_cond(And(Compare("<", Var("i"), Var("N")), Not(Compare("==", Var("i"), Const(0)))), env)
    assert eval_cond(Or(Compare(">", Var("i"), Const(5)), Compare(">=", Var("N"), Const(3))), env)
    assert not eval_cond(Compare("!=", Var("i"), Const(1)), env)


def test_if_expressions():
    expr = IfExpr(Compare(">", Var("N"), Const(1)), Const(10), Const(20))
    assert eval_expr(expr, {"N": 2}) == 10
    assert eval_expr(expr, {"N": 1}) == 20
    # The else branch extends as far as possible; `then` binds like the whole thing.
    assert element_of("if N > 1 then 1 else 2 + 3", N=0) == 5
    assert element_of("if N > 1 then 1 else 2 + 3", N=2) == 1
    assert element_of("(if N > 1 then 1 else 2) + 3", N=0) == 5
    assert element_of("(if N > 1 then 1 else 2) + 3", N=2) == 4
    assert element_of("if N == 0 then 7 else if N == 1 then 8 else 9", N=1) == 8
    assert element_of("if N == 0 then 7 else if N == 1 then 8 else 9", N=4) == 9
    assert element_of("if N < 1 or not N < 3 then 1 else 0", N=3) == 1


def test_iters_has_no_value_outside_wait_thresholds():
    with pytest.raises(EvalError):
        eval_expr(Iters("i"), {"i": 0})
    assert eval_expr(Iters("i"), {}, {}) == 0
    assert eval_expr(BinOp("+", Iters("i"), Const(1)), {}, {"i": 4}) == 5


# -------------------------------------------------------------------- iters


ITERS_KERNEL = kernel(
    "engines A B",
    "param N",
    "A before reads x wait B >= iters(j)",
    "for i in 0..3 {",
    "  for j in 0..i {",  # triangular: 0, 1, 2 iterations
    "    A inner reads x wait B >= iters(j), B >= iters(i)",
    "  }",
    "  for k in 0..N {",
    "    A innerk reads x wait B >= iters(k)",
    "  }",
    "  A after reads x wait B >= iters(j), B >= iters(k)",
    "}",
    "A end reads x wait B >= iters(i), B >= iters(j), B >= iters(k)",
)


def waits_of(unrolled, op):
    return [tuple(t for _, t in i.waits) for i in unrolled.instances if i.op.name == op]


def test_iters_is_zero_before_the_loop_first_runs():
    u = run(ITERS_KERNEL, N=2)
    assert waits_of(u, "before") == [(0,)]
    # at i = 0 the j loop has not run yet
    assert waits_of(u, "after")[0][0] == 0


def test_iters_counts_across_iterations_of_enclosing_loops():
    u = run(ITERS_KERNEL, N=2)
    # j runs 0, 1, 2 times for i = 0, 1, 2: iters(j) is 1, then 2, 3; iters(i) the current i + 1
    assert waits_of(u, "inner") == [(1, 2), (2, 3), (3, 3)]
    assert waits_of(u, "innerk") == [(1,), (2,), (3,), (4,), (5,), (6,)]
    assert waits_of(u, "after") == [(0, 2), (1, 4), (3, 6)]
    # after the loops, iters keeps the total number of iterations begun
    assert waits_of(u, "end") == [(3, 3, 6)]


def test_iters_with_zero_trip_loops():
    u = run(ITERS_KERNEL, N=0)
    assert waits_of(u, "innerk") == []
    assert waits_of(u, "after") == [(0, 0), (1, 0), (3, 0)]
    assert waits_of(u, "end") == [(3, 3, 0)]


# -------------------------------------------------------------------- unrolling


def test_unroll_design_example():
    u = unroll(parse_file(str(DESIGN_EXAMPLE)), {"N": 2, "K": 0})
    assert names(u) == ["load[i=0]", "mm[i=0]", "act[i=0]", "store[i=0]",
                        "load[i=1]", "mm[i=1]", "act[i=1]", "store[i=1]", "other"]
    assert u.valuation == (("N", 2), ("K", 0))
    # one stream per engine (LD PE ACT ST), the barrier (-1) in every one
    assert u.streams == ((0, 4, -1), (1, 5, -1), (2, 6, -1, 8), (3, 7, -1))
    assert [i.engine for i in u.instances] == [0, 1, 2, 3, 0, 1, 2, 3, 2]
    assert [i.local for i in u.instances] == [0, 0, 0, 0, 1, 1, 1, 1, 2]
    mm1 = u.instances[5]
    assert dict(mm1.accesses) == {("a", 1): False, ("acc",): True}
    assert mm1.waits == ((0, 2), (2, 1))
    assert u.instances[0].waits == ((1, -1),)  # `i - 1` at i = 0: a wait that always holds
    assert len(u.barriers) == 1 and u.barriers[0].line == 19


def test_unroll_design_example_takes_the_then_branch():
    u = unroll(parse_file(str(DESIGN_EXAMPLE)), {"N": 3, "K": 5})
    assert names(u)[-1] == "extra"
    extra = u.instances[-1]
    assert (extra.engine, extra.local) == (1, 3)


def test_design_example_loop_waits_are_the_minimal_thresholds():
    """docs/design.md section 5: the loop's waits are exactly the minimal ones."""
    program = parse_file(str(DESIGN_EXAMPLE))
    for n in range(6):
        u = unroll(program, {"N": n, "K": 0})
        for instance, need in zip(u.instances, requirements(u)):
            if not instance.env:
                continue
            said = [0] * 4
            for engine, t in instance.waits:
                said[engine] = max(said[engine], t)
            assert need == tuple(said), instance.describe()


def test_unroll_zero_trip_loops():
    text = kernel("engines A B", "param N",
                  "for i in 2..1 {", "  A never reads x", "}",
                  "for j in N..2 {", "  A some reads x", "}",
                  "for k in 0..N {", "  B each reads x", "}")
    assert names(run(text, N=0)) == ["some[j=0]", "some[j=1]"]
    assert names(run(text, N=2)) == ["each[k=0]", "each[k=1]"]
    assert names(run(text, N=3)) == ["each[k=0]", "each[k=1]", "each[k=2]"]


def test_unroll_triangular_loops():
    text = kernel("engines A", "param N",
                  "for i in 0..N {", "  for j in i..N {", "    A x reads a[i, j]", "  }", "}")
    assert names(run(text, N=3)) == ["x[i=0, j=0]", "x[i=0, j=1]", "x[i=0, j=2]",
                                     "x[i=1, j=1]", "x[i=1, j=2]", "x[i=2, j=2]"]


def test_upper_bound_below_lower_bound_is_an_empty_range():
    """Python's range (docs/language.md, "Loop bounds"): an empty range, not an error."""
    text = kernel("engines A", "param N", "for i in 0..N - 2 {", "  A x reads a", "}")
    assert names(run(text, N=3)) == ["x[i=0]"]
    assert names(run(text, N=1)) == []


def test_negative_lower_bound_runs_negative_loop_variables():
    text = kernel("engines A", "param N", "for i in N - 2..N {", "  A x reads a[i]", "}")
    assert names(run(text, N=0)) == ["x[i=-2]", "x[i=-1]"]


def test_engine_local_indices():
    text = kernel("engines A B C", "param N",
                  "A a0 reads x",
                  "for i in 0..N {",
                  "  B b1 reads x",
                  "  if i % 2 == 0 {", "    A a1 reads x", "  } else {", "    C c1 reads x", "  }",
                  "}",
                  "B b2 reads x",
                  "A a2 reads x")
    u = run(text, N=3)
    assert [(i.describe(), i.engine, i.local) for i in u.instances] == [
        ("a0", 0, 0), ("b1[i=0]", 1, 0), ("a1[i=0]", 0, 1), ("b1[i=1]", 1, 1), ("c1[i=1]", 2, 0),
        ("b1[i=2]", 1, 2), ("a1[i=2]", 0, 2), ("b2", 1, 3), ("a2", 0, 3)]
    assert [len(u.engine_instances(e)) for e in range(3)] == [4, 4, 1]


def test_accesses_merge_per_element():
    text = kernel("engines A", "A x reads a[0], a[0], b writes a[0], c")
    ((instance),) = run(text).instances
    assert dict(instance.accesses) == {("a", 0): True, ("b",): False, ("c",): True}


# ------------------------------------------------------------------ requirements


def need_of(text: str, **values):
    u = run(text, **values)
    return requirements(u)


def test_requirements_raw_war_waw():
    assert need_of(kernel("engines A B", "A w writes x", "B r reads x"))[1] == (1, 0)  # RAW
    assert need_of(kernel("engines A B", "A r reads x", "B w writes x"))[1] == (1, 0)  # WAR
    assert need_of(kernel("engines A B", "A w writes x", "B w2 writes x"))[1] == (1, 0)  # WAW
    assert need_of(kernel("engines A B", "A r reads x", "B r2 reads x"))[1] == (0, 0)  # RAR: none


def test_requirements_only_across_engines():
    assert need_of(kernel("engines A B", "A w writes x", "A r reads x")) == ((0, 0), (0, 0))


def test_requirements_distinguish_elements():
    text = kernel("engines A B", "A w writes a[0], s", "B r reads a[1], s[0], b")
    assert need_of(text)[1] == (0, 0)


def test_requirements_last_producer_counts():
    text = kernel("engines A B C", "A w0 writes x", "A w1 writes y", "A w2 reads z",
                  "C c writes x", "B r reads x")
    # r depends on w0 (A #0) and c (C #0); c itself depends on w0
    assert need_of(text) == ((0, 0, 0), (0, 0, 0), (0, 0, 0), (1, 0, 0), (1, 0, 1))


def test_requirements_same_instance_reading_and_writing():
    # y reads and writes x: after a reader, it is a WAR; after a writer, RAW and WAW.
    assert need_of(kernel("engines A B", "A r reads x", "B rw reads x writes x"))[1] == (1, 0)
    # x reads and writes the element: a later reader depends on it (its write).
    assert need_of(kernel("engines A B", "A rw reads x writes x", "B r reads x"))[1] == (1, 0)
    # A read after the latest write of another engine: the read in between does not count.
    text = kernel("engines A B", "A w writes x", "A r reads x", "B r2 reads x")
    assert need_of(text)[2] == (1, 0)
    text = kernel("engines A B", "A w writes x", "A r reads x", "B w2 writes x")
    assert need_of(text)[2] == (2, 0)


def test_requirements_match_depends_on_in_a_loop():
    text = kernel("engines LD PE", "param N",
                  "for i in 0..N {", "  LD load writes a[i % 2]", "  PE use reads a[i % 2]", "}")
    u = run(text, N=4)
    need = requirements(u)
    for y in u.instances:
        expected = [0, 0]
        for x in producers(u, y):
            assert depends_on(y, x)
            expected[x.engine] = max(expected[x.engine], x.local + 1)
        assert need[y.index] == tuple(expected)
    # load at i overwrites the slot read by use at i - 2
    assert [need[y.index][1] for y in u.instances if y.op.name == "load"] == [0, 0, 1, 2]
    assert [need[y.index][0] for y in u.instances if y.op.name == "use"] == [1, 2, 3, 4]


# --------------------------------------------------------------------- machines


def issue(i):
    return Label(ISSUE, i)


def complete(i):
    return Label(COMPLETE, i)


def test_counter_increments_on_completion_only():
    u = run(kernel("engines A B", "A w writes x", "B r reads x wait A >= 1"))
    m = Counter(u)
    s = m.initial()
    assert m.enabled(s) == (issue(0),)
    s = m.step(s, issue(0))
    assert m.counter(s, 0) == 0 and m.enabled(s) == (complete(0),)
    s = m.step(s, complete(0))
    assert m.counter(s, 0) == 1 and m.enabled(s) == (issue(1),)
    s = m.step(m.step(s, issue(1)), complete(1))
    assert m.final(s) and m.enabled(s) == ()


def test_counter_barrier_resets_counters():
    text = kernel("engines A B", "A w writes x", "barrier", "B r reads x wait A >= {t}")
    u = run(text.format(t=1))
    m = Counter(u)
    s = m.initial()
    assert m.at_barrier(s, 1) == 0 and m.at_barrier(s, 0) is None
    s = m.step(m.step(s, issue(0)), complete(0))
    # both engines passed the barrier together, and C[A] is 0 again
    assert m.at_barrier(s, 0) is None and m.at_barrier(s, 1) is None
    assert m.counter(s, 0) == 0
    assert m.enabled(s) == () and not m.final(s)
    assert check(u.program, ()).verdict == Verdict.DEADLOCK
    # counted from the barrier, the right threshold is 0: the barrier did the work
    assert check(parse(text.format(t=0)), ()).verdict == Verdict.BISIMILAR


def test_counter_counts_since_the_last_barrier():
    text = kernel("engines A B", "A w0 writes y", "barrier", "A w1 writes x", "B r reads x wait A >= 1")
    u = run(text)
    m = Counter(u)
    s = m.step(m.step(m.initial(), issue(0)), complete(0))
    assert m.counter(s, 0) == 0
    s = m.step(m.step(s, issue(1)), complete(1))
    assert m.counter(s, 0) == 1 and m.enabled(s) == (issue(2),)
    assert check(u.program, ()).verdict == Verdict.BISIMILAR


def test_barrier_waits_for_every_engine_and_in_flight_instance():
    text = kernel("engines A B", "A a1 writes x", "B b1 writes y", "barrier", "A a2 writes z", "B b2 writes w")
    u = run(text)
    m = Counter(u)
    s = m.step(m.initial(), issue(0))
    s = m.step(s, issue(1))
    s = m.step(s, complete(0))
    # A stands at the barrier while b1 is in flight: A may not go on
    assert m.at_barrier(s, 0) == 0
    assert set(m.enabled(s)) == {complete(1)}
    s = m.step(s, complete(1))
    assert set(m.enabled(s)) == {issue(2), issue(3)}
    # independent instances, so the barrier over-synchronizes
    assert check(u.program, ()).verdict == Verdict.OVER_SYNCHRONIZED


def test_leading_and_trailing_barriers_pass_immediately():
    text = kernel("engines A B", "barrier", "A w writes x", "B r reads x wait A >= 1", "barrier")
    u = run(text)
    m = Counter(u)
    s = m.initial()
    assert m.at_barrier(s, 0) is None and m.enabled(s) == (issue(0),)
    for label in (issue(0), complete(0), issue(1), complete(1)):
        assert label in m.enabled(s)
        s = m.step(s, label)
    assert m.final(s)
    assert check(u.program, ()).verdict == Verdict.BISIMILAR


def test_reference_ignores_waits_and_barriers():
    text = kernel("engines A B", "A w writes x wait B >= 5", "barrier", "B r reads y wait A >= 9")
    u = run(text)
    m = Reference(u)
    assert set(m.enabled(m.initial())) == {issue(0), issue(1)}
    dep = run(kernel("engines A B", "A w writes x", "barrier", "B r reads x"))
    m = Reference(dep)
    assert m.enabled(m.initial()) == (issue(0),)
    s = m.step(m.initial(), issue(0))
    assert m.enabled(s) == (complete(0),)
    s = m.step(s, complete(0))
    assert m.enabled(s) == (issue(1),)


def test_unsynchronized_dependence_is_unsound_and_exact_wait_is_bisimilar():
    base = kernel("engines A B", "A w writes x", "B r reads x{wait}")
    assert check(parse(base.format(wait="")), ()).verdict == Verdict.UNSOUND
    assert check(parse(base.format(wait=" wait A >= 1")), ()).verdict == Verdict.BISIMILAR
    assert check(parse(base.format(wait=" wait A >= 2")), ()).verdict == Verdict.DEADLOCK
    text = kernel("engines A B", "A w writes x", "A v writes y", "B r reads x{wait}")
    assert check(parse(text.format(wait=" wait A >= 2")), ()).verdict == Verdict.OVER_SYNCHRONIZED
