"""SNAX import, conformance of `snax-barrier` with snax-mlir's
insert-sync-barrier, verification of SNAX's output, and `--emit mlir`.

Inputs: tests/data/snax/ (snax-mlir's insert-sync-barrier test and derived loop cases with
the real pass's output; see tests/data/snax/README.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import xdsl  # noqa: F401  (a hard dependency: a broken install fails here, never skips)

import syncproof
from algorithm import snax_barrier as rule
from algorithm.registry import get_strategy
from semantics.errors import KernelError
from semantics.ir import Barrier, For, If, Op, walk_stmts
from semantics.parser import parse
from semantics.printer import print_program
from semantics.sequential import unroll
from verify.engines.explicit import check
from semantics.mlir.importer import import_file, import_text
from semantics.mlir.parse import split_cases
from verify.verdicts import CheckOptions, Verdict

from tests.support.corpus import DATA_DIR, ROOT

DATA = DATA_DIR / "snax"
DERIVED = DATA / "derived"
_CHECK = re.compile(r"^\s*//\s*CHECK(?:-NEXT)?:\s?(.*)$")


def _expected_cases(path: Path) -> list[str]:
    """The CHECK lines of each `// -----` case, as MLIR text."""
    return ["\n".join(m.group(1) for line in chunk.text.splitlines() if (m := _CHECK.match(line)))
            for chunk in split_cases(path.read_text())]


def _conformance_pairs():
    source = DATA / "insert-sync-barrier.mlir"
    for n, (case, expected) in enumerate(zip(import_file(str(source)), _expected_cases(source)), 1):
        yield f"insert-sync-barrier.mlir:{n}", case.program, import_text(expected, f"CHECK of case {n}")[0].program
    for out in sorted(DERIVED.glob("*.out-insert-sync-barrier.mlir")):
        source = out.with_name(out.name.replace(".out-insert-sync-barrier", ""))
        yield out.name, import_file(str(source))[0].program, import_file(str(out))[0].program


CONFORMANCE = list(_conformance_pairs())


def test_every_conformance_case_is_collected():
    names = [name for name, _, _ in CONFORMANCE]
    assert sum(n.startswith("insert-sync-barrier.mlir:") for n in names) == 5
    assert len(names) == 5 + len(list(DERIVED.glob("*.out-insert-sync-barrier.mlir"))) >= 9


@pytest.mark.parametrize("name, program, expected", CONFORMANCE, ids=[c[0] for c in CONFORMANCE])
def test_snax_barrier_places_barriers_where_snax_mlir_does(name, program, expected):
    """Same ops, loops and ifs, and a barrier exactly where the pass's output has one."""
    synced = get_strategy("snax-barrier")(program).program
    assert synced.body == expected.body, f"{name}\n--- ours\n{print_program(synced)}--- snax-mlir\n" \
                                         f"{print_program(expected)}"


def test_conformance_fails_for_a_rule_without_the_yield_barrier(monkeypatch):
    """The conformance test can fail: forget the scf.yield part of the rule."""
    real = rule.owed_barriers
    monkeypatch.setattr(rule, "owed_barriers", lambda sites: [n for n in real(sites)
                                                              if sites.sites[n].kind != "yield"])
    broken = [name for name, program, expected in CONFORMANCE
              if rule.snax_barrier(program).body != expected.body]
    assert "tiled_loop.out-insert-sync-barrier.mlir" in broken and "loop_copy_generic.out-insert-sync-barrier.mlir" \
        in broken


def test_conformance_fails_for_a_rule_that_ignores_global_users(monkeypatch):
    real_sites = rule.Sites
    program = CONFORMANCE[2][1]  # copy, then a global test.op using the copied memref
    sites = real_sites(tuple(s for s in program.sites.sites if s.kind != "global"))
    assert rule.owed_barriers(sites) == []
    assert rule.owed_barriers(program.sites) != []


# ------------------------------------------------------------ SNAX's own output


def _verify(program, prop="soundness"):
    bounds = tuple((p.name, 0, 2) for p in program.params)
    return check(program, bounds, CheckOptions(property=prop))


@pytest.mark.parametrize("name", ["loop_nested_if_gap", "subview_alias_gap"])
def test_snax_gap_cases_are_unsound_with_a_trace(name):
    for path in (DERIVED / f"{name}.out-insert-sync-barrier.mlir", DERIVED / f"{name}.mlir"):
        program = import_file(str(path))[0].program
        strategy = "manual" if ".out-" in path.name else "snax-barrier"
        result = _verify(get_strategy(strategy)(program).program)
        assert result.verdict == Verdict.UNSOUND, (path, result.verdict)
        # the trace to the failing state (empty when it is the initial one) and the issue that races
        witness = result.witness
        assert witness is not None and witness.failing and "before its producer" in " ".join(witness.explanation)


def test_gap_with_real_bounds_is_unsound_too():
    """The derived loop runs `%lb to %lb step %lb` (imported with a free trip count);
    the same gap with constant bounds is a real race."""
    text = (DERIVED / "loop_nested_if_gap.mlir").read_text()
    text = text.replace('%lb = "test.op"() : () -> index',
                        '%lb = "arith.constant"() <{value = 0 : index}> : () -> index\n'
                        '  %ub = "arith.constant"() <{value = 3 : index}> : () -> index\n'
                        '  %st = "arith.constant"() <{value = 1 : index}> : () -> index')
    text = text.replace('"scf.for"(%lb, %lb, %lb)', '"scf.for"(%lb, %ub, %st)')
    program = import_text(text, "gap.mlir")[0].program
    assert [(s.var, s.lo, s.hi) for s in walk_stmts(program.body) if isinstance(s, For)][0][0] == "i"
    assert _verify(get_strategy("snax-barrier")(program).program).verdict == Verdict.UNSOUND
    assert _verify(get_strategy("threshold")(program).program, "bisimulation").verdict == Verdict.BISIMILAR


def test_pipelined_tiled_loop_is_verified():
    program = import_file(str(DERIVED / "tiled_loop.out-pipelined.mlir"))[0].program
    assert sum(isinstance(s, Barrier) for s in walk_stmts(program.body)) == 5
    result = _verify(program)
    assert result.holds and result.verdict != Verdict.UNSOUND
    assert _verify(get_strategy("threshold")(program).program, "bisimulation").verdict == Verdict.BISIMILAR


# ------------------------------------------------------------ importer units


def test_subview_aliases_its_source_and_select_splits_on_its_condition():
    program = import_file(str(DERIVED / "subview_alias_gap.mlir"))[0].program
    copy, generic = [s for s in walk_stmts(program.body) if isinstance(s, Op)]
    assert (copy.engine, [a.buffer for a in copy.writes]) == ("DM", ["A"])
    assert (generic.engine, [a.buffer for a in generic.reads]) == ("COMPUTE", ["A"])
    pipelined = import_file(str(DERIVED / "tiled_loop.out-pipelined.mlir"))[0].program
    loop = next(s for s in pipelined.body if isinstance(s, For))
    assert print_program(pipelined).count("if 0 == i % 2 {") == 1
    assert all(isinstance(s, (If, Barrier)) for s in loop.body)


FUNC_ARGS = """
func.func @k(%n : index, %A : memref<64xi32>, %B : memref<64xi32>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  scf.for %i = %c0 to %n step %c2 {
    "memref.copy"(%A, %B) : (memref<64xi32>, memref<64xi32>) -> ()
    "memref.dealloc"(%A) : (memref<64xi32>) -> ()
  }
  func.return
}
"""


def test_function_arguments_become_parameters_and_global_ops_run_on_every_engine():
    program = import_text(FUNC_ARGS, "k.mlir")[0].program
    assert [p.name for p in program.params] == ["n"]
    text = print_program(program)
    assert "for i in 0..(n + 1) // 2 {" in text
    assert "DM dealloc_A_DM reads A writes A" in text and "COMPUTE dealloc_A_COMPUTE reads A writes A" in text
    assert parse(text).body == program.body  # the import prints a valid kernel


def test_split_input_file_cases_and_their_lines():
    cases = import_file(str(DATA / "insert-sync-barrier.mlir"))
    assert len(cases) == 5
    text = (DATA / "insert-sync-barrier.mlir").read_text().splitlines()
    for case in cases:
        assert "// -----" in text[case.chunk.first_line - 1] or case.chunk.first_line == 1


@pytest.mark.parametrize("text, where, words", [
    ('"builtin.module"() ({\n  "scf.while"() ({\n    "scf.condition"() : () -> ()\n  }, {\n  }) : () -> ()\n}) : () -> ()',
     "2:3", "unsupported op 'scf.while'"),
    ('"builtin.module"() ({\n  %0 = "test.op"() : () -> memref<4xi32>\n  "memref.copy"(%0, %1) : () -> ()\n}) : () -> ()',
     "3:", "MLIR:"),
    ('func.func @f(%a : memref<4xi32>) {\n  %c = func.call @snax_cluster_core_idx() : () -> i32\n'
     '  %z = arith.constant 0 : i32\n  %d = arith.cmpi eq, %c, %z : i32\n  scf.if %d {\n'
     '    "memref.copy"(%a, %a) : (memref<4xi32>, memref<4xi32>) -> ()\n  }\n  func.return\n}',
     "5:3", "core index"),
])
def test_bad_input_is_an_error_with_file_line_and_column(text, where, words):
    with pytest.raises(KernelError) as info:
        import_text(text, "bad.mlir")
    rendered = info.value.render()
    assert rendered.startswith(f"bad.mlir:{where}") and words in rendered, rendered


# ------------------------------------------------------------ emit


@pytest.mark.parametrize("strategy", ["snax-barrier", "threshold", "barrier"])
def test_emit_mlir_round_trips_through_xdsl(strategy):
    from semantics.mlir.emit import emit
    from semantics.mlir.parse import Chunk, op_name, parse_chunk

    case = import_file(str(DERIVED / "tiled_loop.mlir"))[0]
    synced = get_strategy(strategy)(case.program).program
    text = emit(case, synced)
    module, _ = parse_chunk(Chunk(text, 1, 1), "emitted.mlir")
    names = [op_name(op) for op in module.walk()]
    stmts = list(walk_stmts(synced.body))
    assert names.count("snax.cluster_sync_op") == sum(isinstance(s, Barrier) for s in stmts)
    assert names.count("syncproof.wait") == sum(len(s.waits) for s in stmts if isinstance(s, Op))
    again = import_text(text.replace('"syncproof.', '"test.syncproof_'), "emitted.mlir")[0].program
    assert [s for s in walk_stmts(again.body) if isinstance(s, Barrier)] == \
        [s for s in walk_stmts(synced.body) if isinstance(s, Barrier)]


def test_emitted_snax_barrier_matches_the_pass_output_op_for_op():
    """At the MLIR level too: the pre-order op names equal the pass's output's."""
    from semantics.mlir.emit import emit
    from semantics.mlir.parse import Chunk, op_name, parse_chunk

    source = DATA / "insert-sync-barrier.mlir"
    pairs = list(zip(import_file(str(source)), _expected_cases(source)))
    for out in sorted(DERIVED.glob("*.out-insert-sync-barrier.mlir")):
        pairs.append((import_file(str(out.with_name(out.name.replace(".out-insert-sync-barrier", ""))))[0],
                      out.read_text()))
    assert len(pairs) == len(CONFORMANCE)
    for case, expected in pairs:
        text = emit(case, get_strategy("snax-barrier")(case.program).program)
        ours = [op_name(op) for op in parse_chunk(Chunk(text, 1, 1), "x")[0].walk()]
        theirs = [op_name(op) for op in parse_chunk(Chunk(expected, 1, 1), "y")[0].walk()]
        assert ours == theirs, case.chunk


# ------------------------------------------------------------ command line and bench




def _cli(*args: str):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "verify.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_cli_import_verify_emit_and_errors(tmp_path):
    source = str(DATA / "insert-sync-barrier.mlir")
    run = _cli("import-mlir", source, "-o", str(tmp_path / "isb.sync"))
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"isb.{n}.sync" for n in range(1, 6)]
    assert parse((tmp_path / "isb.4.sync").read_text()).engines == ("DM", "COMPUTE")
    gap = str(DERIVED / "loop_nested_if_gap.out-insert-sync-barrier.mlir")
    run = _cli("verify", gap, "--strategy", "manual", "--property", "soundness", "--json")
    assert run.returncode == 1 and '"verdict": "unsound"' in run.stdout and '"trace"' in run.stdout, run
    run = _cli("sync", f"{source}:4", "--strategy", "snax-barrier", "--emit", "mlir")
    assert run.returncode == 0 and run.stdout.count('"snax.cluster_sync_op"') == 2, run
    bad = tmp_path / "bad.mlir"
    bad.write_text('"builtin.module"() ({\n  "scf.while"() ({\n  }, {\n  }) : () -> ()\n}) : () -> ()\n')
    for args in (("check", str(bad)), ("import-mlir", source, "--case", "9"), ("check", source)):
        run = _cli(*args)
        assert run.returncode == 2 and "Traceback" not in run.stderr, run
    assert f"{bad}:2:3: error: unsupported op 'scf.while'" in _cli("check", str(bad)).stderr


PREFETCH = ROOT / "kernels" / "snax" / "tiled_add_prefetch.mlir"


def test_threshold_shows_the_barrier_free_gain_on_a_prefetching_snax_kernel():
    program = syncproof.load(PREFETCH)
    runs = {s: syncproof.simulate(program, strategy=s, profile="snax") for s in ("oracle", "threshold", "snax-barrier")}

    def barriers_passed(strategy):  # by the timed run
        return len(unroll(syncproof.sync(program, strategy).program, runs[strategy].param).barriers)

    assert barriers_passed("snax-barrier") == 16 and barriers_passed("threshold") == 0
    assert runs["oracle"].cycles <= runs["threshold"].cycles < runs["snax-barrier"].cycles
    assert runs["snax-barrier"].cycles / runs["threshold"].cycles > 1.1


def test_bench_times_an_mlir_kernel_with_snax_barrier_too(capsys):
    """`syncproof bench` adds snax-barrier for an .mlir kernel; its rows are the API's timings."""
    from verify.cli.main import main

    assert main(["bench", "--json", "--profile", "snax", str(PREFETCH)]) == 0
    by = {r["strategy"]: r for r in json.loads(capsys.readouterr().out)}
    assert set(by) == {"oracle", "threshold", "barrier", "snax-barrier"}
    assert by["snax-barrier"]["barriers"] == 16 and by["threshold"]["barriers"] == 0
    program = syncproof.load(PREFETCH)
    for strategy, row in by.items():
        assert row["cycles"] == syncproof.simulate(program, strategy=strategy, profile="snax").cycles, strategy
    assert by["threshold"]["vs_snax_barrier"] == by["snax-barrier"]["cycles"] / by["threshold"]["cycles"]


def test_snax_barrier_on_a_written_kernel_uses_buffers_as_ssa_values():
    kernel = parse("engines DM COMPUTE\nparam N = 2\nfor i in 0..N {\n  DM load writes a wait COMPUTE >= i\n"
                   "  COMPUTE mm reads a writes b\n}\nDM store reads b\n")
    synced = get_strategy("snax-barrier")(kernel).program
    assert print_program(synced).splitlines()[3:] == [
        "  DM load writes a", "  barrier", "  COMPUTE mm reads a writes b", "  barrier", "}", "DM store reads b"]
    assert _verify(synced).holds


def test_emit_keeps_a_barrier_alone_in_an_scf_if():
    from semantics.mlir.emit import emit

    text = ('func.func @f(%a : memref<4xi32>, %n : index) {\n  %c0 = arith.constant 0 : index\n'
            '  %p = arith.cmpi ugt, %n, %c0 : index\n  scf.if %p {\n    "snax.cluster_sync_op"() : () -> ()\n  }\n'
            '  "memref.copy"(%a, %a) : (memref<4xi32>, memref<4xi32>) -> ()\n  func.return\n}\n')
    case = import_text(text, "f.mlir")[0]
    assert emit(case, case.program).count('"snax.cluster_sync_op"') == 1
