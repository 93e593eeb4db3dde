"""The Python API (`import syncproof`, verify/api/, docs/api.md): its public names, and
that each entry point does the work of its command on a small kernel: `load`, `sync`,
`verify` (bounded, all values, a failing manual program with its trace, `both`),
`simulate`, `export_lean`; misuse raises SyncproofErrors, never a bare Python error."""

from __future__ import annotations

import attrs
import pytest

import syncproof
from algorithm.registry import SyncResult
from semantics.printer import print_program
from syncproof import KernelError, Report, Scope, SyncproofError, UsageError, Verdict, VerifyOptions

from tests.support.corpus import DATA_DIR, KERNELS_DIR, ROOT

DOUBLE_BUFFER = ROOT / "docs" / "examples" / "double_buffer.sync"
PIPELINE = KERNELS_DIR / "pipeline_db.sync"
BOUNDED = Scope.BOUNDED


def test_the_public_names_are_pinned():
    assert syncproof.__all__ == [
        "CheckResult", "KernelError", "Program", "Property", "Report", "Scope", "Simulation",
        "SyncproofError", "UsageError", "Verdict", "VerifyOptions", "Witness",
        "export_lean", "load", "simulate", "sync", "verify",
    ]
    for name in syncproof.__all__:
        assert getattr(syncproof, name).__doc__, f"syncproof.{name} has no docstring"


def test_the_facade_only_re_exports():
    # No function or class is defined in the facade itself: each lives in a module below.
    for name in syncproof.__all__:
        assert getattr(syncproof, name).__module__ != "syncproof", name


def test_load_reads_sync_and_mlir_kernels():
    program = syncproof.load(DOUBLE_BUFFER)
    assert program.name == "double_buffer" and program.engines[:3] == ("DMA", "PE", "ACT")
    assert syncproof.load(str(DOUBLE_BUFFER)) == program
    mlir = next(iter(sorted((ROOT / "kernels" / "snax").glob("*.mlir"))))
    imported = syncproof.load(mlir)
    assert isinstance(imported, syncproof.Program) and imported.engines


def test_an_mlir_file_with_several_cases_needs_a_case_number():
    several = DATA_DIR / "snax" / "insert-sync-barrier.mlir"  # five cases
    with pytest.raises(UsageError, match="has 5 cases"):
        syncproof.load(several)
    assert syncproof.load(f"{several}:1").engines == ("DM", "COMPUTE")
    with pytest.raises(UsageError, match="no case 6"):
        syncproof.load(f"{several}:6")


def test_bad_paths_raise_syncproof_errors(tmp_path):
    with pytest.raises(KernelError) as err:
        syncproof.load(tmp_path / "missing.sync")
    assert "cannot read file" in err.value.render()
    script = tmp_path / "kernel.py"
    script.write_text("print('a kernel')\n")
    with pytest.raises(UsageError, match="0 NKI kernels"):  # Python without an @nki.jit kernel
        syncproof.load(script)
    bad = tmp_path / "bad.sync"
    bad.write_text("engines A B\nC op writes x\n")
    with pytest.raises(KernelError) as err:
        syncproof.load(bad)
    assert err.value.render().startswith(f"{bad}:2:")
    with pytest.raises(KernelError, match="cannot read"):
        syncproof.load(f"{tmp_path / 'missing.mlir'}:2")
    for error in (KernelError, UsageError):
        assert issubclass(error, SyncproofError)


def test_sync_inserts_the_waits_and_passes_the_strategys_result_through():
    program = syncproof.load(DOUBLE_BUFFER)
    result = syncproof.sync(program)
    assert "wait" not in print_program(program) and "wait" in print_program(result.program)
    assert isinstance(result, SyncResult) and "barrier" not in print_program(result.program)
    barrier = syncproof.sync(program, "barrier")
    assert "barrier" in print_program(barrier.program)
    assert syncproof.sync(program, "manual").program == program
    with pytest.raises(UsageError, match="unknown strategy"):
        syncproof.sync(program, "nope")


def test_verify_bounded_is_bisimilar_within_the_bounds():
    program = syncproof.load(DOUBLE_BUFFER)
    report = syncproof.verify(program, VerifyOptions(scope=BOUNDED, params={"N": (0, 2)}))
    assert isinstance(report, Report)
    assert report.verdict == Verdict.BISIMILAR and report.holds is True
    assert report.scope == Scope.BOUNDED and report.proof is None and report.proof_skipped
    assert report.result.bounds == (("N", 0, 2),) and report.result.valuations == 3
    assert report.engine == "happens-before" and report.strategy == "threshold"
    assert report.program == syncproof.sync(program).program and report.stats == report.sync.stats


def test_verify_with_scope_all_proves_the_double_buffer_for_every_n():
    report = syncproof.verify(syncproof.load(DOUBLE_BUFFER))
    assert report.holds and report.proof is not None and report.proof.status == "proved"
    assert report.scope == Scope.ALL


def test_a_proof_from_a_raised_lower_bound_is_not_scope_all():
    # N >= 2 only: proved, but not for every N the kernel allows.
    report = syncproof.verify(syncproof.load(DOUBLE_BUFFER), VerifyOptions(params={"N": (2, 3)}))
    assert report.proof.status == "proved" and report.scope == Scope.BOUNDED


@pytest.mark.parametrize("name, verdict", [
    ("ring_off_by_one.sync", Verdict.UNSOUND),
    ("cyclic_wait_deadlock.sync", Verdict.DEADLOCK),
    ("pipeline_overwait.sync", Verdict.OVER_SYNCHRONIZED),
])
def test_verify_a_broken_manual_program_fails_with_a_trace(name, verdict):
    program = syncproof.load(KERNELS_DIR / "bugs" / name)
    report = syncproof.verify(program, VerifyOptions(strategy="manual", max_param=2))
    assert report.verdict == verdict and report.holds is False
    assert report.scope == Scope.BOUNDED and report.proof is None
    witness = report.result.witness
    assert isinstance(witness, syncproof.Witness) and witness.verdict == verdict
    assert witness.explanation and (witness.trace or witness.failing)
    assert report.program == program  # manual: the program as written


def test_soundness_allows_over_synchronization():
    program = syncproof.load(KERNELS_DIR / "bugs" / "pipeline_overwait.sync")
    report = syncproof.verify(program, VerifyOptions(strategy="manual", property="soundness", scope=BOUNDED))
    assert report.holds is True and report.verdict == Verdict.OVER_SYNCHRONIZED


def test_verify_with_both_engines_agrees_and_names_them():
    program = syncproof.load(PIPELINE)
    report = syncproof.verify(program, VerifyOptions(strategy="manual", engine="both", scope=BOUNDED,
                                                     params={"N": (0, 2)}))
    assert report.verdict == Verdict.BISIMILAR and report.engine == "both" and not report.disagreement
    assert [r.engine for r in report.by_engine] == ["explicit", "z3"]


def test_on_checked_sees_the_sync_result_before_the_proof():
    seen = []
    report = syncproof.verify(syncproof.load(DOUBLE_BUFFER),
                              VerifyOptions(scope=BOUNDED, on_checked=seen.append, max_param=1))
    assert seen == [report.sync]


def test_a_report_and_its_options_are_frozen():
    report = syncproof.verify(syncproof.load(PIPELINE), VerifyOptions(strategy="manual", scope=BOUNDED))
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        report.scope = Scope.ALL
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        VerifyOptions().strategy = "barrier"


def test_scope_values_are_the_json_spellings():
    assert [s.value for s in Scope] == ["bounded", "all"]
    assert Scope("all") is Scope.ALL and Scope.BOUNDED == "bounded"
    assert VerifyOptions(scope="bounded").scope is Scope.BOUNDED
    assert VerifyOptions(scope="auto").scope is Scope.ALL  # the command line's word for it


@pytest.mark.parametrize("options", [
    dict(engine="nope"), dict(property="liveness"), dict(scope="sometimes"), dict(max_states=0),
    dict(timeout=-1.0), dict(proof_jobs=0),
])
def test_bad_options_are_usage_errors(options):
    with pytest.raises(UsageError):
        VerifyOptions(**options)


def test_bad_parameters_are_usage_or_kernel_errors():
    program = syncproof.load(DOUBLE_BUFFER)
    with pytest.raises(UsageError, match="no parameter 'M'"):
        syncproof.verify(program, VerifyOptions(params={"M": 1}))
    with pytest.raises(UsageError):
        syncproof.verify(program, VerifyOptions(params={"N": (3, 1)}))
    with pytest.raises(UsageError, match="unknown strategy"):
        syncproof.verify(program, VerifyOptions(strategy="nope"))
    bounded = syncproof.load(DATA_DIR / "params" / "mod_k.sync")
    with pytest.raises(KernelError, match="below its lower bound"):
        syncproof.verify(bounded, VerifyOptions(params={"K": 0}))


def test_simulate_times_the_kernel_and_the_oracle_bounds_it():
    program = syncproof.load(DOUBLE_BUFFER)
    timed = syncproof.simulate(program, params={"N": 4})
    assert isinstance(timed, syncproof.Simulation)
    assert timed.strategy == "threshold" and timed.param == {"N": 4} and timed.profile.name == "trainium"
    assert set(timed.busy) == {"DMA", "PE", "ACT"} and timed.busy["DMA"] == 4 * 400
    oracle = syncproof.simulate(program, strategy="oracle", params={"N": 4})
    barrier = syncproof.simulate(program, strategy="barrier", params={"N": 4})
    assert 0 < oracle.cycles <= timed.cycles < barrier.cycles
    assert syncproof.simulate(program).param == {"N": 8}  # the kernel's default
    with pytest.raises(UsageError):
        syncproof.simulate(program, params={"M": 1})
    with pytest.raises(UsageError):
        syncproof.simulate(program, strategy="nope")


def test_export_lean_writes_the_lake_project(tmp_path):
    program = syncproof.load(PIPELINE)
    files = syncproof.export_lean(program, tmp_path / "lean", strategy="manual", max_param=1)
    kernel = next(path for path in files if path.startswith("Kernels/"))
    assert (tmp_path / "lean" / kernel).read_text() == files[kernel]
    assert "pipeline_db" in files[kernel] and (tmp_path / "lean" / "lakefile.lean").exists()
    with pytest.raises(UsageError):
        syncproof.export_lean(program, tmp_path / "again", max_param=-1)
