"""The sequential meaning of a kernel (docs/design.md section 2).

`unroll` turns a program and a parameter valuation into its dynamic instances in
program order, each with its engine-local index, evaluated accesses and evaluated
wait thresholds, plus one stream per engine (its instances and every barrier).
`requirements` gives, for every instance y and engine F, the minimal threshold
T_min(y, F) = 1 + local index of the last F-instance y depends on (0: none).
`depends_on` is the dependence relation itself, straight from the definition.
"""

from __future__ import annotations

from typing import Mapping

import attrs

from semantics.errors import EvalError, UsageError
from semantics.evaluate import eval_cond, eval_expr
from semantics.ir import FLAG_IDS, QUEUES, Barrier, For, If, Loc, Op, Program

Element = tuple  # (buffer, index values...)


@attrs.frozen
class Instance:
    """A dynamic instance: an op in one loop environment."""

    index: int  # position in program order
    op: Op
    env: tuple[tuple[str, int], ...]  # enclosing loop variables, outermost first
    engine: int  # engine number (position in Program.engines)
    local: int  # engine-local index
    accesses: tuple[tuple[Element, bool], ...]  # (element, written?), one per element
    waits: tuple[tuple[int, int], ...]  # (engine number, threshold value)
    # Peer sync clauses evaluated: (kind, other engine number, flag or queue id).
    syncs: tuple[tuple[str, int, int], ...] = ()

    def describe(self) -> str:
        env = ", ".join(f"{k}={v}" for k, v in self.env)
        return f"{self.op.name}[{env}]" if env else self.op.name


@attrs.frozen
class Unrolled:
    """A program unrolled for one parameter valuation."""

    program: Program
    valuation: tuple[tuple[str, int], ...]
    instances: tuple[Instance, ...]
    # One stream per engine: instance indices, and -1-b for the b-th barrier.
    streams: tuple[tuple[int, ...], ...]
    barriers: tuple[Loc | None, ...]

    def engine_instances(self, engine: int) -> list[Instance]:
        return [self.instances[i] for i in self.streams[engine] if i >= 0]


def valuation_text(valuation) -> str:
    return ", ".join(f"{k}={v}" for k, v in valuation) or "no parameters"


class UnrollLimit(Exception):
    """More dynamic instances than the caller's budget allows (not an error of the kernel)."""


def unroll(program: Program, values: Mapping[str, int], limit: int | None = None) -> Unrolled:
    """Unroll `program` for parameter `values` (every parameter must have one).
    Raises UnrollLimit once more than `limit` instances (or barrier passes) arise."""
    missing = [p.name for p in program.params if p.name not in values]
    if missing:
        raise UsageError(f"no value for parameter(s) {', '.join(missing)}")
    valuation = tuple((p.name, int(values[p.name])) for p in program.params)
    for name, value in valuation:
        if value < 0:
            raise UsageError(f"parameter {name} = {value}: parameters are non-negative integers")
    engine_number = {e: n for n, e in enumerate(program.engines)}
    instances: list[Instance] = []
    streams: list[list[int]] = [[] for _ in program.engines]
    locals_: list[int] = [0] * len(program.engines)
    barriers: list[Loc | None] = []
    env: dict[str, int] = dict(valuation)
    loop_env: list[tuple[str, int]] = []
    iters: dict[str, int] = {}

    def where() -> str:
        return valuation_text(valuation + tuple(loop_env))

    def run(body) -> None:
        for stmt in body:
            match stmt:
                case Op():
                    engine = engine_number[stmt.engine]
                    accesses: dict[Element, bool] = {}
                    try:
                        for access, written in [(a, False) for a in stmt.reads] + [(a, True) for a in stmt.writes]:
                            element = (access.buffer, *(eval_expr(i, env) for i in access.indices))
                            accesses[element] = accesses.get(element, False) or written
                        waits = tuple((engine_number[w.engine], eval_expr(w.threshold, env, iters)) for w in stmt.waits)
                        syncs = tuple((s.kind, engine_number[s.engine], _sync_id(s, env)) for s in stmt.syncs)
                    except EvalError as err:
                        raise EvalError(f"{err.message} at {where()}", err.loc) from None
                    instance = Instance(len(instances), stmt, tuple(loop_env), engine, locals_[engine],
                                        tuple(accesses.items()), waits, syncs)
                    locals_[engine] += 1
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
                        start, stop = eval_expr(lo, env), eval_expr(hi, env)
                    except EvalError as err:
                        raise EvalError(f"{err.message} at {where()}", err.loc) from None
                    # Python's range: any integer bounds; hi <= lo runs zero times
                    # (docs/design.md section 5, "Loop bounds")
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
                        taken = eval_cond(cond, env)
                    except EvalError as err:
                        raise EvalError(f"{err.message} at {where()}", err.loc) from None
                    run(then if taken else else_)

    run(program.body)
    return Unrolled(program, valuation, tuple(instances), tuple(tuple(s) for s in streams), tuple(barriers))


def _sync_id(sync, env) -> int:
    value = eval_expr(sync.id, env)
    count = FLAG_IDS if sync.kind in ("setflag", "waitflag") else QUEUES
    if not 0 <= value < count:
        what = "flag id" if count == FLAG_IDS else "queue id"
        raise EvalError(f"{sync.kind} {sync.engine}: {what} evaluates to {value}; ids are 0..{count - 1}",
                        sync.id.loc or sync.loc)
    return value


def depends_on(y: Instance, x: Instance) -> bool:
    """docs/design.md section 2: y depends on x iff x precedes y in program order, they run on
    different engines, they access a common element and at least one writes it."""
    if x.index >= y.index or x.engine == y.engine:
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
    """
    engines = len(unrolled.streams)
    last_access: dict[Element, dict[int, int]] = {}
    last_write: dict[Element, dict[int, int]] = {}
    result = []
    for y in unrolled.instances:
        need = [0] * engines
        for element, written in y.accesses:
            prior = last_access.get(element) if written else last_write.get(element)
            if prior:
                for engine, local in prior.items():
                    if engine != y.engine and local + 1 > need[engine]:
                        need[engine] = local + 1
        for element, written in y.accesses:
            last_access.setdefault(element, {})[y.engine] = y.local
            if written:
                last_write.setdefault(element, {})[y.engine] = y.local
        result.append(tuple(need))
    return tuple(result)
