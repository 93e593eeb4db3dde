"""Properties shared by the Z3 engine's tests (tests/verify/engines/test_z3_engine.py,
test_z3_queues.py): the mirrored step rules evaluated on concrete reachable states
against semantics/machines.py (`encoding_property`), the potential program and the
event-time constraints against `unroll` (`potential_program_property`,
`events_property`), and verdict agreement with the explicit engine
(`agreement_property`)."""

from __future__ import annotations

import z3
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

from semantics.machines import COMPLETE, ISSUE, Counter, Label, Reference
from semantics.sequential import requirements, unroll
from verify.engines import explicit
from verify.engines import z3_check
from verify.engines import z3_events as ze
from verify.engines import z3_machines as zm
from verify.search.generators import param_bounds
from verify.verdicts import CheckResult, Verdict

HI = 2  # parameters over 0..HI (the size bound of programs() assumes max_param=2)


def _model(pp, values, extra=()):
    """The (unique) values of the potential program's named terms at one valuation."""
    solver = z3.Solver()
    solver.add(*pp.facts, *extra, *[pp.params[k] == v for k, v in values.items()])
    assert solver.check() == z3.sat
    return solver.model()


def _value(model, state) -> tuple[int, ...]:
    """A symbolic state's value in the Python machines' form (2 * position + busy)."""
    return tuple(2 * model.eval(p, model_completion=True).as_long()
                 + int(z3.is_true(model.eval(b, model_completion=True))) for p, b in state)


def _true(model, formula) -> bool:
    return z3.is_true(model.eval(formula, model_completion=True))


def _walk(machine, choices, both=None):
    """States of a random run (labels enabled in `machine`, and in `both` if given)."""
    state = machine.initial()
    states, labels = [state], []
    for choice in choices:
        enabled = machine.enabled(state)
        if both is not None:
            enabled = [l for l in enabled if l in set(both[0].enabled(both[1]))]
        if not enabled:
            break
        label = enabled[choice % len(enabled)]
        labels.append(label)
        if both is not None:
            both = (both[0], both[0].step(both[1], label))
        state = machine.step(state, label)
        states.append(state)
    return states, labels


def potential_program_property(pp, model, unrolled):
    index = {zm.instance_ident(i): i for i in unrolled.instances}
    occurring = [y for y in pp.instances if _true(model, y.exists)]
    assert [y.ident for y in occurring] == list(index), "existence or static order"
    need = requirements(unrolled)
    ref = Reference(unrolled)  # its streams (triggers included) and its need (swapped for DMA ops)
    number = {y.number: y for y in occurring}
    for y in occurring:
        instance = index[y.ident]
        assert model.eval(y.local).as_long() == instance.local
        assert tuple(model.eval(n, model_completion=True).as_long() for n in y.need) == need[instance.index]
        assert tuple((f, model.eval(t).as_long()) for f, t in y.waits) == instance.waits
        assert model.eval(y.position).as_long() == unrolled.streams[y.engine].index(instance.index)
        assert model.eval(y.refpos).as_long() == ref.streams[y.engine].index(instance.index)
        # ready[F] is the reference's need as a position in F's reference stream: the
        # count of counted items before it is the need (and the item before it counted).
        for f, (ready, t) in enumerate(zip(y.ready, ref.need[instance.index])):
            at = model.eval(ready, model_completion=True).as_long()
            counted = ref.count[f][at] if ref.count is not None else at
            assert counted == t and (at == 0 or unrolled.instances[ref.streams[f][at - 1]].transfer < 0)
        assert (y.trigger >= 0, y.transfer >= 0) == (instance.trigger >= 0, instance.transfer >= 0)
        partner = y.trigger if y.trigger >= 0 else y.transfer
        if partner >= 0:
            assert number[partner].ident == zm.instance_ident(unrolled.instances[max(instance.trigger,
                                                                                    instance.transfer)])
    passes = [b for b in pp.barriers if _true(model, b.exists)]
    assert len(passes) == len(unrolled.barriers)
    for number, b in enumerate(passes):
        for e, stream in enumerate(unrolled.streams):
            assert model.eval(b.position[e]).as_long() == stream.index(-1 - number)


def encoding_property(program, values, choices) -> None:
    """The mirrored rules evaluate to the Python machines' answers on reachable states."""
    pp = zm.potential_program(program, explicit.valuations(param_bounds(program, HI)))
    model = _model(pp, values)
    unrolled = unroll(program, values)
    potential_program_property(pp, model, unrolled)
    number = {zm.instance_ident(i): i.index for i in unrolled.instances}

    def label_of(y):
        return number.get(y.ident)

    engines = range(len(program.engines))
    ref, ctr = Reference(unrolled), Counter(unrolled)
    assert _value(model, zm.reference_initial(pp)) == ref.initial()
    assert _value(model, zm.counter_initial(pp)) == ctr.initial()
    states, labels = _walk(ref, choices)
    for k, r in enumerate(states):
        zr = zm.concrete_state(r)
        enabled = set(ref.enabled(r))
        for y in pp.instances:
            assert _true(model, zm.reference_issue_enabled(pp, zr, y)) == (Label(ISSUE, label_of(y)) in enabled)
        for e in engines:
            assert _true(model, zm.complete_enabled(zr, e)) == any(
                l.kind == COMPLETE and unrolled.instances[l.instance].engine == e for l in enabled)
        assert _true(model, zm.reference_final(pp, zr)) == ref.final(r)
        if k < len(labels):
            engine = unrolled.instances[labels[k].instance].engine
            assert _value(model, zm.reference_step(pp, zr, engine)) == states[k + 1]
    states, labels = _walk(ctr, choices)
    for k, c in enumerate(states):
        zc = zm.concrete_state(c)
        enabled = set(ctr.enabled(c))
        for y in pp.instances:
            assert _true(model, zm.counter_issue_enabled(pp, zc, y)) == (Label(ISSUE, label_of(y)) in enabled)
        for e in engines:
            assert model.eval(zm.counter_value(pp, zc, e)).as_long() == ctr.counter(c, e)
            assert _true(model, zm.at_barrier(pp, zc, e)) == (ctr.at_barrier(c, e) is not None)
            assert _true(model, zm.complete_enabled(zc, e)) == any(
                l.kind == COMPLETE and unrolled.instances[l.instance].engine == e for l in enabled)
        assert _true(model, zm.counter_final(pp, zc)) == ctr.final(c)
        assert _true(model, zm.counter_stuck(pp, zc)) == (not enabled and not ctr.final(c))
        if k < len(labels):
            engine = unrolled.instances[labels[k].instance].engine
            assert _value(model, zm.counter_step(pp, zc, engine)) == states[k + 1]
    events_property(pp, unrolled, choices)


def events_property(pp, unrolled, choices) -> None:
    """A run of both machines, timed by its step numbers, satisfies the event-time
    constraints, and the state at each time is the machines' state (z3_events.py)."""
    ref, ctr = Reference(unrolled), Counter(unrolled)
    states, labels = _walk(ctr, choices, both=(ref, ref.initial()))
    states = [ctr.initial()]
    refs = [ref.initial()]
    for label in labels:
        states.append(ctr.step(states[-1], label))
        refs.append(ref.step(refs[-1], label))
    tl = ze.timeline(pp)
    by_instance = {y.ident: y for y in pp.instances}
    times = []
    for step, label in enumerate(labels, 1):
        y = by_instance[zm.instance_ident(unrolled.instances[label.instance])]
        times.append((tl.issue if label.kind == ISSUE else tl.complete)[y.number] == step)
    # All engines pass a barrier together: count the passes in engine 0's stream.
    barrier_times = []
    for step, c in enumerate(states):  # the complete of step `step` passed these barriers
        now = sum(1 for i in unrolled.streams[0][: c[0] >> 1] if i < 0)
        barrier_times += [step] * (now - len(barrier_times))
    existing = [b for b in pp.barriers if _true(_model(pp, dict(unrolled.valuation)), b.exists)]
    times += [tl.passed[b.number] == t for b, t in zip(existing, barrier_times)]
    horizon = len(labels) + 1
    # Events the run has not taken come after the horizon.
    issued = {zm.instance_ident(unrolled.instances[l.instance]) for l in labels if l.kind == ISSUE}
    completed = {zm.instance_ident(unrolled.instances[l.instance]) for l in labels if l.kind == COMPLETE}
    for y in pp.instances:
        if y.ident not in issued:
            times.append(z3.Implies(y.exists, tl.issue[y.number] >= horizon))
        if y.ident not in completed:
            times.append(z3.Implies(y.exists, tl.complete[y.number] >= horizon))
    times += [tl.passed[b.number] >= horizon for b in existing[len(barrier_times):]]
    model = _model(pp, dict(unrolled.valuation), (*tl.facts, *ze.issues_enabled(pp, tl, horizon), *times))
    for t in range(1, horizon + 1):
        assert _value(model, ze.counter_state_at(pp, tl, t)) == states[t - 1]
        assert _value(model, ze.reference_state_at(pp, tl, t)) == refs[t - 1]


CHOICES = st.lists(st.integers(0, 5), min_size=0, max_size=40)


# No shrinking: the assertion needs any example, and shrinking reruns both engines hundreds of times.
FIND_SETTINGS = settings(database=None, derandomize=True, max_examples=300, deadline=None,
                 suppress_health_check=list(HealthCheck), phases=(Phase.explicit, Phase.generate))


def program_ops(program):
    from semantics.ir import ops

    return ops(program)


def agreement_property(program, bounds, options: z3_check.Z3Options | None = None) -> CheckResult:
    """Both engines reach the same verdict; a Z3 finding comes with a replayed witness."""
    expected = explicit.check(program, bounds)
    result = z3_check.check(program, bounds, options or z3_check.Z3Options())
    assert result.verdict != Verdict.UNKNOWN, result.reason
    assert (result.verdict, result.holds, result.complete) == (expected.verdict, expected.holds, expected.complete)
    if result.holds is False:
        witness = result.witness
        # A valuation whose semaphores or thresholds leave the 32-bit range is unsound
        # before any run (no trace, no failing label; both engines check it first).
        out_of_range = witness.explanation[:1] == expected.witness.explanation[:1] and \
            witness.explanation[0].startswith("32-bit range:") and not witness.failing
        assert witness.verdict == result.verdict and (witness.failing or out_of_range) and witness.trace is not None
        for name, lo, hi in bounds:
            assert lo <= dict(witness.unrolled.valuation)[name] <= hi
    return result


