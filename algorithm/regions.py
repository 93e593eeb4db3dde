"""The regions of the barrier layout as programs of their own (algorithm/barrier.py).

A region is the code between two barriers of the layout: it starts with every earlier
instance completed and every counter at 0, so its waits are the threshold plan of its
statements alone. `region_program` writes that program: the variables of the barrier
loops around it become parameters (each at or above its loop's lower bound, or shifted
to start at 0 where that bound may be negative), and each statement sits in an `if` of
the region's facts (its loops' ranges, its branches' conditions), so that the plan
counts only what can happen where the region runs. Its names are canonical (ops, buffers
and loop variables numbered in order of appearance, latencies dropped): regions equal up
to names, a layer's loop nest repeated, are planned once (`RegionProgram.key`).

`plan_region` plans it with the threshold strategy's stages and brings the waits back
to the region's names. Two kinds of threshold would read a run-time value that does not
restart at a barrier, and are not written: `count(F)` (the planner is told not to use it)
and `iters(w)` of a loop nested in another loop of a region that runs more than once
(reported: such an op takes a local barrier). `iters(w)` of a loop that runs at most once
per run of the region is written in closed form.
"""

from __future__ import annotations

import functools
import re

import attrs

from semantics.ir import (
    Access, And, Barrier, BinOp, Const, For, If, IfExpr, Iters, Max, Min, Not, Op, Param, Program, Range,
    Var, map_expr, walk_expr, walk_stmts,
)
from semantics.printer import print_expr, print_program
from semantics.simplify import simplify


@attrs.frozen
class Region:
    """The statements between two barriers of the layout, and where they sit: the loops
    and `if` branches around them, outermost first, as (loop, None) or (if, branch). A
    region runs once per iteration of the loops around it (all barrier loops)."""

    path: tuple
    body: tuple

    @property
    def loops(self) -> tuple[For, ...]:
        return tuple(stmt for stmt, _ in self.path if isinstance(stmt, For))

    def facts(self):
        """What holds wherever the region runs: its loops' ranges and its branches'
        conditions (None when nothing does beyond the parameters' lower bounds)."""
        from algorithm.threshold.facts import path_conds

        parts = path_conds(self.path)
        return functools.reduce(And, parts) if parts else None


def split_regions(body: tuple) -> list[Region]:
    """The regions of a laid-out body (algorithm/barrier.py), in program order."""
    head, rest = _split(body, ())
    return ([Region((), head)] if head else []) + rest


def _has_barrier(stmt) -> bool:
    return any(isinstance(s, Barrier) for s in walk_stmts((stmt,)))


def _split(stmts: tuple, path: tuple) -> tuple[tuple, list[Region]]:
    """(the statements before the first barrier, which continue the region that is open
    where `stmts` starts; the regions that start after it, each closed by a barrier or by
    the end of `stmts`). A barrier loop starts each iteration with a barrier and is
    followed by one, and so is an `if` that holds one (algorithm/barrier.py)."""
    head: list = []
    current, out = head, []
    for stmt in stmts:
        if not _has_barrier(stmt):
            current.append(stmt)
            continue
        match stmt:
            case If():
                then_head, then_rest = _split(stmt.then, path + ((stmt, True),))
                else_head, else_rest = _split(stmt.else_, path + ((stmt, False),))
                if then_head or else_head:
                    current.append(attrs.evolve(stmt, then=then_head, else_=else_head))
                out += then_rest + else_rest
                continue  # the barrier after the `if` closes the region
            case For():
                inner_head, inner = _split(stmt.body, path + ((stmt, None),))
                assert not inner_head, "a barrier loop's body starts with a barrier"
                out += inner
        if current is not head and current:
            out.append(Region(path, tuple(current)))
        current = []
    if current is not head and current:
        out.append(Region(path, tuple(current)))
    return tuple(head), out


def _nonnegative(expr, nonneg: frozenset) -> bool:
    """Whether `expr` is >= 0 for every value of the names in `nonneg` (all >= 0)."""
    match expr:
        case Const(value=v):
            return v >= 0
        case Var(name=n):
            return n in nonneg
        case BinOp(op="%", right=Const(value=m)):
            return m > 0
        case BinOp(op="//", left=a, right=Const(value=m)):
            return m > 0 and _nonnegative(a, nonneg)
        case BinOp(op="+" | "*", left=a, right=b) | Min(left=a, right=b):
            return _nonnegative(a, nonneg) and _nonnegative(b, nonneg)
        case Max(left=a, right=b):
            return _nonnegative(a, nonneg) or _nonnegative(b, nonneg)
    return False


def _renamer(values: dict):
    """Each read of a name in `values` (a variable, or a loop's `iters`) replaced by its
    value (an expression for a variable, a name for `iters`)."""
    def one(node):
        if isinstance(node, Var):
            return values.get(node.name, node)
        if isinstance(node, Iters) and node.var in values:
            return Iters(values[node.var].name)
        return node

    return lambda node: map_expr(node, one)


_MARK = "\u00a7"  # in canonical names only: no kernel identifier has it, nor compose.py's names
_CANONICAL = re.compile(_MARK + r"[a-z]\d+")


@attrs.frozen
class RegionProgram:
    """A region as a program with canonical names; `names` maps each canonical name back
    (an op's or a buffer's name; an expression for a loop variable or parameter)."""

    program: Program
    names: dict = attrs.field(eq=False)
    wrapped: bool  # each top-level statement is an `if` of the region's facts
    repeated: bool  # the region runs once per iteration of the loops around it

    @functools.cached_property
    def key(self) -> str:
        return f"{self.wrapped} {self.repeated}\n{print_program(self.program)}"


def region_program(program: Program, region: Region) -> RegionProgram:
    """The region as a program of its own (module docstring)."""
    params, names = list(program.params), {}
    nonneg = {p.name for p in program.params}
    shift = {}
    for n, loop in enumerate(region.loops):
        lo = _renamer(shift)(loop.lo)
        name = f"{_MARK}p{n}"
        if isinstance(lo, Const) and lo.value >= 0:
            params.append(Param(name, lower=lo.value))
            names[name] = Var(loop.var)
        elif _nonnegative(lo, frozenset(nonneg)):
            params.append(Param(name))
            names[name] = Var(loop.var)
        else:
            params.append(Param(name))
            names[name] = BinOp("-", Var(loop.var), loop.lo)
        shift[loop.var] = Var(name) if names[name] == Var(loop.var) else BinOp("+", Var(name), lo)
        nonneg.add(name)
    facts = region.facts()
    body = region.body if facts is None else tuple(If(facts, (stmt,)) for stmt in region.body)
    body = _Canonical(shift, names).body(body)
    return RegionProgram(Program(program.engines, tuple(params), body), names, facts is not None,
                         bool(region.loops))


class _Canonical:
    """Renames a region's ops, buffers and inner loop variables in order of appearance
    (the barrier loops' variables are already renamed by `shift`); latencies dropped."""

    def __init__(self, shift: dict, names: dict):
        self.values, self.names = dict(shift), names
        self.ops, self.loops, self.buffers = 0, 0, {}

    def body(self, stmts: tuple) -> tuple:
        rename = _renamer(self.values)
        out = []
        for stmt in stmts:
            match stmt:
                case Op():
                    name = f"{_MARK}o{self.ops}"
                    self.ops += 1
                    self.names[name] = stmt.name
                    out.append(attrs.evolve(stmt, name=name, reads=tuple(self.access(a) for a in stmt.reads),
                                            writes=tuple(self.access(a) for a in stmt.writes), lat=1, waits=(),
                                            loc=None, name_loc=None))
                case For():
                    lo, hi = rename(stmt.lo), rename(stmt.hi)
                    name = f"{_MARK}v{self.loops}"
                    self.loops += 1
                    self.names[name] = Var(stmt.var)
                    self.values[stmt.var] = Var(name)
                    out.append(For(name, lo, hi, self.body(stmt.body)))
                case If():
                    out.append(If(rename(stmt.cond), self.body(stmt.then), self.body(stmt.else_)))
                case Barrier():
                    raise AssertionError("a region holds no barrier")
        return tuple(out)

    def access(self, access: Access) -> Access:
        rename = _renamer(self.values)
        buffer = self.buffers.setdefault(access.buffer, f"{_MARK}b{len(self.buffers)}")
        self.names[buffer] = access.buffer
        return Access(buffer, tuple(Range(rename(i.lo), rename(i.hi)) if isinstance(i, Range) else rename(i)
                                    for i in access.indices))


@attrs.frozen
class RegionPlan:
    """A region program's waits, and what could not be written (canonical names)."""

    waits: dict  # op -> its waits
    uncounted: frozenset  # ops with a wait the region's plan cannot count
    nested: frozenset  # ops whose count reads iters() of a loop in a loop of a repeated region
    dropped_redundant: int
    conservative: int
    notes: tuple

    def named(self, region: RegionProgram) -> RegionPlan:
        """The same plan in the region's own names."""
        names = region.names
        back = {name: value for name, value in names.items() if isinstance(value, Var | BinOp)}
        rename, shifted = _renamer(back), any(isinstance(value, BinOp) for value in back.values())
        waits = {names[op]: tuple(attrs.evolve(w, threshold=simplify(rename(w.threshold)) if shifted
                                               else rename(w.threshold)) for w in found)
                 for op, found in self.waits.items()}
        text = functools.partial(_CANONICAL.sub, lambda m: _text(names.get(m.group(0), m.group(0))))
        return RegionPlan(waits, frozenset(names[op] for op in self.uncounted),
                          frozenset(names[op] for op in self.nested), self.dropped_redundant, self.conservative,
                          tuple(text(note) for note in self.notes))


def _text(value) -> str:
    return value if isinstance(value, str) else print_expr(value)


def plan_region(region: RegionProgram, options) -> RegionPlan:
    """The region program's plan by the threshold strategy's stages; `options` tells the
    general stage to report uncountable waits rather than fall back, and not to write
    `count(F)`."""
    from algorithm.threshold import tidy_threshold
    from algorithm.threshold.pipeline import Uncounted, plan

    program = region.program
    try:
        synced, fields = plan(program, options, lambda synced, **fields: (synced, fields))
    except Uncounted as e:
        return RegionPlan({}, frozenset(e.ops), frozenset(), 0, 0, ())
    once, facts, waits, nested = _IterationsOnce(program.body, region.wrapped), None, {}, set()
    for op in walk_stmts(synced.body):
        if not isinstance(op, Op) or not op.waits:
            continue
        thresholds = [once.closed(op.name, w.threshold) for w in op.waits]
        if thresholds != [w.threshold for w in op.waits]:
            facts = facts or _region_facts(region, options)
            thresholds = [tidy_threshold(t, facts) for t in thresholds]
        if region.repeated and any(isinstance(t, Iters) for w in thresholds for t in walk_expr(w)):
            nested.add(op.name)  # iters(w) of a loop in a loop: it counts across the region's runs
            continue
        waits[op.name] = tuple(attrs.evolve(w, threshold=t) for w, t in zip(op.waits, thresholds))
    return RegionPlan(waits, frozenset(), frozenset(nested), fields.get("dropped_redundant") or 0,
                      fields.get("conservative") or 0, tuple(fields.get("notes") or ()))


class _IterationsOnce:
    """`iters(w)` in closed form for the loops w of a region program that run at most
    once per run of the region (inside no loop of it): at an op inside w, `w - lo + 1`;
    after w, its trip count where the `if`s around w hold; else 0. (The planner writes
    these in closed form only for top-level loops, and the region's facts put its body
    statement by statement in `if`s, `wrapped`, whose condition holds wherever an op of the
    region runs.)"""

    def __init__(self, body: tuple, wrapped: bool):
        self.ops: dict[str, tuple] = {}  # op name -> path of (statement index, branch)
        self.loops: dict[str, tuple] = {}  # var -> (path, loop, guards)
        for n, stmt in enumerate(body):
            if wrapped:
                self._walk(stmt.then, ((n, True),), ())
            else:
                self._walk((stmt,), (), (), offset=n)

    def _walk(self, body, path, guards, in_loop=False, offset=0):
        for n, stmt in enumerate(body, offset):
            match stmt:
                case Op():
                    self.ops[stmt.name] = path + ((n, None),)
                case For():
                    if not in_loop:
                        self.loops[stmt.var] = (path + ((n, "body"),), stmt, guards)
                    self._walk(stmt.body, path + ((n, "body"),), guards, True)
                case If():
                    self._walk(stmt.then, path + ((n, True),), guards + (stmt.cond,), in_loop)
                    self._walk(stmt.else_, path + ((n, False),), guards + (Not(stmt.cond),), in_loop)

    def closed(self, op: str, threshold):
        at = self.ops[op]
        return map_expr(threshold, lambda node: self._value(at, node) if isinstance(node, Iters) else node)

    def _value(self, at: tuple, node: Iters):
        if node.var not in self.loops:
            return node
        path, loop, guards = self.loops[node.var]
        if at[:len(path)] == path:
            return BinOp("+", BinOp("-", Var(loop.var), loop.lo), Const(1))
        level = next(k for k, (a, b) in enumerate(zip(path, at)) if a != b)
        if path[level][0] >= at[level][0]:
            return Const(0)  # after the op, or in another branch of one `if`
        trip = Max(Const(0), BinOp("-", loop.hi, loop.lo))
        return IfExpr(functools.reduce(And, guards), trip, Const(0)) if guards else trip


def _region_facts(region: RegionProgram, options):
    """What the planner may assume wherever an op of the region runs: the parameters'
    lower bounds and the region's facts (the condition of each statement's `if`)."""
    from algorithm.threshold.counting import Session, param_bounds

    session = Session(options.facts_rlimit, options.candidate_rlimit)
    program = region.program
    facts = session.facts(param_bounds(program.params))
    return facts.with_(program.body[0].cond) if region.wrapped else facts
