"""Z3 encodings of the two machines of docs/design.md section 2, over symbolic parameters.

`potential_program(program, valuations)` turns a program into finitely many
*potential* stream items: the union, over the given parameter valuations, of the
dynamic instances (op + loop environment), barrier passes and loop iterations a
sequential run produces. Each item carries Z3 terms over the parameter variables:

- `exists`: the item occurs in the run (its enclosing loop ranges and `if` guards,
  encoded with `semantics.symbolic.to_z3`);
- `local` (instances): the engine-local index, the number of existing earlier
  instances of its engine;
- `position` (instances and barriers, per engine): its position in the counter
  machine's stream of that engine (barriers included);
- `need` (instances): T_min(y, F) per engine F, from symbolic dependence (both
  exist, different engines, an element accessed by both and written by one: index
  expressions compared as Z3 terms since they may mention parameters);
- `waits` (instances): (engine, threshold term); `iters(v)` is the number of
  existing iterations of loop v that begun before, or enclose, the instance.

Items are kept in *static order*: the lexicographic order of their keys (per nesting
level the statement index, then the loop value or the branch). For any one valuation
this is program order, so counting existing earlier items gives the same local
indices and stream positions as `semantics.sequential.unroll`.

The step rules are then small functions mirroring `semantics.machines` case by case,
over a symbolic state: per engine a pair (position, busy) of Z3 terms, the Python
state value being 2 * position + busy. tests/verify/engines/test_z3_engine.py checks on concrete
reachable states that each function evaluates to what the Python machine computes.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs
import z3

from semantics.evaluate import eval_cond, eval_expr
from semantics.ir import Barrier, For, If, Iters, Op, Program
from semantics.symbolic import conflict, to_z3

# ------------------------------------------------------------------ the potential program


@attrs.frozen(eq=False)
class PotentialInstance:
    number: int  # index in static order among potential instances
    key: tuple
    op: Op
    env: tuple[tuple[str, int], ...]
    engine: int
    exists: z3.BoolRef
    local: z3.ArithRef
    position: z3.ArithRef  # in the counter stream of its engine
    need: tuple  # T_min per engine (Int terms; 0: no wait needed)
    waits: tuple  # (engine, threshold term) per wait clause


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
    reference_streams: tuple  # per engine: its potential instances in static order
    counter_streams: tuple  # per engine: its instances and every barrier, in static order
    reference_length: tuple  # per engine: Int term, number of existing instances
    counter_length: tuple  # per engine: Int term, instances and barriers
    barrier_run: int  # most barriers passed at once in any valuation (bounds the pass loop)
    facts: tuple  # definitions of the named terms above; assert them once


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


def potential_program(program: Program, valuations, tag: str = "") -> PotentialProgram:
    """The potential program over every valuation in `valuations` (dicts; each must
    unroll without error)."""
    params = {p.name: z3.Int(p.name) for p in program.params}
    engine_number = {e: n for n, e in enumerate(program.engines)}
    seen: dict[tuple, tuple] = {}
    barrier_run = 0
    for values in valuations:
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
        facts.append(const == term)
        return const

    items = [seen[k] for k in sorted(seen)]
    iterations = [(key, stmt, defined(_exists(trail, stmt, env_of(loop_env), {}), z3.Bool(name("it", key))))
                  for kind, stmt, trail, key, loop_env in items if kind == "iteration"]
    ops_and_barriers = [item for item in items if item[0] != "iteration"]
    exists = {key: defined(_exists(trail, None, env_of(loop_env), {}), z3.Bool(name("x", key)))
              for kind, stmt, trail, key, loop_env in ops_and_barriers}
    # Counter streams: per engine, its instances and every barrier, in static order.
    streams = [[item for item in ops_and_barriers
                if item[0] == "barrier" or engine_number[item[1].engine] == e] for e in range(len(program.engines))]
    position: dict[tuple, z3.ArithRef] = {}
    counter_length = []
    for e, stream in enumerate(streams):
        counts = _count_before(stream, lambda item: exists[item[3]])
        for n, item in enumerate(stream):
            position[(item[3], e)] = defined(counts[n], z3.Int(name(f"pos{e}_", item[3])))
        counter_length.append(defined(counts[-1], z3.Int(f"len{tag}_{e}")))
    local: dict[tuple, z3.ArithRef] = {}
    reference_length = []
    for e, stream in enumerate(streams):
        mine = [item for item in stream if item[0] == "op"]
        counts = _count_before(mine, lambda item: exists[item[3]])
        for n, item in enumerate(mine):
            local[item[3]] = defined(counts[n], z3.Int(name("local", item[3])))
        reference_length.append(defined(counts[-1], z3.Int(f"rlen{tag}_{e}")))

    instances: list[PotentialInstance] = []
    barriers: list[PotentialBarrier] = []
    for kind, stmt, trail, key, loop_env in ops_and_barriers:
        if kind == "barrier":
            barriers.append(PotentialBarrier(len(barriers), key, loop_env, exists[key],
                                             tuple(position[(key, e)] for e in range(len(program.engines)))))
            continue
        env = env_of(loop_env)
        engine = engine_number[stmt.engine]
        # iters(v): existing iterations of loop v whose key is at most this key (a
        # prefix counts: the enclosing iteration is included).
        iters = {}
        for var in {s.var for s, _ in trail if isinstance(s, For)} | _iters_vars(stmt):
            bits = [z3.If(bit, 1, 0) for k, loop, bit in iterations if loop.var == var and k <= key]
            iters[var] = z3.Sum(bits) if bits else z3.IntVal(0)
        waits = tuple((engine_number[w.engine],
                       defined(to_z3(w.threshold, env, iters), z3.Int(name(f"t{n}_", key))))
                      for n, w in enumerate(stmt.waits))
        need = []
        for f in range(len(program.engines)):
            # The last existing earlier F-instance y depends on gives T_min (local
            # indices grow in static order, so a later one overrides an earlier one).
            term = z3.IntVal(0)
            if f != engine:
                for x in instances:
                    if x.engine == f:
                        dep = conflict(x.op, env_of(x.env), stmt, env)
                        if not z3.is_false(dep):
                            term = z3.If(z3.And(x.exists, dep), x.local + 1, term)
            need.append(term if _is_zero(term) else defined(term, z3.Int(name(f"need{f}_", key))))
        instances.append(PotentialInstance(len(instances), key, stmt, loop_env, engine, exists[key], local[key],
                                           position[(key, engine)], tuple(need), waits))
    by_key = {i.key: i for i in instances}
    by_barrier = {b.key: b for b in barriers}
    counter_streams = tuple(tuple(by_key.get(item[3]) or by_barrier[item[3]] for item in stream)
                            for stream in streams)
    reference_streams = tuple(tuple(i for i in instances if i.engine == e) for e in range(len(program.engines)))
    return PotentialProgram(program, params, tuple(instances), tuple(barriers), reference_streams,
                            counter_streams, tuple(reference_length), tuple(counter_length), barrier_run,
                            tuple(facts))


def _iters_vars(op: Op) -> set[str]:
    found = set()

    def visit(node):
        if isinstance(node, Iters):
            found.add(node.var)
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


# ------------------------------------------------------------------ states
# A symbolic state is a tuple, one (position, busy) pair per engine.


def concrete_state(values) -> tuple:
    """The symbolic state of a Python machine state (2 * position + busy per engine)."""
    return tuple((z3.IntVal(v >> 1), z3.BoolVal(bool(v & 1))) for v in values)


def fresh_state(pp: PotentialProgram, prefix: str) -> tuple:
    return tuple((z3.Int(f"{prefix}_pos{e}"), z3.Bool(f"{prefix}_busy{e}")) for e in range(len(pp.program.engines)))


def same_state(a, b) -> z3.BoolRef:
    return z3.And(*[z3.And(pa == pb, ba == bb) for (pa, ba), (pb, bb) in zip(a, b)])


def initial_values(pp: PotentialProgram) -> tuple:
    return tuple((z3.IntVal(0), z3.BoolVal(False)) for _ in pp.program.engines)


def advance(state, engine: int, when=True) -> tuple:
    """Both machines' step on one engine: issue makes it busy, complete moves it on
    to its next item, idle. `when` (a Z3 Bool) guards the step."""
    pos, busy = state[engine]
    stepped = (z3.If(busy, pos + 1, pos), z3.Not(busy))
    if when is not True:
        stepped = (z3.If(when, stepped[0], pos), z3.If(when, stepped[1], busy))
    return state[:engine] + (stepped,) + state[engine + 1:]


# ------------------------------------------------------------------ reference machine


def reference_initial(pp: PotentialProgram) -> tuple:
    return initial_values(pp)


def reference_issue_enabled(pp: PotentialProgram, state, y: PotentialInstance) -> z3.BoolRef:
    """Reference.enabled: y is its idle engine's next instance and, for every engine
    F, F has completed at least T_min(y, F) instances."""
    done, busy = state[y.engine]
    ready = [state[f][0] >= need for f, need in enumerate(y.need) if not _is_zero(need)]
    return z3.And(z3.Not(busy), y.exists, y.local == done, *ready)


def complete_enabled(state, engine: int) -> z3.BoolRef:
    """Both machines: a busy engine may complete its instance."""
    return state[engine][1]


def reference_step(pp: PotentialProgram, state, engine: int) -> tuple:
    return advance(state, engine)


def reference_final(pp: PotentialProgram, state) -> z3.BoolRef:
    return z3.And(*[z3.And(pos == n, z3.Not(busy)) for (pos, busy), n in zip(state, pp.reference_length)])


# ------------------------------------------------------------------ counter machine


def counter_value(pp: PotentialProgram, state, engine: int) -> z3.ArithRef:
    """C[F]: F's instances completed since the last barrier F passed (Counter.since)."""
    pos = state[engine][0]
    value = pos
    for b in pp.barriers:  # static order = stream order: the last barrier passed wins
        value = z3.If(z3.And(b.exists, b.position[engine] < pos), pos - b.position[engine] - 1, value)
    return value


def counter_issue_enabled(pp: PotentialProgram, state, y: PotentialInstance) -> z3.BoolRef:
    """Counter.enabled: y is at its idle engine's stream position and C[F] >= t for
    each of its waits (F, t)."""
    pos, busy = state[y.engine]
    held = [counter_value(pp, state, f) >= t for f, t in y.waits]
    return z3.And(z3.Not(busy), y.exists, y.position == pos, *held)


def at_barrier(pp: PotentialProgram, state, engine: int) -> z3.BoolRef:
    """Counter.at_barrier: the engine is idle and its stream position holds a barrier."""
    pos, busy = state[engine]
    return z3.And(z3.Not(busy), z3.Or(*[z3.And(b.exists, b.position[engine] == pos) for b in pp.barriers]))


def pass_barriers(pp: PotentialProgram, state) -> tuple:
    """Counter._pass_barriers: while every engine stands idle at a barrier, all pass it.
    The Python loop runs at most `barrier_run` times in any valuation."""
    for _ in range(pp.barrier_run if pp.barriers else 0):
        everyone = z3.And(*[at_barrier(pp, state, e) for e in range(len(state))])
        state = tuple((z3.If(everyone, pos + 1, pos), busy) for pos, busy in state)
    return state


def counter_initial(pp: PotentialProgram) -> tuple:
    return pass_barriers(pp, initial_values(pp))


def counter_step(pp: PotentialProgram, state, engine: int) -> tuple:
    """Counter.step: advance the engine; after a complete, pass any barrier everyone reached."""
    completes = state[engine][1]
    stepped = advance(state, engine)
    passed = pass_barriers(pp, stepped)
    return tuple((z3.If(completes, p2, p1), z3.If(completes, b2, b1)) for (p1, b1), (p2, b2) in zip(stepped, passed))


def counter_final(pp: PotentialProgram, state) -> z3.BoolRef:
    return z3.And(*[z3.And(pos == n, z3.Not(busy)) for (pos, busy), n in zip(state, pp.counter_length)])


# ------------------------------------------------------------------ the product's verdicts


def unsound_at(pp: PotentialProgram, ref, ctr, y: PotentialInstance) -> z3.BoolRef:
    """The counter machine enables issue(y), the reference does not."""
    return z3.And(counter_issue_enabled(pp, ctr, y), z3.Not(reference_issue_enabled(pp, ref, y)))


def blocked_at(pp: PotentialProgram, ref, ctr, y: PotentialInstance) -> z3.BoolRef:
    """The reference enables issue(y), the counter machine blocks it."""
    return z3.And(reference_issue_enabled(pp, ref, y), z3.Not(counter_issue_enabled(pp, ctr, y)))


def counter_stuck(pp: PotentialProgram, ctr) -> z3.BoolRef:
    """The counter machine has no enabled label and has not finished."""
    moves = [complete_enabled(ctr, e) for e in range(len(ctr))]
    moves += [counter_issue_enabled(pp, ctr, y) for y in pp.instances]
    return z3.And(z3.Not(z3.Or(*moves)), z3.Not(counter_final(pp, ctr)))


def _is_zero(term) -> bool:
    return z3.is_int_value(term) and term.as_long() == 0
