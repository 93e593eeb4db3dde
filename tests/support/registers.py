"""Loop registers for tests (docs/language.md, semantics/registers.py): hand-written
kernels that read registers, a Hypothesis strategy that adds random registers to a
generated kernel, and an operational evaluator of thresholds that keeps each register
the way hardware does, written without semantics/registers.py.

- `with_registers(program)` first shifts some loops (`for i in lo + c..hi + c` with `i - c`
  for `i` in the body: the same kernel, with loops that do not start where they used to,
  so a register's `v - lo` matters), then draws, for every loop, up to two registers whose initial
  value and step read only what the static checks allow (parameters, enclosing loop
  variables and registers, `iters(w)` of a loop outside it, `count(F)` of an engine
  with no op inside it; small constants), then rewrites some wait thresholds inside
  the loops to read them (`r`, `t + r`, `max(t, r - c)`, ...) and adds a wait on a
  register now and then. The result passes `validate`.
- `operational_thresholds(program, values)`: walks the program for one valuation,
  keeping every register in a dict, set to its initial value when its loop is entered
  and advanced by its step at each back-edge, and gives each op instance's threshold
  values in program order.
"""

from __future__ import annotations

import attrs
from hypothesis import strategies as st

from semantics.evaluate import eval_cond, eval_expr
from semantics.ir import (
    BinOp, Const, Count, For, If, Iters, Max, Min, Neg, Op, Program, Range, Register, Var, Wait, count_key,
    map_expr, walk_stmts,
)
from semantics.validate import validate

# nested_dynamic (kernels/nested_dynamic.sync) with its waits read from registers: `s` is
# i * M, the flat step index of mac[i, 0]; `f` is i * M + j; `w` is i - 1.
NESTED_DYNAMIC = """\
kernel nested_dynamic_registers
engines LD PE ACT ST
param N = 4, M = 8
for i in 0..N with w = -1 step 1, s = 0 step M {
  for j in 0..M with f = s step 1 {
    LD  load  writes x                              lat 200  wait PE >= f
    PE  mac   reads x, acc[i % 2] writes acc[i % 2] lat 128  wait LD >= f + 1, ACT >= w
  }
  ACT act   reads acc[i % 2] writes y[i % 2]        lat 96   wait PE >= s + M, ST >= w
  ST  store reads y[i % 2]                          lat 200  wait ACT >= w + 2
}
"""

# Loops that start at 1 and 2, a register read by an inner loop's register, `iters` of an
# earlier loop in a header: bisimilar for every N and K.
SHIFTED = """\
kernel shifted_registers
engines LD PE ACT
param N = 3, K = 2
for t in 0..2 {
  LD pre writes w[t]
}
for i in 1..N + 1 with base = 0 - K step K, ld = iters(t) + 1 step 1 {
  LD load writes x[i % 2] wait PE >= base
  for j in 2..K + 2 with q = base + 1 step 1 {
    PE mm reads x[i % 2], w[j % 2] writes p[j] wait LD >= ld, ACT >= q
    ACT acc reads p[j] writes y[i] wait PE >= q + K
  }
}
"""

# count(F) in a header (F with no op inside the loop), a register without a step, an
# `if` inside the loop, and a DMA queue: what the registers' static checks allow.
COUNTED = """\
kernel counted_registers
engines SP PE
queue q increment 2
param N = 3
for t in 0..N {
  SP ld via q writes a[t] lat 10
}
for i in 0..N with all = count(q), mine = 2 * count(q) - 2 * N step 2 {
  if i % 2 == 0 {
    PE even reads a[i] writes o[i] wait q >= 2 * (all - N) + mine + 2
  } else {
    PE odd reads a[i] writes o[i] wait q >= mine + 2
  }
}
"""

# The kernels above with one register wrong, and what the bounded check says
# (default bounds: every parameter over 0..3).
WRONG = {
    "no_step": (NESTED_DYNAMIC.replace("f = s step 1", "f = s"), "unsound"),
    "step_too_large": (NESTED_DYNAMIC.replace("s = 0 step M", "s = 0 step M + 1"), "deadlock"),
    "init_off_by_one": (NESTED_DYNAMIC.replace("w = -1 step 1", "w = 0 step 1"), "deadlock"),
    "waits_one_more": (NESTED_DYNAMIC.replace("ACT >= w\n", "ACT >= w + 1\n"), "over-synchronized"),
    "lower_bound_ignored": (SHIFTED.replace("q = base + 1 step 1", "q = base + 3 step 1"), "deadlock"),
}
# Right within the bounds (N <= 3: `slip // 4` is 0), wrong beyond: from i = 4 on, b
# waits for one instance too few; the all-values proof refutes it (at N = 5).
WRONG_BEYOND_BOUNDS = """\
kernel beyond_bounds
engines A B
param N = 4
for i in 0..N with r = 1 step 1, slip = 0 step 1 {
  A a writes x[i]
  B b reads x[i] wait A >= r - slip // 4
}
"""


# ---------------------------------------------------------------- the operational meaning


def operational_thresholds(program: Program, values: dict) -> list[tuple[str, tuple, tuple[int, ...]]]:
    """(op name, its loop variables' values, its threshold values) for every op instance
    of `program` at `values`, in program order. A register is a variable of the engines
    that read it: set to its initial value when its loop is entered, advanced by its step
    after each iteration that has a next one (the back-edge), gone when the loop ends.
    `iters(v)` and `count(F)` are tracked as docs/language.md defines them."""
    env = {p.name: values[p.name] for p in program.params}
    registers: dict[str, int] = {}
    tracked: dict[str, int] = {}  # iters under the loop variable, count(F) under count_key(F)
    out = []

    def value(node) -> int:
        return eval_expr(node, {**env, **registers}, tracked)

    def walk(body, loops: tuple) -> None:
        for stmt in body:
            if isinstance(stmt, Op):
                out.append((stmt.name, loops, tuple(value(w.threshold) for w in stmt.waits)))
                counter = count_key(stmt.queue or stmt.engine)  # a DMA op counts on its queue
                tracked[counter] = tracked.get(counter, 0) + 1
            elif isinstance(stmt, For):
                lo, hi = eval_expr(stmt.lo, env), eval_expr(stmt.hi, env)
                for reg in stmt.registers:  # the loop is entered
                    registers[reg.name] = value(reg.init)
                for v in range(lo, hi):
                    tracked[stmt.var] = tracked.get(stmt.var, 0) + 1
                    env[stmt.var] = v
                    walk(stmt.body, loops + ((stmt.var, v),))
                    if v + 1 < hi:  # the back-edge
                        for reg in stmt.registers:
                            if reg.step is not None:
                                registers[reg.name] += value(reg.step)
                env.pop(stmt.var, None)
                for reg in stmt.registers:
                    del registers[reg.name]
            elif isinstance(stmt, If):
                walk(stmt.then if eval_cond(stmt.cond, env) else stmt.else_, loops)

    walk(program.body, ())
    return out


# ---------------------------------------------------------------- random registers


def _inside(loop: For) -> tuple[frozenset, frozenset]:
    """The loop variables of `loop` and the loops inside it, and the counters (engines or
    queues) some op inside it counts on: what a header of `loop` may not read."""
    stmts = list(walk_stmts((loop,)))
    return (frozenset(s.var for s in stmts if isinstance(s, For)),
            frozenset(s.queue or s.engine for s in stmts if isinstance(s, Op)))


def _map_exprs(body, f) -> tuple:
    """`body` with `f` applied to every expression and condition of its statements."""
    def index(i):
        return attrs.evolve(i, lo=f(i.lo), hi=f(i.hi)) if isinstance(i, Range) else f(i)

    def access(a):
        return attrs.evolve(a, indices=tuple(index(i) for i in a.indices))

    out = []
    for stmt in body:
        match stmt:
            case Op():
                out.append(attrs.evolve(
                    stmt, reads=tuple(map(access, stmt.reads)), writes=tuple(map(access, stmt.writes)),
                    lat=stmt.lat if isinstance(stmt.lat, int) else f(stmt.lat),
                    waits=tuple(attrs.evolve(w, threshold=f(w.threshold)) for w in stmt.waits),
                    syncs=tuple(attrs.evolve(c, id=f(c.id)) for c in stmt.syncs)))
            case For():
                out.append(attrs.evolve(stmt, lo=f(stmt.lo), hi=f(stmt.hi), body=_map_exprs(stmt.body, f)))
            case If():
                out.append(attrs.evolve(stmt, cond=f(stmt.cond), then=_map_exprs(stmt.then, f),
                                        else_=_map_exprs(stmt.else_, f)))
            case _:
                out.append(stmt)
    return tuple(out)


def shifted(loop: For, c: int) -> For:
    """The same loop running `v = lo + c .. hi + c - 1`, its body reading `v - c`."""
    if c == 0:
        return loop
    v = Var(loop.var)
    body = _map_exprs(loop.body, lambda e: map_expr(e, lambda n: BinOp("-", n, Const(c)) if n == v else n))
    return attrs.evolve(loop, lo=BinOp("+", loop.lo, Const(c)), hi=BinOp("+", loop.hi, Const(c)), body=body)


@st.composite
def with_registers(draw, program: Program, max_per_loop: int = 2, shift: bool = True) -> Program:
    """`program` with some loops shifted and random loop registers and thresholds that
    read them (module docstring); shrinks toward unshifted loops and one register per
    loop."""
    all_loops = [s.var for s in walk_stmts(program.body) if isinstance(s, For)]
    counts = [n for n in (1, 2, 0) if n <= max_per_loop]  # registers per loop, shrinking to 1
    params = [p.name for p in program.params]
    names = iter(f"reg{n}" for n in range(1000))

    def atom(scope: list[str], regs: list[str], loop: For):
        varying, counted = _inside(loop)
        choices = [Const(0), Const(1), Const(3), Neg(Const(1))]
        choices += [Var(n) for n in params + scope + regs]
        choices += [Iters(w) for w in all_loops if w not in varying]
        choices += [Count(f) for f in program.engines if f not in counted]
        return draw(st.sampled_from(choices))

    def expression(scope, regs, loop):
        shape = draw(st.sampled_from(["atom", "sum", "scaled", "less"]))
        first = atom(scope, regs, loop)
        if shape == "sum":
            return BinOp("+", first, atom(scope, regs, loop))
        if shape == "scaled":
            return BinOp("*", Const(draw(st.integers(2, 3))), first)
        if shape == "less":
            return BinOp("-", first, Const(draw(st.integers(1, 2))))
        return first

    def header(loop: For, scope: list[str], regs: list[str]) -> tuple[Register, ...]:
        out = []
        for _ in range(draw(st.sampled_from(counts))):
            init = expression(scope, regs, loop)
            step = draw(st.one_of(st.none(), st.sampled_from([Const(1), Const(2), Neg(Const(1)), Const(0)]),
                                  st.just("expression")))
            if step == "expression":
                step = expression(scope, regs, loop)
            out.append(Register(next(names), init, step))
        return tuple(out)

    def threshold(old, regs: list[str]):
        r = Var(draw(st.sampled_from(regs)))
        c = Const(draw(st.integers(0, 2)))
        return draw(st.sampled_from([r, BinOp("+", old, r), BinOp("-", old, r), Max(old, BinOp("-", r, c)),
                                     Min(BinOp("+", r, c), BinOp("+", old, Const(3)))]))

    def op(stmt: Op, regs: list[str]) -> Op:
        if not regs:
            return stmt
        waits = []
        for wait in stmt.waits:
            if draw(st.booleans()):
                wait = attrs.evolve(wait, threshold=threshold(wait.threshold, regs))
            waits.append(wait)
        if draw(st.sampled_from([True, True, False])):  # a new wait on a register
            engine = draw(st.sampled_from(program.engines))
            waits.append(Wait(engine, threshold(Const(0), regs)))
        return attrs.evolve(stmt, waits=tuple(waits))

    def body(stmts, scope: list[str], regs: list[str]) -> tuple:
        out = []
        for stmt in stmts:
            match stmt:
                case Op():
                    out.append(op(stmt, regs))
                case For():
                    if shift:
                        stmt = shifted(stmt, draw(st.sampled_from([0, 1, 2])))
                    mine = header(stmt, scope, regs)
                    inner = regs + [r.name for r in mine]
                    out.append(attrs.evolve(stmt, body=body(stmt.body, scope + [stmt.var], inner), registers=mine))
                case If():
                    out.append(attrs.evolve(stmt, then=body(stmt.then, scope, regs),
                                            else_=body(stmt.else_, scope, regs)))
                case _:
                    out.append(stmt)
        return tuple(out)

    result = attrs.evolve(program, body=body(program.body, [], []))
    validate(result)  # a bug of this strategy if it raises
    return result
