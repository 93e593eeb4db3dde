"""DMA queues in the language and the machines (docs/design.md, "DMA triggered by a
compute engine"): the printer round-trips them; a DMA op unrolls to a trigger on its
engine and a transfer on its queue; the reference machine, explored exhaustively, lets
a trigger issue exactly when every producer of its transfer (found by comparing element
sets) has completed and a transfer exactly when its trigger has; the counter machine's
queue counter is increment x completed transfers."""

from __future__ import annotations

from collections import deque

import pytest

from semantics.ir import increments
from semantics.machines import COMPLETE, ISSUE, Counter, Reference
from semantics.parser import parse, parse_file
from semantics.printer import print_program
from semantics.sequential import requirements, unroll

from tests.support.corpus import DMA_KERNELS, kernel_id

SMALL = {"dma_trigger": {"N": 3}, "dma_gather": {"N": 2, "K": 2}, "forgot_increment": {"N": 2},
         "int32_overflow": {"N": 2}}


@pytest.mark.parametrize("path", DMA_KERNELS, ids=kernel_id)
def test_printed_dma_kernels_parse_back_to_the_same_program(path):
    program = parse_file(str(path))
    assert program.queues
    assert parse(print_program(program)) == program


def test_a_dma_op_unrolls_to_a_trigger_on_its_engine_and_a_transfer_on_its_queue():
    program = parse("engines A B\nqueue q increment 4\nparam N\nfor i in 0..N {\n"
                    "  A c writes x[i]\n  A t via q reads x[i] writes y[i] wait B >= i\n  B u reads y[i]\n}\n")
    unrolled = unroll(program, {"N": 2})
    a, q = program.engines.index("A"), program.engines.index("q")
    triggers = [i for i in unrolled.instances if i.is_trigger]
    transfers = [i for i in unrolled.instances if i.trigger >= 0]
    assert [(i.engine, i.local, i.accesses) for i in triggers] == [(a, -1, ())] * 2
    assert [t.waits for t in triggers] == [((1, 0),), ((1, 1),)]  # the op's waits are the trigger's
    assert [(i.engine, i.local, i.waits) for i in transfers] == [(q, 0, ()), (q, 1, ())]
    assert all(unrolled.instances[t.transfer].trigger == t.index == t.transfer - 1 for t in triggers)
    # Triggers do not count on A: c[i] keeps local index i.
    assert [i.local for i in unrolled.instances if i.op.name == "c"] == [0, 1]
    assert increments(program) == (1, 1, 4)


def _producers(unrolled, data) -> list[int]:
    """Brute force: every earlier instance on another counter sharing an element, one writing."""
    mine = dict(data.accesses)
    return [x.index for x in unrolled.instances[: data.index]
            if not x.is_trigger and x.engine != data.engine
            and any(e in mine and (w or mine[e]) for e, w in x.accesses)]


def _completed(machine, state) -> set[int]:
    done = set()
    for engine, stream in enumerate(machine.streams):
        done.update(stream[: state[engine] >> 1])
    return done


def _reference_mismatches(unrolled, machine) -> list[str]:
    """Explore every reachable state of `machine` and compare its enabled issues with the
    brute-force rule."""
    start = machine.initial()
    seen, todo, problems = {start}, deque([start]), []
    while todo and len(problems) < 3:
        state = todo.popleft()
        done = _completed(machine, state)
        enabled = machine.enabled(state)
        issuable = {l.instance for l in enabled if l.kind == ISSUE}
        for engine, stream in enumerate(machine.streams):
            pos = state[engine] >> 1
            if state[engine] & 1 or pos >= len(stream):
                continue
            y = unrolled.instances[stream[pos]]
            if y.trigger >= 0:
                allowed = y.trigger in done
            else:
                data = unrolled.instances[y.transfer] if y.is_trigger else y
                allowed = set(_producers(unrolled, data)) <= done
            if allowed != (y.index in issuable):
                problems.append(f"{y.describe()} in {state}: brute force {allowed}")
        for label in enabled:
            nxt = machine.step(state, label)
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return problems


@pytest.mark.parametrize("path", DMA_KERNELS, ids=kernel_id)
def test_reference_issues_exactly_what_the_brute_force_rule_allows(path):
    program = parse_file(str(path))
    unrolled = unroll(program, SMALL[path.stem])
    assert _reference_mismatches(unrolled, Reference(unrolled)) == []


class _TriggerIgnoresItsTransfer(Reference):
    """Broken on purpose: the trigger does not inherit its transfer's producers."""

    def __init__(self, unrolled):
        super().__init__(unrolled)
        self.need = requirements(unrolled)


def test_the_brute_force_rule_catches_a_trigger_that_ignores_its_transfer():
    program = parse_file(str(next(p for p in DMA_KERNELS if p.stem == "dma_trigger")))
    unrolled = unroll(program, {"N": 3})
    assert _reference_mismatches(unrolled, _TriggerIgnoresItsTransfer(unrolled))


@pytest.mark.parametrize("path", DMA_KERNELS, ids=kernel_id)
def test_a_queue_counter_is_its_increment_times_its_completed_transfers(path):
    program = parse_file(str(path))
    unrolled = unroll(program, SMALL[path.stem])
    ctr, steps = Counter(unrolled), increments(program)
    state, done = ctr.initial(), set()
    while not ctr.final(state):  # one run: always the first enabled label
        labels = ctr.enabled(state)
        if not labels:
            break  # an unsound kernel may also block; the counts so far are still checked
        label = labels[0]
        state = ctr.step(state, label)
        if label.kind == COMPLETE:
            done.add(label.instance)
        for engine in range(len(program.engines)):
            counted = sum(1 for i in done if unrolled.instances[i].engine == engine
                          and not unrolled.instances[i].is_trigger)
            assert ctr.counter(state, engine) == steps[engine] * counted


def test_reference_without_queues_is_unchanged():
    # The trigger tables exist only for programs with DMA ops (the explicit engine's hot loop).
    unrolled = unroll(parse("engines A B\nA w writes x\nB r reads x\n"), {})
    assert Reference(unrolled).count is None and Counter(unrolled).after is None
