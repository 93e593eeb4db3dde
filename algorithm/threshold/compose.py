"""Planning by statement: the threshold plan of a long program assembled
from plans of its top-level statements, each distinct shape planned once.

Rule. For a top-level statement S, the waits of S's ops depend only on
- S itself and the earlier top-level statements that hold a producer conflicting
  with an op of S (the *included* statements), and
- how many instances of each engine the other earlier statements run (*gaps*): a
  threshold counts every instance of the producer engine before the last conflicting
  one, but a statement with no conflicting producer adds to that count only its
  number of instances, a closed form over the parameters.
So S is planned in a slice program: the included statements and S, in program order,
with each gap replaced by a stand-in loop `for g in 0..G { F op }` (one per engine
with instances in the gap) over a fresh parameter G >= 0. A threshold of the slice is
exact for every G >= 0, hence for the real gap count, which is substituted for G
afterwards. Slices equal up to the names of loops, ops and buffers (a model's layers
compiled to the same loop nest) are planned once: the memo is keyed by the slice's
text with those names numbered in order of appearance.

The slice's own statement is planned by the whole-program planner (plan_thresholds,
then irredundant), so its waits are the planner's: exact. Only its own ops are planned:
the included statements are there for what they tell about it. So it may keep a wait
that the whole program shows redundant through an op of an excluded statement, or
through the waits of an included one (sound, one wait more); such a wait is reported in
the stats as any other. Used only when at least half the slices share a shape planned
before: otherwise planning the slices (each with its included statements again, and
the stand-in loops) costs more than planning the whole program once, and the whole
program is planned as before.

Falls back to the whole-program planner (returns None) when a gap has no closed form,
a slice's wait is conservative or uncountable, or a threshold mentions a stand-in loop.
"""

from __future__ import annotations

import attrs

from semantics.context import sites
from semantics.ir import (
    Access, And, BinOp, Compare, Const, Count, For, If, IfExpr, Iters, Max, Min, Neg, Not, Op, Or, Param, Program, Range,
    Var, walk_stmts,
)
from semantics.printer import print_program
from semantics.simplify import expr, linear, simplify
from algorithm.threshold.options import PlannerOptions
from algorithm.threshold.counting import Session, Unsupported, full_count, param_bounds

# Canonical names carry a character no kernel identifier has, so they never meet a
# parameter's name.
_MARK = "\u00b7"


@attrs.frozen
class Slice:
    """Top-level statement `index` planned with the earlier statements `included`;
    `gaps[n]` are the engines of the stand-in loops placed before `included[n]` (or
    before the statement itself when n == len(included))."""

    index: int
    included: tuple[int, ...]
    gaps: tuple[tuple[tuple[str, object], ...], ...]


@attrs.frozen
class Composed:
    entries: list  # (op, engine, threshold) of every wait, in the order planned
    dependence_pairs: int
    dropped: int
    slices: int  # top-level statements with ops
    shapes: int  # distinct slice shapes planned


def plan_by_statement(program: Program, conflicts, options=None) -> Composed | None:
    """The composed plan, or None when the whole program should be planned instead
    (too few slices share a shape, or a slice falls back; module docstring)."""
    if len(program.body) < 2 or program.queues:
        return None  # (sync_threshold plans a program with DMA queues in its transfer view)
    all_sites = sites(program)
    by_buffer: dict[str, list] = {}
    for site in all_sites.values():
        for buffer in {a.buffer for a in site.op.reads + site.op.writes}:
            by_buffer.setdefault(buffer, []).append(site)
    pairs, needed = _dependences(all_sites, by_buffer, conflicts)
    holding = [_ops_of(stmt) for stmt in program.body]
    # holders[e][n]: how many of the first n statements hold an op on engine e, so that
    # the engines of any range of statements take one subtraction each (a union over
    # the range made long programs plan in quadratic time).
    holders = {e: [0] for e in program.engines}
    for ops in holding:
        engines = {op.engine for op in ops}
        for e, row in holders.items():
            row.append(row[-1] + (e in engines))
    shapes = _Shapes(program)
    slices = []
    for index, ops in enumerate(holding):
        if ops:
            piece = _slice(program, index, tuple(sorted(needed.get(index, ()))), holders)
            slices.append((piece, shapes.key(piece)))
    if 2 * len({key for _, key in slices}) > len(slices):
        # Fewer than half the slices share a shape planned before: planning each shape's
        # slice (its included statements again, and the stand-in loops) costs more than
        # planning the whole program once.
        return None
    gaps = _Gaps(program, holders, shapes, (options or PlannerOptions()).facts_rlimit)
    entries, dropped, planned = [], 0, {}
    for piece, key in slices:
        if key not in planned:
            # The slice's Z3 context goes with its plan's last reference: the planner
            # leaves no reference cycle holding Z3 terms (the cyclic collector does not run
            # by itself while a strategy runs, semantics/collector.py).
            result = plan_slice(shapes.program(piece), conflicts, options)
            if result is None:
                return None
            planned[key] = result
        kept, lost = planned[key]
        try:
            values = {f"{_MARK}G{n}": count for n, count in enumerate(gaps.counts(piece))}
        except Unsupported:
            return None
        back_loops, back_ops = shapes.names(piece)
        for op, engine, threshold in kept:
            mapped = _rename_expr(threshold, back_loops, values)
            if mapped is None:
                return None
            entries.append((back_ops[op], engine, simplify(mapped)))
        dropped += lost
    return Composed(entries, sum(pairs.values()), dropped, len(slices), len(planned))


def plan_slice(sliced: Program, conflicts, options=None):
    """The kept waits of the slice's last statement, (op, engine, threshold) in plan
    order, and how many of its waits were dropped as redundant; None if a wait of the
    slice is conservative or uncountable (the whole program is planned instead)."""
    from algorithm.threshold.irredundant import irredundant
    from algorithm.threshold.plan import plan_thresholds

    own = frozenset(op.name for op in _ops_of(sliced.body[-1]))
    options = options or PlannerOptions()
    if "nest" in options.stages:  # a slice of rectangular nests: by arithmetic (nest.py)
        from algorithm.threshold.nest import sync_nest

        stand_ins = frozenset(s.var for s in walk_stmts(sliced.body) if isinstance(s, For) and s.var.startswith(f"{_MARK}g"))
        nested = sync_nest(sliced, attrs.evolve(options, conflicts=conflicts), only=own, untracked=stand_ins)
        if nested is not None:
            kept, _, dropped = nested
            return [(e.op, e.engine, e.threshold) for e in kept if e.op in own], dropped
    plan = plan_thresholds(sliced, conflicts, options, only=own)
    if any(e.threshold is None or not e.exact for e in plan.entries):
        return None
    kept, _ = irredundant(sliced, plan, conflicts, only=own, options=options)
    mine = [(e.op, e.engine, e.threshold) for e in kept if e.op in own]
    return mine, sum(1 for e in plan.entries if e.op in own) - len(mine)


def _ops_of(stmt) -> list[Op]:
    return [s for s in walk_stmts((stmt,)) if isinstance(s, Op)]


def _dependences(all_sites, by_buffer, conflicts):
    """(op -> dependence pairs counted as plan_thresholds counts them, statement index ->
    the earlier statements holding a producer of one of its ops)."""
    pairs: dict[str, int] = {}
    needed: dict[int, set] = {}
    for name, y in all_sites.items():
        top = y.trail[0].index
        producers: dict[str, set] = {}
        for buffer in {a.buffer for a in y.op.reads + y.op.writes}:
            for x in by_buffer.get(buffer, ()):
                if x.op.engine != y.op.engine and conflicts(x.op, y.op):
                    producers.setdefault(x.op.engine, set()).add(x.op.name)
                    if x.trail[0].index < top:
                        needed.setdefault(top, set()).add(x.trail[0].index)
        pairs[name] = sum(len(names) for names in producers.values())
    return pairs, needed


class _Gaps:
    """Instances per engine of the top-level statements in a range, in closed form: one
    count per statement shape and engine (a count is over the parameters only, so
    statements equal up to their names have equal counts), summed cumulatively as
    polynomials (coefficient maps: adding them needs no simplification)."""

    def __init__(self, program: Program, holders: dict, shapes: "_Shapes", rlimit: int):
        self.env = {p.name: Var(p.name) for p in program.params}
        session = Session(rlimit)
        self.facts = session.facts(param_bounds(program.params))
        self.holders = holders  # engine -> statements holding one of its ops, cumulatively
        self.shapes = shapes
        self.by_shape: dict = {}
        self.sums: dict = {}  # engine -> cumulative counts of statements 0..n-1

    def _count(self, index: int, engine: str) -> dict:
        shape = self.shapes.of(index)
        key = (shape.text, engine)
        hit = self.by_shape.get(key)
        if hit is None:
            targets = frozenset(op.name for op in _ops_of(shape.stmt) if op.engine == engine)
            hit = self.by_shape[key] = linear(full_count((shape.stmt,), self.env, targets, self.facts))
        return hit

    def before(self, index: int, engine: str) -> dict:
        sums = self.sums.setdefault(engine, [{}])
        while len(sums) <= index:
            n = len(sums) - 1
            held = self.holders[engine][n + 1] > self.holders[engine][n]
            sums.append(_plus(sums[-1], self._count(n, engine)) if held else sums[-1])
        return sums[index]

    def counts(self, piece: "Slice") -> list:
        """The instances each stand-in loop of the slice stands for, in slice order."""
        out, start = [], 0
        for part, stop in zip(piece.gaps, list(piece.included) + [piece.index]):
            for engine in part:
                out.append(expr(_plus(self.before(stop, engine), self.before(start, engine), -1)))
            start = stop + 1
        return out


def _plus(a: dict, b: dict, scale: int = 1) -> dict:
    out = dict(a)
    for mono, coef in b.items():
        value = out.get(mono, 0) + scale * coef
        if value:
            out[mono] = value
        else:
            out.pop(mono, None)
    return out


class _Numbering:
    """Names numbered in order of first appearance, one series per kind (loop, op, buffer)."""

    def __init__(self):
        self.names = {"v": {}, "o": {}, "b": {}}

    def __call__(self, old: str, kind: str) -> str:
        table = self.names[kind]
        if old not in table:
            table[old] = f"{_MARK}{kind}{len(table)}"
        return table[old]


def _slice(program, index, included, holders) -> Slice:
    parts, start = [], 0
    for j in list(included) + [index]:
        parts.append(tuple(e for e in program.engines if holders[e][j] > holders[e][start]))
        start = j + 1
    return Slice(index, included, tuple(parts))


@attrs.frozen
class _Shape:
    """A top-level statement with its names numbered in order of appearance (`stmt`,
    printed as `text`), and the program's names in that order."""

    text: str
    stmt: object
    loops: tuple[str, ...]
    ops: tuple[str, ...]
    buffers: tuple[str, ...]


class _Shapes:
    """The shape of each top-level statement (made once), and from them a slice's key,
    program and names: a slice's statements numbered one after the other, its buffers
    by first appearance in the slice."""

    def __init__(self, program: Program):
        self.source = program
        self.made: dict[int, _Shape] = {}

    def of(self, index: int) -> _Shape:
        shape = self.made.get(index)
        if shape is None:
            fresh = _Numbering()
            stmt = _rename_stmt(self.source.body[index], fresh, {})
            names = {kind: tuple(table) for kind, table in fresh.names.items()}
            shape = self.made[index] = _Shape(print_program(Program((), (), (stmt,))), stmt,
                                              names["v"], names["o"], names["b"])
        return shape

    def _buffers(self, piece: Slice) -> list[tuple[int, ...]]:
        seen: dict[str, int] = {}
        out = []
        for j in list(piece.included) + [piece.index]:
            out.append(tuple(seen.setdefault(b, len(seen)) for b in self.of(j).buffers))
        return out

    def key(self, piece: Slice):
        """Equal keys: slice programs equal up to names (one text per statement shape)."""
        statements = tuple(self.of(j).text for j in list(piece.included) + [piece.index])
        return piece.gaps, statements, tuple(self._buffers(piece))

    def program(self, piece: Slice) -> Program:
        """The slice program: stand-in loops over parameters G0, G1, ... (>= 0), then the
        statements with the slice's numbering; waits dropped, latencies 1 (the planner
        reads neither)."""
        # The stand-ins' parameters come first: the redundancy pass's concrete runs
        # (irredundant.shown_necessary) take the first 64 valuations in lexicographic
        # order, and with the program's parameters first those all had N = 0, where no
        # wait is needed, so every wait went to a Z3 proof. Their default 0 adds the
        # program's defaults to those runs.
        params = []
        body = []
        gap = loops = ops = 0
        for part, j, buffers in zip(piece.gaps, list(piece.included) + [piece.index], self._buffers(piece)):
            for engine in part:
                params.append(Param(f"{_MARK}G{gap}", 0, lower=0))
                body.append(For(f"{_MARK}g{gap}", Const(0), Var(f"{_MARK}G{gap}"), (Op(engine, f"{_MARK}gap{gap}"),)))
                gap += 1
            shape = self.of(j)
            table = {"v": {f"{_MARK}v{n}": f"{_MARK}v{loops + n}" for n in range(len(shape.loops))},
                     "o": {f"{_MARK}o{n}": f"{_MARK}o{ops + n}" for n in range(len(shape.ops))},
                     "b": {f"{_MARK}b{n}": f"{_MARK}b{g}" for n, g in enumerate(buffers)}}
            body.append(_rename_stmt(shape.stmt, lambda old, kind: table[kind][old], {}))
            loops, ops = loops + len(shape.loops), ops + len(shape.ops)
        return Program(self.source.engines, tuple(params) + self.source.params, tuple(body), name="slice")

    def names(self, piece: Slice) -> tuple[dict, dict]:
        """The program's loop and op names by the slice program's names."""
        loops, ops = {}, {}
        for j in list(piece.included) + [piece.index]:
            shape = self.of(j)
            for name in shape.loops:
                loops[f"{_MARK}v{len(loops)}"] = name
            for name in shape.ops:
                ops[f"{_MARK}o{len(ops)}"] = name
        return loops, ops


def _rename_stmt(stmt, fresh, loops: dict):
    match stmt:
        case Op():
            return Op(stmt.engine, fresh(stmt.name, "o"),
                      tuple(_rename_access(a, fresh, loops) for a in stmt.reads),
                      tuple(_rename_access(a, fresh, loops) for a in stmt.writes),
                      replica=stmt.replica)
        case For(var=var):
            inner = {**loops, var: fresh(var, "v")}
            return For(inner[var], _rename_expr(stmt.lo, loops, {}), _rename_expr(stmt.hi, loops, {}),
                       tuple(_rename_stmt(s, fresh, inner) for s in stmt.body))
        case If(cond=cond, then=then, else_=else_):
            return If(_rename_expr(cond, loops, {}), tuple(_rename_stmt(s, fresh, loops) for s in then),
                      tuple(_rename_stmt(s, fresh, loops) for s in else_))
    return stmt  # a barrier


def _rename_access(access: Access, fresh, loops):
    def index(i):
        if isinstance(i, Range):
            return Range(_rename_expr(i.lo, loops, {}), _rename_expr(i.hi, loops, {}))
        return _rename_expr(i, loops, {})

    return Access(fresh(access.buffer, "b"), tuple(index(i) for i in access.indices))


def _rename_expr(node, names: dict, values: dict):
    """`node` with loop names renamed by `names` and names in `values` replaced by
    expressions; None if it mentions a stand-in loop (a name of neither kind marked
    as the slice's own)."""
    match node:
        case Const():
            return node
        case Var(name=name):
            if name in values:
                return values[name]
            if name in names:
                return Var(names[name])
            return None if name.startswith(_MARK) else node
        case Count():
            return node
        case Iters(var=var):
            if var in names:
                return Iters(names[var])
            return None if var.startswith(_MARK) else node
        case Neg(operand=a) | Not(operand=a):
            inner = _rename_expr(a, names, values)
            return None if inner is None else type(node)(inner)
        case BinOp(op=op, left=a, right=b) | Compare(op=op, left=a, right=b):
            a, b = _rename_expr(a, names, values), _rename_expr(b, names, values)
            return None if a is None or b is None else type(node)(op, a, b)
        case Min(left=a, right=b) | Max(left=a, right=b) | And(left=a, right=b) | Or(left=a, right=b):
            a, b = _rename_expr(a, names, values), _rename_expr(b, names, values)
            return None if a is None or b is None else type(node)(a, b)
        case IfExpr(cond=c, then=a, else_=b):
            c, a, b = (_rename_expr(n, names, values) for n in (c, a, b))
            return None if c is None or a is None or b is None else IfExpr(c, a, b)
    raise TypeError(f"not an expression: {node!r}")
