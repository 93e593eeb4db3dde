"""DMA queues in the strategies (docs/design.md, "DMA triggered by a compute engine",
"Counter increments"): the threshold strategy's waits equal thresholds brute-forced from
element sets (never from the code under test), scaled by the increments; the verdicts of
the DMA kernels match their `# expect:` lines; a strategy that forgets the increment is
caught; the peers plan the transfer view too (tests/algorithm/test_peer_queues.py)."""

from __future__ import annotations

import json
import shlex

import pytest

import syncproof
from algorithm.registry import get_strategy
from semantics.ir import increments, ops
from semantics.parser import parse, parse_file
from semantics.printer import print_program
from semantics.sequential import unroll
from syncproof import Scope, VerifyOptions
from verify.cli.main import main
from hypothesis import given

from verify.engines.explicit import check
from verify.search.generators import param_bounds
from verify.verdicts import CheckOptions, Verdict

from tests.support.broken_strategies import forget_increment
from tests.support.budget import scaled
from tests.support.corpus import DMA_KERNELS, KERNELS_DIR, bounds_of, expect_with_params, expectations, kernel_id


REFEREE = [p for p in DMA_KERNELS if p.stem in ("dma_trigger", "dma_gather")]


def valuations(program, hi: int = 2):
    import itertools

    names = [p.name for p in program.params]
    for combo in itertools.product(range(hi + 1), repeat=len(names)):
        yield dict(zip(names, combo))


def brute_thresholds(unrolled) -> dict[int, dict[int, int]]:
    """Per waiting instance (a trigger, or an op on a compute engine) and counter F: the
    semaphore value it must see, increment[F] * (1 + the last F-instance its data
    instance depends on), by direct comparison of element sets. Counters the waiting
    instance needs no wait on (its own engine, its transfer's queue) are left out."""
    steps = increments(unrolled.program)
    instances = unrolled.instances
    out = {}
    for y in instances:
        if y.trigger >= 0:
            continue  # a transfer waits through its trigger
        data = instances[y.transfer] if y.is_trigger else y
        need = {}
        elements = dict(data.accesses)
        for x in instances[: data.index]:
            if x.is_trigger or x.engine in (y.engine, data.engine):
                continue
            if x.op.replica is not None and x.op.replica == data.op.replica:
                continue
            if any(e in elements and (w or elements[e]) for e, w in x.accesses):
                need[x.engine] = max(need.get(x.engine, 0), steps[x.engine] * (x.local + 1))
        out[y.index] = need
    return out


def threshold_mismatches(program, synced, hi: int = 2) -> list[str]:
    """Where the evaluated waits of `synced` differ from the brute-forced thresholds."""
    problems = []
    engines = program.engines
    for values in valuations(program, hi):
        unrolled = unroll(synced, values)
        for y_index, need in brute_thresholds(unrolled).items():
            y = unrolled.instances[y_index]
            got = {}
            for engine, value in y.waits:
                got[engine] = max(got.get(engine, 0), value)
            got = {e: v for e, v in got.items() if v > 0 and e != y.engine}
            if got != need:
                show = lambda d: {engines[e]: v for e, v in sorted(d.items())}  # noqa: E731
                problems.append(f"{values} {y.describe()}: waits {show(got)}, brute force {show(need)}")
    return problems


@pytest.mark.parametrize("path", REFEREE, ids=kernel_id)
def test_threshold_waits_equal_brute_forced_thresholds_times_increment(path):
    program = parse_file(str(path))
    result = get_strategy("threshold")(program)
    assert result.stats.dropped_redundant == 0  # else a brute-forced wait may be rightly absent
    assert threshold_mismatches(program, result.program) == []


@pytest.mark.parametrize("path", REFEREE, ids=kernel_id)
def test_forgetting_the_increment_is_caught_by_the_referee_and_the_checker(path):
    program = parse_file(str(path))
    broken = forget_increment(program)
    assert threshold_mismatches(program, broken)
    # While a threshold asks for at most one completion it coincides with the scaled one
    # (>= 1 completion is >= 1 on the semaphore); dma_gather's fix asks for 2 at i = 3.
    bounds = tuple((p.name, 0, 4 if p.name == "N" else 1) for p in program.params)
    result = check(broken, bounds, CheckOptions())
    assert result.verdict == Verdict.UNSOUND


def test_manual_waits_of_the_dma_kernels_are_the_threshold_strategys():
    # The hand-written waits of kernels/dma_trigger.sync are what the referee expects too.
    program = parse_file(str(KERNELS_DIR / "dma_trigger.sync"))
    assert threshold_mismatches(program, program) == []


@pytest.mark.parametrize("path", DMA_KERNELS, ids=kernel_id)
def test_dma_kernel_verdicts_match_their_expectations(path):
    wanted = expectations(path)
    program = syncproof.load(path)
    runs = [([], wanted[""][0])]
    for line in wanted.get("-with", []):
        args, verdict = line.split("=>")
        runs.append((shlex.split(args), verdict.strip()))
    for args, verdict in runs:
        options = VerifyOptions(strategy="manual", scope=Scope.BOUNDED, params=expect_with_params(args))
        report = syncproof.verify(program, options)
        witness = report.result.witness
        assert report.verdict == verdict, (args, witness and witness.trace)
        assert report.holds is (verdict == "bisimilar")
        if not args and "-param" in wanted:
            expected = dict(kv.split("=") for kv in wanted["-param"][0].split(", "))
            assert {k: str(v) for k, v in witness.unrolled.valuation} == expected


@pytest.mark.parametrize("strategy", ["threshold", "barrier"])
@pytest.mark.parametrize("path", REFEREE, ids=kernel_id)
def test_counter_strategies_on_queues_are_sound(path, strategy):
    program = parse_file(str(path))
    result = get_strategy(strategy)(program)
    synced = result.program
    assert synced.queues == program.queues  # regression: the planned view had dropped them
    # regression: the counts were taken before the waits on the trigger's own engine were dropped
    assert result.stats.waits == sum(len(op.waits) for op in ops(synced))
    result = check(synced, bounds_of(program, 2), CheckOptions(property="soundness"))
    assert result.holds, result.witness and result.witness.explanation
    if strategy == "threshold":
        assert result.verdict == Verdict.BISIMILAR


@pytest.mark.parametrize("path", DMA_KERNELS, ids=kernel_id)
def test_snax_barrier_on_queues_places_its_barriers_on_the_transfer_view_and_is_sound(path):
    """snax-barrier runs SNAX's rule on the transfer view (each transfer dispatched to its
    queue): the restored program has the view's barriers in the same places, keeps the
    queues and DMA ops, and is sound (barriers drain the queues)."""
    from algorithm.queues import transfer_view
    from semantics.ir import Barrier, walk_stmts

    program = parse_file(str(path))
    synced = get_strategy("snax-barrier")(program).program
    view = get_strategy("snax-barrier")(transfer_view(program)).program
    shape = lambda p: [type(s).__name__ if isinstance(s, Barrier) else s.name for s in walk_stmts(p.body)
                       if isinstance(s, Barrier) or hasattr(s, "engine")]
    assert shape(synced) == shape(view) and any(isinstance(s, Barrier) for s in walk_stmts(synced.body))
    assert synced.queues == program.queues
    assert [op.queue for op in ops(synced)] == [op.queue for op in ops(program)]
    result = check(synced, bounds_of(program, 2), CheckOptions(property="soundness"))
    assert result.holds, result.witness and result.witness.explanation


def test_snax_barrier_soundness_on_queues_needs_its_barriers():
    """Teeth for the test above: the snax-barrier program of dma_trigger without its
    barriers is unsound, and the explicit engine says so."""
    import attrs
    from semantics.ir import Barrier

    program = parse_file(str(KERNELS_DIR / "dma_trigger.sync"))
    synced = get_strategy("snax-barrier")(program).program
    loop = synced.body[0]
    bare = attrs.evolve(synced, body=(attrs.evolve(loop, body=tuple(s for s in loop.body if not isinstance(s, Barrier))),))
    assert check(bare, bounds_of(program, 2), CheckOptions(property="soundness")).verdict == Verdict.UNSOUND


@pytest.mark.parametrize("strategy", ["flags", "tokens"])
def test_the_peers_plan_the_transfer_view_instead_of_refusing_queues(strategy):
    # They plan the transfer view and restore, rather than refuse queues
    # (soundness on every DMA kernel: tests/algorithm/test_peer_queues.py).
    program = parse_file(str(KERNELS_DIR / "dma_trigger.sync"))
    synced = get_strategy(strategy)(program).program
    assert synced.queues == program.queues
    assert [op.queue for op in ops(synced) if op.reads or op.writes] == [op.queue for op in ops(program)]
    assert parse(print_program(synced)) == synced


def test_sync_statistics_count_semaphores_against_the_profile_budget(tmp_path, capsys):
    profile = tmp_path / "tiny.toml"
    profile.write_text('name = "tiny"\n[costs]\nsemaphore_budget = 3\n')
    kernel = str(KERNELS_DIR / "dma_trigger.sync")
    assert main(["sync", kernel]) == 0
    err = capsys.readouterr().err
    assert "sync: 4 semaphores used, budget 256 (profile trainium)" in err and "warning" not in err  # PE ACT q0 q1
    assert main(["sync", kernel, "--profile", str(profile)]) == 0
    assert "warning: the program uses 4 semaphores, above the tiny budget of 3" in capsys.readouterr().err


def test_verify_json_reports_the_semaphore_count(capsys):
    main(["verify", str(KERNELS_DIR / "dma_trigger.sync"), "--json", "--scope", "bounded"])
    assert json.loads(capsys.readouterr().out)["sync"]["semaphores"] == 4


# ------------------------------------------- generated programs with a DMA queue


def _with_queue(program, increment: int):
    """`program` with its last engine's ops turned into DMA ops triggered by its first
    engine on a new queue `q` (one triggering engine, as validation requires)."""
    import attrs

    from semantics.ir import Queue, map_ops

    first, last = program.engines[0], program.engines[-1]
    body = map_ops(program.body, lambda op: attrs.evolve(op, engine=first, queue="q", waits=())
                   if op.engine == last else attrs.evolve(op, waits=()))
    return attrs.evolve(program, engines=program.engines[:-1] + ("q",), body=body,
                        queues=(Queue("q", increment),))


def _dma_programs():
    from hypothesis import strategies as st

    from verify.search.generators import programs

    return st.tuples(programs(max_depth=2, engines=(3, 4), max_instances=10), st.sampled_from([1, 16]))


@pytest.mark.slow  # ~10 s at the ci profile's 30 examples
@scaled(0.5)
@given(_dma_programs())
def test_threshold_strategy_is_bisimilar_on_generated_programs_with_a_queue(case):
    program = _with_queue(*case)
    parse(print_program(program))  # a valid kernel
    synced = get_strategy("threshold")(program).program
    bounds = param_bounds(program, 2)
    result = check(synced, bounds, CheckOptions())
    assert result.verdict == Verdict.BISIMILAR, result.witness and result.witness.explanation
    broken = check(forget_increment(program), bounds, CheckOptions())
    if broken.verdict != Verdict.BISIMILAR:
        assert case[1] > 1  # forgetting an increment of 1 changes nothing


def test_generated_programs_with_a_queue_catch_the_forgotten_increment():
    # The property above has teeth: on this generated-shape program (one DMA consumer
    # needing two completions) forget_increment is unsound.
    program = parse("engines A B\nqueue q increment 16\nparam N\nfor i in 0..N {\n"
                    "  A t via q writes x[i]\n}\nB r reads x[0], x[1]\n")
    bounds = (("N", 0, 2),)
    assert check(get_strategy("threshold")(program).program, bounds, CheckOptions()).verdict == Verdict.BISIMILAR
    assert check(forget_increment(program), bounds, CheckOptions()).verdict == Verdict.UNSOUND
