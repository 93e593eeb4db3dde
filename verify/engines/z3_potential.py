"""The potential program: a program unrolled once over symbolic parameters, for the Z3
encodings of verify/engines/z3_machines.py (docs/design.md section 2, docs/z3-engine.md).

`potential_program(program, valuations)` turns a program into finitely many
*potential* stream items: the union, over the given parameter valuations, of the
dynamic instances (op + loop environment), barrier passes and loop iterations a
sequential run produces. Each item carries Z3 terms over the parameter variables:

- `exists`: the item occurs in the run (its enclosing loop ranges and `if` guards,
  encoded with `semantics.symbolic.to_z3`);
- `local` (instances): the engine-local index, the number of existing earlier
  counted instances of its engine (-1 on a DMA trigger, as `unroll` has it);
- `position` (instances and barriers, per engine): its position in the counter
  machine's stream of that engine (barriers included);
- `refpos` (instances): its position in the reference machine's stream of its engine
  (instances only, DMA triggers included); `local` itself when the engine triggers no DMA;
- `need` (instances): T_min(y, F) per engine F, from symbolic dependence (both
  exist, different engines, an element accessed by both and written by one: index
  expressions compared as Z3 terms since they may mention parameters), as
  `semantics.sequential.requirements` computes it;
- `ready` (instances): the reference's issue condition per engine F, as a reference
  position: F's stream must have completed `ready[F]` items. It is `need` over the
  producers' `refpos` instead of their `local` (the same term when F triggers no DMA),
  with the swap `semantics.machines.Reference` makes for DMA ops: a trigger holds its
  transfer's requirement, the transfer none;
- `waits` (instances): (engine, threshold term); `iters(v)` is the number of
  existing iterations of loop v that begun before, or enclose, the instance, and
  `count(F)` the number of existing counted F-instances (ops on F, transfers on a
  queue F) whose key precedes the instance's.

DMA ops (`E name via Q`, docs/design.md "DMA triggered by a compute engine") are two
potential instances, adjacent in static order as in `unroll`: the *trigger* on E (no
accesses, the op's waits, not counted: `local` -1) and the *transfer* on Q (the
op's accesses, no waits, counted on Q), which name each other by `number`.

Items are kept in *static order*: the lexicographic order of their keys (per nesting
level the statement index, then the loop value or the branch; a transfer's last
level is its op's `(index, "q")`, right after the trigger's `(index,)`). For any one
valuation this is program order, so counting existing earlier items gives the same
local indices and stream positions as `semantics.sequential.unroll`.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping

import attrs
import z3

from semantics.evaluate import eval_cond, eval_expr
from semantics.ir import Barrier, Count, For, If, Iters, Op, Program, count_key, increments
from semantics.registers import inline_registers
from semantics.symbolic import conflict, to_z3

from verify.engines.deadline import NO_DEADLINE, Deadline


@attrs.frozen(eq=False)
class PotentialInstance:
    number: int  # index in static order among potential instances
    key: tuple
    op: Op
    env: tuple[tuple[str, int], ...]
    engine: int
    exists: z3.BoolRef
    local: z3.ArithRef  # counted engine-local index (-1: a DMA trigger)
    position: z3.ArithRef  # in the counter stream of its engine
    need: tuple  # T_min per engine (Int terms; 0: no wait needed)
    waits: tuple  # (engine, threshold term) per wait clause
    refpos: z3.ArithRef  # in the reference stream of its engine (triggers included)
    ready: tuple  # per engine: reference items that must have completed (0: none)
    trigger: int = -1  # on a DMA transfer: the number of its trigger
    transfer: int = -1  # on a DMA trigger: the number of its transfer

    @property
    def is_trigger(self) -> bool:
        return self.transfer >= 0

    @property
    def ident(self) -> tuple:
        """What names the instance across valuations, as `instance_ident` of an unrolled one."""
        return self.op.name, self.env, self.is_trigger


def instance_ident(instance) -> tuple:
    """The `ident` of a `semantics.sequential.Instance`: op name, loop environment, trigger?"""
    return instance.op.name, instance.env, instance.is_trigger


@attrs.frozen(eq=False)
class PotentialBarrier:
    number: int  # index in static order among potential barriers
    key: tuple
    env: tuple[tuple[str, int], ...]
    exists: z3.BoolRef
    position: tuple  # per engine: position in that engine's counter stream


@attrs.frozen(eq=False)
class PotentialProgram:
    program: Program
    params: Mapping[str, z3.ArithRef]
    instances: tuple[PotentialInstance, ...]
    barriers: tuple[PotentialBarrier, ...]
    reference_streams: tuple  # per engine: its potential instances in static order (triggers included)
    counter_streams: tuple  # per engine: its instances and every barrier, in static order
    reference_length: tuple  # per engine: Int term, number of existing instances
    counter_length: tuple  # per engine: Int term, instances and barriers
    barrier_run: int  # most barriers passed at once in any valuation (bounds the pass loop)
    facts: tuple  # definitions of the named terms above; assert them once
    increments: tuple = ()  # per engine: what one completion adds to its counter (1; a queue's own)
    triggers: tuple = ()  # per engine: its potential DMA triggers (not counted on its counter)


def _walk(program: Program, values: Mapping[str, int]):
    """The items of one sequential run: (kind, stmt, trail, key, loop env), where
    kind is 'op', 'barrier' or 'iteration' and trail lists the enclosing (For, None)
    and (If, branch) steps. Loop bounds and guards are evaluated as `unroll` does
    (the caller unrolls first, so errors of the kernel surface there)."""
    env = dict(values)
    found = []

    def run(body, trail, key, loop_env):
        for index, stmt in enumerate(body):
            match stmt:
                case Op() | Barrier():
                    kind = "op" if isinstance(stmt, Op) else "barrier"
                    found.append((kind, stmt, trail, key + ((index,),), loop_env))
                case For(var=var):
                    for value in range(eval_expr(stmt.lo, env), eval_expr(stmt.hi, env)):
                        here = key + ((index, value),)
                        inner_env = loop_env + ((var, value),)
                        found.append(("iteration", stmt, trail, here, inner_env))
                        env[var] = value
                        run(stmt.body, trail + ((stmt, None),), here, inner_env)
                    env.pop(var, None)
                case If():
                    taken = eval_cond(stmt.cond, env)
                    run(stmt.then if taken else stmt.else_, trail + ((stmt, taken),),
                        key + ((index, 0 if taken else 1),), loop_env)

    run(program.body, (), (), ())
    return found


def _exists(trail, own_loop, env, cache):
    """The item occurs: every enclosing loop variable in its range, every guard as taken."""
    facts = []
    for stmt, branch in trail + ((own_loop, None),) if own_loop is not None else trail:
        if isinstance(stmt, For):
            v = env[stmt.var]
            facts += [to_z3(stmt.lo, env, cache=cache) <= v, v < to_z3(stmt.hi, env, cache=cache)]
        else:
            cond = to_z3(stmt.cond, env, cache=cache)
            facts.append(cond if branch else z3.Not(cond))
    return z3.And(*facts)


def _count_before(items, exists_of):
    """Chain of counts: result[n] = number of existing items among items[:n]."""
    counts = [z3.IntVal(0)]
    for item in items:
        counts.append(counts[-1] + z3.If(exists_of(item), 1, 0))
    return counts


def _stream_items(program: Program, ops_and_barriers):
    """(role, stmt, key, loop_env, engine, trail) per stream item: role 'op', 'barrier',
    or for a DMA op 'trigger' (on its engine) then 'transfer' (on its queue)."""
    engine_number = {e: n for n, e in enumerate(program.engines)}
    out = []
    for kind, stmt, trail, key, loop_env in ops_and_barriers:
        if kind == "barrier":
            out.append(("barrier", stmt, key, loop_env, None, trail))
        elif stmt.queue is None:
            out.append(("op", stmt, key, loop_env, engine_number[stmt.engine], trail))
        else:
            out.append(("trigger", stmt, key, loop_env, engine_number[stmt.engine], trail))
            transfer_key = key[:-1] + ((key[-1][0], "q"),)
            out.append(("transfer", stmt, transfer_key, loop_env, engine_number[stmt.queue], trail))
    return out


def potential_program(program: Program, valuations, tag: str = "",
                      deadline: Deadline = NO_DEADLINE) -> PotentialProgram:
    """The potential program over every valuation in `valuations` (dicts; each must
    unroll without error). Its loops poll `deadline` (DeadlineReached). A program with
    loop registers is encoded without them, each read replaced by its value
    (semantics/registers.py)."""
    program = inline_registers(program)
    params = {p.name: z3.Int(p.name) for p in program.params}
    engines = range(len(program.engines))
    engine_number = {e: n for n, e in enumerate(program.engines)}
    seen: dict[tuple, tuple] = {}
    barrier_run = 0
    for values in valuations:
        deadline.check()
        run = 0
        for item in _walk(program, values):
            seen.setdefault(item[3], item)
            if item[0] == "barrier":
                run += 1
                barrier_run = max(barrier_run, run)
            elif item[0] == "op":
                run = 0
    facts = []

    def name(prefix, key):
        return f"{prefix}{tag}@" + ".".join("_".join(map(str, level)) for level in key)

    def env_of(loop_env):
        env = dict(params)
        env.update({k: z3.IntVal(v) for k, v in loop_env})
        return env

    def defined(term, const):
        deadline.check()  # every loop below defines a term per item
        facts.append(const == term)
        return const

    items = [seen[k] for k in sorted(seen)]
    iterations = [(key, stmt, defined(_exists(trail, stmt, env_of(loop_env), {}), z3.Bool(name("it", key))))
                  for kind, stmt, trail, key, loop_env in items if kind == "iteration"]
    entries = _stream_items(program, [item for item in items if item[0] != "iteration"])
    exists = {}
    for n, (role, stmt, key, loop_env, engine, trail) in enumerate(entries):
        if role == "transfer":  # it exists with its trigger, the entry before it
            exists[key] = exists[entries[n - 1][2]]
        else:
            exists[key] = defined(_exists(trail, None, env_of(loop_env), {}), z3.Bool(name("x", key)))
    # Counter streams: per engine, its instances and every barrier, in static order.
    streams = [[item for item in entries if item[0] == "barrier" or item[4] == e] for e in engines]
    position: dict[tuple, z3.ArithRef] = {}
    counter_length = []
    for e, stream in enumerate(streams):
        counts = _count_before(stream, lambda item: exists[item[2]])
        for n, item in enumerate(stream):
            position[(item[2], e)] = defined(counts[n], z3.Int(name(f"pos{e}_", item[2])))
        counter_length.append(defined(counts[-1], z3.Int(f"len{tag}_{e}")))
    local: dict[tuple, z3.ArithRef] = {}
    refpos: dict[tuple, z3.ArithRef] = {}
    reference_length, has_triggers = [], []
    counted: list[tuple[list, list]] = []  # per engine: its counted items' keys, counts before each
    for e, stream in enumerate(streams):
        mine = [item for item in stream if item[0] in ("op", "transfer")]
        counts = _count_before(mine, lambda item: exists[item[2]])
        counted.append(([item[2] for item in mine], counts))
        for n, item in enumerate(mine):
            local[item[2]] = defined(counts[n], z3.Int(name("local", item[2])))
        everything = [item for item in stream if item[0] != "barrier"]
        has_triggers.append(len(everything) > len(mine))
        if not has_triggers[-1]:
            refpos.update((item[2], local[item[2]]) for item in mine)
            reference_length.append(defined(counts[-1], z3.Int(f"rlen{tag}_{e}")))
            continue
        counts = _count_before(everything, lambda item: exists[item[2]])
        for n, item in enumerate(everything):
            refpos[item[2]] = defined(counts[n], z3.Int(name(f"rpos{e}_", item[2])))
            local.setdefault(item[2], z3.IntVal(-1))  # a trigger
        reference_length.append(defined(counts[-1], z3.Int(f"rlen{tag}_{e}")))

    instances: list[PotentialInstance] = []
    barriers: list[PotentialBarrier] = []
    zeros = (z3.IntVal(0),) * len(program.engines)

    def requirements(stmt, env, engine, key):
        """`need` (T_min over the producers' local indices) and `ready` (the same over
        their reference positions: the very terms when the engine triggers no DMA) of
        an instance with `stmt`'s accesses on `engine`."""
        need, ready = [], []
        for f in engines:
            # The last existing earlier F-instance y depends on gives T_min (local
            # indices grow in static order, so a later one overrides an earlier one).
            term = at = z3.IntVal(0)
            if f != engine:
                for x in instances:
                    deadline.check()
                    if x.engine == f and not x.is_trigger:
                        dep = conflict(x.op, env_of(x.env), stmt, env)
                        if not z3.is_false(dep):
                            term = z3.If(z3.And(x.exists, dep), x.local + 1, term)
                            at = z3.If(z3.And(x.exists, dep), x.refpos + 1, at)
            need.append(term if is_zero(term) else defined(term, z3.Int(name(f"need{f}_", key))))
            if not has_triggers[f]:
                ready.append(need[-1])
            else:
                ready.append(at if is_zero(at) else defined(at, z3.Int(name(f"ready{f}_", key))))
        return tuple(need), tuple(ready)

    for role, stmt, key, loop_env, engine, trail in entries:
        if role == "barrier":
            barriers.append(PotentialBarrier(len(barriers), key, loop_env, exists[key],
                                             tuple(position[(key, e)] for e in engines)))
            continue
        if role == "transfer":
            continue  # made with its trigger
        deadline.check()
        env = env_of(loop_env)
        # iters(v): existing iterations of loop v whose key is at most this key (a
        # prefix counts: the enclosing iteration is included).
        iters = {}
        for var in {s.var for s, _ in trail if isinstance(s, For)} | _iters_vars(stmt):
            bits = [z3.If(bit, 1, 0) for k, loop, bit in iterations if loop.var == var and k <= key]
            iters[var] = z3.Sum(bits) if bits else z3.IntVal(0)
        # count(F): existing counted F-instances whose key precedes this key (a trigger's
        # own transfer, key (index, "q"), comes after it).
        for f in _counted_engines(stmt):
            keys, counts = counted[engine_number[f]]
            at = bisect.bisect_left(keys, key)
            iters[count_key(f)] = local[keys[at]] if at < len(keys) else counts[-1]
        waits = tuple((engine_number[w.engine], defined(to_z3(w.threshold, env, iters), z3.Int(name(f"t{n}_", key))))
                      for n, w in enumerate(stmt.waits))
        # A DMA op's data instance is its transfer, on the queue.
        data_engine = engine if role == "op" else engine_number[stmt.queue]
        need, ready = requirements(stmt, env, data_engine, key)
        if role == "op":
            instances.append(PotentialInstance(len(instances), key, stmt, loop_env, engine, exists[key], local[key],
                                               position[(key, engine)], need, waits, refpos[key], ready))
            continue
        number = len(instances)
        tkey = key[:-1] + ((key[-1][0], "q"),)
        instances.append(PotentialInstance(number, key, stmt, loop_env, engine, exists[key], local[key],
                                           position[(key, engine)], zeros, waits, refpos[key], ready,
                                           transfer=number + 1))
        instances.append(PotentialInstance(number + 1, tkey, stmt, loop_env, data_engine, exists[tkey],
                                           local[tkey], position[(tkey, data_engine)], need, (), refpos[tkey],
                                           zeros, trigger=number))
    by_key = {i.key: i for i in instances}
    by_barrier = {b.key: b for b in barriers}
    counter_streams = tuple(tuple(by_key.get(item[2]) or by_barrier[item[2]] for item in stream)
                            for stream in streams)
    reference_streams = tuple(tuple(i for i in instances if i.engine == e) for e in engines)
    triggers = tuple(tuple(i for i in stream if i.is_trigger) for stream in reference_streams)
    return PotentialProgram(program, params, tuple(instances), tuple(barriers), reference_streams,
                            counter_streams, tuple(reference_length), tuple(counter_length), barrier_run,
                            tuple(facts), increments(program), triggers)


def _iters_vars(op: Op) -> set[str]:
    return _leaves(op, Iters, "var")


def _counted_engines(op: Op) -> set[str]:
    return _leaves(op, Count, "engine")


def _leaves(op: Op, kind, field_name: str) -> set[str]:
    """The `field_name` of every `kind` leaf in `op`'s wait thresholds."""
    found = set()

    def visit(node):
        if isinstance(node, kind):
            found.add(getattr(node, field_name))
        elif attrs.has(type(node)):
            for field in attrs.fields(type(node)):
                child = getattr(node, field.name)
                if attrs.has(type(child)):
                    visit(child)

    for w in op.waits:
        visit(w.threshold)
    return found


def valuation_constraint(pp: PotentialProgram, bounds) -> z3.BoolRef:
    """Every parameter within its inclusive bounds."""
    return z3.And(*[z3.And(lo <= pp.params[n], pp.params[n] <= hi) for n, lo, hi in bounds])


def valuation_in(pp: PotentialProgram, valuations) -> z3.BoolRef:
    """The parameters take one of the listed valuations."""
    return z3.Or(*[z3.And(*[pp.params[k] == v for k, v in values.items()]) for values in valuations])


def is_zero(term) -> bool:
    return z3.is_int_value(term) and term.as_long() == 0
