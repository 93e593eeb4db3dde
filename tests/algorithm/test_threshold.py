"""The `threshold` strategy (algorithm/threshold/plan.py + algorithm/threshold/irredundant.py).

Properties, each checked on every kernel of the corpus (kernels/, kernels/bugs/: the
strategy replaces their hand-written sync, so buggy input sync is irrelevant) and on the
hand-written cases in tests/data/threshold_cases/:

1. the strategy's output has no barrier, re-parses to itself, and is bisimilar to the
   reference (explicit-state check, every parameter over 0..3);
2. every exact plan entry (before irredundancy) evaluates, at every instance of every
   valuation in 0..3, to the minimal threshold T_min computed here by brute force from
   `depends_on` alone (never from algorithm code or `semantics.sequential.requirements`);
3. each wait the strategy keeps is necessary: dropping any one makes the check unsound;
4. (tests/algorithm/test_barrier.py) the barrier baseline;
5. teeth: deliberately broken variants of the algorithm fail checks 1 and 2;
6. the same properties on generated programs (verify/search/generators.py);
7. the command line (`syncproof sync`, `syncproof verify`).

Known algorithm bugs are kept as their own kernels under tests/data/threshold_cases/ with
strict xfail marks (see KNOWN_BUGS): when one is fixed, its xfail turns into a failure
and the mark must go.

Cost: the strategy calls Z3; its results are cached per kernel file for the module.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

import attrs
import pytest
from hypothesis import event, given, note

import algorithm.threshold.plan as threshold_mod
from algorithm.threshold import Unsupported
from algorithm.registry import get_strategy
from semantics.context import static_order
from semantics.ir import Barrier, BinOp, Const, Op, Program, map_ops, walk_stmts
from semantics.parser import parse, parse_file
from semantics.printer import print_program
from verify.engines.explicit import check
from verify.verdicts import CheckOptions, Verdict

from algorithm.queues import transfer_view
from tests.support.exactness import exactness_problems
from tests.support.corpus import ALL_KERNELS, CASES, CORPUS, HI, KERNELS_DIR, ROOT, bounds_of, kernel_id

# ------------------------------------------------------------- known bugs

_CRASH_FALLBACK_PREFIX = (
    "plan_thresholds raises Unsupported('a sum over a loop of nested index-dependent "
    "conditions') from its conservative fallback (count_before_y, cached top-level prefix "
    "count, since commit a4a188c; before it the fallback gave iters(j), exact here); since 7089314 a "
    "located error, still exit 2 from `syncproof sync` on a valid kernel")
_CRASH_FALLBACK_GUARDED = (
    "plan_thresholds raises Unsupported('a sum over a loop whose terms depend on the index in a "
    "non-polynomial way') from its conservative fallback (count_before_y -> _iters_count -> "
    "count_upto, for an op under an `if` inside its innermost loop); since 7089314 a located "
    "error, still exit 2 from `syncproof sync` on a valid kernel")
_GAP = "not exact (conservative fallback), so the output is over-synchronized: "

# kernel file name -> {property kind: reason}; every entry has its own kernel file.
# "plan": plan_thresholds raises; "exact": some entry is not exact and the output is
# over-synchronized.
KNOWN_BUGS: dict = {}
# Fixed since the first run of these tests (kept as regression cases, no mark):
# guarded_triangular_consumer, if_else_varying, varying_count_war, clamped_triangular,
# triangular_start_bound, parity_mod3, parity_engines, triangular_both,
# triangular_guarded_reader.
# Exact at run time, but not proved so (`exact=False`), not a wrong output.
UNPROVEN_BUT_RIGHT: dict = {}


def _params(paths, *kinds, extra: dict | None = None):
    """pytest params, with a strict xfail on the kernels with a known bug of these kinds."""
    out = []
    for path in paths:
        reasons = [KNOWN_BUGS.get(path.name, {}).get(k) for k in kinds]
        reasons = [r for r in reasons if r]
        if extra and path.name in extra:
            reasons.append(extra[path.name])
        marks = [pytest.mark.xfail(strict=True, reason="; ".join(reasons))] if reasons else []
        out.append(pytest.param(path, marks=marks, id=kernel_id(path)))
    return out


# ------------------------------------------------------------------ helpers


@functools.lru_cache(maxsize=None)
def program_of(path: Path) -> Program:
    """The kernel as the planner sees it: a kernel with DMA queues in its transfer view
    (every DMA op on its queue; algorithm/queues.py), which is an ordinary program."""
    return transfer_view(parse_file(str(path)))


@functools.lru_cache(maxsize=None)
def plan_of(path: Path):
    return threshold_mod.plan_thresholds(program_of(path))


@functools.lru_cache(maxsize=None)
def synced_of(path: Path):
    return get_strategy("threshold")(program_of(path))


def inexact_entries(plan) -> list[str]:
    return [f"{e.op} on {e.engine}: {e.note}" for e in plan.entries if not e.exact]


def has_barrier(program: Program) -> bool:
    return any(isinstance(s, Barrier) for s in walk_stmts(program.body))


def bisimulation_problems(out: Program, hi: int = HI) -> list[str]:
    """What keeps `out` from being a correct threshold output (empty when it is)."""
    problems = []
    if has_barrier(out):
        problems.append("the output has a barrier")
    text = print_program(out)
    if parse(text) != out:
        problems.append("the printed output does not re-parse to itself")
    result = check(out, bounds_of(out, hi))
    if result.verdict != Verdict.BISIMILAR:
        lines = result.witness.explanation if result.witness else (result.reason,)
        param = dict(result.witness.unrolled.valuation) if result.witness else {}
        problems.append(f"{result.verdict.value} at {param}: " + " / ".join(map(str, lines)))
    return problems


def _explain(program: Program, problems: list[str]) -> str:
    return "\n".join(problems) + "\n--- output:\n" + print_program(program)


# ------------------------------------------------- 1. bisimilar, no barrier


@pytest.mark.parametrize("path", _params(ALL_KERNELS, "plan", "exact"))
def test_threshold_output_is_bisimilar(path):
    out = synced_of(path).program
    problems = bisimulation_problems(out)
    assert not problems, _explain(out, problems)


# --------------------------------------- 2. exact thresholds vs brute force


@pytest.mark.parametrize("path", _params(ALL_KERNELS, "plan"))
def test_thresholds_equal_brute_force_minimum(path):
    program, plan = program_of(path), plan_of(path)
    problems = exactness_problems(program, plan)
    assert not problems, _explain(threshold_mod.apply_plan(program, plan.entries), problems)
    if path in CORPUS:
        assert not inexact_entries(plan), "corpus kernels must be planned exactly:\n" + "\n".join(inexact_entries(plan))


def registers_of(plan) -> list:
    """The plan's entries as a barrier-free output writes them: against `count(F)` where
    the planner found that cheaper (algorithm/threshold/pipeline.py)."""
    return [attrs.evolve(e, threshold=e.counted) if e.counted is not None else e for e in plan.entries]


@pytest.mark.parametrize("path", _params(ALL_KERNELS, "plan"))
def test_thresholds_against_count_registers_equal_brute_force_minimum(path):
    """`count(F) - d` forms are the same values as the closed forms they replace, at
    every instance of every valuation (count(F) evaluated by the unroller)."""
    program, plan = program_of(path), plan_of(path)
    entries = registers_of(plan)
    problems = exactness_problems(program, attrs.evolve(plan, entries=entries))
    assert not problems, _explain(threshold_mod.apply_plan(program, entries), problems)


def test_a_count_register_one_off_is_caught():
    """Teeth: `count(F) - d` one instance short is not the minimum."""
    path = next(p for p in ALL_KERNELS if p.name == "pipeline_db.sync")
    program, plan = program_of(path), plan_of(path)
    entries = registers_of(plan)
    counted = [n for n, e in enumerate(plan.entries) if e.counted is not None and e.exact]
    assert counted, "pipeline_db has a wait written against count(F)"
    n = counted[0]
    entries[n] = attrs.evolve(entries[n], threshold=BinOp("+", entries[n].threshold, Const(1)))
    assert exactness_problems(program, attrs.evolve(plan, entries=entries))


@pytest.mark.parametrize("path", _params(CASES, "plan", "exact", extra=UNPROVEN_BUT_RIGHT))
def test_case_plans_are_all_exact(path):
    assert not inexact_entries(plan_of(path)), "\n".join(inexact_entries(plan_of(path)))


def test_flat_index_plan_stays_exact_after_other_plans_in_the_process():
    # Regression: Z3's effort on a query depends on the term ids of earlier queries in
    # the process; after these five plans, one proof for flat_index_double_buffer ran out
    # of its resource budget and the wait fell back to "every earlier instance". Fixed
    # twice over: each plan starts in a fresh Z3 context, and an exhausted budget is
    # retried; with the retry disabled this test still fails without the fresh context.
    for name in ["barrier_loop_in_branch", "carried_distance", "clamped_triangular", "else_excludes_diagonal",
                 "five_engines_fan"]:
        plan_of(next(p for p in CASES if p.stem == name))
    assert not inexact_entries(plan_of(next(p for p in CASES if p.stem == "flat_index_double_buffer")))


@pytest.mark.parametrize("name", ["six_engine_block", "triangular_attention", "if_else_split", "zero_trip_acc"])
def test_sync_output_is_unchanged_by_fresh_z3_contexts(name):
    # The general planner starts a fresh Z3 context every `renew_after_ops` ops (Z3's
    # per-query cost grows with its term table); a reset before every op, in planning,
    # irredundancy and the barrier pass, must give the same kernels: no stale term,
    # prefix fact or id-keyed memo entry survives a reset.
    from algorithm.barrier import barrier_layout
    from algorithm.registry import sync_threshold
    from algorithm.threshold.options import PlannerOptions

    program = program_of(next(p for p in CORPUS if p.stem == name))

    def synced(options):
        barrier = barrier_layout(program, options).program
        return [print_program(sync_threshold(program, options=options).program), print_program(barrier)]

    general = PlannerOptions(stages=("general",))
    assert synced(attrs.evolve(general, renew_after_ops=1)) == synced(general)


def test_corpus_and_cases_are_present():
    assert len(CORPUS) >= 12 and len(CASES) >= 10
    assert all(name in {p.name for p in CASES} for name in KNOWN_BUGS)


# ---------------------------------------------------- 3. irredundant waits

# Most kernels show the necessity of every wait with parameters in 0..3; these need 0..4,
# because the dependence their wait enforces first occurs at iteration 3:
#   ring_buffer, bugs/ring_off_by_one: mm[i] writes o[i % 3], WAR with st[i - 3]
#     (ST >= i - 2, positive only from i = 3);
#   zero_trip_sequence: ld[i] writes a[i % 3], WAR with mm[i - 3] (PE);
#   guarded_writer: w runs at i % 3 == 0, so its WAR/WAW on s and t with r and d of
#     earlier iterations first exists at i = 3.
#   clamped_triangular, varying_count_war, if_else_varying: the WAR with the readers of
#     iteration i - 2 exists only once those ran at least once (i = 3);
#   parity_mod3, parity_engines (0..5): o[i % 3] is shared between iterations of
#     different parity only from i = 4 on (e at 4 after f at 1).
IRREDUNDANCY_HI = {"ring_buffer.sync": 4, "ring_off_by_one.sync": 4, "zero_trip_sequence.sync": 4,
                   "guarded_writer.sync": 4, "clamped_triangular.sync": 4, "varying_count_war.sync": 4,
                   "if_else_varying.sync": 4, "parity_mod3.sync": 5, "parity_engines.sync": 5}
_BROKEN = {name for name, kinds in KNOWN_BUGS.items() if kinds}


def _without_wait(program: Program, op_name: str, n: int) -> Program:
    def drop(op: Op) -> Op:
        if op.name != op_name:
            return op
        return attrs.evolve(op, waits=op.waits[:n] + op.waits[n + 1:])

    return attrs.evolve(program, body=map_ops(program.body, drop))


def redundant_waits(out: Program, hi: int) -> list[str]:
    """The waits of `out` whose removal leaves the check bisimilar (should be none),
    and any removal that fails otherwise than unsound (impossible: fewer waits only
    enable more issues, so only unsoundness can appear)."""
    found = []
    for op in (s for s in walk_stmts(out.body) if isinstance(s, Op)):
        for n, wait in enumerate(op.waits):
            result = check(_without_wait(out, op.name, n), bounds_of(out, hi))
            if result.verdict != Verdict.UNSOUND:
                found.append(f"{op.name}: wait {wait.engine} >= ... -> {result.verdict.value} without it")
    return found


@pytest.mark.parametrize("path", [p for p in _params(ALL_KERNELS) if p.values[0].name not in _BROKEN])
def test_irredundant_waits_are_each_necessary(path):
    out = synced_of(path).program
    hi = IRREDUNDANCY_HI.get(path.name, HI)
    found = redundant_waits(out, hi)
    assert not found, _explain(out, found)


@pytest.mark.parametrize("name", sorted(IRREDUNDANCY_HI))
def test_irredundancy_bounds_are_needed(name):
    """Documents IRREDUNDANCY_HI: with parameters in 0..3 some wait of these kernels
    looks redundant (its dependence does not occur yet)."""
    path = next(p for p in ALL_KERNELS if p.name == name)
    assert redundant_waits(synced_of(path).program, HI)


# ------------------------------------------------------------- 5. teeth

TEETH_KERNELS = [KERNELS_DIR / "pipeline_db.sync", KERNELS_DIR / "zero_trip_acc.sync",
                 KERNELS_DIR / "ring_buffer.sync"]


def _same_iteration_only(original):
    """candidates_of without the loop-carried candidates (only x in y's own iteration)."""
    def broken(program, x, y, pair, *args, **kwargs):
        out = original(program, x, y, pair, *args, **kwargs)
        return out[:1] if static_order(x, y) == "before" else []
    return broken


def _shifted_plan(original, delta: int):
    def broken(program):
        plan = original(program)
        plan.entries = [attrs.evolve(e, threshold=BinOp("+", e.threshold, Const(delta))) for e in plan.entries]
        return plan
    return broken


def _failures_with_broken_algorithm(paths) -> dict[str, list[str]]:
    """Run checks 1 and 2 (uncached) on each kernel, on the plan's output and on the
    strategy's (after irredundancy); the problems found, by kernel."""
    found = {}
    for path in paths:
        program = parse_file(str(path))
        plan = threshold_mod.plan_thresholds(program)
        problems = exactness_problems(program, plan) + inexact_entries(plan)
        problems += bisimulation_problems(threshold_mod.apply_plan(program, plan.entries))
        try:
            problems += bisimulation_problems(get_strategy("threshold")(program).program)
        except Exception as err:  # irredundancy may trip over an inconsistent plan
            problems.append(f"the strategy raised {err!r}")
        if problems:
            found[path.name] = problems
    return found


@pytest.mark.parametrize("variant", ["no-loop-carried", "no-loop-carried-unproved", "minus-one", "plus-one"])
def test_broken_algorithm_fails_these_tests(monkeypatch, variant):
    if variant.startswith("no-loop-carried"):
        monkeypatch.setattr(threshold_mod, "candidates_of", _same_iteration_only(threshold_mod.candidates_of))
        if variant.endswith("unproved"):  # also trust the broken case analysis without Z3
            monkeypatch.setattr(threshold_mod, "prove_candidates", lambda *args, **kwargs: None)
    else:
        monkeypatch.setattr(threshold_mod, "plan_thresholds",
                            _shifted_plan(threshold_mod.plan_thresholds, -1 if variant == "minus-one" else 1))
    found = _failures_with_broken_algorithm(TEETH_KERNELS)
    assert found, f"the broken variant '{variant}' passed every check"
    if variant == "no-loop-carried-unproved":
        # claimed exact but wrong: the brute-force comparison alone must see it
        assert any("T_min" in p for problems in found.values() for p in problems), found
    if variant == "minus-one":
        assert any("unsound" in p for problems in found.values() for p in problems), found


# ------------------------------------------------ 6. generated programs

from verify.search.generators import param_bounds, programs  # noqa: E402


GEN_HI = 2  # programs() bounds its size for parameters up to 2


@given(program=programs(engines=(2, 6)))
def test_generated_programs_threshold_is_exact_and_bisimilar(program):
    """Exact plan entries equal the brute-force T_min; the output is bisimilar when the
    whole plan is exact, and sound in any case (a conservative entry may over-synchronize)."""
    note(print_program(program))
    try:
        plan = threshold_mod.plan_thresholds(program)
    except Unsupported as err:  # refusing a valid kernel is a failure (sync is total), never a skip
        pytest.fail(f"the threshold strategy refuses a valid kernel: {err}\n{print_program(program)}")
    if any(e.threshold is None for e in plan.entries):
        # A wait neither exact nor countable: the strategy falls back to local barriers,
        # which must be sound (tests/algorithm/test_sync_total.py holds the fallback).
        event("fallback to local barriers")
        result = get_strategy("threshold")(program)
        assert result.stats.fallback == "barrier" and result.stats.local_barriers >= 1
        verdict = check(result.program, param_bounds(program, GEN_HI), CheckOptions(property="soundness"))
        assert verdict.holds, f"{verdict.verdict.value}: {verdict.witness and verdict.witness.explanation}"
        return
    problems = exactness_problems(program, plan, hi=GEN_HI)
    assert not problems, _explain(threshold_mod.apply_plan(program, plan.entries), problems)
    out = get_strategy("threshold")(program).program
    note(print_program(out))
    assert not has_barrier(out)
    assert parse(print_program(out)) == out
    exact = not inexact_entries(plan)
    event("plan exact" if exact else "plan not exact")
    result = check(out, param_bounds(program, GEN_HI),
                   CheckOptions(property="bisimulation" if exact else "soundness"))
    assert result.holds, f"{result.verdict.value}: {result.witness and result.witness.explanation}"


# ------------------------------------------------------------ 7. the CLI


def _syncproof(*args: str) -> subprocess.CompletedProcess:
    script = Path(sys.executable).with_name("syncproof")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "verify.cli"]
    return subprocess.run(command + list(args), capture_output=True, text=True, timeout=300,
                          cwd=ROOT, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})


CLI_KERNEL = KERNELS_DIR / "pipeline_db.sync"


def test_cli_sync_threshold_prints_a_verifiable_kernel(tmp_path):
    run = _syncproof("sync", str(CLI_KERNEL), "--strategy", "threshold")
    assert run.returncode == 0, run.stderr
    stats = [line for line in run.stderr.splitlines() if "waits" in line]
    assert stats and "barriers" in stats[0], run.stderr
    assert "barrier\n" not in run.stdout and "wait" in run.stdout
    synced = tmp_path / "synced.sync"
    synced.write_text(run.stdout)
    verify = _syncproof("verify", "--strategy", "manual", str(synced))
    assert verify.returncode == 0, verify.stdout + verify.stderr
    # -o writes the same kernel to a file
    out = tmp_path / "out.sync"
    written = _syncproof("sync", str(CLI_KERNEL), "-o", str(out))
    assert written.returncode == 0, written.stderr
    assert out.exists() and parse(out.read_text()) == parse(run.stdout)


def test_cli_verify_barrier_soundness_exits_zero():
    run = _syncproof("verify", "--strategy", "barrier", str(CLI_KERNEL), "--property", "soundness")
    assert run.returncode == 0, run.stdout + run.stderr
