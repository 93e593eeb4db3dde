"""Every consumer of a program reads loop registers (docs/language.md) by their values:
on a kernel with registers each checker gives exactly the answer it gives on the same
kernel with its registers inlined (semantics/registers.py `inline_registers`), and that
answer is the right one.

The kernels (tests/support/registers.py): nested_dynamic with its waits read from
registers (bisimilar, as kernels/nested_dynamic.sync), a kernel whose loops start at 1
and 2 (`v - lo` matters), one with `count(q)` in a header, wrong variants (a step
missing or too large, an initial value off by one, a register that waits one too many,
one that ignores its loop's lower bound) and one right within the bounds but wrong
beyond them (the all-values proof refutes it). Checked: `verify --strategy manual` with the explicit, happens-before and
z3 engines and both, the all-values proof with its 32-bit range statement, the same
through the command line (JSON), the Lean export, `mutate`, the other strategies on a
register kernel, and `sync --emit mlir`.
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from algorithm.registry import get_strategy
from lean_export.export import export_files
from semantics.ir import Const, For, If, Op, Register, Var, map_expr, walk_expr, walk_stmts
from semantics.mlir.emit import emit
from semantics.mlir.importer import import_text
from semantics.parser import parse
from semantics.printer import print_program
from semantics.registers import has_registers, inline_registers
from verify.api import Scope, VerifyOptions, verify
from verify.api.lean import plan_instances
from verify.cli.main import main
from verify.cli.mlir import load_imported
from verify.cli.report import result_json
from verify.engines import select
from verify.search.generators import param_bounds, programs
from verify.search.mutate import mutants, run_mutants
from verify.verdicts import CheckOptions, MutantStatus, ProofStatus

from tests.support.corpus import ROOT
from tests.support.registers import (
    COUNTED, NESTED_DYNAMIC, SHIFTED, WRONG, WRONG_BEYOND_BOUNDS, with_registers,
)

RIGHT = {"nested_dynamic": NESTED_DYNAMIC, "shifted": SHIFTED, "counted": COUNTED}
# name -> (kernel, the bounded check's verdict)
CASES = {**{name: (text, "bisimilar") for name, text in RIGHT.items()},
         **{f"wrong_{name}": case for name, case in WRONG.items()},
         "wrong_beyond_bounds": (WRONG_BEYOND_BOUNDS, "bisimilar")}
ENGINES = ("explicit", "hb", "z3", "both")


def _both(text: str):
    program = parse(text)
    assert has_registers(program)
    inlined = inline_registers(program)
    assert not has_registers(inlined)
    return program, inlined


def _without_seconds(data):
    """JSON data without its wall-clock fields (the only ones two runs may differ in)."""
    if isinstance(data, dict):
        return {k: _without_seconds(v) for k, v in data.items() if k != "seconds"}
    if isinstance(data, list):
        return [_without_seconds(v) for v in data]
    return data


# The z3 engine's counterexample (its valuation, its trace, the number of queries) is
# whichever model Z3 finds, and that depends on what the process asked Z3 before (two
# runs of one program in a row differ, registers or not): compared there are the answer
# and what it covers.
_Z3_MODEL = ("states", "param", "trace", "failing", "explanation")


def _answer(result) -> dict:
    data = result_json(result, "manual")
    if result.engine == "z3":
        data = {k: v for k, v in data.items() if k not in _Z3_MODEL}
    return data


# ---------------------------------------------------------------- the bounded check


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_bounded_check_answers_alike_with_registers_and_inlined(name, engine):
    text, expected = CASES[name]
    program, inlined = _both(text)
    options = VerifyOptions(strategy="manual", engine=engine, scope=Scope.BOUNDED)
    with_regs, plain = verify(program, options), verify(inlined, options)
    assert with_regs.verdict.value == expected
    assert _answer(with_regs.result) == _answer(plain.result)
    for mine, theirs in zip(with_regs.by_engine, plain.by_engine):  # `both`: each engine's own answer
        assert _answer(mine) == _answer(theirs)


def test_the_register_kernel_answers_as_nested_dynamic_does():
    original = parse((ROOT / "kernels" / "nested_dynamic.sync").read_text())
    options = VerifyOptions(strategy="manual", engine="hb", scope=Scope.BOUNDED, params={"N": (0, 3), "M": (0, 3)})
    assert verify(parse(NESTED_DYNAMIC), options).result.states == verify(original, options).result.states
    assert verify(parse(NESTED_DYNAMIC), options).verdict == verify(original, options).verdict


@settings(max_examples=40)
@given(st.data())
def test_the_per_valuation_engines_answer_alike_on_generated_kernels(data):
    program = data.draw(with_registers(data.draw(programs(synced=True, max_depth=3))))
    bounds = param_bounds(program, 2)
    for engine in ("explicit", "hb"):
        assert select.check(program, bounds, CheckOptions(), engine) == \
            select.check(inline_registers(program), bounds, CheckOptions(), engine)


@settings(max_examples=10)
@given(st.data())
def test_the_z3_engine_answers_alike_on_generated_kernels(data):
    from verify.engines.z3_check import check

    program = data.draw(with_registers(data.draw(programs(synced=True, max_depth=2, max_instances=8))))
    bounds = param_bounds(program, 1)
    assert _answer(check(program, bounds)) == _answer(check(inline_registers(program), bounds))


# ---------------------------------------------------------------- the all-values proof


@pytest.mark.parametrize("name, status", [(name, ProofStatus.PROVED) for name in sorted(RIGHT)]
                         + [("wrong_beyond_bounds", ProofStatus.REFUTED)])
def test_the_all_values_proof_answers_alike_with_registers_and_inlined(name, status):
    program, inlined = _both(CASES[name][0])
    options = VerifyOptions(strategy="manual", scope=Scope.ALL, proof_jobs=1)
    with_regs, plain = verify(program, options), verify(inlined, options)
    assert with_regs.proof.status == status
    assert _without_seconds(with_regs.proof.to_json()) == _without_seconds(plain.proof.to_json())
    assert result_json(with_regs.result, "manual") == result_json(plain.result, "manual")
    if status == ProofStatus.PROVED:  # the 32-bit range statement, on the same terms
        assert with_regs.proof.int32 is not None and with_regs.proof.int32 == plain.proof.int32
        assert with_regs.scope == Scope.ALL
    else:  # the counterexample outside the bounds, from the explicit engine
        assert with_regs.verdict.value == "unsound" and dict(with_regs.result.witness.unrolled.valuation)["N"] > 3


def test_the_proof_workers_read_registers_too():
    """With worker processes (the default --proof-jobs 2), the obligations and the
    32-bit statement started early are asked of the inlined program too."""
    program, inlined = _both(SHIFTED)
    options = VerifyOptions(strategy="manual", scope=Scope.ALL, proof_jobs=2)
    with_regs, plain = verify(program, options), verify(inlined, options)
    assert with_regs.proof.status == ProofStatus.PROVED
    assert _without_seconds(with_regs.proof.to_json()) == _without_seconds(plain.proof.to_json())


# ---------------------------------------------------------------- the command line


def _cli_json(capsys, *args) -> tuple[int, dict]:
    status = main(list(args))
    return status, _without_seconds(json.loads(capsys.readouterr().out))


@pytest.mark.parametrize("name", ["nested_dynamic", "wrong_no_step", "wrong_beyond_bounds"])
@pytest.mark.parametrize("engine", ["hb", "both"])
def test_verify_prints_the_same_json_for_a_kernel_and_its_inlined_text(tmp_path, capsys, name, engine):
    program, inlined = _both(CASES[name][0])
    mine, theirs = tmp_path / "registers.sync", tmp_path / "inlined.sync"
    mine.write_text(print_program(program))
    theirs.write_text(print_program(inlined))
    args = ["verify", "--strategy", "manual", "--engine", engine, "--proof-jobs", "1", "--json"]
    got = _cli_json(capsys, *args, str(mine))
    assert got == _cli_json(capsys, *args, str(theirs))
    assert got[1]["verdict"] == ("unsound" if name != "nested_dynamic" else "bisimilar")


# ---------------------------------------------------------------- Lean, mutate, strategies


@pytest.mark.parametrize("name", ["nested_dynamic", "shifted", "wrong_init_off_by_one"])
def test_the_lean_export_is_the_export_of_the_inlined_program(name):
    program, inlined = _both(CASES[name][0])
    files = export_files(program, "kernel.sync", "manual", 2, planner=plan_instances)
    assert files == export_files(inlined, "kernel.sync", "manual", 2, planner=plan_instances)
    module = next(text for path, text in files.items() if path.startswith("Kernels/"))
    registers = {r.name for s in walk_stmts(program.body) if isinstance(s, For) for r in s.registers}
    assert not any(f'.var "{r}"' in module or f'"{r}"' in module for r in registers)


def test_the_lean_command_writes_the_same_project_for_both(tmp_path, capsys):
    program, inlined = _both(NESTED_DYNAMIC)
    written = []
    for which, p in (("registers", program), ("inlined", inlined)):
        (tmp_path / which).mkdir()
        source = tmp_path / which / "kernel.sync"
        source.write_text(print_program(p))
        assert main(["lean", str(source), "--strategy", "manual", "-o", str(tmp_path / which / "out")]) == 0
        out = tmp_path / which / "out"
        written.append({str(f.relative_to(out)): f.read_text() for f in sorted(out.rglob("*")) if f.is_file()})
    capsys.readouterr()
    assert written[0] == written[1]


@pytest.mark.parametrize("name, op, frozen", [("nested_dynamic", "load: wait PE >=", "j frozen at 0"),
                                             ("shifted", "mm: wait ACT >=", "j frozen at 2")])
def test_mutate_mutates_what_the_registers_feed(name, op, frozen):
    """The op's written wait reads only a register (`PE >= f`, `ACT >= q`): the loop
    variable behind it is frozen all the same (the register never advanced), and the
    check kills that mutant."""
    program, inlined = _both(CASES[name][0])
    bounds = param_bounds(program, 2)
    results = run_mutants(program, bounds, CheckOptions())
    plain = run_mutants(inlined, bounds, CheckOptions())
    assert [(r.mutant.operator, r.mutant.where, r.outcome, r.verdict) for r in results] == \
        [(r.mutant.operator, r.mutant.where, r.outcome, r.verdict) for r in plain]
    assert all(not has_registers(m.program) for m in mutants(program))
    hit = [r for r in results if r.mutant.operator == "freeze-var" and r.mutant.where.startswith(op)
           and r.mutant.where.endswith(frozen)]
    assert len(hit) == 1 and hit[0].outcome == MutantStatus.KILLED


def test_the_mutate_command_prints_the_same_for_both(tmp_path, capsys):
    program, inlined = _both(SHIFTED)
    outputs = []
    for which, p in (("registers", program), ("inlined", inlined)):
        source = tmp_path / f"{which}.sync"
        source.write_text(print_program(p))
        status, data = _cli_json(capsys, "mutate", str(source), "--strategy", "manual", "--json")
        assert status == 0
        data.pop("file")
        outputs.append(data)
    assert outputs[0] == outputs[1] and outputs[0]["kill_rate"] == 1.0


@pytest.mark.parametrize("strategy", ["threshold", "barrier", "flags", "tokens", "snax-barrier"])
@pytest.mark.parametrize("name", sorted(RIGHT))
def test_a_strategy_plans_a_register_kernel_as_its_inlined_program(name, strategy):
    program, inlined = _both(RIGHT[name])
    synced = get_strategy(strategy)(program).program
    assert print_program(synced) == print_program(get_strategy(strategy)(inlined).program)
    if strategy != "threshold":  # the input's registers feed only the input's waits: gone
        assert not has_registers(synced)


# ---------------------------------------------------------------- MLIR


def _registers_for_loop_variables(program):
    """`program` with a register `r_v = lo step 1` on every loop, read in its waits
    instead of `v` (the same thresholds)."""
    def body(stmts, regs: dict):
        out = []
        for stmt in stmts:
            match stmt:
                case For():
                    name = f"r_{stmt.var}"
                    out.append(attrs.evolve(stmt, body=body(stmt.body, {**regs, stmt.var: name}),
                                            registers=(Register(name, stmt.lo, Const(1)),)))
                case Op():
                    def read(n):
                        return Var(regs[n.name]) if isinstance(n, Var) and n.name in regs else n

                    out.append(attrs.evolve(stmt, waits=tuple(attrs.evolve(w, threshold=map_expr(w.threshold, read))
                                                              for w in stmt.waits)))
                case If():
                    out.append(attrs.evolve(stmt, then=body(stmt.then, regs), else_=body(stmt.else_, regs)))
                case _:
                    out.append(stmt)
        return tuple(out)

    return attrs.evolve(program, body=body(program.body, {}))


@pytest.mark.parametrize("kernel", ["tiled_add_prefetch", "conv_tiles_prefetch"])
def test_emit_mlir_writes_register_reads_as_their_values(kernel):
    imported = load_imported(str(ROOT / "kernels" / "snax" / f"{kernel}.mlir"))
    synced = inline_registers(get_strategy("threshold")(imported.program).program)
    with_regs = _registers_for_loop_variables(synced)
    assert has_registers(with_regs)
    assert any(isinstance(n, Var) and n.name.startswith("r_") for s in walk_stmts(with_regs.body)
               for w in getattr(s, "waits", ()) for n in walk_expr(w.threshold))
    text = emit(imported, with_regs)
    assert text == emit(imported, inline_registers(with_regs))
    assert "r_" not in "".join(line for line in text.splitlines() if "syncproof.wait" in line)
    # read back, the emitted waits are a bisimilar kernel
    (back,) = import_text(text, f"{kernel}.mlir")
    assert verify(back.program, VerifyOptions(strategy="manual", scope=Scope.BOUNDED)).verdict.value == "bisimilar"
