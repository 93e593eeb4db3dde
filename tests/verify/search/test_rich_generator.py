"""The rich kernel generator (verify/search/rich.py): its kernels are valid kernel text
that unrolls within its size, every feature it adds occurs, the threshold strategy's
output on drawn rich kernels passes the bounded checker (bisimilar when every wait is
exact, else sound), and deliberately broken strategies are caught on some drawn rich
kernel (tests/support/broken_strategies.py)."""

from __future__ import annotations

import functools
import itertools
from collections import Counter

from hypothesis import HealthCheck, Phase, given, settings

from semantics.ir import compute_engines, ops
from semantics.parser import parse
from semantics.printer import print_program
from semantics.sequential import unroll
from semantics.validate import validate
from syncproof import Scope, Verdict, VerifyOptions, sync, verify
from verify.search.rich import FEATURES, features, rich_programs

from tests.support.broken_strategies import forget_increment, ignore_war

KERNELS = 200  # drawn once, derandomized; every test below reads these
CHECKED = 25  # of them, spread over the draw, planned and checked
MAX_PARAM = 2  # the generator's size bound and the checks' parameter bound


@functools.lru_cache(maxsize=None)
def drawn() -> tuple:
    """The first KERNELS kernels of a derandomized draw (the same every run)."""
    out = []

    @settings(max_examples=KERNELS, derandomize=True, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(rich_programs(max_param=MAX_PARAM))
    def collect(program):
        out.append(program)

    collect()
    return tuple(out)


@functools.lru_cache(maxsize=None)
def checked() -> tuple:
    """Up to CHECKED drawn kernels, spread over the draw, on which the threshold strategy
    places at least one wait, each with its SyncResult."""
    out = []
    for program in drawn()[1::2]:
        result = sync(program)
        if result.stats.waits:
            out.append((program, result))
        if len(out) == CHECKED:
            break
    return tuple(out)


def _bounded(strategy: str = "threshold", **options) -> VerifyOptions:
    return VerifyOptions(strategy=strategy, scope=Scope.BOUNDED, max_param=MAX_PARAM, **options)


def test_rich_kernels_are_valid_text_and_unroll_within_their_size():
    kernels = drawn()
    assert len(kernels) == KERNELS
    for program in kernels:
        text = print_program(program)
        validate(program)
        assert parse(text) == program, text
        assert 2 <= len(compute_engines(program)) <= 4, text
        assert 1 <= len(ops(program)) <= 6, text
        for queue in program.queues:  # one triggering engine per queue, a compute engine
            triggers = {op.engine for op in ops(program) if op.queue == queue.name}
            assert len(triggers) <= 1 and triggers <= set(compute_engines(program)), text
        ranges = [range(p.lower, max(MAX_PARAM, p.lower) + 1) for p in program.params]
        for combo in itertools.product(*ranges):
            values = dict(zip((p.name for p in program.params), combo))
            assert len(unroll(program, values).instances) <= 24, text


def test_every_rich_feature_occurs():
    seen = Counter(f for program in drawn() for f in features(program))
    missing = [f for f in FEATURES if not seen[f]]
    assert not missing, f"features never drawn in {KERNELS} kernels: {missing} (seen: {dict(seen)})"
    # Each of the features is common, not a fluke.
    for feature in ("range", "dma", "increment", "if", "else", "min", "max", "triangular", "lower_bound"):
        assert seen[feature] >= KERNELS // 20, (feature, dict(seen))
    # And they meet in one kernel: a DMA op inside a loop with a reshaped bound and an `if`.
    assert any({"dma", "if", "lower_bound"} <= features(p) and ({"min", "max", "triangular"} & features(p))
               for p in drawn())


def test_features_reads_each_feature_from_kernel_text():
    program = parse("""
engines SP PE
queue q0 increment 16
param N >= 1, M
for i in 0..min(N, 2) {
  for j in max(i, 1)..i + 1 {
    if i + j < N {
      SP load via q0 writes x[i % N, 0..M]
    } else {
      PE alt writes x[0]
    }
  }
}
""")
    assert features(program) == frozenset(FEATURES)
    assert features(parse("engines A B\nA x writes s\nB y reads s\n")) == frozenset()


def test_threshold_output_on_rich_kernels_passes_the_bounded_check():
    exact_kernels = waits = 0
    exercised: Counter = Counter()
    kernels = checked()
    assert len(kernels) == CHECKED
    for program, result in kernels:
        stats = result.stats
        exact = not stats.fallback and not stats.conservative
        text = print_program(result.program)
        # Both checkers (happens-before and explicit-state) over the same bounds, and they agree.
        for engine in ("hb", "explicit"):
            report = verify(program, _bounded(engine=engine, property="bisimulation" if exact else "soundness"))
            assert report.holds is True, (engine, report.verdict, stats.notes, text)
            if exact:  # every wait exact: the output behaves exactly as the reference
                assert report.verdict == Verdict.BISIMILAR, (engine, report.verdict, text)
        exact_kernels += exact
        waits += stats.waits
        exercised.update(features(program))
    # The checked kernels carry every issue feature, and nearly all are exact.
    assert waits >= CHECKED, waits
    assert exact_kernels >= CHECKED - 2, exact_kernels
    for feature in ("range", "dma", "increment", "if", "else", "triangular", "lower_bound"):
        assert exercised[feature], (feature, dict(exercised))
    assert exercised["min"] + exercised["max"], dict(exercised)


def test_teeth_a_strategy_blind_to_war_is_caught_on_a_rich_kernel():
    caught = None
    for program in (p for p in drawn() if "dma" in features(p)):  # caught through the transfer view
        broken = ignore_war(program)
        report = verify(broken, _bounded("manual", property="soundness"))
        if report.verdict == Verdict.UNSOUND:
            caught = program
            break
    assert caught is not None, "ignore_war passed every drawn rich kernel"
    assert verify(caught, _bounded(property="soundness")).holds is True  # the real strategy is sound there


def test_teeth_a_strategy_forgetting_increments_is_caught_on_a_rich_kernel():
    caught = None
    candidates = [p for p in drawn() if any(q.increment > 1 for q in p.queues)]
    assert len(candidates) >= KERNELS // 10, len(candidates)
    for program in candidates:
        if verify(forget_increment(program), _bounded("manual", property="soundness")).verdict == Verdict.UNSOUND:
            caught = program
            break
    assert caught is not None, "forget_increment passed every drawn rich kernel with an increment"
