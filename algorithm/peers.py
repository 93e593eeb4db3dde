"""The plan both peer strategies share (`flags`, `tokens`): where each engine signals
and where each engine waits, block by block. The lowerings (algorithm/flags.py,
algorithm/tokens.py) turn each planned sync point into their own primitives.

A *block* is a statement list: the program body, a loop body or an `if` branch. Its
*items* are its statements; an item may be compound (a loop or an `if`), and then a
sync placed after it covers everything every engine did inside it (engines run in
order), a sync placed before it covers everything inside it. For every pair of ops
x (engine A) and y (engine B != A) that may touch one element with one of them
writing (decided with Z3 over the sites' iteration domains, `unknown` counts as
"may"):

- in different items p < q of one block, in the same run of the block: an *edge*
  A -> B (p, q): B must wait, before item q, for A's signal after item p;
- within a loop body, across iterations (x in iteration k, y in iteration k + d,
  d >= 1): a *carried* edge of distance d, unless a same-iteration point of the pair
  already orders it (`_covered`): B waits, before item q, for A's signal after item
  p of D iterations earlier, D = 1 if d = 1 is possible, else 2 (double buffers).

Per block and ordered engine pair, edges are grouped so that each group is one
sync point: same-iteration edges into a staircase of points (each consumer item
waits for the last producer item into it, unless an earlier wait of the engine
already covered that: as tight as one point per edge, with fewer points); the remaining carried
edges of the pair in one carried sync (signal after the last producer item, wait
before the first consumer item, the smallest distance). A carried point either
waits before it signals in an iteration (`before <= after`, as for buffer reuse)
or signals first (`before > after`: y reads in iteration k + 1 what x wrote in
iteration k, as for a prefetch); the lowerings handle both. Each sync point is then sound by
construction: a signal covers every earlier instance of its engine.
"""

from __future__ import annotations

import attrs
import z3

from semantics.context import sites as all_sites
from semantics.ir import Barrier, For, If, Op, Program, Sync, walk_stmts
from semantics.symbolic import conflict, conflicting_pairs, domain


@attrs.frozen
class SyncPoint:
    source: str  # the engine that signals
    target: str  # the engine that waits
    after: int  # item index: the source signals after this item
    before: int  # item index: the target waits before this item
    carried: int  # 0: same iteration; D >= 1: the wait matches the signal of D iterations earlier


@attrs.frozen
class BlockPlan:
    path: tuple  # how to reach the block from the program body: (item index, 'body' | 'then' | 'else') steps
    loop: For | None  # the loop whose body this block is, if any
    points: tuple[SyncPoint, ...]


def strip_sync(program: Program) -> Program:
    """The program without its waits, barriers, peer clauses and loop registers (a
    strategy replaces them; a register feeds only waits)."""
    def clean(body):
        out = []
        for stmt in body:
            match stmt:
                case Op():
                    out.append(attrs.evolve(stmt, waits=(), syncs=()))
                case For():
                    out.append(attrs.evolve(stmt, body=clean(stmt.body), registers=()))
                case If():
                    out.append(attrs.evolve(stmt, then=clean(stmt.then), else_=clean(stmt.else_)))
                case Barrier():
                    pass
        return tuple(out)
    return attrs.evolve(program, body=clean(program.body))


# Z3 resource units per query: deterministic, so the plan (and the flags/tokens output)
# is the same on any machine load; `unknown` counts as "may" (sound).
CONFLICT_RLIMIT = 20_000_000


class _Conflicts:
    """Z3 queries: may two sites touch one element at given relative iterations? One per
    plan, with its own Z3 context and memo (no state outside it)."""

    def __init__(self, program: Program):
        self.program = program
        self.sites = all_sites(program)
        self.ctx = z3.Context()
        self.base = {p.name: z3.Int(p.name, self.ctx) for p in program.params}
        self._memo: dict = {}

    def _env(self, site, tag: str) -> dict:
        return {**self.base, **{loop.var: z3.Int(f"{loop.var}@{tag}", self.ctx) for loop in site.loops}}

    def may(self, x: str, y: str, shared: tuple[str, ...], var: str | None, lo: int, exact: bool) -> bool:
        """x in iteration k and y in iteration k + d of loop `var` (d >= lo, or d == lo
        if exact; no loop: the same run of the block), equal values of the `shared`
        enclosing loop variables; some element touched by both, one writing."""
        key = (x, y, shared, var, lo, exact)
        if key not in self._memo:
            self._memo[key] = self._may(*key)
        return self._memo[key]

    def _may(self, x: str, y: str, shared: tuple[str, ...], var: str | None, lo: int, exact: bool) -> bool:
        sx, sy = self.sites[x], self.sites[y]
        ex, ey = self._env(sx, "x"), self._env(sy, "y")
        # The plain SMT kernel, whose only budget is the deterministic resource limit:
        # `z3.Solver()` runs timed tactics on non-linear checks, so its answer (and the
        # flags/tokens program) could depend on the machine's load. `unknown` counts
        # as a possible conflict: more synchronization, never less.
        solver = z3.SimpleSolver(ctx=self.ctx)
        solver.set("rlimit", CONFLICT_RLIMIT)
        solver.add(*[self.base[p.name] >= p.lower for p in self.program.params],  # the declared assumptions
                   *domain(sx, ex, self.ctx), *domain(sy, ey, self.ctx))
        solver.add(*[ex[v] == ey[v] for v in shared])
        if var is not None:
            gap = ey[var] - ex[var]
            solver.add(gap == lo if exact else gap >= lo)
        solver.add(conflict(sx.op, ex, sy.op, ey, self.ctx))
        return solver.check() != z3.unsat


def _ops_in(stmt) -> list[Op]:
    return [s for s in walk_stmts((stmt,)) if isinstance(s, Op)]


def _group_forward(edges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sync points (signal after, wait before) for same-iteration edges (p, q), as tight
    as one point per edge: a wait before item q needs the signal after the last
    producer item into q; it is kept only when that signal comes after every signal
    an earlier wait of B already waited for (a staircase)."""
    last: dict[int, int] = {}
    for p, q in edges:
        last[q] = max(last.get(q, -1), p)
    points, reached = [], -1
    for q in sorted(last):
        if last[q] > reached:
            points.append((last[q], q))
            reached = last[q]
    return points


def _covered(groups: list[tuple[int, int]], p: int, q: int, d: int) -> bool:
    """Does a same-iteration point of the pair already order x (item p, iteration k)
    before y (item q, iteration k + d)? B's wait before item C of iteration k + d (when
    C <= q), or of iteration k + d - 1 (always before y), follows A's signal after item P
    of that iteration, which follows all of A's iteration k (and its item p if P >= p)."""
    return any(cut <= q or d >= 2 or after >= p for after, cut in groups)


def plan_block(conflicts: _Conflicts, body: tuple, loop: For | None, shared: tuple[str, ...],
               implied: frozenset = frozenset()) -> list[SyncPoint]:
    """Sync points of one block; `shared` are the enclosing loop variables (equal for
    both instances in one run of the block). `implied`: ordered engine pairs whose edges
    need no point (a producer engine and a DMA queue it triggers, algorithm/queues.py)."""
    items = [_ops_in(stmt) for stmt in body]
    same: dict[tuple[str, str], list[tuple[int, int]]] = {}
    carried: dict[tuple[str, str], list[tuple[int, int, int]]] = {}
    for p, xs in enumerate(items):
        for q in range(p, len(items)):
            for x in xs:
                for y in items[q]:
                    if x.engine == y.engine or not conflicting_pairs(x, y):
                        continue
                    if p < q and (x.engine, y.engine) not in implied and conflicts.may(x.name, y.name, shared + ((loop.var,) if loop else ()), None, 0, False):
                        same.setdefault((x.engine, y.engine), []).append((p, q))
                    if loop is None:
                        continue
                    # across iterations, both ways: producer in the earlier iteration
                    for (a, ia), (b, ib) in (((x, p), (y, q)), ((y, q), (x, p))):
                        if (a.engine, b.engine) not in implied and conflicts.may(a.name, b.name, shared, loop.var, 1, False):
                            distance = 1 if conflicts.may(a.name, b.name, shared, loop.var, 1, True) else 2
                            carried.setdefault((a.engine, b.engine), []).append((ia, ib, distance))
    points, groups = [], {}
    for pair, edges in sorted(same.items()):
        groups[pair] = _group_forward(edges)
        points += [SyncPoint(*pair, p, q, 0) for p, q in groups[pair]]
    for pair, edges in sorted(carried.items()):
        left = [e for e in edges if not _covered(groups.get(pair, []), *e)]
        if left:
            points.append(SyncPoint(*pair, max(e[0] for e in left), min(e[1] for e in left), min(e[2] for e in left)))
    return points


def plan(program: Program, implied: frozenset = frozenset()) -> list[BlockPlan]:
    """Every block's sync points, outermost block first. `program` is sync-free; for
    `implied` see `plan_block`."""
    conflicts = _Conflicts(program)
    plans: list[BlockPlan] = []

    def visit(body, path, loop, shared):
        plans.append(BlockPlan(path, loop, tuple(plan_block(conflicts, body, loop, shared, implied))))
        inner_shared = shared + ((loop.var,) if loop else ())
        for index, stmt in enumerate(body):
            match stmt:
                case For():
                    visit(stmt.body, path + ((index, "body"),), stmt, inner_shared)
                case If():
                    visit(stmt.then, path + ((index, "then"),), None, inner_shared)
                    visit(stmt.else_, path + ((index, "else"),), None, inner_shared)
                case Op() | Barrier():
                    pass

    visit(program.body, (), None, ())
    return plans


@attrs.frozen
class Lowered:
    """One sync point in a peer's primitives: clauses on the signalling op (after the
    `after` item), on the waiting op (before the `before` item), and, for a carried
    sync, sync-only ops before the loop (prime, on the source) and after it (drain,
    on the target)."""

    signal: tuple[Sync, ...]
    wait: tuple[Sync, ...]
    prime: tuple[Sync, ...] = ()
    drain: tuple[Sync, ...] = ()


def rewrite(program: Program, plans: list[BlockPlan], lower, start: dict, end: dict) -> Program:
    """Place the lowered sync points. A clause goes on the item itself when the item is
    an op of the right engine; otherwise on a sync-only op (no accesses, `lat 0`) of
    that engine right before / after the item. `start` / `end`: engine -> clauses on
    sync-only ops at the program's start / end. Sync-only ops of one engine at one
    place merge; the ops after item i come before the ops before item i + 1 (a
    signal after item i may be what the wait before item i + 1 needs)."""
    by_path = {p.path: p for p in plans}
    names = fresh_names(program)

    def sync_op(engine, clauses):
        return Op(engine, next(names), lat=0, syncs=_ordered(clauses))

    def ops_of(table: dict) -> list[Op]:
        return [sync_op(engine, clauses) for engine, clauses in table.items() if clauses]

    def visit(body, path):
        block = by_path[path]
        n = len(body)
        on_item = [[] for _ in range(n)]
        before = [dict() for _ in range(n)]
        after = [dict() for _ in range(n)]
        prime, drain = {}, {}
        for point in block.points:
            low = lower(block, point)
            for index, engine, clauses, around in ((point.after, point.source, low.signal, after),
                                                   (point.before, point.target, low.wait, before)):
                item = body[index]
                if isinstance(item, Op) and item.engine == engine:
                    on_item[index] += clauses
                else:
                    around[index].setdefault(engine, []).extend(clauses)
            if low.prime:
                prime.setdefault(point.source, []).extend(low.prime)
                drain.setdefault(point.target, []).extend(low.drain)
        out = []
        for index, stmt in enumerate(body):
            match stmt:
                case Op():
                    stmt = attrs.evolve(stmt, syncs=_ordered(stmt.syncs + tuple(on_item[index])))
                case For():
                    inner, inner_prime, inner_drain = visit(stmt.body, path + ((index, "body"),))
                    stmt = attrs.evolve(stmt, body=inner)
                    for table, extra in ((before[index], inner_prime), (after[index], inner_drain)):
                        for engine, clauses in extra.items():
                            table.setdefault(engine, []).extend(clauses)
                case If():
                    then, _, _ = visit(stmt.then, path + ((index, "then"),))
                    else_, _, _ = visit(stmt.else_, path + ((index, "else"),))
                    # Exactly one branch runs: a wait before (a signal after) the `if`
                    # may sit at the start (end) of each branch instead, on the branch's
                    # first (last) op when it is the engine's, saving a sync-only op.
                    then, else_ = (_into_branch(branch, before[index], after[index], sync_op)
                                   for branch in (then, else_))
                    before[index], after[index] = {}, {}
                    stmt = attrs.evolve(stmt, then=then, else_=else_)
                case Barrier():
                    pass
            out += ops_of(before[index]) + [stmt] + ops_of(after[index])
        return tuple(out), prime, drain

    body, _, _ = visit(program.body, ())
    return attrs.evolve(program, body=tuple(ops_of(start)) + body + tuple(ops_of(end)))


def allocate(plans: list[BlockPlan], need) -> tuple[dict, dict]:
    """Ids for every point, reused between blocks whose runs cannot overlap.

    `need(block, point)` lists (pool, source, target, count): `count` consecutive ids
    of `pool` on the ordered pair source -> target. A point is live during its block's
    runs (and the prime and drain around a loop, just outside it), so a block's ids
    differ from those of its enclosing blocks, and sibling blocks (two loops in a row,
    the branches of an `if`) start from the same ids. Returns the base id per
    (block path, point index, pool) and the number of ids per (pool, source, target)."""
    base: dict = {}
    height: dict = {}
    children: dict = {}
    for block in plans:
        if block.path:
            children.setdefault(block.path[:-1], []).append(block)

    def visit(block, free: dict):
        free = dict(free)
        for n, point in enumerate(block.points):
            for pool, source, target, count in need(block, point):
                key = (pool, source, target)
                base[(block.path, n, pool)] = free.get(key, 0)
                free[key] = free.get(key, 0) + count
                height[key] = max(height.get(key, 0), free[key])
        for child in children.get(block.path, []):
            visit(child, free)

    visit(next(b for b in plans if not b.path), {})
    return base, height


def _into_branch(branch: tuple, first: dict, last: dict, sync_op) -> tuple:
    branch = list(branch)
    head, tail = [], []
    for table, at, extra in ((first, 0, head), (last, -1, tail)):
        for engine, clauses in table.items():
            if branch and isinstance(branch[at], Op) and branch[at].engine == engine:
                branch[at] = attrs.evolve(branch[at], syncs=_ordered(branch[at].syncs + tuple(clauses)))
            else:
                extra.append(sync_op(engine, clauses))
    return tuple(head + branch + tail)


def _ordered(clauses) -> tuple[Sync, ...]:
    # Issue-time clauses first, then completion-time ones, as they act (and print).
    order = {"waitflag": 0, "pop": 1, "setflag": 2, "push": 3}
    return tuple(sorted(clauses, key=lambda s: order[s.kind]))


def fresh_names(program: Program):
    """A generator of op names not used in `program` (for sync-only ops)."""
    taken = {op.name for op in walk_stmts(program.body) if isinstance(op, Op)}
    n = 0
    while True:
        name = f"sync{n}"
        n += 1
        if name not in taken:
            yield name


