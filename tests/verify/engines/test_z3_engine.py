"""The Z3 checker (verify/engines/z3_check.py) against the Python semantics and the explicit checker.

1. Encoding agreement: on concrete reachable states of random programs (walking the
   Python machines at a fixed valuation), the mirrored Z3 step rules of
   verify/engines/z3_machines.py evaluate to exactly what semantics/machines.py computes, and
   the potential program's terms (existence, local indices, T_min, thresholds,
   barrier positions) to what `unroll` and `requirements` compute. Every run also
   satisfies the event-time constraints of verify/engines/z3_events.py, whose states at each
   time are the machines' states.
2. Verdict agreement of the explicit and Z3 engines on every kernel of the corpus and
   on generated programs: random waits and barriers, and the threshold strategy's
   output perturbed (a threshold +-1, a wait dropped, a wait added, a barrier inserted).
3. The command line: `--engine z3|both`, disagreement and unknown as exit 3.
A "teeth" test breaks one mirrored rule and checks that the agreement property fails.
"""

from __future__ import annotations

import json

import attrs
import pytest
import z3
from hypothesis import find, given, note
from hypothesis import strategies as st

from algorithm.registry import get_strategy
from semantics.errors import KernelError
from semantics.ir import Barrier, BinOp, Const, For, If, Var, Wait
from semantics.parser import parse
from semantics.printer import print_program
from semantics.validate import validate
from verify.engines import explicit
from verify.engines import z3_check
from verify.engines import z3_machines as zm
from verify.cli.main import main

from tests.support.budget import scaled
from tests.support.z3_properties import (  # noqa: F401 (shared with test_z3_queues.py)
    FIND_SETTINGS, CHOICES, program_ops, agreement_property, encoding_property, events_property, potential_program_property,
)
from tests.support.perturb import fails
from verify.search.generators import param_bounds, programs, valuations
from verify.verdicts import Verdict

HI = 2  # parameters over 0..HI (the size bound of programs() assumes max_param=2)
from tests.support.corpus import KERNELS_DIR
KERNELS = sorted(KERNELS_DIR.glob("*.sync")) + sorted((KERNELS_DIR / "bugs").glob("*.sync"))  # kernels/suite: the timing bench (tests/verify/timing/test_timing.py)


# ------------------------------------------------------------------ 1. encoding agreement


@given(st.one_of(programs(synced=True), programs()).flatmap(lambda p: st.tuples(st.just(p), valuations(p, HI))),
       CHOICES)
def test_mirrored_rules_agree_with_the_machines(program_values, choices):
    program, values = program_values
    note(print_program(program))
    encoding_property(program, values, choices)


def test_teeth_a_counter_ignoring_waits_is_caught(monkeypatch):
    """Break one mirrored rule: the agreement property must find a program where it matters."""
    def ignoring_waits(pp, state, y):
        pos, busy = state[y.engine]
        return z3.And(z3.Not(busy), y.exists, y.position == pos)

    monkeypatch.setattr(zm, "counter_issue_enabled", ignoring_waits)
    found = find(programs(synced=True).flatmap(lambda p: st.tuples(st.just(p), valuations(p, HI))),
                 lambda pv: fails(encoding_property, pv[0], pv[1], [0] * 40), settings=FIND_SETTINGS)
    assert any(op.waits for op in program_ops(found[0])), print_program(found[0])


# ------------------------------------------------------------------ 2. verdict agreement


def _kernel_cases():
    cases = []
    for path in KERNELS:
        if "\nqueue " in path.read_text():
            continue  # DMA queues: tests/verify/engines/test_z3_queues.py (manual, threshold, barrier)
        cases.append(pytest.param(path, "manual", id=f"{path.relative_to(KERNELS_DIR)}-manual"))
        if path.parent.name != "bugs":  # bugs are hand-synced: only their own waits matter
            cases.append(pytest.param(path, "threshold", id=f"{path.relative_to(KERNELS_DIR)}-threshold"))
    return cases


@pytest.mark.parametrize("path, strategy", _kernel_cases())
def test_engines_agree_on_the_corpus(path, strategy):
    # Default bounds 0..3 for every kernel: the slowest takes about 3 s in Z3.
    from semantics.parser import parse_file

    program = get_strategy(strategy)(parse_file(str(path))).program
    agreement_property(program, param_bounds(program, 3))


@st.composite
def perturbed_threshold_programs(draw, max_instances=12):
    """The threshold strategy's output, perturbed: a wait threshold +-1, a wait dropped,
    a wait added, a barrier inserted (or nothing: exact)."""
    program = get_strategy("threshold")(draw(programs(max_instances=max_instances))).program
    waits = [(op.name, n) for op in program_ops(program) for n in range(len(op.waits))]
    kind = draw(st.sampled_from(["exact", "plus", "minus", "drop", "add", "barrier"]))
    note(f"perturbation: {kind}")
    if kind in ("plus", "minus", "drop") and waits:
        target = draw(st.sampled_from(waits))

        def change(op):
            if op.name != target[0]:
                return op
            wait = op.waits[target[1]]
            if kind == "drop":
                return attrs.evolve(op, waits=op.waits[: target[1]] + op.waits[target[1] + 1:])
            moved = BinOp("+" if kind == "plus" else "-", wait.threshold, Const(1))
            return attrs.evolve(op, waits=op.waits[: target[1]] + (attrs.evolve(wait, threshold=moved),)
                                + op.waits[target[1] + 1:])
        program = attrs.evolve(program, body=_map_ops(program.body, change))
    elif kind == "add":
        name = draw(st.sampled_from([op.name for op in program_ops(program)]))
        engine = draw(st.sampled_from(program.engines))
        threshold = draw(st.sampled_from([Const(1), Const(2)] + [Var(p.name) for p in program.params]))
        program = attrs.evolve(program, body=_map_ops(
            program.body, lambda op: attrs.evolve(op, waits=op.waits + (Wait(engine, threshold),))
            if op.name == name else op))
    elif kind == "barrier":
        points = _insertion_points(program.body)
        program = attrs.evolve(program, body=_insert_barrier(program.body, draw(st.integers(0, points - 1))))
    validate(program)
    return program


def _map_ops(body, fn):
    from semantics.ir import map_ops

    return map_ops(body, fn)


def _insertion_points(body) -> int:
    """Places a statement can go: before each statement and at the end, in every block."""
    count = len(body) + 1
    for stmt in body:
        if isinstance(stmt, For):
            count += _insertion_points(stmt.body)
        elif isinstance(stmt, If):
            count += _insertion_points(stmt.then) + _insertion_points(stmt.else_)
    return count


def _insert_barrier(body, point):
    """`body` with a barrier at insertion point number `point` (depth first)."""
    out = []
    for stmt in body:
        if point == 0:
            out.append(Barrier())
        point -= 1
        if isinstance(stmt, For):
            inner = _insertion_points(stmt.body)
            if 0 <= point < inner:
                stmt = attrs.evolve(stmt, body=_insert_barrier(stmt.body, point))
            point -= inner
        elif isinstance(stmt, If):
            then, else_ = _insertion_points(stmt.then), _insertion_points(stmt.else_)
            if 0 <= point < then:
                stmt = attrs.evolve(stmt, then=_insert_barrier(stmt.then, point))
            elif 0 <= point - then < else_:
                stmt = attrs.evolve(stmt, else_=_insert_barrier(stmt.else_, point - then))
            point -= then + else_
        out.append(stmt)
    if point == 0:
        out.append(Barrier())
    return tuple(out)


@scaled(0.5)  # 30 in the ci profile; the threshold strategy itself takes most of the time
@given(perturbed_threshold_programs())
def test_engines_agree_on_perturbed_threshold_sync(program):
    note(print_program(program))
    agreement_property(program, param_bounds(program, HI))


@scaled(2 / 3)  # 40 in the ci profile
@given(programs(synced=True))
def test_engines_agree_on_random_waits_and_barriers(program):
    note(print_program(program))
    agreement_property(program, param_bounds(program, HI))


@pytest.mark.slow
@given(st.one_of(programs(synced=True), perturbed_threshold_programs()))
def test_engines_agree_on_many_generated_programs(program):
    note(print_program(program))
    agreement_property(program, param_bounds(program, HI))


@pytest.mark.slow
@scaled(1 / 3)  # 20 in the ci profile
@given(st.one_of(programs(synced=True, max_instances=6), perturbed_threshold_programs(max_instances=6)))
def test_step_by_step_bmc_agrees_with_the_explicit_engine(program):
    """The depth-by-depth BMC (the plain encoding; slow, so tiny programs) reaches the
    same verdicts."""
    note(print_program(program))
    agreement_property(program, param_bounds(program, 1), z3_check.Z3Options(encoding="steps"))


def test_step_by_step_bmc_on_a_small_kernel():
    program = parse("engines LD PE\nparam N\nfor i in 0..N {\n  LD w writes a[i % 2]  wait PE >= i - 1\n"
                    "  PE r reads a[i % 2]  wait LD >= max(i, 1)\n}\n")
    result = agreement_property(program, (("N", 0, 2),), z3_check.Z3Options(encoding="steps"))
    assert result.verdict == Verdict.UNSOUND and result.states > 1  # one query per depth


# ------------------------------------------------------------------ budgets, errors


def test_unknown_is_never_success(tmp_path):
    program = parse_kernel("triangular_attention.sync")
    # A deterministic budget too small for any query (not a wall-clock one, which load changes).
    options = z3_check.Z3Options(query_rlimit=1, dump_smt=str(tmp_path))
    result = z3_check.check(program, param_bounds(program, 3), options)
    assert result.verdict == Verdict.UNKNOWN and result.holds is None and not result.complete
    assert "Z3 returned unknown" in result.reason
    dumps = list(tmp_path.glob("*.smt2"))
    assert len(dumps) == 1 and str(dumps[0]) in result.reason
    assert z3.parse_smt2_file(str(dumps[0]))  # a well-formed query


def test_depth_limit_of_bmc_is_unknown_not_success():
    program = parse_kernel("pipeline_db.sync")
    result = z3_check.check(program, (("N", 0, 2),), z3_check.Z3Options(encoding="steps", max_depth=3))
    assert result.verdict == Verdict.UNKNOWN and "depth limit" in result.reason


def parse_kernel(name):
    from semantics.parser import parse_file

    return parse_file(str(KERNELS_DIR / name))


_ERROR_AT_N3 = "engines LD PE\nparam N\nLD w writes a[1 // (3 - N)]\nPE r reads a[1]{wait}\n"


def test_a_kernel_error_is_raised_as_the_explicit_engine_raises_it():
    program = parse(_ERROR_AT_N3.format(wait="  wait LD >= 1"))
    for check in (explicit.check, z3_check.check):
        with pytest.raises(KernelError):
            check(program, (("N", 0, 3),))


def test_an_unsound_valuation_before_a_kernel_error_is_reported_as_explicit_does():
    program = parse(_ERROR_AT_N3.format(wait=""))  # unsound at N=2 (1 // 1 == 1), error at N=3
    result = agreement_property(program, (("N", 0, 3),))
    assert result.verdict == Verdict.UNSOUND and dict(result.witness.unrolled.valuation) == {"N": 2}


# ------------------------------------------------------------------ 3. command line


def _verify(capsys, *args):
    capsys.readouterr()
    status = main(["verify", "--strategy", "manual", *args, "--json"])
    captured = capsys.readouterr()
    return status, json.loads(captured.out), captured.err


@pytest.mark.parametrize("engine", ["z3", "both"])
def test_cli_engines(capsys, engine, monkeypatch):
    monkeypatch.setenv("SYNCPROOF_PROGRESS_INTERVAL", "0")  # every progress line (verify/progress.py)
    status, data, err = _verify(capsys, str(KERNELS_DIR / "bugs" / "ring_off_by_one.sync"), "--engine", engine)
    assert status == 1 and data["verdict"] == "unsound" and data["engine"] == engine
    assert data["scope"] == "bounded" and data["trace"] and set(data["param"]) == {"N", "D"}
    status, data, err = _verify(capsys, str(KERNELS_DIR / "pipeline_db.sync"), "--engine", engine)
    assert status == 0 and data["verdict"] == "bisimilar"
    if engine == "z3":
        assert "syncproof verify: z3: " in err


def test_cli_both_reports_a_disagreement_as_internal_error(capsys, monkeypatch):
    def wrong(program, bounds, options):
        return attrs.evolve(explicit.check(program, bounds), engine="z3", verdict=Verdict.UNSOUND, holds=False)

    monkeypatch.setattr(z3_check, "check", wrong)
    status, data, err = _verify(capsys, str(KERNELS_DIR / "pipeline_db.sync"), "--engine", "both")
    assert status == 3 and "engines disagree" in err
    assert data["verdict"] == "unknown"
    assert data["explicit"]["verdict"] == "bisimilar" and data["z3"]["verdict"] == "unsound"


def test_cli_both_with_an_unknown_answer_exits_3(capsys, monkeypatch):
    def unknown(program, bounds, options):
        return attrs.evolve(explicit.check(program, bounds), engine="z3", verdict=Verdict.UNKNOWN, holds=None,
                            complete=False, reason="Z3 returned unknown (canceled)")

    monkeypatch.setattr(z3_check, "check", unknown)
    status, data, _ = _verify(capsys, str(KERNELS_DIR / "pipeline_db.sync"), "--engine", "both")
    assert status == 3 and data["verdict"] == "unknown" and data["z3"]["reason"].startswith("Z3")
    capsys.readouterr()
    assert main(["verify", "--strategy", "manual", str(KERNELS_DIR / "pipeline_db.sync"), "--engine", "both"]) == 3
    out = capsys.readouterr().out
    assert "--- engine explicit ---" in out and "--- engine z3 ---" in out


def test_cli_kernel_error_with_z3(tmp_path, capsys):
    kernel = tmp_path / "bad.sync"
    kernel.write_text(_ERROR_AT_N3.format(wait="  wait LD >= 1"))
    capsys.readouterr()
    assert main(["verify", "--strategy", "manual", str(kernel), "--engine", "z3"]) == 2
    assert f"{kernel}:3:" in capsys.readouterr().err
