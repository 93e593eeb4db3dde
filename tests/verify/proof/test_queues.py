"""The all-values proof on DMA queues (docs/proofs.md, "DMA queues"; verify/proof/queues.py).

1. The proof's model of queues held to the machines on unrolled small valuations: its
   closed-form counts are the local indices `unroll` gives (a transfer counts on its
   queue, a trigger nowhere), the counted prefix of the Reference machine at every
   trigger; what a wait `Q >= t` means to the proof (which transfer it forces complete,
   which transfer's completion satisfies it) is what the Counter machine's counter
   values say; its wait terms are the thresholds `unroll` evaluates.
2. Verdicts: the DMA kernels' threshold output is proved; on generated queue programs
   a proof never covers what the explicit and happens-before engines refute, and a
   refutation is real.
3. Teeth: each queue rule broken in turn, in the program (a wait one transfer too
   early, a forgotten increment, FIFO assumed across two queues, a trigger counted on
   its engine, a transfer taken as complete once its trigger is) and in the proof
   (the same rules broken in verify/proof/): the proof's answer changes every time.
"""

from __future__ import annotations

import collections
import itertools

import attrs
import pytest
import z3
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

from algorithm.registry import get_strategy
from semantics.context import sites
from semantics.ir import Barrier, Op, increments, walk_stmts
from semantics.machines import Counter as CounterMachine, Reference
from semantics.parser import parse, parse_file
from semantics.printer import print_program
from semantics.sequential import unroll
from verify.engines.explicit import check
from verify.engines.happens_before import check as hb_check
from verify.proof import chains as chains_module
from verify.proof import counts as counts_module
from verify.proof import obligations as obligations_module
from verify.proof import terms as terms_module
from verify.proof.counts import Unsupported
from verify.proof.prove import PROVED, ProofOptions, prove
from verify.proof.queues import forces, home, reaches
from verify.proof.terms import Terms
from verify.search.generators import param_bounds, programs, valuations
from verify.verdicts import CheckOptions

from tests.support.corpus import DMA_KERNELS, KERNELS_DIR, kernel_id
from tests.support.queues import queue_programs, with_queue

# Deterministic budgets only (Z3 resource units, no wall clock), in this process (the
# teeth patch the proof's modules).
OPTIONS = ProofOptions(timeout=None, query_rlimit=3_000_000, first_query_rlimit=1_000_000, max_states=20_000,
                       jobs=1)
HI = 2  # the generators' size bound assumes parameters in 0..2

SMALL = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))


def _queue_programs(synced: bool):
    return queue_programs(programs(synced=synced, engines=(3, 5), max_instances=12))


def _no_barriers(program) -> bool:
    return not any(isinstance(s, Barrier) for s in walk_stmts(program.body))


def _values(env: dict, ctx) -> dict:
    return {k: z3.IntVal(v, ctx) for k, v in env.items()}


def _int(term) -> int:
    return z3.simplify(term).as_long()


def _true(formula) -> bool:
    return z3.is_true(z3.simplify(formula))


# ------------------------------------------------------ 1. the model against the machines


def _model_agrees_with_the_machines(program, valuation: dict) -> int:
    """Every count, local index and wait term of the proof at every instance of one
    valuation, against `unroll` and the machines; returns the number of facts checked."""
    ctx = z3.Context()
    terms = Terms(program, ctx)
    found = sites(program)
    unrolled = unroll(program, valuation)
    reference = Reference(unrolled)
    machine = CounterMachine(unrolled)
    streams = [tuple(i for i in s if i >= 0) for s in unrolled.streams]
    position = {item: (engine, pos) for engine, stream in enumerate(streams) for pos, item in enumerate(stream)}
    steps = increments(program)
    checked = 0
    for inst in unrolled.instances:
        site = found[inst.op.name]
        env = _values({**valuation, **dict(inst.env)}, ctx)
        for number, engine in enumerate(program.engines):
            # Brute force: counted instances of the engine before this one (no trigger counts).
            expected = sum(1 for x in unrolled.instances[:inst.index] if x.engine == number and not x.is_trigger)
            assert _int(terms.local(site, engine, env)) == expected, (inst.describe(), valuation, engine)
            checked += 1
        if inst.is_trigger:
            # The Reference machine's counted prefix of the trigger's stream at the trigger.
            engine, pos = position[inst.index]
            assert _int(terms.local(site, program.engines[engine], env)) == reference.count[engine][pos]
        else:
            assert _int(terms.local(site, home(inst.op), env)) == inst.local
            if inst.trigger < 0:  # a trigger carries the op's waits, its transfer none
                for wait, (_, value) in zip(inst.op.waits, inst.waits):
                    assert _int(terms.wait_term(site, wait, env)) == value
        if inst.is_trigger:
            for wait, (_, value) in zip(inst.op.waits, inst.waits):
                assert _int(terms.wait_term(site, wait, env)) == value
                checked += 1
    # What a wait on a counter means: C[F] >= t forces F's instance x complete, and x's
    # completion gives C[F] >= t, read from the Counter machine's counter values
    # (`since[F][p]`: C[F] once F's first p stream items completed; no barriers).
    for number, engine in enumerate(program.engines):
        step = steps[number]
        since = machine.since[number]
        for pos, item in enumerate(streams[number]):
            x = unrolled.instances[item]
            if x.is_trigger:  # not counted: no local index on its engine
                continue
            local = z3.IntVal(_int(terms.local(found[x.op.name], engine, _values({**valuation, **dict(x.env)}, ctx))),
                              ctx)
            # Thresholds around every counter value the engine takes (and beyond its last).
            for t in sorted({step * k + d for k in range(len(streams[number]) + 2) for d in (-1, 0, 1)}):
                forced = all(p > pos for p, value in enumerate(since) if value >= t)
                assert _true(forces(z3.IntVal(t, ctx), step, local)) == forced, (engine, x.describe(), t)
                assert _true(reaches(z3.IntVal(t, ctx), step, local)) == (since[pos + 1] >= t), (engine, t)
                checked += 2
    return checked


def _small_valuations(program):
    """Every valuation with one parameter in 0..4, or two in 0..2 x 0..3."""
    names = [p.name for p in program.params]
    tops = [4] if len(names) == 1 else [2, 3]
    return [dict(zip(names, values)) for values in itertools.product(*[range(t + 1) for t in tops])]


@pytest.mark.parametrize("path", DMA_KERNELS, ids=kernel_id)
def test_queue_counts_and_waits_of_the_dma_kernels_equal_the_machines(path):
    program = parse_file(str(path))
    assert sum(_model_agrees_with_the_machines(program, values) for values in _small_valuations(program)) > 100


@SMALL
@given(_queue_programs(synced=True).filter(_no_barriers).flatmap(lambda p: st.tuples(st.just(p), valuations(p, HI))))
def test_queue_counts_and_waits_of_generated_programs_equal_the_machines(program_values):
    program, values = program_values
    note(print_program(program))
    try:
        _model_agrees_with_the_machines(program, values)
    except Unsupported:
        assume(False)  # no closed form: the proof says so and stops


# ---------------------------------------------------------------------- 2. verdicts


@pytest.mark.parametrize("path", DMA_KERNELS, ids=kernel_id)
@pytest.mark.parametrize("prop", ["bisimulation", "soundness"])
def test_threshold_output_of_the_dma_kernels_is_proved_for_every_parameter_value(path, prop):
    synced = get_strategy("threshold")(parse_file(str(path))).program
    proof = prove(synced, attrs.evolve(OPTIONS, property=prop))
    assert proof.status == PROVED, proof.reason
    assert proof.int32 is not None  # the range statement covers the queues' counters too


def _agrees_with_the_engines(program, prop: str) -> str:
    proof = prove(program, attrs.evolve(OPTIONS, property=prop))
    if proof.status == PROVED:
        bounds = param_bounds(program, HI)
        for engine in (check, hb_check):
            result = engine(program, bounds, CheckOptions(property=prop))
            assert result.holds is True, f"{prop} proved for all values, {engine.__module__}: {result.verdict.value}"
    if proof.status == "refuted":
        assert proof.counterexample.holds is False
    return proof.status


def _synced_queue_programs():
    """Queue programs synced by the threshold strategy (bisimilar), and generated queue
    programs keeping the generator's random waits (often wrong: increments ignored)."""
    unsynced = programs(engines=(3, 5), max_instances=12)
    threshold = get_strategy("threshold")
    fresh = st.builds(lambda p, a, b, two: threshold(with_queue(p, a, False, b if two else None)).program,
                      unsynced, st.sampled_from([1, 2, 16]), st.sampled_from([1, 16]), st.booleans())
    return st.one_of(fresh, _queue_programs(synced=True).filter(_no_barriers))


# Of the 30 examples (derandomized, rlimits: the same on any load) at least this many
# are proved, so the property is not vacuous.
MIN_PROVED = 12


@pytest.mark.slow
def test_a_proof_of_a_queue_program_never_covers_what_the_engines_refute():
    statuses: collections.Counter = collections.Counter()

    @settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True,
              database=None)
    @given(_synced_queue_programs(), st.sampled_from(["bisimulation", "soundness"]))
    def differential(program, prop):
        note(print_program(program))
        statuses[_agrees_with_the_engines(program, prop)] += 1

    differential()
    assert statuses[PROVED] >= MIN_PROVED, statuses


# ---------------------------------------------------------------------- 3. teeth

DMA_TRIGGER = parse_file(str(KERNELS_DIR / "dma_trigger.sync"))
_TRIGGER_TEXT = (KERNELS_DIR / "dma_trigger.sync").read_text()
# mm waits for load(i - 1) only: one transfer too early (16 * i instead of 16 * (i + 1)).
ONE_TRANSFER_EARLY = _TRIGGER_TEXT.replace("q0 >= 16 * (i + 1)", "q0 >= 16 * i")
# The increment forgotten: one unit per transfer (on both queues).
FORGOT_INCREMENT = (_TRIGGER_TEXT.replace("q0 >= 16 * (i + 1)", "q0 >= i + 1")
                    .replace("q1 >= 16 * (i - 1)", "q1 >= i - 1"))
# mm waits on q1 only, as if q0's earlier transfer had completed before q1's (FIFO
# holds per queue, not across queues).
ACROSS_QUEUES = """engines SP PE
queue q0 increment 16
queue q1 increment 16
param N = 3
for i in 0..N {
  SP la via q0 writes a[i] lat 900
  SP lb via q1 writes b[i] lat 100
  PE mm reads a[i], b[i] writes c[i] lat 200 wait q1 >= 16 * (i + 1)
}
"""
# mm counts SP's trigger of ld as an SP instance: SP >= 2 * (i + 1) for pre(i).
TRIGGER_COUNTED = """engines SP PE
queue q0 increment 16
param N = 3
for i in 0..N {
  SP ld via q0 writes a[i] lat 900
  SP pre writes c[i] lat 100
  PE mm reads a[i], c[i] writes d[i] lat 200 wait q0 >= 16 * (i + 1), SP >= 2 * (i + 1)
}
"""


# mm waits for c(i), which SP runs after ld(i)'s trigger, not after its transfer: a
# chain through SP's stream reaches ld's trigger only.
TRANSFER_AT_TRIGGER = """engines SP PE
queue q0
param N = 3
for i in 0..N {
  SP ld via q0 writes a[i] lat 900
  SP c reads d[i] writes e[i] lat 10
  PE mm reads a[i] writes d[i] lat 200 wait SP >= i + 1
}
"""


def _transfer_done_at_its_trigger(monkeypatch):
    """An earlier DMA op of u's stream taken as completed (its transfer), not only issued."""
    real = chains_module.Chains._before

    def before(self, z, kz, u, iu, waits=None):
        if z.op.engine == u.op.engine:
            return self.precedes(z, kz, u, iu)
        return real(self, z, kz, u, iu, waits)
    monkeypatch.setattr(chains_module.Chains, "_before", before)


def _forces_one_early(monkeypatch):
    """C[Q] >= s * l taken to force Q's instance l (one transfer too early)."""
    def early(threshold, step, local):
        return threshold >= step * local
    monkeypatch.setattr(obligations_module, "forces", early)
    monkeypatch.setattr(chains_module, "forces", early)


def _increments_forgotten(monkeypatch):
    monkeypatch.setattr(terms_module, "steps", lambda program: {e: 1 for e in program.engines})


def _fifo_across_queues(monkeypatch):
    """A transfer completed taken to mean every earlier transfer, on any queue, has."""
    real, may = chains_module.Chains._cover, chains_module.Chains._may_cover
    queues = {"q0", "q1"}

    def cover(self, z, kz, engine, lx, x=None, jx=None, done=True):
        out = real(self, z, kz, engine, lx, x, jx, done)
        if done and x is not None and home(z.op) in queues and home(x.op) == engine in queues:
            out.append(self.precedes(x, jx, z, kz))
        return out
    monkeypatch.setattr(chains_module.Chains, "_cover", cover)
    monkeypatch.setattr(chains_module.Chains, "_may_cover",
                        staticmethod(lambda z, engine: may(z, engine) or (home(z.op) in queues and engine in queues)))


def _triggers_counted(monkeypatch):
    def hits(self, stmt, target):
        return target[0] == "engine" and isinstance(stmt, Op) and target[1] in (home(stmt), stmt.engine)
    monkeypatch.setattr(counts_module.Counter, "_hits", hits)


TEETH = [
    pytest.param(ONE_TRANSFER_EARLY, _forces_one_early, "unsound", id="wait-one-transfer-early"),
    pytest.param(FORGOT_INCREMENT, _increments_forgotten, "unsound", id="increment-forgotten"),
    pytest.param(ACROSS_QUEUES, _fifo_across_queues, "unsound", id="fifo-across-queues"),
    pytest.param(TRIGGER_COUNTED, _triggers_counted, "deadlock", id="trigger-counted-on-its-engine"),
    pytest.param(TRANSFER_AT_TRIGGER, _transfer_done_at_its_trigger, "unsound", id="transfer-done-at-its-trigger"),
]


@pytest.mark.parametrize("text, break_rule, verdict", TEETH)
def test_a_program_breaking_a_queue_rule_is_refuted_with_a_real_counterexample(text, break_rule, verdict):
    proof = prove(parse(text), OPTIONS)
    assert proof.status == "refuted", proof.reason
    assert proof.counterexample.verdict.value == verdict


@pytest.mark.parametrize("text, break_rule, verdict", TEETH)
def test_teeth_a_proof_breaking_the_same_rule_proves_the_broken_program(text, break_rule, verdict, monkeypatch):
    """The rule alone is what refutes the program: with it broken, the proof proves it.
    (The early stop at a failed query's valuation, `Prover.fails_at`, is turned off: it
    asks the happens-before engine, which knows the program fails there, and would
    refute it without the rule.)"""
    program = parse(text)
    bounds = param_bounds(program, 3)
    assert check(program, bounds, CheckOptions()).verdict.value == verdict  # the program is broken
    monkeypatch.setattr(obligations_module.Prover, "fails_at", lambda self, model: False)
    break_rule(monkeypatch)
    proof = prove(program, OPTIONS)
    assert proof.status == PROVED, proof.reason


@pytest.mark.parametrize("break_rule", [_increments_forgotten, _triggers_counted], ids=["increment", "trigger"])
def test_teeth_a_proof_breaking_a_queue_rule_no_longer_proves_dma_trigger(break_rule, monkeypatch):
    """The other direction: the right waits of kernels/dma_trigger.sync look over-waited
    (16 * (i + 1) with the increment forgotten; ACT >= i - 1 with store's trigger counted
    on ACT asks for fewer instances than it means)."""
    synced = get_strategy("threshold")(DMA_TRIGGER).program
    assert prove(synced, OPTIONS).status == PROVED
    break_rule(monkeypatch)
    assert prove(synced, OPTIONS).status != PROVED


def test_verify_runs_the_all_values_proof_on_a_queue_program(capsys):
    """`verify` proves a program with DMA queues for every parameter value (it used to
    skip the proof there and report the bounded answer only)."""
    import json
    from pathlib import Path

    from verify.cli.main import main

    kernel = Path(__file__).parents[3] / "kernels" / "dma_trigger.sync"
    status = main(["verify", "--json", "--proof-jobs", "1", str(kernel)])
    data = json.loads(capsys.readouterr().out)
    assert status == 0
    assert data["scope"] == "all" and data["all_values"]["status"] == "proved"
