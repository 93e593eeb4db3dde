"""The command-line surface not covered elsewhere: `search` from the command line,
verify's budget flags, its text output and
printed trace, `check`'s canonical form, the values in the `sync` statistics line, and
a few smaller regressions."""

import json
import re
from functools import partial
from pathlib import Path

import pytest

from semantics.parser import parse, parse_file
from semantics.printer import print_program
from verify.cli.main import main

ROOT = Path(__file__).parents[3]
DATA = ROOT / "tests" / "data"
TINY, TINY_MLIR = str(DATA / "cli" / "tiny.sync"), str(DATA / "cli" / "tiny.mlir")
WIDE = str(DATA / "repro" / "wide_independent_loops.sync")
DEADLOCK = str(ROOT / "kernels" / "bugs" / "barrier_reset_deadlock.sync")


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if "error" in line]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# ------------------------------------------------------------------ search


def test_search_finds_shrinks_and_writes_a_reproducer_without_unused_params(tmp_path, capsys):
    """barrier over-synchronizes, so a bisimulation search must find a kernel; the shrunk
    kernel keeps no `param` that nothing names (item 9)."""
    status = main(["search", "--strategy", "barrier", "--examples", "20", "--out", str(tmp_path), "--json"])
    assert status == 1
    data = json.loads(capsys.readouterr().out)
    assert data["found"] is True and data["result"]["verdict"] == "over-synchronized"
    kernel = parse(data["kernel"])
    named = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", data["kernel"].split("\n", 2)[-1]))
    assert all(p.name in named for p in kernel.params)
    written = [Path(p) for p in data["reproducer"]]
    assert [p.suffix for p in written] == [".sync", ".py"] and all(p.exists() for p in written)
    assert print_program(parse_file(str(written[0]))) == data["kernel"]


def test_search_without_a_counterexample_exits_0(capsys):
    assert main(["search", "--examples", "5", "--max-param", "1"]) == 0
    assert "no counterexample to bisimulation for strategy threshold in" in capsys.readouterr().out


def test_search_without_unused_params_keeps_used_ones():
    from verify.search.search import without_unused_params

    program = parse("engines A B\nparam N, M, K\nfor i in 0..N {\n  A a writes x[i + K]\n}\n")
    assert [p.name for p in without_unused_params(program).params] == ["N", "K"]


# ------------------------------------------------------------------ verify flags


def test_verify_timeout_flag_gives_unknown_exit_3(capsys):
    """The flag's plumbing: 50 ms is far below what N=12 needs on any machine. The time
    limit itself is tested on a fake clock (tests/verify/engines/test_valuations.py)."""
    assert main(["verify", "--engine", "explicit", "--scope", "bounded", "--timeout", "0.05", "--param", "N=12", WIDE]) == 3
    assert "verdict: unknown (time limit reached" in capsys.readouterr().out


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
@pytest.mark.parametrize("flag", ["--timeout", "--proof-timeout"])
def test_verify_time_limits_must_be_positive(flag, value, capsys):
    assert main(["verify", flag, value, TINY]) == 2
    assert f"argument {flag}" in _one_error_line(capsys.readouterr().err)


def test_verify_max_states_flag_gives_unknown_exit_3(capsys):
    assert main(["verify", "--engine", "explicit", "--scope", "bounded", "--max-states", "20", "--json", TINY]) == 3
    data = json.loads(capsys.readouterr().out)
    assert data["verdict"] == "unknown" and "state limit of 20 reached" in data["reason"]


def test_verify_dump_smt_writes_a_query_that_ends_unknown(tmp_path, monkeypatch, capsys):
    """Z3 answers unknown on a deterministic budget: the z3 engine's options get a
    resource limit of one unit per query (our Z3Options, where the command builds them;
    a real timeout depends on load). The flag's plumbing and the file are what is tested."""
    from verify.engines import z3_check

    monkeypatch.setattr(z3_check, "Z3Options", partial(z3_check.Z3Options, query_rlimit=1))
    out = tmp_path / "smt"
    assert main(["verify", "--engine", "z3", "--scope", "bounded", "--dump-smt", str(out), TINY]) == 3
    text = capsys.readouterr().out
    dumped = sorted(out.glob("*.smt2"))
    assert len(dumped) == 1 and str(dumped[0]) in text
    assert "(check-sat)" in dumped[0].read_text()


def test_verify_proof_timeout_flag_is_honoured(capsys):
    """The flag's plumbing: a budget of 10 ms ends this proof (which needs far more on
    any machine) and the reason names it. How the budget ends the proof is tested on a
    fake clock (tests/verify/proof/test_prove.py)."""
    assert main(["verify", "--json", "--proof-timeout", "0.01", "--max-param", "2", WIDE]) == 0
    proof = json.loads(capsys.readouterr().out)["all_values"]
    assert proof["status"] == "unknown" and "wall-clock cap of 0.01 s set by --proof-timeout ran out" in proof["reason"]


def test_proof_timeout_reason_names_the_budget_whichever_check_sees_it_first(capsys, monkeypatch):
    """The budget can run out at an obligation's own check (obligations.py) rather
    than at the proof's deadline (prove.py); the reason must still name the amount. Here
    the obligation's check is forced to see it first."""
    from verify.proof.obligations import Prover

    monkeypatch.setattr(Prover, "out_of_time", lambda self: True)
    # --proof-jobs 1: the proof in this process, where the patch is (workers start fresh)
    assert main(["verify", "--json", "--proof-timeout", "0.5", "--max-param", "2", "--proof-jobs", "1", WIDE]) == 0
    proof = json.loads(capsys.readouterr().out)["all_values"]
    assert proof["status"] == "unknown" and "wall-clock cap of 0.5 s set by --proof-timeout ran out" in proof["reason"]


def test_verify_text_output_and_trace(capsys):
    assert main(["verify", "--engine", "explicit", "--strategy", "manual", DEADLOCK]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{DEADLOCK}: strategy manual, engine explicit, property bisimulation"
    assert out[1] == "bounds: N=0..3 (inclusive; 4 of 4 valuations explored, 98 states)"
    assert out[2] == "verdict: deadlock at N=1"
    assert out[3] == "shortest trace to the deadlock state (8 steps, N=1):"
    assert out[4:12] == [f"  {n}. {kind:<8} {label}" for n, (kind, label) in enumerate([
        ("issue", "LD.load[i=0]"), ("complete", "LD.load[i=0]"), ("issue", "PE.mm[i=0]"),
        ("complete", "PE.mm[i=0]"), ("issue", "ST.store[i=0]"), ("complete", "ST.store[i=0]"),
        ("issue", "PE.sum"), ("complete", "PE.sum")], 1)]
    assert out[12] == "     issue    ST.out  <-- blocked"
    assert "its wait PE >= 2 (line 24) blocks it: C[PE] = 1" in out[-1]


# ------------------------------------------------------------------ check and sync


def test_check_prints_the_canonical_form(tmp_path, capsys):
    messy = tmp_path / "messy.sync"
    messy.write_text("engines LD PE   # comment\nparam N=2\nfor i in 0 .. N-1 {\n"
                     "  LD load writes a[i%2] lat 4\n  PE mm reads a[ i % 2 ]  wait LD>=i+1\n}\n")
    assert main(["check", str(messy)]) == 0
    canonical = capsys.readouterr().out
    assert canonical == ("engines LD PE\nparam N = 2\nfor i in 0..N - 1 {\n"
                         "  LD load writes a[i % 2] lat 4\n  PE mm reads a[i % 2] wait LD >= i + 1\n}\n")
    again = tmp_path / "again.sync"
    again.write_text(canonical)
    assert main(["check", str(again)]) == 0
    assert capsys.readouterr().out == canonical  # a fixed point


@pytest.mark.parametrize("strategy, values", [
    ("threshold", {"dependence edges (op pairs)": 4, "waits": 4, "dropped as redundant": 0, "barriers": 0}),
    ("barrier", {"waits": 2, "barriers": 2}),
])
def test_sync_statistics_line_counts_what_the_output_holds(strategy, values, capsys):
    assert main(["sync", "--strategy", strategy, TINY]) == 0
    captured = capsys.readouterr()
    line = next(l for l in captured.err.splitlines() if l.startswith("sync: strategy"))
    for what, number in values.items():
        assert f"{number} {what}" in line, line
    synced = parse(captured.out)
    assert sum(len(op.waits) for op in _ops(synced.body)) == values["waits"]
    assert captured.out.count("barrier\n") == values["barriers"]


def _ops(body):
    from semantics.ir import walk_stmts, Op

    return [s for s in walk_stmts(body) if isinstance(s, Op)]


# ------------------------------------------------------------------ item 9


def test_simulate_error_names_the_file(tmp_path, capsys):
    kernel = tmp_path / "div.sync"
    kernel.write_text("engines A\nparam N\nfor i in 0..N {\n  A a writes x[i // (N - 2)]\n}\n")
    assert main(["simulate", "--param", "N=2", str(kernel)]) == 2
    assert _one_error_line(capsys.readouterr().err).startswith(f"{kernel}:4:18: error: division by zero")


@pytest.mark.parametrize("command", [["lean", "-o", "OUT"], ["mutate", "--max-param", "0"]])
def test_lean_and_mutate_take_mlir(command, tmp_path, capsys):
    # whole-buffer copies: tiny.mlir's subviews are range accesses, which `lean` refuses
    whole = str(Path(TINY_MLIR).with_name("tiny_whole.mlir"))
    argv = [command[0], whole, *[str(tmp_path / "lean") if a == "OUT" else a for a in command[1:]]]
    assert main(argv) == 0, capsys.readouterr().err
    assert "unexpected '//'" not in capsys.readouterr().err


def test_import_mlir_on_a_sync_file_says_so_in_one_line(capsys):
    assert main(["import-mlir", TINY]) == 2
    assert "import-mlir reads an .mlir file" in _one_error_line(capsys.readouterr().err)


@pytest.mark.parametrize("command", ["sync", "verify", "simulate", "lean", "mutate", "search"])
def test_help_lists_the_strategies(command, capsys):
    assert main([command, "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for name in ("threshold", "barrier", "flags", "tokens", "manual", "snax-barrier"):
        assert name in out
    assert ("oracle" in out) == (command == "simulate")


def test_unknown_strategy_error_names_oracle_for_simulate(capsys):
    assert main(["simulate", "--strategy", "nope", TINY]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "unknown strategy 'nope'" in line and "oracle" in line


def test_lean_reexport_removes_stale_modules(tmp_path, capsys):
    out = tmp_path / "proj"
    assert main(["lean", str(ROOT / "kernels" / "pipeline_db.sync"), "-o", str(out)]) == 0
    first = {p.relative_to(out).as_posix() for p in out.rglob("*.lean")}
    (out / "notes.txt").write_text("mine")  # not the export's: kept
    assert main(["lean", TINY, "-o", str(out)]) == 0
    second = {p.relative_to(out).as_posix() for p in out.rglob("*.lean")}
    assert "Kernels/PipelineDb.lean" in first and "Kernels/PipelineDb.lean" not in second
    assert "Kernels/Tiny.lean" in second
    assert (out / "notes.txt").read_text() == "mine"
