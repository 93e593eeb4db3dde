"""Mutation testing of synchronization: does the verifier kill every mutant of a
synchronized program that changes its behaviour?

Operators, each a pure function from the synchronized program to its mutants (one
per site):
- `threshold+1` / `threshold-1`: one wait's threshold plus or minus one;
- `drop-wait`: one wait clause removed;
- `retarget-wait`: one wait's engine replaced by another engine (threshold kept);
- `freeze-var`: one loop variable in one threshold replaced by its loop's lower
  bound (the wait behaves as in the first iteration);
- `drop-iters`: one `iters(v)` in one threshold replaced by 0;
- `drop-count`: one `count(F)` in one threshold replaced by 0;
- `drop-barrier`: one barrier removed;
- `move-barrier`: one barrier moved one statement later (or earlier, at a block end).

A program with loop registers (`for i in 0..N with r = init step s`) is mutated as the
program without them, each read replaced by its value (semantics/registers.py): the
operators then reach what a register feeds. `threshold+1`/`-1` on a wait that reads a
register is the register's `init` plus or minus one at that wait, and `freeze-var` on
the register's loop variable is the register never advanced (its step dropped); a
mutant is a register-free program.

Each mutant is verified like the original; it is `killed` when the check refutes the
property (its verdict says how), `equivalent` when it still holds (the mutated wait
was masked or redundant: worth a look), `unknown` when a budget was hit (never
counted as killed or equivalent).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import attrs

from semantics.ir import Barrier, BinOp, Const, Count, For, If, Iters, Op, Program, Var, Wait, map_expr, walk_expr
from semantics.printer import print_expr
from semantics.registers import inline_registers
from verify.engines import select
from verify.fanout import SERIAL, FanOut, ordered_map
from verify.verdicts import CheckOptions, CheckResult, MutantStatus, Verdict


@attrs.frozen
class Mutant:
    operator: str
    where: str  # in words: which op / wait / barrier, and how
    program: Program


@attrs.frozen
class MutantResult:
    mutant: Mutant
    outcome: MutantStatus
    verdict: Verdict
    result: CheckResult


# ------------------------------------------------------------ the operators


def _names_in(node, kind) -> list[str]:
    """The loop variables (kind Var), tracked loops (kind Iters) or counted engines (kind
    Count) a threshold reads, in order."""
    keys = (n.name if isinstance(n, Var) else n.engine if isinstance(n, Count) else n.var
            for n in walk_expr(node) if isinstance(n, kind))
    return list(dict.fromkeys(keys))


def _wait_mutants(op: Op, loops: dict) -> list[tuple[str, str, tuple[Wait, ...], ...]]:
    """(operator, description, new waits) for every mutation of op's waits."""
    out = []
    waits = op.waits
    for n, wait in enumerate(waits):
        text = f"{op.name}: wait {wait.engine} >= {print_expr(wait.threshold)}"
        swap = lambda w, n=n: waits[:n] + (w,) + waits[n + 1:]
        for delta, name in ((1, "threshold+1"), (-1, "threshold-1")):
            t = BinOp("+" if delta > 0 else "-", wait.threshold, Const(1))
            out.append((name, f"{text} {'+' if delta > 0 else '-'} 1", swap(attrs.evolve(wait, threshold=t))))
        out.append(("drop-wait", f"{text} dropped", waits[:n] + waits[n + 1:]))
        for var in _names_in(wait.threshold, Var):
            if var in loops:
                lo = loops[var].lo
                t = map_expr(wait.threshold, lambda e, v=var, lo=lo: lo if e == Var(v) else e)
                out.append(("freeze-var", f"{text}: {var} frozen at {print_expr(lo)}", swap(attrs.evolve(wait, threshold=t))))
        for var in _names_in(wait.threshold, Iters):
            t = map_expr(wait.threshold, lambda e, v=var: Const(0) if e == Iters(v) else e)
            out.append(("drop-iters", f"{text}: iters({var}) -> 0", swap(attrs.evolve(wait, threshold=t))))
        for engine in _names_in(wait.threshold, Count):
            t = map_expr(wait.threshold, lambda e, f=engine: Const(0) if e == Count(f) else e)
            out.append(("drop-count", f"{text}: count({engine}) -> 0", swap(attrs.evolve(wait, threshold=t))))
    return out


def _retarget(op: Op, engines: tuple[str, ...]) -> list:
    out = []
    for n, wait in enumerate(op.waits):
        for engine in engines:
            if engine != wait.engine:
                new = attrs.evolve(wait, engine=engine)
                out.append(("retarget-wait", f"{op.name}: wait {wait.engine} >= {print_expr(wait.threshold)} "
                             f"now waits on {engine}", op.waits[:n] + (new,) + op.waits[n + 1:]))
    return out


def mutants(program: Program) -> list[Mutant]:
    """Every mutant of a synchronized program, in source order (loop registers replaced
    by their values first: see the module docstring)."""
    program = inline_registers(program)
    found: list[Mutant] = []

    def rebuild(body, path, loops, emit):
        """Walk body; `emit(kind, ...)` builds whole-program mutants through `wrap`."""
        for index, stmt in enumerate(body):
            def wrap(new_body, index=index):
                return path(new_body)

            match stmt:
                case Op():
                    for name, where, waits in _wait_mutants(stmt, loops) + _retarget(stmt, program.engines):
                        new = attrs.evolve(stmt, waits=waits)
                        emit(name, where, path(body[:index] + (new,) + body[index + 1:]))
                case Barrier():
                    line = f"line {stmt.loc.line}" if stmt.loc else f"statement {index + 1}"
                    emit("drop-barrier", f"barrier at {line} dropped", path(body[:index] + body[index + 1:]))
                    rest = body[:index] + body[index + 1:]
                    target = index + 1 if index + 1 < len(body) else index - 1
                    if 0 <= target and target != index and len(body) > 1:
                        moved = rest[:target] + (stmt,) + rest[target:]
                        direction = "later" if target > index else "earlier"
                        emit("move-barrier", f"barrier at {line} moved one statement {direction}", path(moved))
                case For():
                    inner = lambda b, index=index, stmt=stmt: path(body[:index] + (attrs.evolve(stmt, body=b),)
                                                                     + body[index + 1:])
                    rebuild(stmt.body, inner, {**loops, stmt.var: stmt}, emit)
                case If():
                    then = lambda b, index=index, stmt=stmt: path(body[:index] + (attrs.evolve(stmt, then=b),)
                                                                    + body[index + 1:])
                    else_ = lambda b, index=index, stmt=stmt: path(body[:index] + (attrs.evolve(stmt, else_=b),)
                                                                     + body[index + 1:])
                    rebuild(stmt.then, then, loops, emit)
                    rebuild(stmt.else_, else_, loops, emit)

    def emit(operator, where, new_program):
        found.append(Mutant(operator, where, new_program))

    rebuild(program.body, lambda b: attrs.evolve(program, body=b), {}, emit)
    return found


OPERATORS = ("threshold+1", "threshold-1", "drop-wait", "retarget-wait", "freeze-var", "drop-iters",
             "drop-count", "drop-barrier", "move-barrier")


def check_mutant(bounds, options: CheckOptions, engine: str, program: Program) -> CheckResult:
    """One mutant's check (a task of the fan-out)."""
    return select.check(program, bounds, options, engine)


def run_mutants(program: Program, bounds, options: CheckOptions = CheckOptions(),
                progress: Callable[[str], None] | None = None, engine: str = select.AUTO,
                fan_out: FanOut = SERIAL) -> list[MutantResult]:
    """Verify every mutant of `program` within `bounds` (in source order, whatever the
    fan-out)."""
    out = []
    all_mutants = mutants(program)
    task = functools.partial(check_mutant, bounds, attrs.evolve(options, progress=None), engine)
    results = ordered_map(task, [m.program for m in all_mutants], fan_out, progress=progress)
    for n, (mutant, result) in enumerate(zip(all_mutants, results), 1):
        if progress:
            progress(f"{n}/{len(all_mutants)} {mutant.operator}: {mutant.where}")
        if result.holds is None:
            outcome = MutantStatus.UNKNOWN
        else:
            outcome = MutantStatus.EQUIVALENT if result.holds else MutantStatus.KILLED
        out.append(MutantResult(mutant, outcome, result.verdict, result))
    return out


def kill_rate(results: list[MutantResult]) -> float | None:
    """Killed / (killed + equivalent); None when nothing was decided."""
    decided = [r for r in results if r.outcome != MutantStatus.UNKNOWN]
    if not decided:
        return None
    return sum(r.outcome == MutantStatus.KILLED for r in decided) / len(decided)
