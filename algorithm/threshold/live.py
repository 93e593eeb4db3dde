"""Dead code, as a pass around the planner's stages: statements that run for no
parameter value are taken out before the stages plan the program, and put back, without
waits, in the synchronized program.

What is dead, proved by bounds (reasoning.py; no solver) from the parameters' lower
bounds and, at each statement, the ranges of the loops and the conditions of the `if`s
around it:
- a loop whose upper bound is at most its lower bound (`for k in 1..0`, `for j in 0..i`
  inside `if i == 0`);
- the branch of an `if` whose condition cannot hold there, or must (its `else`).
An `if` with one dead branch is its other branch in the program the stages plan.

Why the plan is the same: a dead op never runs, so it is no instance of any dependence
and no engine counts it (`count(F)`, every threshold's closed form); the live ops keep
their program order, their loops and their guards. A dead op needs no wait: the
synchronized program has none on it, whatever its input had. The barriers a stage puts
into the live program (the barrier layout) keep their places among its statements."""

from __future__ import annotations

import attrs

from semantics.ir import Barrier, Compare, For, If, Not, Op, Or, Program, Var
from algorithm.threshold.facts import param_bounds
from algorithm.threshold.reasoning import FALSE, TRUE, conjuncts, negated, proves, refuted, settled


@attrs.frozen
class Live:
    """The program without its dead statements, and how each statement was taken."""

    program: Program
    taken: dict  # id(stmt) -> "dead", or "then" / "else" for an `if` that is that branch alone


def live_program(program: Program) -> Live | None:
    """The live part of the program, or None when nothing in it is dead."""
    taken: dict = {}
    body = _live(program.body, param_bounds(program.params), taken)
    if not taken:
        return None
    return Live(attrs.evolve(program, body=body), taken)


def _live(body, facts: list, taken: dict) -> tuple:
    out = []
    for stmt in body:
        match stmt:
            case Op():
                out.append(stmt)
            case Barrier():
                taken[id(stmt)] = "dead"  # (the strategy replaces the input's barriers)
            case For(var=var, lo=lo, hi=hi, body=inner):
                if proves(facts, Compare("<=", hi, lo)):
                    taken[id(stmt)] = "dead"
                    continue
                inside = _live(inner, [*facts, Compare("<=", lo, Var(var)), Compare("<", Var(var), hi)], taken)
                out.append(attrs.evolve(stmt, body=inside))
            case If(cond=cond, then=then, else_=else_):
                c = settled(cond)
                then_dead, else_dead = _impossible(facts, c), c == TRUE or proves(facts, c)
                if then_dead and else_dead:
                    taken[id(stmt)] = "dead"
                elif then_dead or else_dead:
                    taken[id(stmt)] = "else" if then_dead else "then"
                    branch, held = (else_, _taken_false(c)) if then_dead else (then, conjuncts(c))
                    out += _live(branch, [*facts, *held], taken)
                else:
                    out.append(attrs.evolve(stmt, then=_live(then, [*facts, *conjuncts(c)], taken),
                                            else_=_live(else_, [*facts, *_taken_false(c)], taken)))
    return tuple(out)


def _impossible(facts: list, c) -> bool:
    """Whether bounds show the condition false wherever the facts hold."""
    if c == FALSE:
        return True
    if c == TRUE:
        return False
    if isinstance(c, Or):
        return _impossible(facts, settled(c.left)) and _impossible(facts, settled(c.right))
    if isinstance(c, Not):
        return proves(facts, c.operand)
    parts = conjuncts(c)
    return any(isinstance(k, Compare) and refuted([*facts, *parts[:n], *parts[n + 1:]], k) for n, k in enumerate(parts))


def _taken_false(c) -> list:
    """What holds where the condition fails, as facts bounds can use (none if it is not
    one comparison)."""
    return [settled(negated(c))] if isinstance(c, Compare) else []


def restored(program: Program, live: Live, synced: Program) -> Program:
    """The input program with the synchronization the stages gave its live part: each
    live statement as synchronized, each dead one without waits, barriers where the
    stages put them."""
    items = iter(synced.body)
    body = _restored(program.body, items, live.taken)
    return attrs.evolve(synced, body=body + tuple(items))  # (barriers after the last statement)


def _restored(body, items, taken: dict) -> tuple:
    out = []
    for stmt in body:
        how = taken.get(id(stmt))
        if how == "dead":
            if not isinstance(stmt, Barrier):
                out += _without_waits((stmt,))
            continue
        if how in ("then", "else"):  # the branch's statements stand in the live program for the `if`
            if how == "then":
                out.append(attrs.evolve(stmt, then=_restored(stmt.then, items, taken), else_=_without_waits(stmt.else_)))
            else:
                out.append(attrs.evolve(stmt, then=_without_waits(stmt.then), else_=_restored(stmt.else_, items, taken)))
            continue
        mine = next(items)
        while isinstance(mine, Barrier):  # (one the stages put before this statement)
            out.append(mine)
            mine = next(items)
        match stmt:
            case For():
                inner = iter(mine.body)
                out.append(attrs.evolve(mine, body=_restored(stmt.body, inner, taken) + tuple(inner)))
            case If():
                then, else_ = iter(mine.then), iter(mine.else_)
                out.append(attrs.evolve(mine, then=_restored(stmt.then, then, taken) + tuple(then),
                                        else_=_restored(stmt.else_, else_, taken) + tuple(else_)))
            case _:
                out.append(mine)
    return tuple(out)


def _without_waits(body) -> tuple:
    """The statements with no wait on any op and no barrier (a dead part of the input)."""
    out = []
    for stmt in body:
        match stmt:
            case For():
                out.append(attrs.evolve(stmt, body=_without_waits(stmt.body)))
            case If():
                out.append(attrs.evolve(stmt, then=_without_waits(stmt.then), else_=_without_waits(stmt.else_)))
            case Op():
                out.append(attrs.evolve(stmt, waits=()))
    return tuple(out)
