"""The sequential meaning of a kernel (docs/design.md section 2).

`unroll` turns a program and a parameter valuation into its dynamic instances in
program order, each with its engine-local index, evaluated accesses and evaluated
wait thresholds, plus one stream per engine (its instances and every barrier).
`requirements` gives, for every instance y and engine F, the minimal threshold
T_min(y, F) = 1 + local index of the last F-instance y depends on (0: none).
`depends_on` is the dependence relation itself, straight from the definition.
"""

from __future__ import annotations

import functools

import itertools
from typing import Callable, Mapping

import attrs

from semantics.errors import EvalError, LimitReached, UsageError
from semantics.compiled import compiler
from semantics.evaluate import eval_expr
from semantics.registers import inline_registers
from semantics.ir import (
    FLAG_IDS, QUEUES, SIGNAL_KINDS, Barrier, Count, For, If, Loc, Op, Program, Range, Var, count_key, walk_expr,
    walk_stmts,
)

Element = tuple  # (buffer, index values...)


@attrs.frozen
class Instance:
    """A dynamic instance: an op in one loop environment."""

    index: int  # position in program order
    op: Op
    env: tuple[tuple[str, int], ...]  # enclosing loop variables, outermost first
    engine: int  # engine number (position in Program.engines)
    local: int  # engine-local index
    accesses: tuple[tuple[Element, bool], ...]  # (element, written?), one per element (ranges expanded)
    waits: tuple[tuple[int, int], ...]  # (engine number, threshold value)
    # Peer sync clauses evaluated: (kind, other engine number, flag or queue id).
    syncs: tuple[tuple[str, int, int], ...] = ()
    # A DMA op (`via Q`) is two instances, adjacent in program order: the trigger on the
    # op's engine (no accesses; the op's waits; it does not count on its engine's counter,
    # local -1) and the transfer on queue Q (the accesses; no waits). Each names the other.
    # Peer clauses split: the trigger has the op's waitflag / pop, the transfer its setflag /
    # push; the channels' own end is Q for both (`channel_end`).
    trigger: int = -1  # on a transfer: the index of its trigger
    transfer: int = -1  # on a trigger: the index of its transfer

    @property
    def is_trigger(self) -> bool:
        return self.transfer >= 0

    def channel_end(self, unrolled: "Unrolled") -> int:
        """The engine at this instance's end of its flag and token channels: its own, or
        for a trigger its transfer's queue (docs/peers.md, "DMA ops")."""
        return unrolled.instances[self.transfer].engine if self.is_trigger else self.engine

    def describe(self) -> str:
        env = ", ".join(f"{k}={v}" for k, v in self.env)
        name = f"{self.op.name}.trigger" if self.is_trigger else self.op.name
        return f"{name}[{env}]" if env else name


@attrs.frozen
class Unrolled:
    """A program unrolled for one parameter valuation. `program` has its loop registers
    replaced by their values (semantics/registers.py), as the machines read it;
    `source` is the program as given (the timing model charges its registers)."""

    program: Program
    valuation: tuple[tuple[str, int], ...]
    instances: tuple[Instance, ...]
    # One stream per engine: instance indices, and -1-b for the b-th barrier.
    streams: tuple[tuple[int, ...], ...]
    barriers: tuple[Loc | None, ...]
    source: Program | None = attrs.field(default=None, kw_only=True)

    def __attrs_post_init__(self):
        if self.source is None:
            object.__setattr__(self, "source", self.program)

    def engine_instances(self, engine: int) -> list[Instance]:
        return [self.instances[i] for i in self.streams[engine] if i >= 0]


def valuation_text(valuation) -> str:
    return ", ".join(f"{k}={v}" for k, v in valuation) or "no parameters"


class UnrollLimit(LimitReached):
    """More dynamic instances than the caller's budget allows (not an error of the kernel)."""


def unroll(program: Program, values: Mapping[str, int], limit: int | None = None,
           compiled: Callable | None = None) -> Unrolled:
    """Unroll `program` for parameter `values` (every parameter must have one).
    Raises UnrollLimit once more than `limit` instances (or barrier passes) arise.
    `compiled`: a `compiler()` to share between unrollings of this same program (its
    cache is keyed by node identity)."""
    missing = [p.name for p in program.params if p.name not in values]
    if missing:
        raise UsageError(f"no value for parameter(s) {', '.join(missing)}")
    source, program = program, inline_registers(program)
    valuation = tuple((p.name, int(values[p.name])) for p in program.params)
    check_valuation(program, dict(valuation))
    engine_number = {e: n for n, e in enumerate(program.engines)}
    instances: list[Instance] = []
    streams: list[list[int]] = [[] for _ in program.engines]
    locals_: list[int] = [0] * len(program.engines)
    barriers: list[Loc | None] = []
    env: dict[str, int] = dict(valuation)
    loop_env: list[tuple[str, int]] = []
    # The tracked values of the thresholds: iters(v) under v, count(F) under count_key(F)
    # (the F-instances so far: its engine-local counter, kept only for engines some
    # threshold counts).
    iters: dict[str, int] = {}
    tracked = {engine_number[e]: count_key(e) for e in counted_engines(program)}
    compiled = compiled or compiler()  # expressions compiled once, evaluated per instance
    shapes: dict[int, tuple] = {}  # id(op) -> (op, its accesses' evaluators, its waits' evaluators)

    def shape(op: Op) -> tuple:
        """Per op, once per unrolling: (access, written, the index evaluators or None when
        an index is a range) in evaluation order (reads, then writes), and the waits'
        (engine number, threshold evaluator)."""
        hit = shapes.get(id(op))
        if hit is None or hit[0] is not op:
            accesses = tuple((a, written, None if any(isinstance(i, Range) for i in a.indices)
                              else tuple(compiled(i) for i in a.indices))
                             for a, written in [(a, False) for a in op.reads] + [(a, True) for a in op.writes])
            waits = tuple((engine_number[w.engine], compiled(w.threshold)) for w in op.waits)
            hit = shapes[id(op)] = (op, accesses, waits)
        return hit

    def where() -> str:
        return valuation_text(valuation + tuple(loop_env))

    def run(body) -> None:
        for stmt in body:
            match stmt:
                case Op():
                    engine = engine_number[stmt.engine]
                    accesses: dict[Element, bool] = {}
                    _, evaluated, thresholds = shape(stmt)
                    try:
                        for access, written, indices in evaluated:
                            if indices is None:
                                targets = elements(access, env)
                            else:  # one element: the compiled fast path
                                targets = ((access.buffer, *[index(env) for index in indices]),)
                            for element in targets:
                                accesses[element] = accesses.get(element, False) or written
                        waits = tuple((number, threshold(env, iters)) for number, threshold in thresholds)
                        syncs = tuple((s.kind, engine_number[s.engine], _sync_id(s, env)) for s in stmt.syncs)
                    except EvalError as err:
                        raise EvalError(f"{err.message} at {where()}", err.loc) from None
                    if stmt.queue is not None:  # the trigger on the op's engine, then the transfer
                        # Peer clauses (docs/peers.md, "DMA ops"): `waitflag` / `pop` are part of
                        # the trigger's issue, `setflag` / `push` act at the transfer's completion;
                        # both on channels whose own end is the queue.
                        trigger = Instance(len(instances), stmt, tuple(loop_env), engine, -1, (), waits,
                                           tuple(s for s in syncs if s[0] not in SIGNAL_KINDS),
                                           transfer=len(instances) + 1)
                        syncs = tuple(s for s in syncs if s[0] in SIGNAL_KINDS)
                        instances.append(trigger)
                        streams[engine].append(trigger.index)
                        engine, waits = engine_number[stmt.queue], ()
                    instance = Instance(len(instances), stmt, tuple(loop_env), engine, locals_[engine],
                                        tuple(accesses.items()), waits, syncs,
                                        trigger=len(instances) - 1 if stmt.queue is not None else -1)
                    locals_[engine] += 1
                    if engine in tracked:
                        iters[tracked[engine]] = locals_[engine]
                    instances.append(instance)
                    if limit is not None and len(instances) > limit:
                        raise UnrollLimit(f"more than {limit} instances")
                    streams[engine].append(instance.index)
                case Barrier():
                    barriers.append(stmt.loc)
                    if limit is not None and len(barriers) > limit:
                        raise UnrollLimit(f"more than {limit} barrier passes")
                    for stream in streams:
                        stream.append(-len(barriers))
                case For(var=var, lo=lo, hi=hi, body=inner):
                    try:
                        start, stop = compiled(lo)(env), compiled(hi)(env)
                    except EvalError as err:
                        raise EvalError(f"{err.message} at {where()}", err.loc) from None
                    # Python's range: any integer bounds; hi <= lo runs zero times
                    # (docs/language.md, "Loop bounds")
                    for value in range(start, stop):
                        if limit is not None and value - start > limit:
                            raise UnrollLimit(f"loop '{var}' runs more than {limit} iterations")
                        iters[var] = iters.get(var, 0) + 1
                        env[var] = value
                        loop_env.append((var, value))
                        run(inner)
                        loop_env.pop()
                    env.pop(var, None)
                case If(cond=cond, then=then, else_=else_):
                    try:
                        taken = compiled(cond, True)(env)
                    except EvalError as err:
                        raise EvalError(f"{err.message} at {where()}", err.loc) from None
                    run(then if taken else else_)

    try:
        run(program.body)
    finally:
        del run  # a recursive closure is a reference cycle: freed at once, not by the collector
    return Unrolled(program, valuation, tuple(instances), tuple(tuple(s) for s in streams), tuple(barriers),
                    source=source)


@functools.lru_cache(maxsize=64)
def counted_engines(program: Program) -> tuple[str, ...]:
    """The engines F (compute engines or DMA queues) whose `count(F)` some wait threshold
    reads, in `program.engines` order (once per program: every valuation's unrolling
    asks)."""
    named = {node.engine for stmt in walk_stmts(program.body) if isinstance(stmt, Op)
             for wait in stmt.waits for node in walk_expr(wait.threshold) if isinstance(node, Count)}
    return tuple(e for e in program.engines if e in named)


def count_instances(program: Program, values: Mapping[str, int], limit: int) -> int | None:
    """How many instances `unroll(program, values)` makes, counted without making them.
    UnrollLimit as soon as `unroll(..., limit=limit)` would raise it: more than `limit`
    instances or barrier passes, or a loop of more than `limit` + 1 iterations; so a
    runaway size is refused at once, not after making the instances up to the limit. A loop whose body's bounds and guards do not mention its variable is
    counted by multiplication. None when an expression cannot be evaluated: `unroll`
    then reports the error with its location."""
    env: dict[str, int] = {p.name: int(values[p.name]) for p in program.params if p.name in values}
    compiled = compiler()
    total = [0, 0]  # instances, barrier passes so far
    mentions: dict[int, bool] = {}

    def varies(loop: For) -> bool:  # does the body's count depend on the loop variable?
        key = id(loop)
        if key not in mentions:
            roots = []
            for stmt in walk_stmts(loop.body):
                if isinstance(stmt, For):
                    roots += [stmt.lo, stmt.hi]
                elif isinstance(stmt, If):
                    roots.append(stmt.cond)
            mentions[key] = any(isinstance(n, Var) and n.name == loop.var for r in roots for n in walk_expr(r))
        return mentions[key]

    def add(made: list, more: tuple, times: int = 1) -> None:
        for k in (0, 1):
            made[k] += more[k] * times
            total[k] += more[k] * times
        if total[0] > limit:
            raise UnrollLimit(f"more than {limit} instances")
        if total[1] > limit:
            raise UnrollLimit(f"more than {limit} barrier passes")

    def count(body) -> tuple[int, int]:
        made = [0, 0]
        for stmt in body:
            match stmt:
                case Op():
                    add(made, (2 if stmt.queue is not None else 1, 0))
                case Barrier():
                    add(made, (0, 1))
                case For(var=var, lo=lo, hi=hi, body=inner):
                    start, stop = compiled(lo)(env), compiled(hi)(env)
                    if stop - start > limit + 1:
                        raise UnrollLimit(f"loop '{var}' runs more than {limit} iterations")
                    if stop > start and not varies(stmt):
                        env[var] = start
                        once = count(inner)  # counted in `total` once already
                        made[0], made[1] = made[0] + once[0], made[1] + once[1]
                        add(made, once, stop - start - 1)
                    else:
                        for value in range(start, stop):
                            env[var] = value
                            inner_made = count(inner)
                            made[0], made[1] = made[0] + inner_made[0], made[1] + inner_made[1]
                    env.pop(var, None)
                case If(cond=cond, then=then, else_=else_):
                    inner_made = count(then if compiled(cond, True)(env) else else_)
                    made[0], made[1] = made[0] + inner_made[0], made[1] + inner_made[1]
        return made[0], made[1]

    try:
        return count(program.body)[0]
    except (EvalError, KeyError, TypeError, ZeroDivisionError):
        return None


def elements(access, env) -> list[Element]:
    """The elements an access touches in `env`: one, or every element of its ranges
    (none when a range is empty)."""
    axes = []
    for index in access.indices:
        if isinstance(index, Range):
            axes.append(range(eval_expr(index.lo, env), eval_expr(index.hi, env)))
        else:
            axes.append((eval_expr(index, env),))
    if all(len(axis) == 1 for axis in axes):
        return [(access.buffer, *(axis[0] for axis in axes))]
    return [(access.buffer, *point) for point in itertools.product(*axes)]


def check_valuation(program: Program, values: Mapping[str, int]) -> None:
    """Every parameter is a non-negative integer at or above its declared lower bound
    (`param K >= 1`): a value below it is an EvalError at the declaration."""
    for param in program.params:
        value = values.get(param.name)
        if value is None:
            continue
        if value < 0:
            raise UsageError(f"parameter {param.name} = {value}: parameters are non-negative integers")
        if value < param.lower:
            raise EvalError(f"parameter {param.name} = {value} is below its lower bound {param.lower} "
                            f"(declared `{param.name} >= {param.lower}`)", param.loc)


def _sync_id(sync, env) -> int:
    value = eval_expr(sync.id, env)
    count = FLAG_IDS if sync.kind in ("setflag", "waitflag") else QUEUES
    if not 0 <= value < count:
        what = "flag id" if count == FLAG_IDS else "queue id"
        raise EvalError(f"{sync.kind} {sync.engine}: {what} evaluates to {value}; ids are 0..{count - 1}",
                        sync.id.loc or sync.loc)
    return value


def replicas(x: Op, y: Op) -> bool:
    """x and y are replicas of one logical op (`replica G` on both): they never conflict."""
    return x.replica is not None and x.replica == y.replica


def depends_on(y: Instance, x: Instance) -> bool:
    """docs/design.md section 2: y depends on x iff x precedes y in program order, they run on
    different engines, they access a common element and at least one writes it
    (and they are not replicas of one logical op, docs/snax.md)."""
    if x.index >= y.index or x.engine == y.engine or replicas(x.op, y.op):
        return False
    written_by_x = dict(x.accesses)
    return any(e in written_by_x and (w or written_by_x[e]) for e, w in y.accesses)


def producers(unrolled: Unrolled, y: Instance) -> list[Instance]:
    """Every instance y depends on, in program order (quadratic; for reports and tests)."""
    return [x for x in unrolled.instances[: y.index] if depends_on(y, x)]


def requirements(unrolled: Unrolled) -> tuple[tuple[int, ...], ...]:
    """T_min(y, F) for every instance y (in program order) and engine F; 0 means none.

    Local indices grow in program order, so the last earlier F-instance touching an
    element (for a write) or writing it (for a read) is the one with the largest local
    index: one pass with the last access per element and engine suffices.
    Replicas of one logical op do not count (docs/snax.md), so the last access is kept
    per replica group (None: not a replica) and y skips the entries of its own group.
    """
    engines = len(unrolled.streams)
    # element -> engine -> replica group -> local index of the last access (or write)
    last_access: dict[Element, dict[int, dict]] = {}
    last_write: dict[Element, dict[int, dict]] = {}
    result = []
    for y in unrolled.instances:
        need = [0] * engines
        group = y.op.replica
        for element, written in y.accesses:
            prior = last_access.get(element) if written else last_write.get(element)
            if prior:
                for engine, by_group in prior.items():
                    if engine == y.engine:
                        continue
                    for g, local in by_group.items():
                        if (g is None or g != group) and local + 1 > need[engine]:
                            need[engine] = local + 1
        for element, written in y.accesses:
            last_access.setdefault(element, {}).setdefault(y.engine, {})[group] = y.local
            if written:
                last_write.setdefault(element, {}).setdefault(y.engine, {})[group] = y.local
        result.append(tuple(need))
    return tuple(result)
