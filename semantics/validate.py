"""Static checks of a parsed kernel: declared names, scopes, uniqueness.

Run-time errors (a loop bound that is negative for some parameter values, a
division by zero) can only be found for concrete parameter values; `unroll`
reports those.
"""

from __future__ import annotations

from semantics.errors import KernelError
from semantics.ir import Barrier, Count, For, If, Iters, Loc, Op, Program, Var, fold_expr, index_exprs, walk_stmts


KEYWORDS = frozenset(
    "kernel engines param for in if then else barrier reads writes lat wait and or not queue".split()
)


def _check_name(name: str, what: str, loc) -> None:
    if name in KEYWORDS:
        raise KernelError(f"'{name}' is a reserved word and cannot be used as {what}", loc)


def validate(program: Program, engine_locs: dict[str, Loc] | None = None) -> None:
    """Raise KernelError on the first static error of `program`."""
    engine_locs = engine_locs or {}
    seen: set[str] = set()
    if program.name is not None:
        _check_name(program.name, "a kernel name", program.name_loc or program.loc)
    for engine in program.engines:
        _check_name(engine, "an engine name", engine_locs.get(engine))
        if engine in seen:
            what = "queue" if engine in {q.name for q in program.queues} else "engine"
            raise KernelError(f"{what} '{engine}' is declared twice", engine_locs.get(engine))
        seen.add(engine)
    params: dict[str, Loc | None] = {}
    for param in program.params:
        _check_name(param.name, "a parameter name", param.loc)
        if param.name in params:
            raise KernelError(f"parameter '{param.name}' is declared twice", param.loc)
        if param.default is not None and param.default < 0:
            raise KernelError(f"parameter '{param.name}' has a negative default", param.loc)
        if param.default is not None and param.default < param.lower:
            raise KernelError(f"parameter '{param.name}' has default {param.default}, below its lower bound "
                              f"{param.lower} (`param {param.name} >= {param.lower}`)", param.loc)
        params[param.name] = param.loc
    _check_one_trigger_engine(program)
    loop_vars: dict[str, Loc | None] = {}
    _collect_loops(program.body, params, loop_vars)
    registers = collect_registers(program, params, loop_vars)
    _check_body(program, program.body, frozenset(params), set(loop_vars), {}, frozenset(), frozenset(registers))


# The deepest loop nest a kernel may have: the planner, the proof and the engines work per
# loop level (a planner query, a proof obligation and the per-instance environment grow
# with the depth), and a kernel of hundreds of nested loops ran the planner for hours and
# the bounded check out of memory. An error names the limit instead (docs/language.md).
MAX_LOOP_DEPTH = 64


def _collect_loops(body, params, loop_vars, depth: int = 0) -> None:
    for stmt in body:
        match stmt:
            case For(var=var):
                where = stmt.var_loc or stmt.loc
                if depth >= MAX_LOOP_DEPTH:
                    raise KernelError(f"loop '{var}' is nested {depth + 1} loops deep; syncproof handles at most "
                                      f"{MAX_LOOP_DEPTH} nested loops", stmt.loc)
                _check_name(var, "a loop variable", where)
                if var in params:
                    raise KernelError(f"loop variable '{var}' has the name of a parameter", where)
                if var in loop_vars:
                    raise KernelError(f"loop variable '{var}' is used twice (first loop at {loop_vars[var]}); "
                                      "loop variable names are unique in a kernel", where)
                loop_vars[var] = where
                _collect_loops(stmt.body, params, loop_vars, depth + 1)
            case If():
                _collect_loops(stmt.then, params, loop_vars, depth)
                _collect_loops(stmt.else_, params, loop_vars, depth)
            case Op() | Barrier():
                pass


def collect_registers(program: Program, params, loop_vars) -> dict[str, Loc | None]:
    """Every loop register's name (unique in the kernel, and no parameter's or loop
    variable's name), with its location."""
    registers: dict[str, Loc | None] = {}
    for stmt in walk_stmts(program.body):
        if not isinstance(stmt, For):
            continue
        for reg in stmt.registers:
            _check_name(reg.name, "a register name", reg.loc)
            if reg.name in params:
                raise KernelError(f"register '{reg.name}' has the name of a parameter", reg.loc)
            if reg.name in loop_vars:
                raise KernelError(f"register '{reg.name}' has the name of a loop variable (at {loop_vars[reg.name]})",
                                  reg.loc)
            if reg.name in registers:
                raise KernelError(f"register '{reg.name}' is declared twice (first at {registers[reg.name]}); "
                                  "register names are unique in a kernel", reg.loc)
            registers[reg.name] = reg.loc
    return registers


def check_header(program: Program, loop: For, scope, all_loops, registers) -> None:
    """A loop register's initial value and step read parameters, enclosing loop variables,
    enclosing loops' registers, and `iters` / `count` registers that the loop itself does
    not change: no `iters` of the loop or of a loop inside it, no `count(F)` of an engine
    or queue with ops counted on it inside the loop. So they hold one value for the whole
    run of the loop, the value they have at every instance inside it."""
    inner = [s for s in walk_stmts((loop,))]
    varying = frozenset(s.var for s in inner if isinstance(s, For))
    counted = frozenset(s.queue or s.engine for s in inner if isinstance(s, Op))
    for reg in loop.registers:
        for part in (reg.init,) + ((reg.step,) if reg.step is not None else ()):
            check_expr(part, scope, all_loops, iters_allowed=True, engines=program.engines, registers=registers,
                       varying=varying, counted=counted)


def _check_one_trigger_engine(program: Program) -> None:
    """A queue runs its transfers in trigger order; with one triggering engine that is
    program order, which the semantics assumes (docs/design.md, "DMA triggered by a
    compute engine")."""
    first: dict[str, Op] = {}
    for stmt in walk_stmts(program.body):
        if isinstance(stmt, Op) and stmt.queue is not None:
            seen = first.setdefault(stmt.queue, stmt)
            if seen.engine != stmt.engine:
                raise KernelError(f"queue '{stmt.queue}' is triggered from {seen.engine} (op '{seen.name}') and from "
                                  f"{stmt.engine}: each DMA queue has one triggering engine, whose order is the "
                                  "queue's FIFO order", stmt.loc)


def _check_queue_use(program: Program, op: Op) -> None:
    """A DMA queue runs only transfers that a compute engine triggers (`via Q`)."""
    queues = {q.name for q in program.queues}
    if op.engine in queues:
        raise KernelError(f"'{op.engine}' is a DMA queue: an op reaches it with `via {op.engine}` on the compute "
                          "engine that triggers the transfer", op.loc)
    if op.queue is not None:
        if op.queue not in queues:
            declared = " ".join(sorted(queues)) or "none"
            raise KernelError(f"unknown DMA queue '{op.queue}' in via (declared queues: {declared}; "
                              f"declare it with `queue {op.queue}`)", op.loc)
        # Peer clauses on a DMA op (docs/peers.md, "DMA ops"): the channels' own end is the
        # queue (the trigger waits on channels F -> Q, the transfer signals on Q -> G).
        for sync in op.syncs:
            if sync.engine == op.queue:
                raise KernelError(f"{sync.kind} {sync.engine}: a flag or token queue connects two different "
                                  f"engines, and this op's transfer runs on {op.queue} (`via {op.queue}`), "
                                  "the channel's own end", sync.loc)


def _check_latency_sign(program: Program, op: Op) -> None:
    """A latency that is an affine expression of the parameters alone (`lat 2 - N`) is
    an error, for every command, when it is negative for some valuation the kernel allows:
    parameters range upward from their lower bounds without limit, so a negative
    coefficient makes it negative for large values, and else its least value is at the
    lower bounds. Other latency expressions (over loop variables, or with `//`, `%`,
    `min`, `max`, `if`, products) are checked where they are evaluated, at the values a
    command runs (docs/language.md, "Latency")."""
    from semantics.evaluate import eval_expr
    from semantics.printer import print_expr
    from semantics.simplify import linear

    lower = {p.name: p.lower for p in program.params}
    form = linear(op.lat)
    terms = {mono: coef for mono, coef in form.items() if mono is not None}
    if not all(len(mono) == 1 and isinstance(mono[0], Var) and mono[0].name in lower for mono in terms):
        return
    at = dict(lower)
    least = eval_expr(op.lat, at)
    for (var,), coef in sorted(terms.items(), key=lambda item: item[1]):
        if least < 0:
            break
        if coef < 0:  # grow this parameter until the value drops below zero
            at[var.name] += int(least // -coef) + 1
            least = eval_expr(op.lat, at)
    if least < 0:
        where = ", ".join(f"{name} = {value}" for name, value in at.items() if name in {m[0].name for m in terms})
        raise KernelError(f"the latency `{print_expr(op.lat)}` of op '{op.name}' is negative ({least}) at "
                          f"{where or 'every valuation'}; a latency is non-negative for every parameter value "
                          "at or above the lower bounds", op.lat.loc if getattr(op.lat, "loc", None) else op.loc)


def _check_body(program: Program, body, scope: frozenset[str], all_loops: set[str], op_names: dict,
                readable: frozenset[str] = frozenset(), registers: frozenset[str] = frozenset()) -> None:
    """`readable`: the registers of the enclosing loops (read only in wait thresholds);
    `registers`: every register of the kernel (a clear error where one is read elsewhere)."""
    engines = set(program.engines)
    others = {"all_loops": all_loops, "registers": registers}
    for stmt in body:
        match stmt:
            case Op():
                _check_name(stmt.name, "an op name", stmt.name_loc or stmt.loc)
                if stmt.replica is not None:
                    _check_name(stmt.replica, "a replica group", stmt.loc)
                for access in stmt.reads + stmt.writes:
                    _check_name(access.buffer, "a buffer name", access.loc)
                if stmt.engine not in engines:
                    raise KernelError(f"unknown engine '{stmt.engine}' (declared engines: {' '.join(program.engines)})", stmt.loc)
                if stmt.name in op_names:
                    raise KernelError(f"duplicate op name '{stmt.name}' (first defined at {op_names[stmt.name]})",
                                      stmt.name_loc or stmt.loc)
                op_names[stmt.name] = stmt.name_loc or stmt.loc
                _check_queue_use(program, stmt)
                if isinstance(stmt.lat, int):
                    if stmt.lat < 0:
                        raise KernelError(f"negative latency {stmt.lat}", stmt.loc)
                else:  # a latency expression: its sign, where it is decided statically
                    check_expr(stmt.lat, scope, iters_allowed=False, **others)
                    _check_latency_sign(program, stmt)
                for access in stmt.reads + stmt.writes:
                    for index in access.indices:
                        for part in index_exprs(index):
                            check_expr(part, scope, iters_allowed=False, **others)
                for sync in stmt.syncs:
                    if sync.engine not in engines:
                        raise KernelError(f"unknown engine '{sync.engine}' in {sync.kind} (declared engines: "
                                          f"{' '.join(program.engines)})", sync.loc)
                    if sync.engine == stmt.engine and stmt.queue is None:  # a DMA op's own end is its queue
                        raise KernelError(f"{sync.kind} {sync.engine}: a flag or token queue connects two "
                                          f"different engines, and this op runs on {stmt.engine}", sync.loc)
                    check_expr(sync.id, scope, iters_allowed=False, **others)
                for wait in stmt.waits:
                    if wait.engine not in engines:
                        raise KernelError(f"unknown engine '{wait.engine}' in wait (declared engines: {' '.join(program.engines)})", wait.loc)
                    check_expr(wait.threshold, scope | readable, iters_allowed=True, engines=program.engines, **others)
            case For():
                check_expr(stmt.lo, scope, iters_allowed=False, **others)
                check_expr(stmt.hi, scope, iters_allowed=False, **others)
                check_header(program, stmt, scope | readable, **others)
                _check_body(program, stmt.body, scope | {stmt.var}, all_loops, op_names,
                            readable | {r.name for r in stmt.registers}, registers)
            case If():
                check_expr(stmt.cond, scope, iters_allowed=False, **others)
                _check_body(program, stmt.then, scope, all_loops, op_names, readable, registers)
                _check_body(program, stmt.else_, scope, all_loops, op_names, readable, registers)
            case Barrier():
                pass


def check_expr(node, scope, all_loops, iters_allowed: bool, engines=(), registers=frozenset(),
               varying=frozenset(), counted=frozenset()) -> None:
    """Every name in `node` is in `scope`; `iters` and `count` only where allowed, `count`
    of one of `engines` (compute engines and DMA queues). The first offence
    from left to right is reported (a fold visits the names in that order; a TypeError
    for a node that is not an expression). A loop register's header passes the loops
    whose `iters` and the engines whose `count` change inside its loop (`varying`,
    `counted`): its values are fixed while the loop runs (docs/language.md)."""
    def check(sub, _) -> None:
        match sub:
            case Var(name=name):
                if name not in scope:
                    if name in registers:
                        raise KernelError(f"register '{name}' is not readable here: a loop register is read only in "
                                          "the wait thresholds, and the registers' headers, inside its loop", sub.loc)
                    if name in all_loops:
                        raise KernelError(f"loop variable '{name}' is not in scope here", sub.loc)
                    raise KernelError(f"undeclared name '{name}'", sub.loc)
            case Iters(var=var):
                if not iters_allowed:
                    raise KernelError("iters(...) is allowed only in wait thresholds", sub.loc)
                if var not in all_loops:
                    raise KernelError(f"iters({var}): '{var}' is not a loop variable of this kernel", sub.loc)
                if var in varying:
                    raise KernelError(f"iters({var}) changes while the register's loop runs; a register's header "
                                      "reads only values fixed for the whole loop", sub.loc)
            case Count(engine=engine):
                if not iters_allowed:
                    raise KernelError("count(...) is allowed only in wait thresholds", sub.loc)
                if engine not in engines:
                    raise KernelError(f"count({engine}): unknown engine '{engine}' (declared engines: "
                                      f"{' '.join(engines)})", sub.loc)
                if engine in counted:
                    raise KernelError(f"count({engine}) changes while the register's loop runs (it holds ops counted "
                                      f"on {engine}); a register's header reads only values fixed for the whole loop",
                                      sub.loc)

    fold_expr(node, check)
