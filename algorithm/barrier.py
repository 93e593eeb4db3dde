"""`barrier`: the baseline of the paper and of SNAX's insert-sync-barrier pass.

Rule. Every loop whose body holds a possible cross-engine dependence (two ops on
different engines touching one buffer, at least one writing) gets an all-engine
barrier at the start of each iteration and one right after the loop, and an `if`
holding such a loop gets one right after it (its barriers run on one path only, and
the next region must start the same way on every path). Counters reset at each
barrier, so the code between two barriers, a *region*, is straight-line code (up to
loops and `if`s without barriers inside) that always starts with every earlier
instance completed and every counter at 0. Each wait's threshold counts only the
producer engine's instances since its region's start:

    T_barrier(y, F) = T_min(y, F) - (F-instances before the region's start)

and a wait whose producers all lie before the region's start disappears: the barrier
already orders them. Input waits and barriers are replaced. Sound, not minimal: the
barriers stall every engine at every iteration boundary.

Planning. A region is a program of its own: its statements (an `if` whose branches
hold barriers contributes the parts of its branches before their first barrier), with
the variables of the barrier loops around it as parameters (each at or above its
loop's lower bound, or shifted to start at 0 where that bound may be negative). The
region's thresholds are those of that program, minimal and irredundant, planned by
the threshold strategy's stages (algorithm/threshold/pipeline.py; the closed stage
takes most regions, by arithmetic), with two exclusions: no threshold reads `count(F)`,
which counts from the kernel's start, not the region's, and none of a region inside a
barrier loop reads `iters(w)`, which keeps counting across the region's runs.

Never refused: an op whose wait cannot be counted in such a region gets a *local
barrier* right before it (a loop or `if` holding one is treated as a barrier loop),
and the layout is redone until every wait is counted; an op right after a barrier needs
no wait. The threshold strategy falls back to this layout when one of its own waits
cannot be counted (algorithm/threshold/pipeline.py, reported as `fallback`), as PTOAS
falls back to a full pipe barrier.

Source: "all-engine barriers at iteration boundaries, resetting synchronization
state so each loop body can be treated as straight-line" (the paper's baseline);
snax-mlir `insert-sync-barrier` (a `snax.cluster_sync_op` before the first
cross-core user, and before the loop's `scf.yield`).
"""

from __future__ import annotations

import functools

import attrs

from semantics.ir import (
    Access, And, Barrier, BinOp, Compare, Const, For, If, IfExpr, Iters, Max, Min, Not, Op, Param, Program, Range,
    Var, map_expr, map_ops, ops as program_ops, walk_expr, walk_stmts,
)
from semantics.simplify import simplify
from semantics.symbolic import conflicting_pairs


def needs_barriers(loop: For, local: frozenset = frozenset()) -> bool:
    """Does the loop's body hold a possible cross-engine dependence (or a local barrier)?"""
    body_ops = [s for s in walk_stmts(loop.body) if isinstance(s, Op)]
    return any(op.name in local for op in body_ops) or any(
        x.engine != y.engine and conflicting_pairs(x, y)
        for n, x in enumerate(body_ops) for y in body_ops[n + 1:]
    )


def _guards_barriers(stmt, local: frozenset = frozenset()) -> bool:
    """An `if` with a barrier loop (or a local barrier) in a branch: the barriers run on
    one path only, so a barrier after the `if` starts the next region the same way on
    every path."""
    return isinstance(stmt, If) and any(
        isinstance(s, For) and needs_barriers(s, local) or isinstance(s, Op) and s.name in local
        for s in walk_stmts(stmt.then + stmt.else_))


def _insert(body, local: frozenset = frozenset()) -> tuple:
    """`body` without its waits' barriers, with the layout's barriers."""
    out = []
    for stmt in body:
        match stmt:
            case For():
                inner = _insert(stmt.body, local)
                if needs_barriers(stmt, local):
                    start = () if inner and isinstance(inner[0], Barrier) else (Barrier(),)
                    out.append(attrs.evolve(stmt, body=start + inner))
                    out.append(Barrier())
                else:
                    out.append(attrs.evolve(stmt, body=inner))
            case If():
                out.append(attrs.evolve(stmt, then=_insert(stmt.then, local), else_=_insert(stmt.else_, local)))
                if _guards_barriers(stmt, local):
                    out.append(Barrier())
            case Op():
                if stmt.name in local and not (out and isinstance(out[-1], Barrier)):
                    out.append(Barrier())
                out.append(stmt)
            case Barrier():
                pass  # input barriers are replaced
    return tuple(out)


# ------------------------------------------------------------------ regions


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
        parts = []
        for stmt, branch in self.path:
            if isinstance(stmt, For):
                parts += [Compare("<=", stmt.lo, Var(stmt.var)), Compare("<", Var(stmt.var), stmt.hi)]
            else:
                parts.append(stmt.cond if branch else Not(stmt.cond))
        return functools.reduce(And, parts) if parts else None


def regions(body: tuple) -> list[Region]:
    """The regions of a laid-out body (`_insert`'s), in program order."""
    head, rest = _split(body, ())
    return ([Region((), head)] if head else []) + rest


def _has_barrier(stmt) -> bool:
    return any(isinstance(s, Barrier) for s in walk_stmts((stmt,)))


def _split(stmts: tuple, path: tuple) -> tuple[tuple, list[Region]]:
    """(the statements before the first barrier, which continue the region that is open
    where `stmts` starts; the regions that start after it, each closed by a barrier or by
    the end of `stmts`). A barrier loop starts each iteration with a barrier and is
    followed by one, and so is an `if` that holds one (`_insert`)."""
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


def _map_stmt_exprs(body: tuple, fn) -> tuple:
    """`body` with `fn` applied to every expression and condition of its statements
    (indices, latencies, loop bounds, `if` conditions)."""
    def access(a: Access) -> Access:
        return attrs.evolve(a, indices=tuple(attrs.evolve(i, lo=fn(i.lo), hi=fn(i.hi)) if isinstance(i, Range)
                                             else fn(i) for i in a.indices))

    out = []
    for stmt in body:
        match stmt:
            case Op():
                lat = stmt.lat if isinstance(stmt.lat, int) else fn(stmt.lat)
                out.append(attrs.evolve(stmt, reads=tuple(map(access, stmt.reads)),
                                        writes=tuple(map(access, stmt.writes)), lat=lat))
            case For():
                out.append(attrs.evolve(stmt, lo=fn(stmt.lo), hi=fn(stmt.hi), body=_map_stmt_exprs(stmt.body, fn)))
            case If():
                out.append(attrs.evolve(stmt, cond=fn(stmt.cond), then=_map_stmt_exprs(stmt.then, fn),
                                        else_=_map_stmt_exprs(stmt.else_, fn)))
            case Barrier():
                out.append(stmt)
    return tuple(out)


def _renamer(values: dict):
    return lambda node: map_expr(node, lambda sub: values.get(sub.name, sub) if isinstance(sub, Var) else sub)


def region_program(program: Program, region: Region) -> tuple[Program, dict]:
    """(the region as a program, the map from its shifted parameters back to the loop
    variables). Each barrier loop's variable v is a parameter: at or above the loop's
    lower bound where that is a constant, at or above 0 where the bound is never
    negative, and otherwise the offset v - lo, at or above 0 (`back` maps it to v).
    Each statement sits in an `if` of the region's facts (its loops' ranges, its
    branches' conditions), so that the plan counts only what can happen where the region
    runs (one `if` per statement: the planner counts the instances of earlier top-level
    statements in closed form)."""
    params = list(program.params)
    nonneg = {p.name for p in program.params}
    shift, back = {}, {}
    for loop in region.loops:
        lo = _renamer(shift)(loop.lo)
        if isinstance(lo, Const) and lo.value >= 0:
            params.append(Param(loop.var, lower=lo.value))
        elif _nonnegative(lo, frozenset(nonneg)):
            params.append(Param(loop.var))
        else:
            params.append(Param(loop.var))
            shift[loop.var] = BinOp("+", Var(loop.var), lo)
            back[loop.var] = BinOp("-", Var(loop.var), loop.lo)
        nonneg.add(loop.var)
    facts = region.facts()
    body = region.body if facts is None else tuple(If(facts, (stmt,)) for stmt in region.body)
    body = _map_stmt_exprs(body, _renamer(shift)) if shift else body
    return Program(program.engines, tuple(params), body, name=program.name), back


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


def _region_facts(sub: Program, region: Region, options):
    """What the planner may assume wherever an op of the region runs: the parameters'
    lower bounds and the region's facts."""
    from algorithm.threshold.counting import Session

    session = Session(options.facts_rlimit)
    facts = session.facts([session.var(p.name) >= p.lower for p in sub.params])
    return facts if region.facts() is None else facts.with_(facts.z(sub.body[0].cond))  # each statement's `if`


# ------------------------------------------------------------------ the layout


@attrs.frozen
class BarrierLayout:
    program: Program  # the input with the layout's barriers and waits
    dependence_pairs: int
    local: frozenset  # ops with a local barrier right before them
    dropped_redundant: int  # waits the regions' plans dropped as implied by others
    conservative: int  # waits sound but not exact within their region
    notes: tuple[str, ...]


def dependence_pairs(program: Program, conflicts=conflicting_pairs) -> int:
    """(producer op, consumer op) pairs on different engines with a possible conflict
    (the threshold planner's statistic)."""
    ops = [s for s in walk_stmts(program.body) if isinstance(s, Op)]
    by_buffer: dict = {}
    for op in ops:
        for buffer in sorted({a.buffer for a in op.reads + op.writes}):
            by_buffer.setdefault(buffer, []).append(op)
    total = 0
    for y in ops:
        xs = {x.name: x for buffer in {a.buffer for a in y.reads + y.writes} for x in by_buffer[buffer]
              if x.engine != y.engine}
        total += sum(1 for x in xs.values() if conflicts(x, y))
    return total


def barrier_layout(program: Program, options=None, local: frozenset = frozenset(),
                   pairs: int | None = None) -> BarrierLayout:
    """The barrier layout of `program` (without DMA queues: the strategy plans their
    transfer view), with local barriers before the ops in `local` and before every op
    whose wait cannot be counted in its region. `options`: the threshold planner's
    (algorithm/threshold/options.py); `pairs`: the dependence pairs, when the caller
    has counted them."""
    from algorithm.threshold.options import PlannerOptions
    from algorithm.threshold import tidy_threshold
    from algorithm.threshold.pipeline import Uncounted, checkpoint, plan

    assert not program.queues, "the barrier layout plans a transfer view"
    options = attrs.evolve(options or PlannerOptions(), count_registers=False, fallback=False)
    local, nested = frozenset(local), set()
    for _ in range(len(program_ops(program)) + 1):  # each round adds an op to `local`
        laid = _insert(program.body, local)
        waits, failed, dropped, conservative, notes = {}, set(), 0, 0, []
        parts = regions(laid)
        for n, region in enumerate(parts):
            checkpoint[0](f"barrier region {n + 1}/{len(parts)}")
            sub, back = region_program(program, region)
            try:
                synced, fields = plan(sub, options, lambda synced, **fields: (synced, fields))
            except Uncounted as e:
                failed |= e.ops
                continue
            dropped += fields.get("dropped_redundant") or 0
            conservative += fields.get("conservative") or 0
            notes += fields.get("notes") or ()
            once, facts = _IterationsOnce(sub.body, region.facts() is not None), None
            for op in walk_stmts(synced.body):
                if not isinstance(op, Op) or not op.waits:
                    continue
                thresholds = [once.closed(op.name, w.threshold) for w in op.waits]
                if thresholds != [w.threshold for w in op.waits]:
                    facts = facts or _region_facts(sub, region, options)
                    thresholds = [tidy_threshold(t, facts) for t in thresholds]
                if region.loops and any(isinstance(t, Iters) for w in thresholds for t in walk_expr(w)):
                    failed.add(op.name)  # iters(w) of a loop in a loop: it counts across the region's runs
                    nested.add(op.name)
                    continue
                waits[op.name] = tuple(attrs.evolve(w, threshold=simplify(_renamer(back)(t)) if back else t)
                                       for w, t in zip(op.waits, thresholds))
        if failed - local:
            local |= failed
            continue
        assert not failed, "an op right after its local barrier waits for nothing"
        out = attrs.evolve(program, body=_with_waits(laid, waits))
        notes += [f"a local barrier before {name}: its count in its region reads iters() of a nested loop, which "
                  "counts across the region's runs" for name in sorted(nested)]
        return BarrierLayout(out, dependence_pairs(program, options.conflicts) if pairs is None else pairs,
                             local, dropped, conservative, tuple(notes))
    raise AssertionError("local barriers did not converge")


def _with_waits(body: tuple, waits: dict) -> tuple:
    return map_ops(body, lambda op: attrs.evolve(op, waits=waits.get(op.name, ())))


def barrier(program: Program) -> Program:
    """The barrier baseline: barriers at iteration boundaries, region-local thresholds."""
    return barrier_layout(program).program
