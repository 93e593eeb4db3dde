"""`syncproof-verify-sync` catches broken synchronization: a module whose one wait a
test pass dropped, SNAX's barrier rule where it leaves a race, a dropped signal; and it
lets over-synchronization through only under `property=soundness`. The verdicts are
cross-checked on the same output by the Python API's check (the explicit engine), not
taken from the pass alone."""

from __future__ import annotations

import pytest

from semantics.ir import Op, walk_stmts
from tests.verify.xdsl.support import SNAX, program_of, run_opt
from verify.api import VerifyOptions, verify
from verify.verdicts import Verdict
from verify.xdsl_passes.errors import PassInputError, SyncCheckFailed

INSERT = "canonicalize,syncproof-insert-sync"
# SNAX inputs whose threshold synchronization has waits: straight-line, loop with a
# runtime step, a loop with an if, the pipelined (select-based double-buffered) loop.
WITH_WAITS = ["insert-sync-barrier.mlir:5", "derived/tiled_loop.mlir", "derived/loop_copy_generic.mlir",
              "derived/loop_nested_if_gap.mlir", "derived/tiled_loop.out-pipelined.mlir"]


def _case(name: str) -> str:
    path, _, index = name.partition(":")
    text = (SNAX / path).read_text()
    return text.split("// -----")[int(index) - 1] if index else text


@pytest.mark.parametrize("name", WITH_WAITS)
def test_dropping_any_one_wait_fails_verify_sync_with_a_trace(name, tmp_path):
    text = _case(name)
    synced = run_opt(text, INSERT, tmp_path)
    waits = synced.count('"syncproof.wait"')
    assert waits >= 1
    for index in range(waits):
        broken = run_opt(synced, f"test-drop-wait{{index={index}}}", tmp_path)
        explicit = verify(program_of(broken), VerifyOptions(strategy="manual", scope="bounded", engine="explicit"))
        assert explicit.verdict == Verdict.UNSOUND, (index, explicit.verdict)
        with pytest.raises(SyncCheckFailed) as caught:
            run_opt(synced, f"test-drop-wait{{index={index}}},syncproof-verify-sync", tmp_path)
        assert caught.value.verdict == "unsound"
        message = str(caught.value)
        assert "shortest trace to the unsound state" in message and "issued before its producer" in message


def test_verify_sync_accepts_the_module_it_refused_once_the_wait_is_back(tmp_path):
    """The same pipeline without the drop passes: the failure above is the dropped wait's."""
    text = _case("derived/tiled_loop.mlir")
    run_opt(text, f"{INSERT},syncproof-verify-sync", tmp_path)


def test_snax_barrier_races_are_caught_under_soundness(tmp_path):
    """SNAX's rule leaves a race on a copy into a subview read through its source
    (docs/snax.md, subview_alias_gap): unsound, the property it does claim."""
    text = _case("derived/subview_alias_gap.mlir")
    with pytest.raises(SyncCheckFailed) as caught:
        run_opt(text, "syncproof-insert-sync{strategy=snax-barrier},syncproof-verify-sync{property=soundness}",
                tmp_path)
    assert caught.value.verdict == "unsound"


def test_over_synchronization_fails_bisimulation_and_passes_soundness(tmp_path):
    """SNAX's barriers on its own case 5 are sound but block more than needed."""
    text = _case("insert-sync-barrier.mlir:5")
    out = run_opt(text, "syncproof-insert-sync{strategy=snax-barrier}", tmp_path)
    program = program_of(out)
    assert verify(program, VerifyOptions(strategy="manual", scope="bounded", engine="explicit",
                                         property="soundness")).holds is True
    assert verify(program, VerifyOptions(strategy="manual", scope="bounded",
                                         engine="explicit")).verdict == Verdict.OVER_SYNCHRONIZED
    run_opt(out, "syncproof-verify-sync{property=soundness}", tmp_path)
    with pytest.raises(SyncCheckFailed) as caught:
        run_opt(out, "syncproof-verify-sync", tmp_path)
    assert caught.value.verdict == "over-synchronized"


def test_a_dropped_signal_is_refused_as_input(tmp_path):
    """Counters count every completed op of their core: without one signal the waits'
    thresholds would count something else."""
    text = _case("derived/tiled_loop.mlir")
    with pytest.raises(PassInputError, match="no syncproof.signal of DM follows it"):
        run_opt(text, f"{INSERT},test-drop-signal{{index=0}},syncproof-verify-sync", tmp_path)


def test_manual_keeps_the_waits_it_reads(tmp_path):
    """`strategy=manual` re-emits the module's own waits: insert-sync is idempotent on
    its output."""
    text = _case("derived/tiled_loop.out-pipelined.mlir")
    once = run_opt(text, INSERT, tmp_path)
    again = run_opt(once, "syncproof-insert-sync{strategy=manual}", tmp_path)
    first, second = program_of(once), program_of(again)
    assert first == second
    assert sum(len(s.waits) for s in walk_stmts(first.body) if isinstance(s, Op)) >= 6


@pytest.mark.parametrize("passes, message", [
    ("syncproof-insert-sync{strategy=nope}", "unknown strategy 'nope'"),
    ("syncproof-insert-sync{strategy=flags}", "no MLIR op"),
    ("syncproof-verify-sync{property=nope}", "unknown property 'nope'"),
    ("syncproof-verify-sync{scope=nope}", "unknown scope 'nope'"),
])
def test_bad_options_fail_the_pass_as_input_errors(passes, message, tmp_path):
    with pytest.raises(PassInputError, match=message):
        run_opt(_case("insert-sync-barrier.mlir:4"), passes, tmp_path)


def test_scope_all_catches_a_race_beyond_the_bounds(tmp_path):
    """Without copy1's wait, loop_copy_generic races from the third trip on (copy(i + 1)
    overwrites what generic(i) reads): max_param=1 checks too few trips, the all-values
    proof finds it. The explicit engine confirms the race at trips_i=2."""
    synced = run_opt(_case("derived/loop_copy_generic.mlir"), INSERT, tmp_path)
    run_opt(synced, "syncproof-verify-sync{scope=all}", tmp_path)
    broken = run_opt(synced, "test-drop-wait{index=0}", tmp_path)
    run_opt(broken, "syncproof-verify-sync{max_param=1}", tmp_path)  # bounded: not seen
    with pytest.raises(SyncCheckFailed, match="found by the all-values proof") as caught:
        run_opt(broken, "syncproof-verify-sync{max_param=1 scope=all}", tmp_path)
    assert caught.value.verdict == "unsound"
    assert verify(program_of(broken), VerifyOptions(strategy="manual", scope="bounded", engine="explicit",
                                                    params={"trips_i": 2})).verdict == Verdict.UNSOUND


def test_scope_all_on_a_barrier_program_is_unknown_and_fails(tmp_path):
    """The all-values proof covers barrier-free programs: unknown is never success."""
    text = _case("derived/loop_copy_generic.out-insert-sync-barrier.mlir")
    run_opt(text, "syncproof-verify-sync{property=soundness}", tmp_path)
    with pytest.raises(SyncCheckFailed) as caught:
        run_opt(text, "syncproof-verify-sync{property=soundness scope=all}", tmp_path)
    assert caught.value.verdict == "unknown"
