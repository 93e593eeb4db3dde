"""`sync` is total: every valid kernel gets a sound program,
exact where the threshold analysis can, else conservative, else the barrier layout
with local barriers, each fallback reported; and the algorithm keeps no solver state
outside its sessions."""

from __future__ import annotations

import subprocess
import sys

import attrs
import pytest
from hypothesis import event, given, note

from algorithm.registry import get_strategy, stats_line
from semantics.ir import Barrier, For, If
from semantics.parser import parse_file
from semantics.printer import print_program
from verify.engines.explicit import check
from verify.search.generators import param_bounds, programs
from verify.verdicts import CheckOptions, Verdict

from tests.support.corpus import ROOT

REPRO = ROOT / "tests" / "data" / "repro"
GEN_HI = 2


def _sound(program, synced, hi: int):
    return check(synced, param_bounds(program, hi), CheckOptions(property="soundness"))


def test_refused_kernels_get_a_sound_program_with_the_fallback_reported():
    program = parse_file(str(REPRO / "threshold_refuses_2.sync"))
    result = get_strategy("threshold")(program)
    assert result.stats.local_barriers >= 1
    assert result.stats.fallback == "barrier"
    assert "fell back to barrier" in stats_line(result.stats)
    assert "local barriers" in stats_line(result.stats)
    assert result.stats.notes
    verdict = _sound(program, result.program, 3)
    assert verdict.holds is True, verdict.verdict.value


@pytest.mark.parametrize("name", ["threshold_refuses_1", "threshold_refuses_2"])
def test_the_barrier_layout_counts_the_once_refused_waits_in_their_regions(name):
    """The waits the whole-program planner could not count are counted in their regions
    (algorithm/barrier.py): the layout needs no local barrier, and it is sound."""
    program = parse_file(str(REPRO / f"{name}.sync"))
    result = get_strategy("barrier")(program)
    assert result.stats.local_barriers == 0 and not result.stats.notes, stats_line(result.stats)
    verdict = _sound(program, result.program, 3)
    assert verdict.holds is True, verdict.verdict.value


def test_once_refused_kernel_is_now_planned_exactly_and_bisimilar():
    """threshold_refuses_1 fell back to barriers until the second case analysis
    (algorithm/threshold/cases.py) counted its waits; now every wait is exact and the
    output is bisimilar to the reference within the bounds."""
    from verify.engines.happens_before import check as hb_check

    program = parse_file(str(REPRO / "threshold_refuses_1.sync"))
    result = get_strategy("threshold")(program)
    assert not result.stats.fallback and not result.stats.conservative, stats_line(result.stats)
    verdict = hb_check(result.program, param_bounds(program, 2), CheckOptions(property="bisimulation"))
    assert verdict.verdict == Verdict.BISIMILAR, verdict.verdict.value


def _without_barriers(body):
    out = []
    for stmt in body:
        if isinstance(stmt, Barrier):
            continue
        if isinstance(stmt, For):
            stmt = attrs.evolve(stmt, body=_without_barriers(stmt.body))
        elif isinstance(stmt, If):
            stmt = attrs.evolve(stmt, then=_without_barriers(stmt.then), else_=_without_barriers(stmt.else_))
        out.append(stmt)
    return tuple(out)


def test_the_fallback_needs_its_barriers():
    """Teeth for the soundness check above: the fallback program of a refused kernel
    without its barriers is unsound, and the explicit engine says so."""
    program = parse_file(str(REPRO / "threshold_refuses_2.sync"))
    synced = get_strategy("threshold")(program).program
    broken = attrs.evolve(synced, body=_without_barriers(synced.body))
    assert _sound(program, broken, 3).verdict == Verdict.UNSOUND


@pytest.mark.slow
@given(program=programs(engines=(2, 4), max_depth=3, max_statements=5))
def test_threshold_returns_a_sound_program_for_every_generated_kernel(program):
    note(print_program(program))
    result = get_strategy("threshold")(program)
    note(print_program(result.program))
    stats = result.stats
    event(f"fallback {stats.fallback}" if stats.fallback else
          "conservative" if stats.conservative else "exact")
    prop = "soundness" if stats.fallback or stats.conservative else "bisimulation"
    verdict = check(result.program, param_bounds(program, GEN_HI), CheckOptions(property=prop))
    assert verdict.holds is True, f"{prop}: {verdict.verdict.value}"


_NO_SOLVER = r"""
import sys
from verify.cli.main import main
sys.argv = ["syncproof", "check", {kernel!r}]
try:
    main()
except SystemExit:
    pass
print("LOADED", "z3" in sys.modules, "sympy" in sys.modules)
"""


@pytest.mark.parametrize("kernel", ["kernels/design_example.sync", "kernels/suite/softmax.sync"])
def test_check_imports_neither_z3_nor_sympy(kernel):
    out = subprocess.run([sys.executable, "-c", _NO_SOLVER.format(kernel=kernel)], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    assert out.strip().splitlines()[-1] == "LOADED False False"


def test_the_api_proof_timeout_default_is_the_proof_options_default():
    from syncproof import VerifyOptions
    from verify.proof.prove import ProofOptions

    assert ProofOptions().timeout == VerifyOptions().proof_timeout


_MAIN_CONTEXT = r"""
import sys
import z3
from algorithm.registry import get_strategy
from semantics.parser import parse_file
for strategy in ("threshold", "barrier", "flags", "tokens"):
    get_strategy(strategy)(parse_file("kernels/triangular_attention.sync"))
print("MAIN", z3.z3._main_ctx is None)
"""


def test_strategies_never_touch_z3s_default_context():
    """All solver state is in per-plan sessions: after every strategy ran, z3's default
    context was never created (a use of it, or a reset of it, would show)."""
    out = subprocess.run([sys.executable, "-c", _MAIN_CONTEXT], capture_output=True, text=True, cwd=ROOT,
                         check=True).stdout
    assert out.strip().splitlines()[-1] == "MAIN True"


def test_sync_output_does_not_depend_on_what_ran_before():
    kernels = [ROOT / "kernels" / "triangular_attention.sync", ROOT / "tests" / "data" / "threshold_cases" /
               "flat_index_double_buffer.sync"]
    first = [print_program(get_strategy("threshold")(parse_file(str(k))).program) for k in kernels]
    again = [print_program(get_strategy("threshold")(parse_file(str(k))).program) for k in reversed(kernels)]
    assert first == list(reversed(again))


def test_mixed_plain_and_modular_index_is_exact_and_bisimilar():
    """tests/data/repro/threshold_conservative_mixed_index.sync: `writes c[i2]` (i2 in
    i1..N) against `writes c[(i1 + 1) % 2]` in the loop of i1. The pinned inner index
    bounds the outer one (i1' <= (i1 + 1) % 2), but the bound was substituted twice,
    renaming y's i1 into the candidate's, so the bound was lost and one wait was
    conservative (over-synchronized at N=2)."""
    program = parse_file(str(REPRO / "threshold_conservative_mixed_index.sync"))
    result = get_strategy("threshold")(program)
    assert result.stats.conservative == 0 and not result.stats.fallback
    verdict = check(result.program, param_bounds(program, 4), CheckOptions(property="bisimulation"))
    assert verdict.verdict == Verdict.BISIMILAR


@pytest.mark.slow
def test_nested_ifs_reproducer_plans_and_is_bisimilar():
    """tests/data/repro/threshold_slow_nested_ifs.sync: without counts memoized in the
    session it re-counts the same nested `if`s for every op and runs for minutes."""
    program = parse_file(str(REPRO / "threshold_slow_nested_ifs.sync"))
    result = get_strategy("threshold")(program)
    prop = "bisimulation" if not result.stats.conservative and not result.stats.fallback else "soundness"
    assert check(result.program, param_bounds(program, 3), CheckOptions(property=prop)).holds is True


def test_cli_reports_the_fallback_in_the_statistics_line_and_json():
    """`sync` exits 0 on a kernel it once refused and says how it fell back; `verify
    --json` carries the same in its `sync` object."""
    kernel = str(REPRO / "threshold_refuses_2.sync")
    sync = subprocess.run([sys.executable, "-m", "verify.cli", "sync", kernel], capture_output=True, text=True,
                          cwd=ROOT)
    assert sync.returncode == 0, sync.stderr
    assert "fell back to barrier" in sync.stderr and "local barriers" in sync.stderr
    assert "Traceback" not in sync.stderr
    verify = subprocess.run([sys.executable, "-m", "verify.cli", "verify", kernel, "--json", "--scope", "bounded",
                             "--property", "soundness", "--max-param", "2"], capture_output=True, text=True, cwd=ROOT)
    import json

    data = json.loads(verify.stdout)
    assert data["sync"]["fallback"] == "barrier" and data["sync"]["local_barriers"] >= 1
    assert data["verdict"] in ("bisimilar", "over-synchronized") and verify.returncode == 0
