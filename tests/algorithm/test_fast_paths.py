"""The threshold planner's shortcuts give the answers Z3 gives.

Memo by shape (algorithm/threshold/shapes.py): `prove_candidates` answers a question
from the session's memo when an earlier question had the same shape (loop variables
renamed, statement positions relative). Differential test: every question of a
generated program, and of its renamed copy appended to it (so that the memo is hit),
answered through one session's memo equals a fresh Z3 proof of that question alone.
The differential test is shown to catch deliberately broken keys.
"""

from __future__ import annotations

from algorithm.threshold.options import PlannerOptions

import importlib

import attrs
import pytest
from hypothesis import event, given, note, settings

from algorithm.threshold.facts import Session
from semantics.context import sites
from semantics.ir import For, If, Op, Program, Var, map_ops
from semantics.printer import print_program
from semantics.symbolic import conflicting_pairs
from verify.search.generators import programs

candidates_mod = importlib.import_module("algorithm.threshold.candidates")
shapes_mod = importlib.import_module("algorithm.threshold.shapes")
facts_mod = importlib.import_module("algorithm.threshold.facts")


# ------------------------------------------------------------ renamed copies


def _rename_expr(node, env):
    return facts_mod.subst(node, env)


def _renamed_copy(body, suffix: str, env=None):
    """The statements with every loop variable and op name renamed (buffers kept, so the
    copy's accesses conflict with the original's too)."""
    env = dict(env or {})
    out = []
    for stmt in body:
        match stmt:
            case Op():
                out.append(attrs.evolve(
                    stmt, name=stmt.name + suffix,
                    reads=tuple(_rename_access(a, env) for a in stmt.reads),
                    writes=tuple(_rename_access(a, env) for a in stmt.writes)))
            case For():
                inner = {**env, stmt.var: Var(stmt.var + suffix)}
                out.append(attrs.evolve(stmt, var=stmt.var + suffix, lo=_rename_expr(stmt.lo, env),
                                        hi=_rename_expr(stmt.hi, env), body=_renamed_copy(stmt.body, suffix, inner)))
            case If():
                out.append(attrs.evolve(stmt, cond=_rename_expr(stmt.cond, env),
                                        then=_renamed_copy(stmt.then, suffix, env),
                                        else_=_renamed_copy(stmt.else_, suffix, env)))
            case _:
                out.append(stmt)
    return tuple(out)


def _rename_access(access, env):
    from semantics.ir import Range

    def index(i):
        if isinstance(i, Range):
            return Range(_rename_expr(i.lo, env), _rename_expr(i.hi, env))
        return _rename_expr(i, env)

    return attrs.evolve(access, indices=tuple(index(i) for i in access.indices))


def _doubled(program: Program) -> Program:
    """The program followed by a renamed copy of itself, waits dropped."""
    plain = map_ops(program.body, lambda op: attrs.evolve(op, waits=()))
    return attrs.evolve(program, body=plain + _renamed_copy(plain, "_b"))


# ------------------------------------------------------- memo by shape vs Z3


def _questions(program: Program, limit: int | None = None):
    """Every (x, y, pair, candidates) the planner could ask about, and the same with the
    latest candidate dropped or every condition weakened to true (wrong case analyses,
    so that some answers are "not exact")."""
    found = sites(program)
    out = []
    for y in found.values():
        for x in found.values():
            if x.op.engine == y.op.engine:
                continue
            for pair in conflicting_pairs(x.op, y.op):
                try:
                    candidates = candidates_mod.candidates_of(program, x, y, pair, PlannerOptions().max_options)
                except facts_mod.Unsupported:
                    continue
                out.append((x, y, pair, candidates))
                if candidates:
                    out.append((x, y, pair, candidates[1:]))
                    out.append((x, y, pair, [attrs.evolve(c, condition=TRUE) for c in candidates]))
    return out[:limit]


QUESTIONS = 24
TRUE = candidates_mod.conjoin([])


def _memo_mismatches(program: Program, limit: int | None = QUESTIONS) -> tuple[list[str], int]:
    """Questions where the memoized answer differs from a fresh Z3 proof, and the
    number of memo hits."""
    shared = Session(PlannerOptions().facts_rlimit)
    mismatches = []
    for x, y, pair, candidates in _questions(program, limit):
        for soundness_only in (False, True):
            memoized = candidates_mod.prove_candidates(shared, program, x, y, pair, candidates, soundness_only)
            fresh = candidates_mod._prove(Session(PlannerOptions().facts_rlimit), program, x, y, pair, candidates, soundness_only)
            if (memoized is None) != (fresh is None):
                mismatches.append(f"{x.op.name} -> {y.op.name} (soundness_only={soundness_only}): "
                                  f"memo {memoized!r}, z3 {fresh!r}")
    return mismatches, shared.shape_hits


SMALL = programs(engines=(2, 3), max_depth=2, max_statements=3)


@pytest.mark.slow
@settings(max_examples=20)
@given(program=SMALL)
def test_shape_memo_answers_equal_fresh_z3_proofs(program):
    program = _doubled(program)
    note(print_program(program))
    mismatches, hits = _memo_mismatches(program)
    event("memo hit" if hits else "no memo hit")
    assert not mismatches, mismatches


def _key_without(part: int):
    """A broken key: one part of the shape left out (3: the accesses' indices, 4: the
    candidates, 5: the soundness-only flag)."""
    def wrap(original):
        def broken(program, x, y, pair, candidates, soundness_only, where=()):
            key = list(original(program, x, y, pair, candidates, soundness_only, where))
            key[part] = None
            return tuple(key)
        return broken
    return wrap


BROKEN_KEY_KERNEL = """\
kernel broken_key
engines A B
param N
for i in 0..N {
  A w writes a[i]
  B r reads a[i]
}
for j in 0..N {
  A w2 writes c[j % 2]
  B r2 reads c[j % 2]
}
for k in 0..2 {
  A w3 writes b[k]
  B r3 reads b[k]
}
"""


def _key_without_statement_order(original):
    """A broken key: the statement positions left out (x before y in their loop body
    looks like x after y)."""
    def broken(program, x, y, pair, candidates, soundness_only, where=()):
        key = list(original(program, x, y, pair, candidates, soundness_only, where))
        key[1], key[2] = (tuple(step[1:] for step in key[n]) for n in (1, 2))
        return tuple(key)
    return broken


@pytest.mark.parametrize("broken", [_key_without(3), _key_without(4), _key_without(5), _key_without_statement_order])
def test_shape_memo_differential_test_catches_a_broken_key(monkeypatch, broken):
    from semantics.parser import parse

    monkeypatch.setattr(candidates_mod, "pair_shape", broken(shapes_mod.pair_shape))
    mismatches, hits = _memo_mismatches(parse(BROKEN_KEY_KERNEL))
    assert hits and mismatches, "the broken key went unnoticed"


@pytest.mark.slow
def test_shape_memo_is_hit_by_a_renamed_copy():
    from semantics.parser import parse

    # Every question about the copy is answered from the memo (twice: both flags).
    mismatches, hits = _memo_mismatches(_doubled(parse(BROKEN_KEY_KERNEL)), limit=None)
    assert not mismatches and hits >= 2 * len(_questions(parse(BROKEN_KEY_KERNEL)))


# ------------------------------------------------------------ closed-form latest index

from semantics.evaluate import eval_expr  # noqa: E402
from semantics.ir import BinOp, Const  # noqa: E402


@pytest.mark.parametrize("shift", [0, 1, -1, 2])
@pytest.mark.parametrize("top_back", [0, 1, 2])
def test_closed_latest_index_is_the_brute_force_latest(shift, top_back):
    """candidates._closed_latest: the latest u <= top with u % m == (i + shift) % m,
    where top = i - top_back and the modulus m = D + 1 is a parameter expression, is
    the brute-force one for every i, D (or the rule declines and returns None)."""
    i, m = Var("i"), BinOp("+", Var("D"), Const(1))
    top = BinOp("-", i, Const(top_back))
    residue = BinOp("%", BinOp("%", BinOp("+", i, Const(shift)), m), m)  # as the planner builds it
    closed = candidates_mod._closed_latest(top, residue, m)
    applies = top_back + shift in (0, 1)  # top - L = -(top_back + shift) is 0 or -1
    assert (closed is not None) == applies
    if closed is None:
        return
    for d in range(0, 6):
        for value in range(-3, 15):
            env = {"i": value, "D": d}
            want = max(u for u in range(value - 20, eval_expr(top, env) + 1)
                       if u % (d + 1) == (value + shift) % (d + 1))
            assert eval_expr(closed, env) == want, (env, closed)


def test_teeth_a_closed_latest_index_off_by_the_period_is_caught(monkeypatch):
    """The brute-force comparison above catches a rule that steps back one period too
    far (u = top - m instead of top - m + 1 for top - L = -1)."""
    def wrong(top, residue, m):
        return BinOp("-", top, m)

    monkeypatch.setattr(candidates_mod, "_closed_latest", wrong)
    with pytest.raises(AssertionError):
        test_closed_latest_index_is_the_brute_force_latest(0, 1)


# ------------------------------------------------------------ producers in program order

import algorithm.threshold.plan as plan_mod  # noqa: E402
from semantics.parser import parse  # noqa: E402

from tests.support.exactness import exactness_problems  # noqa: E402

IN_ORDER = """kernel chain_in_order
engines A B
param S
A init writes tx[0]
for s in 1..S {
  A step writes tx[s % 2]
  B send reads tx[s % 2]
}
B last reads tx[S % 2]
"""

# Two producers in one top-level loop: p2's instances are not all after p1's.
INTERLEAVED = """kernel chain_teeth
engines A B
param N
for i in 0..N {
  A p1 writes x[i]
  A p2 writes y[i]
}
B c reads x[N - 1], y[0]
"""


def test_later_producers_chain_is_exact_without_a_max():
    """plan.later_producers_first: the parts of producers in later top-level statements
    are chained (`if ... else <max so far>`), no `max` left: the wait of `last` is
    the brute-force T_min for every S and has less arithmetic than the max form."""
    program = parse(IN_ORDER)
    plan = plan_mod.plan_thresholds(program)
    assert exactness_problems(program, plan, hi=5) == []
    (last,) = [e for e in plan.entries if e.op == "last"]
    assert "max(" not in print_program(plan_mod.apply_plan(program, [last]))


def test_teeth_a_chain_across_interleaved_producers_is_caught(monkeypatch):
    """Chaining regardless of the statements' order (p2 after p1 in the same loop body)
    drops p1's later instances; the brute-force comparison catches it."""
    original = plan_mod.later_producers_first

    def unordered(parts):
        parts = [p if isinstance(p, tuple) else (0, p) for p in parts]
        return original([(n, p) for n, (_, p) in enumerate(parts)])

    program = parse(INTERLEAVED)
    assert exactness_problems(program, plan_mod.plan_thresholds(program), hi=3) == []
    monkeypatch.setattr(plan_mod, "later_producers_first", unordered)
    monkeypatch.setattr(plan_mod, "max_of", unordered)  # no max form to fall back to
    problems = exactness_problems(program, plan_mod.plan_thresholds(program), hi=3)
    assert any("T_min" in p for p in problems), problems


def test_tidy_max_of_ifs_on_one_condition_is_the_same_value():
    """thresholds.tidy_threshold: max(if c then p else q, if c then r else s) becomes
    one `if` (no max over the condition), equal to the max at every point."""
    from algorithm.threshold.facts import Facts
    from algorithm.threshold.thresholds import tidy_threshold
    from semantics.ir import Compare, IfExpr, Max
    from semantics.printer import print_expr

    n = Var("N")
    even = Compare("==", BinOp("%", n, Const(2)), Const(0))
    a = IfExpr(even, BinOp("+", n, Const(1)), Const(2))  # if N % 2 == 0 then N + 1 else 2
    b = IfExpr(even, Const(3), BinOp("-", n, Const(1)))  # if N % 2 == 0 then 3 else N - 1
    tidied = tidy_threshold(Max(a, b), Facts(Session(PlannerOptions().facts_rlimit)))
    assert print_expr(tidied).startswith("if N % 2 == 0 then max(N + 1, 3) else max(2, N - 1)"), print_expr(tidied)
    for n in range(-4, 9):
        assert eval_expr(tidied, {"N": n}) == max(eval_expr(a, {"N": n}), eval_expr(b, {"N": n}))
