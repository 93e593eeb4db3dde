"""The peer strategies `flags` and `tokens` (docs/peers.md).

Their primitives in the language (round trip, errors) and in the counter machine
(a flag set twice is a reported hardware error, a pop on an empty queue blocks, a
push onto a full queue blocks); each strategy's output is sound and deadlock-free
on the corpus, the suite and generated programs; deliberately broken variants fail
those same checks; timing: the oracle is a lower bound and the new costs move
results the documented way.
"""

from __future__ import annotations

import functools
from pathlib import Path

import attrs
import pytest
from hypothesis import given

import syncproof
from algorithm import flags as flags_mod
from algorithm import tokens as tokens_mod
from algorithm.registry import get_strategy
from semantics.errors import KernelError
from semantics.ir import TOKEN_DEPTH, Op, walk_stmts
from semantics.machines import ISSUE, Counter
from semantics.parser import parse, parse_file
from semantics.printer import print_program
from semantics.sequential import unroll
from syncproof import UsageError, VerifyOptions
from verify.engines.explicit import check
from verify.search.generators import param_bounds, programs
from verify.timing.scheduler import ZERO, HardwareError, load_profile, simulate
from verify.verdicts import CheckOptions, Verdict

from tests.support.budget import scaled
from tests.support.corpus import ROOT
CORPUS = sorted((ROOT / "kernels").glob("*.sync"))
SUITE = sorted((ROOT / "kernels" / "suite").glob("*.sync"))
PEERS = ("flags", "tokens")
SOUNDNESS = CheckOptions(property="soundness", max_states=200_000)  # a state budget: no wall clock


@functools.lru_cache(maxsize=None)
def _synced(path: Path, strategy: str):
    return get_strategy(strategy)(parse_file(str(path)))


def _sound(program, hi: int):
    result = check(program, param_bounds(program, hi), SOUNDNESS)
    why = result.witness.explanation if result.witness else result.reason
    return result, f"{result.verdict.value}: {why}\n--- program:\n{print_program(program)}"


# ------------------------------------------------------------------ language

CLAUSES = """\
kernel clauses
engines A B push
param N = 3
A prime lat 0 setflag B:0, B:1 push B, B:2
for i in 0..N {
  A load writes x[i % 2] lat 5 waitflag B:i % 2 setflag B:2 + i % 2 push B:1
  B use reads x[i % 2] pop A:1 waitflag A:2 + i % 2 setflag A:i % 2 pop A, A:2
  push pop reads x[0] push A
}
B drain lat 0 waitflag A:0, A:1
"""


def test_round_trip_of_the_peer_clauses():
    program = parse(CLAUSES)
    assert parse(print_program(program)) == program
    load = next(op for op in walk_stmts(program.body) if isinstance(op, Op) and op.name == "load")
    assert [(s.kind, s.engine) for s in load.syncs] == [("waitflag", "B"), ("setflag", "B"), ("push", "B")]
    # `push`, `pop` stay usable as names (the grammar reads them as clauses only after an op's name)
    assert "push pop reads x[0] push A" in print_program(program)


@pytest.mark.parametrize("text, message", [
    ("engines A B\nA a setflag C:0\n", "2:13: error: unknown engine 'C' in setflag"),
    ("engines A B\nA a pop A\n", "connects two different engines"),
    ("engines A B\nA a push B:i\n", "undeclared name 'i'"),
    ("engines A B\nA a waitflag B:1.5\n", "non-integer literal"),
])
def test_static_errors_of_the_peer_clauses(text, message):
    with pytest.raises(KernelError) as err:
        parse(text)
    assert message in str(err.value)


def test_ids_out_of_range_at_run_time_are_kernel_errors(tmp_path):
    path = tmp_path / "ids.sync"
    path.write_text("engines A B\nparam N\nfor i in 0..N {\n  A a setflag B:i\n  B b waitflag A:i\n}\n")
    with pytest.raises(KernelError) as err:  # an error in the kernel, not a crash of syncproof
        syncproof.verify(syncproof.load(path), VerifyOptions(strategy="manual", params={"N": (0, 9)}))
    assert f"{path}:4:17: error: setflag B: flag id evaluates to 8; ids are 0..7 at N=9, i=8" in err.value.render(
        str(path))


@pytest.mark.parametrize("strategy", ["threshold", "barrier", "flags", "tokens"])
def test_every_strategy_replaces_the_input_peer_clauses(strategy):
    flagged = get_strategy("flags")(parse_file(str(ROOT / "kernels" / "pipeline_db.sync"))).program
    out = get_strategy(strategy)(flagged).program
    kinds = {s.kind for op in walk_stmts(out.body) if isinstance(op, Op) for s in op.syncs}
    assert kinds == ({"setflag", "waitflag"} if strategy == "flags" else {"push", "pop"} if strategy == "tokens"
                     else set())
    assert check(out, param_bounds(out, 2), SOUNDNESS).holds


def test_z3_and_lean_refuse_peer_clauses(tmp_path):
    kernel = syncproof.load(ROOT / "kernels" / "pipeline_db.sync")
    with pytest.raises(UsageError, match="z3 engine does not support the peer clause"):
        syncproof.verify(kernel, VerifyOptions(strategy="flags", engine="z3", params={"N": (0, 1)}))
    with pytest.raises(UsageError, match="Lean export does not support the peer clause"):
        syncproof.export_lean(kernel, tmp_path / "lean", strategy="tokens")


# ------------------------------------------------------------------ machine


def _counter(text: str, **values):
    unrolled = unroll(parse(text), values)
    return unrolled, Counter(unrolled)


def _issuable(machine, state) -> set[str]:
    return {machine.unrolled.instances[l.instance].op.name for l in machine.enabled(state) if l.kind == ISSUE}


def test_a_flag_set_twice_is_a_reported_hardware_error():
    # No credit: A may run ahead and set flag 0 again before B consumed it.
    text = "engines A B\nparam N\nfor i in 0..N {\n  A a writes x[i] setflag B:0\n  B b reads x[i] waitflag A:0\n}\n"
    result = check(parse(text), (("N", 0, 2),), SOUNDNESS)
    assert result.verdict == Verdict.UNSOUND and not result.holds
    assert "flag A->B:0 set while already set" in "\n".join(result.witness.explanation)
    unrolled, machine = _counter(text, N=2)
    state = machine.initial()
    for label in ("issue", "complete", "issue", "complete"):  # A runs a[0], a[1]
        (step,) = [l for l in machine.enabled(state) if l.kind == label and machine.engine_of[l.instance] == 0]
        state = machine.step(state, step)
    assert machine.error(state) == "flag A->B:0 set while already set" and machine.enabled(state) == ()
    with pytest.raises(HardwareError):
        simulate(unrolled, attrs.evolve(ZERO, wake_cycles=1000))  # B slow to wake: A sets twice


def test_a_pop_on_an_empty_queue_blocks_until_the_push():
    unrolled, machine = _counter("engines A B\nA a lat 3 push B\nB b pop A\n")
    state = machine.initial()
    assert _issuable(machine, state) == {"a"}  # b blocked: queue A->B is empty
    state = machine.step(state, machine.enabled(state)[0])
    assert _issuable(machine, state) == set()  # a issued, not completed: still empty
    state = machine.step(state, machine.enabled(state)[0])
    assert _issuable(machine, state) == {"b"}
    state = machine.step(state, machine.enabled(state)[0])
    assert state[-1] == 0  # the pop took the token


def test_a_push_onto_a_full_queue_blocks_the_pusher():
    text = "engines A B\nparam N\nfor i in 0..N {\n  A a push B\n}\nB b pop A\n"
    unrolled, machine = _counter(text, N=TOKEN_DEPTH + 1)
    state = machine.initial()
    for _ in range(2 * TOKEN_DEPTH):  # A pushes TOKEN_DEPTH tokens
        (step,) = [l for l in machine.enabled(state) if machine.engine_of[l.instance] == 0]
        state = machine.step(state, step)
    assert state[-1] == TOKEN_DEPTH
    assert _issuable(machine, state) == {"b"}  # A's next push would overflow: only B may go
    # with no consumer at all, the full queue is a deadlock the checker reports
    result = check(parse(text.replace("B b pop A\n", "")), (("N", TOKEN_DEPTH + 1, TOKEN_DEPTH + 1),), SOUNDNESS)
    assert result.verdict == Verdict.DEADLOCK and not result.holds


# --------------------------------------------------------------- soundness


# The faithful NKI kernels (docs/nki-kernels.md) need more than 8 flag ids between one
# engine pair per iteration; the flags strategy then falls back to barriers (docs/peers.md), which the
# bench shows (flags cycles = barrier cycles). The fallback must stay sound.
FLAG_ID_FALLBACK = {("flags", "matmul_fully_optimized"), ("flags", "flash_attention_causal")}


@pytest.mark.parametrize("path", CORPUS + SUITE, ids=lambda p: p.parent.name + "/" + p.stem)
@pytest.mark.parametrize("strategy", PEERS)
def test_peer_output_is_sound_and_deadlock_free(path, strategy):
    synced = _synced(path, strategy)  # DMA queues too: the transfer view (docs/peers.md, "DMA ops")
    if parse_file(str(path)).queues:
        assert synced.program.queues == parse_file(str(path)).queues
    if (strategy, path.stem) in FLAG_ID_FALLBACK:  # documented: more same-iteration pairs than flag ids
        assert synced.stats.fallback == 1, synced.stats.notes
    else:
        assert synced.stats.fallback == 0, synced.stats.notes
    assert parse(print_program(synced.program)) == synced.program
    result, why = _sound(synced.program, 1 if path in SUITE else 2)
    assert result.holds, why
    assert result.verdict in (Verdict.BISIMILAR, Verdict.OVER_SYNCHRONIZED)


@scaled(0.5)  # 30 in the ci profile
@given(programs(max_depth=3, engines=(2, 4)))
def test_peer_output_is_sound_on_generated_programs(program):
    for strategy in PEERS:
        result, why = _sound(get_strategy(strategy)(program).program, 2)
        assert result.holds, f"{strategy}: {why}"


@pytest.mark.slow
@scaled(2.5)  # 150 in the ci profile
@given(programs(max_depth=3, engines=(2, 5)))
def test_peer_output_is_sound_on_more_generated_programs(program):
    for strategy in PEERS:
        result, why = _sound(get_strategy(strategy)(program).program, 2)
        assert result.holds is True, f"{strategy}: {why}"  # unknown is never success


def _flags_without_drain(program):
    """Ascend's scheme with the drain-after-loop compensation left out."""
    original = flags_mod.Lowered
    flags_mod.Lowered = lambda signal, wait, prime=(), drain=(): original(signal, wait, prime, ())
    try:
        return flags_mod.lower_flags(program)
    finally:
        flags_mod.Lowered = original


def _tokens_without_pops(program):
    """VTA's scheme with every pop left out (consumers never wait)."""
    original = tokens_mod.Lowered
    tokens_mod.Lowered = lambda signal, wait, prime=(), drain=(): original(signal, (), prime, ())
    try:
        return tokens_mod.lower_tokens(program)
    finally:
        tokens_mod.Lowered = original


@pytest.mark.parametrize("broken, verdicts", [
    (_flags_without_drain, (Verdict.DEADLOCK, Verdict.UNSOUND)),
    (_tokens_without_pops, (Verdict.UNSOUND,)),
], ids=["flags-without-drain", "tokens-without-pops"])
@pytest.mark.parametrize("name", ["pipeline_db", "nested_dynamic"])
def test_broken_peers_fail_the_same_checks(broken, verdicts, name):
    result, why = _sound(broken(parse_file(str(ROOT / "kernels" / f"{name}.sync"))), 2)
    assert not result.holds and result.verdict in verdicts, why


# ------------------------------------------------------------------- timing

TRAINIUM = load_profile("trainium")


@pytest.mark.parametrize("path", SUITE, ids=lambda p: p.stem)
def test_oracle_is_a_lower_bound_for_the_peers(path):
    program = parse_file(str(path))
    values = {p.name: p.default for p in program.params}
    oracle = simulate(unroll(program, values), TRAINIUM, oracle=True).cycles
    for strategy in PEERS:
        assert simulate(unroll(_synced(path, strategy).program, values), TRAINIUM).cycles >= oracle, strategy


PING = "engines A B\nparam N\nfor i in 0..N {\n  A a writes x lat 64\n  B b reads x writes y lat 64\n  A c reads y lat 64\n}\n"
# B never stalls: every token and flag it waits for is there when it gets to it
SLOW = "engines A B\nparam N\nfor i in 0..N {\n  A a writes x[i % 2] lat 64\n  B b reads x[i % 2] lat 300\n}\n"


def _cycles(text, strategy, **costs):
    synced = get_strategy(strategy)(parse(text)).program
    return simulate(unroll(synced, {"N": 6}), attrs.evolve(ZERO, **costs)).cycles


@pytest.mark.parametrize("strategy, signal, wait, unused", [
    ("flags", "flag_set_cycles", "flag_wait_cycles", "token_pop_cycles"),
    ("tokens", "token_push_cycles", "token_pop_cycles", "flag_wait_cycles"),
])
def test_peer_costs_move_results_the_documented_way(strategy, signal, wait, unused):
    base = _cycles(PING, strategy)
    # A set / push runs before the completion: every hand-off of the ping-pong pays it.
    assert base < _cycles(PING, strategy, **{signal: 10}) < _cycles(PING, strategy, **{signal: 20})
    assert _cycles(PING, strategy, wake_cycles=10) > base
    # A wait / pop is evaluated before the issue: it overlaps a stall (the ping-pong)
    # but adds to a consumer that never stalls.
    assert _cycles(PING, strategy, **{wait: 10}) >= base
    assert _cycles(SLOW, strategy, **{wait: 10}) > _cycles(SLOW, strategy)
    assert _cycles(PING, strategy, **{unused: 50}) == base  # the other peer's primitive is not used
