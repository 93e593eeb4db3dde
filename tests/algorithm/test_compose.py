"""Planning by statement (algorithm/threshold/compose.py): a program whose top-level
statements repeat a shape is planned one slice per shape, with stand-in loops for the
instances of the statements a slice leaves out. Held here, against brute force and the
explicit engine (never against the planner itself):

- every wait of the composed output equals the brute-force T_min at every instance of
  its op (tests/support/oracle.py: the kept waits are exact), and the output is
  bisimilar to its source;
- on generated programs repeated with renamed loops, ops and buffers (some buffers
  shared between the copies, so that copies depend on each other);
- a composition with wrong stand-in counts is caught by the same check.
"""

from __future__ import annotations

import importlib
import itertools
import os
import subprocess
import sys

import attrs
from hypothesis import event, given, note, strategies as st

import algorithm.threshold.compose as compose
from algorithm.registry import get_strategy
from semantics.ir import (
    Access, And, BinOp, Compare, Const, For, If, IfExpr, Iters, Max, Min, Neg, Not, Op, Or, Program, Range, Var, ops,
)
from semantics.parser import parse
from semantics.printer import print_program
from semantics.symbolic import conflicting_pairs
from algorithm.threshold.options import PlannerOptions
from tests.support import oracle
from verify.engines.explicit import check
from verify.search.generators import param_bounds, programs
from verify.verdicts import Verdict

HI = 2

# Three loop-nest shapes, repeated, each block reading the one before: the shape of
# bench/generate.py's chain (a model's layers), small enough for the explicit engine.
def chain(blocks: int, n: int = 2, m: int = 2) -> str:
    out = [f"kernel chain\nengines LD PE ACT ST\nparam N = {n}, M = {m}\n"]
    for k in range(blocks):
        src = f"o{k - 1}[0]" if k else "inp"
        if k % 3 == 0:
            out.append(f"""for i{k} in 0..N {{
  LD ld{k} reads {src} writes a{k}[i{k} % 2]
  PE mm{k} reads a{k}[i{k} % 2] writes acc{k}
  ACT act{k} reads acc{k} writes o{k}[i{k} % 2]
  ST st{k} reads o{k}[i{k} % 2] writes out{k}[i{k}]
}}
""")
        elif k % 3 == 1:
            out.append(f"""for i{k} in 0..N {{
  for j{k} in 0..M {{
    LD ld{k} reads {src} writes a{k}[j{k} % 2]
    PE mm{k} reads a{k}[j{k} % 2], acc{k}[i{k} % 2] writes acc{k}[i{k} % 2]
  }}
  ACT act{k} reads acc{k}[i{k} % 2] writes o{k}[i{k} % 2]
}}
""")
        else:
            out.append(f"""ACT init{k} reads {src} writes o{k}[0]
for i{k} in 0..N {{
  for j{k} in 0..i{k} + 1 {{
    PE qk{k} reads o{k}[0] writes s{k}
    ACT sm{k} reads s{k} writes p{k}
  }}
  ST st{k} reads p{k} writes out{k}[i{k}]
}}
""")
    return "".join(out)


CHAIN = chain(9)  # 12 slices of 6 shapes: half of them share a shape planned before


def composed_problems(program: Program, limit: int = 5, out: Program | None = None, bisimilar: bool = True,
                      hi: int = HI) -> list[str]:
    """What is wrong with the threshold output of `program`: a wait that differs from
    the brute-force T_min at some instance, or an output that is not bisimilar."""
    out = out or get_strategy("threshold")(program).program
    problems = []
    bounds = param_bounds(program, hi)
    for combo in itertools.product(*(range(lo, hi + 1) for _, lo, hi in bounds)):
        values = dict(zip((name for name, _, _ in bounds), combo))
        run = oracle.unroll_program(out, values)
        for y in run.instances:
            need: dict[str, int] = {}
            for x in run.instances[: y.id]:
                if oracle.depends(y, x):
                    need[x.engine] = max(need.get(x.engine, 0), x.local + 1)
            for engine, t in y.waits:
                if max(0, t) != need.get(engine, 0):
                    problems.append(f"{values} {y.op}{y.env}: wait {engine} >= {t}, T_min = {need.get(engine, 0)}")
                    if len(problems) >= limit:
                        return problems
    verdict = check(out, bounds) if bisimilar else None
    if verdict is not None and verdict.verdict != Verdict.BISIMILAR:
        problems.append(f"{verdict.verdict.value}: {verdict.witness and verdict.witness.explanation}")
    return problems


def test_the_chain_is_planned_by_statement_and_every_wait_is_exact():
    program = parse(CHAIN)
    result = get_strategy("threshold")(program)
    assert result.stats.slices == 12 and result.stats.slice_shapes == 6, result.stats
    problems = composed_problems(program)
    assert not problems, "\n".join(problems) + "\n" + print_program(result.program)


GENERAL = PlannerOptions(stages=("by statement", "general"))  # slices by the general stage, not the nest stage


def test_a_slice_plans_the_waits_of_its_own_statement_only(monkeypatch):
    """A slice repeats the statements it includes only for what they tell about its own
    statement: the planner asks candidates for the consumers of that statement alone."""
    plan_mod = importlib.import_module("algorithm.threshold.plan")
    asked, original = set(), plan_mod.candidates_of

    def spy(program, x, y, pair, max_options):
        asked.add((program.name, y.op.name))
        return original(program, x, y, pair, max_options)

    monkeypatch.setattr(plan_mod, "candidates_of", spy)
    program = parse(CHAIN)
    pieces = [compose.Slice(index, included, ((),) * (len(included) + 1)) for index, included in ((1, (0,)), (3, (2,)))]
    shapes = compose._Shapes(program)
    for piece in pieces:
        sliced = shapes.program(piece)
        own = {op.name for op in ops(sliced.body[-1])}
        asked.clear()
        assert compose.plan_slice(sliced, conflicting_pairs, GENERAL) is not None
        assert asked and {name for _, name in asked} <= own, (asked, own)


def test_composed_output_matches_the_whole_program_plan_on_the_chain():
    """Both are exact, so they need the same waits (thresholds may be printed in another
    of their exact forms)."""
    program = parse(CHAIN)
    composed = get_strategy("threshold")(program)
    whole = compose.plan_by_statement
    try:
        compose.plan_by_statement = lambda *args: None
        plain = get_strategy("threshold")(program)
    finally:
        compose.plan_by_statement = whole
    assert plain.stats.slices is None
    wanted = {(op.name, w.engine) for op in ops(plain.program) for w in op.waits}
    got = {(op.name, w.engine) for op in ops(composed.program) for w in op.waits}
    assert got == wanted


def test_wrong_stand_in_counts_are_caught():
    """Teeth: stand-in loops one instance too long (or too short) give waits that differ
    from T_min, and composed_problems reports them."""
    program = parse(CHAIN)
    counts = compose._Gaps.counts
    for delta in (1, -1):
        def shifted(self, piece, delta=delta):
            return [BinOp("+", c, Const(delta)) for c in counts(self, piece)]
        compose._Gaps.counts = shifted
        try:
            assert composed_problems(program), f"a stand-in count off by {delta} went unnoticed"
        finally:
            compose._Gaps.counts = counts


def test_a_long_chain_syncs_through_the_cli_with_exact_waits(tmp_path):
    """At the scale of a model (300 blocks, 1,100 ops): the CLI syncs it (planned by statement),
    the same under two hash seeds, and every wait equals the brute-force T_min at
    N = M = 1 (the explicit engine is not run at this size)."""
    source = tmp_path / "chain.sync"
    source.write_text(chain(300))
    outputs = []
    for seed in ("0", "1"):
        run = subprocess.run([sys.executable, "-m", "verify.cli", "sync", str(source)], capture_output=True,
                             text=True, env={**os.environ, "PYTHONHASHSEED": seed}, timeout=600)
        assert run.returncode == 0, run.stderr
        outputs.append(run.stdout)
    assert outputs[0] == outputs[1]
    program, out = parse(source.read_text()), parse(outputs[0])
    assert sum(len(op.waits) for op in ops(out)) > len(ops(out))
    problems = composed_problems(program, out=out, bisimilar=False, hi=1)
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------ generated programs


def _renamed_expr(node, loops: dict):
    match node:
        case Const():
            return node
        case Var(name=name):
            return Var(loops.get(name, name))
        case Iters(var=var):
            return Iters(loops.get(var, var))
        case Neg(operand=a) | Not(operand=a):
            return type(node)(_renamed_expr(a, loops))
        case BinOp(op=op, left=a, right=b) | Compare(op=op, left=a, right=b):
            return type(node)(op, _renamed_expr(a, loops), _renamed_expr(b, loops))
        case Min(left=a, right=b) | Max(left=a, right=b) | And(left=a, right=b) | Or(left=a, right=b):
            return type(node)(_renamed_expr(a, loops), _renamed_expr(b, loops))
        case IfExpr(cond=c, then=a, else_=b):
            return IfExpr(*(_renamed_expr(n, loops) for n in (c, a, b)))
        case Range(lo=lo, hi=hi):
            return Range(_renamed_expr(lo, loops), _renamed_expr(hi, loops))
    raise TypeError(node)


def _copy(stmt, n: int, shared: frozenset, loops: dict):
    """The statement with loops and ops renamed for copy n, and buffers too unless shared."""
    def access(a: Access) -> Access:
        name = a.buffer if a.buffer in shared else f"{a.buffer}_{n}"
        return Access(name, tuple(_renamed_expr(i, loops) for i in a.indices))

    match stmt:
        case Op():
            return attrs.evolve(stmt, name=f"{stmt.name}_{n}", reads=tuple(map(access, stmt.reads)),
                                writes=tuple(map(access, stmt.writes)), waits=())
        case For(var=var):
            inner = {**loops, var: f"{var}_{n}"}
            return For(inner[var], _renamed_expr(stmt.lo, loops), _renamed_expr(stmt.hi, loops),
                       tuple(_copy(s, n, shared, inner) for s in stmt.body))
        case If():
            return If(_renamed_expr(stmt.cond, loops), tuple(_copy(s, n, shared, loops) for s in stmt.then),
                      tuple(_copy(s, n, shared, loops) for s in stmt.else_))
    return stmt


@st.composite
def repeated_programs(draw):
    base = draw(programs(engines=(2, 4), max_instances=5, max_statements=3, max_depth=2))
    buffers = sorted({a.buffer for op in ops(base) for a in op.reads + op.writes})
    shared = frozenset(draw(st.sets(st.sampled_from(buffers)))) if buffers else frozenset()
    copies = draw(st.integers(3, 6))  # planned by statement once half the slices share a shape
    body = tuple(_copy(s, n, shared, {}) for n in range(copies) for s in base.body)
    return attrs.evolve(base, body=body)


@given(program=repeated_programs())
def test_repeated_generated_programs_composed_are_exact_and_bisimilar(program):
    note(print_program(program))
    result = get_strategy("threshold")(program)
    event("planned by statement" if result.stats.slices is not None else "planned whole")
    note(print_program(result.program))
    problems = composed_problems(program)
    assert not problems, "\n".join(problems)
