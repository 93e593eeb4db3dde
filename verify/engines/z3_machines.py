"""Z3 encodings of the two machines of docs/design.md section 2, over symbolic parameters.

The machines run over the *potential program* of verify/engines/z3_potential.py: the
program unrolled once into potential instances and barriers whose existence, local
indices, stream positions, T_min and thresholds are Z3 terms over the parameters
(re-exported here: `potential_program`, `PotentialProgram`, ...).

The step rules are small functions mirroring `semantics.machines` case by case,
over a symbolic state: per engine a pair (position, busy) of Z3 terms, the Python
state value being 2 * position + busy. tests/verify/engines/test_z3_engine.py checks on concrete
reachable states that each function evaluates to what the Python machine computes.

DMA queues (docs/design.md, "DMA triggered by a compute engine"; `Reference` and
`Counter` in semantics/machines.py): a queue is an engine of its own (its stream holds
its transfers and every barrier, so barriers wait for the queues to drain); a transfer
may issue once its trigger has completed (its engine's position is past the
trigger's, in the reference and the counter stream respectively); the reference holds
a trigger until its transfer's producers completed (`ready`); a counter steps by its
increment per counted completion, and triggers do not count.
"""

from __future__ import annotations

import z3

from verify.engines.z3_potential import (  # noqa: F401 (re-exported: the encodings' one entry point)
    PotentialBarrier, PotentialInstance, PotentialProgram, is_zero, instance_ident, potential_program,
    valuation_constraint, valuation_in,
)

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
    F, F has completed at least T_min(y, F) instances (`ready`: as a position in F's
    reference stream, which also holds F's uncounted DMA triggers); a DMA transfer
    also needs its trigger completed."""
    done, busy = state[y.engine]
    ready = [state[f][0] >= need for f, need in enumerate(y.ready) if not is_zero(need)]
    return z3.And(z3.Not(busy), y.exists, y.refpos == done, *ready, *_trigger_done(pp, state, y, "refpos"))


def _trigger_done(pp: PotentialProgram, state, y: PotentialInstance, where: str) -> tuple:
    """For a DMA transfer: its trigger's engine has moved past it (in the stream whose
    positions `where` names: "refpos" or "position"), i.e. the trigger completed."""
    if y.trigger < 0:
        return ()
    trigger = pp.instances[y.trigger]
    return (state[trigger.engine][0] > getattr(trigger, where),)


def complete_enabled(state, engine: int) -> z3.BoolRef:
    """Both machines: a busy engine may complete its instance."""
    return state[engine][1]


def reference_step(pp: PotentialProgram, state, engine: int) -> tuple:
    return advance(state, engine)


def reference_final(pp: PotentialProgram, state) -> z3.BoolRef:
    return z3.And(*[z3.And(pos == n, z3.Not(busy)) for (pos, busy), n in zip(state, pp.reference_length)])


# ------------------------------------------------------------------ counter machine


def counter_value(pp: PotentialProgram, state, engine: int) -> z3.ArithRef:
    """C[F]: F's counted instances completed since the last barrier F passed, times F's
    increment (Counter.since; DMA triggers do not count)."""
    pos = state[engine][0]
    value = pos
    for b in pp.barriers:  # static order = stream order: the last barrier passed wins
        value = z3.If(z3.And(b.exists, b.position[engine] < pos), pos - b.position[engine] - 1, value)
    triggers = pp.triggers[engine] if pp.triggers else ()
    if triggers:
        start = z3.IntVal(-1)  # the position of the last barrier passed
        for b in pp.barriers:
            start = z3.If(z3.And(b.exists, b.position[engine] < pos), b.position[engine], start)
        value = value - z3.Sum([z3.If(z3.And(t.exists, start < t.position, t.position < pos), 1, 0)
                                for t in triggers])
    step = pp.increments[engine] if pp.increments else 1
    return value if step == 1 else step * value


def counter_issue_enabled(pp: PotentialProgram, state, y: PotentialInstance) -> z3.BoolRef:
    """Counter.enabled: y is at its idle engine's stream position and C[F] >= t for
    each of its waits (F, t); a DMA transfer also needs its trigger completed."""
    pos, busy = state[y.engine]
    held = [counter_value(pp, state, f) >= t for f, t in y.waits]
    return z3.And(z3.Not(busy), y.exists, y.position == pos, *held, *_trigger_done(pp, state, y, "position"))


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
