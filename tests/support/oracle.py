"""An independent brute-force oracle, written straight from docs/design.md section 2.

It imports nothing from `verify/` or `algorithm/`, and nothing from
`semantics.sequential` or `semantics.machines`: only the IR and expression
evaluation. Everything is done the slow, obvious way:

- `unroll_program` walks the IR for one parameter valuation and lists the dynamic
  instances in program order (engine-local index, evaluated accesses, evaluated wait
  thresholds with `iters` and `count` counted as the DESIGN defines them) and one stream per
  engine, barriers included;
- `depends` is the dependence definition, applied pairwise;
- `Product` runs the counter program and the reference side by side with naive
  states (per-engine stream positions, busy flags, explicit counters reset at
  barriers, the set of completed instance ids) and compares, in a state, what the
  counter program may issue with what the reference may issue (every producer
  completed); `explore` / `shortest` enumerate every interleaving breadth first, and
  `verdict` applies the DESIGN precedence
  unsound > deadlock > over-synchronized > bisimilar;
- `exact_table` / `exact_waits` compute, by brute force over all valuations within the
  bounds, the exact thresholds T_min(y, F) and write them back into the program as
  piecewise `if ... then ... else` expressions over parameters and loop variables.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections import Counter as Multiset
from dataclasses import dataclass, field

import attrs

from semantics.evaluate import eval_cond, eval_expr
from semantics.ir import (
    And, Barrier, Compare, Const, For, If, IfExpr, Neg, Op, Or, Program, Range, Var, Wait, map_ops,
)

UNSOUND = "unsound"
DEADLOCK = "deadlock"
OVER_SYNCHRONIZED = "over-synchronized"
BISIMILAR = "bisimilar"
PRECEDENCE = (UNSOUND, DEADLOCK, OVER_SYNCHRONIZED)  # most severe first

BARRIER = "barrier"  # a stream item; instance ids are ints


@dataclass(frozen=True)
class Inst:
    id: int  # position in program order
    op: str  # op name
    engine: str
    local: int  # engine-local index (0-based), over the whole run
    seg_local: int  # engine-local index since the last barrier
    segment: int  # number of barriers before it in program order
    env: tuple  # enclosing loop variables, outermost first: ((var, value), ...)
    key: tuple  # parameters then loop variables: ((name, value), ...)
    reads: frozenset
    writes: frozenset
    waits: tuple  # ((engine name, threshold value), ...)
    syncs: tuple = ()  # ((kind, other engine name, flag or queue id), ...): docs/peers.md
    replica: str | None = None  # replica group (`replica G`): never depends on its group


@dataclass
class Run:
    engines: tuple
    valuation: tuple
    instances: list = field(default_factory=list)
    streams: dict = field(default_factory=dict)  # engine -> [id or BARRIER, ...]


def unroll_program(program: Program, values: dict) -> Run:
    """The dynamic instances of `program` for parameter `values`, in program order."""
    valuation = tuple((p.name, values[p.name]) for p in program.params)
    run = Run(program.engines, valuation, [], {e: [] for e in program.engines})
    local = {e: 0 for e in program.engines}
    seg_local = {e: 0 for e in program.engines}
    segment = [0]
    iters: dict[str, int] = {}

    def elements(access, env) -> set:
        """Every element the access touches: a range index `lo..hi` stands for each
        value lo <= v < hi (none when hi <= lo), one dimension at a time."""
        found = {(access.buffer,)}
        for index in access.indices:
            if isinstance(index, Range):
                values = list(range(eval_expr(index.lo, env), eval_expr(index.hi, env)))
            else:
                values = [eval_expr(index, env)]
            found = {prefix + (v,) for prefix in found for v in values}
        return found

    def tracked() -> dict:
        """What a threshold reads: `iters(v)` under v, `count(F)` (the F-instances so far)
        under its own text."""
        return {**iters, **{f"count({e})": n for e, n in local.items()}}

    def walk(body, env: dict, loops: tuple):
        for stmt in body:
            if isinstance(stmt, Op):
                inst = Inst(
                    id=len(run.instances), op=stmt.name, engine=stmt.engine,
                    local=local[stmt.engine], seg_local=seg_local[stmt.engine], segment=segment[0],
                    env=loops, key=valuation + loops,
                    reads=frozenset(e for a in stmt.reads for e in elements(a, env)),
                    writes=frozenset(e for a in stmt.writes for e in elements(a, env)),
                    waits=tuple((w.engine, eval_expr(w.threshold, env, tracked())) for w in stmt.waits),
                    syncs=tuple((c.kind, c.engine, eval_expr(c.id, env)) for c in stmt.syncs),
                    replica=stmt.replica,
                )
                local[stmt.engine] += 1
                seg_local[stmt.engine] += 1
                run.instances.append(inst)
                run.streams[stmt.engine].append(inst.id)
            elif isinstance(stmt, Barrier):
                segment[0] += 1
                for e in program.engines:
                    run.streams[e].append(BARRIER)
                    seg_local[e] = 0
            elif isinstance(stmt, For):
                lo, hi = eval_expr(stmt.lo, env), eval_expr(stmt.hi, env)
                value = lo
                # Loop registers, as a machine keeps them: set on entry, advanced at each
                # back-edge (docs/language.md "Loop registers"); read like names.
                registers = {r.name: eval_expr(r.init, env, tracked()) for r in stmt.registers}
                while value < hi:
                    iters[stmt.var] = iters.get(stmt.var, 0) + 1
                    walk(stmt.body, {**env, **registers, stmt.var: value}, loops + ((stmt.var, value),))
                    value += 1
                    for r in stmt.registers:
                        if r.step is not None:
                            registers[r.name] += eval_expr(r.step, env, tracked())
            elif isinstance(stmt, If):
                walk(stmt.then if eval_cond(stmt.cond, env) else stmt.else_, env, loops)
            else:
                raise TypeError(stmt)

    walk(program.body, dict(valuation), ())
    return run


def depends(y: Inst, x: Inst) -> bool:
    """y depends on x: x precedes y, other engine, a common element, one of them writes it,
    and they are not replicas of one logical op (both `replica G`, docs/snax.md)."""
    if not x.id < y.id or x.engine == y.engine:
        return False
    if x.replica is not None and x.replica == y.replica:
        return False
    common = (x.reads | x.writes) & (y.reads | y.writes)
    return any(e in x.writes or e in y.writes for e in common)


def dependences(run: Run) -> dict[int, frozenset]:
    """For every instance id, the ids of the instances it depends on."""
    return {y.id: frozenset(x.id for x in run.instances if depends(y, x)) for y in run.instances}


def all_valuations(bounds) -> list[dict]:
    """Every valuation within inclusive bounds ((name, lo, hi), ...)."""
    names = [b[0] for b in bounds]
    return [dict(zip(names, combo)) for combo in itertools.product(*(range(lo, hi + 1) for _, lo, hi in bounds))]


# -------------------------------------------------------------------- exploration


class Product:
    """The counter program and the reference, side by side, for one run.

    A state is (stream positions, busy flags, counters, completed instance ids): the
    reference's state is the same positions with barriers skipped, so one tuple
    describes both machines."""

    def __init__(self, run: Run):
        self.run = run
        self.n = len(run.engines)
        self.number = {e: k for k, e in enumerate(run.engines)}
        self.streams = [run.streams[e] for e in run.engines]
        self.deps = dependences(run)

    def _normalize(self, pos, busy, counters):
        # All engines idle at a barrier: they pass it together, counters reset.
        n, streams = self.n, self.streams
        while all(not busy[k] and pos[k] < len(streams[k]) and streams[k][pos[k]] == BARRIER for k in range(n)):
            pos = tuple(p + 1 for p in pos)
            counters = (0,) * n
        return pos, counters

    def initial(self):
        n = self.n
        pos, counters = self._normalize((0,) * n, (False,) * n, (0,) * n)
        return (pos, (False,) * n, counters, frozenset())

    def observe(self, state):
        """(counter issues, reference issues, completes, final): instance id sets
        and whether every engine is done."""
        pos, busy, counters, completed = state
        inst, streams = self.run.instances, self.streams
        counter_issue, reference_issue, completes = set(), set(), set()
        for k in range(self.n):
            if busy[k]:
                completes.add(streams[k][pos[k]])
                continue
            if pos[k] < len(streams[k]) and streams[k][pos[k]] != BARRIER:
                y = streams[k][pos[k]]
                if all(counters[self.number[f]] >= t for f, t in inst[y].waits):
                    counter_issue.add(y)
            following = [item for item in streams[k][pos[k]:] if item != BARRIER]
            if following and self.deps[following[0]] <= completed:
                reference_issue.add(following[0])
        final = all(pos[k] == len(streams[k]) and not busy[k] for k in range(self.n))
        return counter_issue, reference_issue, completes, final

    def findings(self, state) -> set[str]:
        counter_issue, reference_issue, completes, final = self.observe(state)
        found = set()
        if counter_issue - reference_issue:
            found.add(UNSOUND)
        if reference_issue - counter_issue:
            found.add(OVER_SYNCHRONIZED)
        if not counter_issue and not completes and not final:
            found.add(DEADLOCK)
        return found

    def step(self, state, kind: str, y: int):
        """The counter program's successor by `issue` or `complete` of instance y
        (which must be enabled)."""
        pos, busy, counters, completed = state
        counter_issue, _, completes, _ = self.observe(state)
        k = self.number[self.run.instances[y].engine]
        if kind == "issue":
            assert y in counter_issue, f"issue {y} is not enabled"
            return (pos, busy[:k] + (True,) + busy[k + 1:], counters, completed)
        assert kind == "complete" and y in completes, f"complete {y} is not enabled"
        p2 = pos[:k] + (pos[k] + 1,) + pos[k + 1:]
        b2 = busy[:k] + (False,) + busy[k + 1:]
        c2 = counters[:k] + (counters[k] + 1,) + counters[k + 1:]
        p2, c2 = self._normalize(p2, b2, c2)
        return (p2, b2, c2, completed | {y})

    def successors(self, state):
        counter_issue, _, completes, _ = self.observe(state)
        for y in counter_issue:
            yield self.step(state, "issue", y)
        for y in completes:
            yield self.step(state, "complete", y)


def explore(run: Run) -> set[str]:
    """Every failure kind reachable in the product of the counter program and the
    reference, over all interleavings (an empty set: bisimilar)."""
    return set(shortest(run))


def shortest(run: Run, product_class=None) -> dict[str, int]:
    """For every reachable failure kind, the length of a shortest trace to a state
    showing it (breadth first over every interleaving). `product_class` (default
    `Product`) builds the machine pair; tests/support/oracle_peers.py adds flags and tokens."""
    product = (product_class or Product)(run)
    start = product.initial()
    depth = {start: 0}
    queue = deque([start])
    found: dict[str, int] = {}
    while queue:
        state = queue.popleft()
        for kind in product.findings(state):
            found.setdefault(kind, depth[state])
        for succ in product.successors(state):
            if succ not in depth:
                depth[succ] = depth[state] + 1
                queue.append(succ)
    return found


def worst(findings) -> str:
    for kind in PRECEDENCE:
        if kind in findings:
            return kind
    return BISIMILAR


def verdict(program: Program, bounds) -> str:
    """The verdict of `program` (its own waits and barriers) for every valuation
    within `bounds`, with the DESIGN precedence."""
    findings: set[str] = set()
    for values in all_valuations(bounds):
        findings |= explore(unroll_program(program, values))
        if UNSOUND in findings:
            break
    return worst(findings)


def verdict_at(program: Program, values: dict) -> str:
    return worst(explore(unroll_program(program, values)))


# ---------------------------------------------------------------- exact thresholds


def strip_sync(program: Program) -> Program:
    """`program` without wait clauses and barriers."""

    def strip(body):
        out = []
        for stmt in body:
            if isinstance(stmt, Barrier):
                continue
            if isinstance(stmt, Op):
                out.append(attrs.evolve(stmt, waits=()))
            elif isinstance(stmt, For):
                out.append(attrs.evolve(stmt, body=strip(stmt.body)))
            elif isinstance(stmt, If):
                out.append(attrs.evolve(stmt, then=strip(stmt.then), else_=strip(stmt.else_)))
        return tuple(out)

    return attrs.evolve(program, body=strip(program.body))


def exact_table(program: Program, bounds) -> dict[tuple[str, str], dict[tuple, int]]:
    """(op name, engine F) -> {key: T} for every dynamic instance of the op within the
    bounds, where key is ((param, value)..., (loop var, value)...) and T is the minimal
    threshold: 1 + the F-local index (counted since the last barrier) of the last
    F-instance the instance depends on after the last barrier, 0 if none."""
    table: dict[tuple[str, str], dict[tuple, int]] = {}
    for values in all_valuations(bounds):
        run = unroll_program(program, values)
        for y in run.instances:
            for f in program.engines:
                if f == y.engine:
                    continue
                t = 0
                for x in run.instances[: y.id]:
                    if x.engine == f and x.segment == y.segment and depends(y, x):
                        t = max(t, x.seg_local + 1)
                table.setdefault((y.op, f), {})[y.key] = t
    return table


def _const(value: int):
    return Const(value) if value >= 0 else Neg(Const(-value))


def _project(entries: dict[tuple, int]) -> dict[tuple, int]:
    """Drop the variables the values do not depend on (greedily, left to right)."""
    if not entries:
        return entries
    names = [name for name, _ in next(iter(entries))]
    for name in list(names):
        projected: dict[tuple, int] = {}
        ok = True
        for key, value in entries.items():
            smaller = tuple((n, v) for n, v in key if n != name)
            if projected.setdefault(smaller, value) != value:
                ok = False
                break
        if ok:
            entries = projected
    return entries


def piecewise(entries: dict[tuple, int]):
    """An expression equal to entries[key] under every key's variable values, or None
    when every value is 0 (no wait needed)."""
    if not entries or all(v == 0 for v in entries.values()):
        return None
    entries = _project(entries)
    counts = Multiset(entries.values())
    default = max(counts, key=lambda v: (counts[v], -v))
    expr = _const(default)
    for value in sorted((v for v in counts if v != default), reverse=True):
        cond = None
        for key, v in sorted(entries.items()):
            if v != value:
                continue
            conj = None
            for name, val in key:
                cmp = Compare("==", Var(name), Const(val))
                conj = cmp if conj is None else And(conj, cmp)
            assert conj is not None, "two different values for the same instance"
            cond = conj if cond is None else Or(cond, conj)
        expr = IfExpr(cond, _const(value), expr)
    return expr


def waits_from_table(program: Program, table: dict) -> Program:
    """`program` with every op's waits replaced by the (piecewise) thresholds of `table`.
    Barriers are kept."""

    def rewrite(op: Op) -> Op:
        waits = []
        for f in program.engines:
            expr = piecewise(table.get((op.name, f), {}))
            if expr is not None:
                waits.append(Wait(f, expr))
        return attrs.evolve(op, waits=tuple(waits))

    return attrs.evolve(program, body=map_ops(program.body, rewrite))


def exact_waits(program: Program, bounds=None) -> Program:
    """`program` (waits dropped, barriers kept) with the exact minimal waits for every
    valuation within `bounds` (default: every parameter over 0..2): bisimilar to the
    reference there when barrier-free. Outside the bounds the waits mean nothing."""
    if bounds is None:
        bounds = tuple((p.name, 0, 2) for p in program.params)
    return waits_from_table(program, exact_table(program, bounds))
