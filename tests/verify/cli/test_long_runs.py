"""Every progress path runs in every CI run: with
SYNCPROOF_PROGRESS_INTERVAL=0 each long-running command prints its progress lines at
once, on a small kernel, and must still succeed. Otherwise a progress path runs only in
long runs, which no test reaches, and a crash there goes unseen."""

import re
from pathlib import Path

import pytest

from verify.cli.main import main
from verify.progress import ENV_INTERVAL

ROOT = Path(__file__).parents[3]
DATA = ROOT / "tests" / "data"
TINY, TINY_MLIR = str(DATA / "cli" / "tiny.sync"), str(DATA / "cli" / "tiny.mlir")
WIDE = str(DATA / "repro" / "wide_independent_loops.sync")
LINE = re.compile(r"^syncproof (?P<command>[a-z-]+): (?P<text>.+) \(\d+\.\d+s\)$")


@pytest.fixture(autouse=True)
def progress_every_message(monkeypatch):
    monkeypatch.setenv(ENV_INTERVAL, "0")


def _progress(err: str, command: str) -> list[str]:
    return [m["text"] for m in map(LINE.match, err.splitlines()) if m and m["command"] == command]


CASES = {
    "verify-explicit": (["verify", "--engine", "explicit", "--scope", "bounded", TINY], "verify", "valuation 4/4 (N=3)"),
    # 31,223 states at N=6: the engine's line every 20,000 states (the one that crashed)
    "verify-explicit-states": (["verify", "--engine", "explicit", "--scope", "bounded", "--param", "N=6", WIDE], "verify",
                               "valuation 1/1 (N=6), 20000 states"),
    "verify-z3": (["verify", "--engine", "z3", "--scope", "bounded", TINY], "verify", "z3: event-time query"),
    "verify-both": (["verify", "--engine", "both", "--scope", "bounded", TINY], "verify", "z3: building"),
    "verify-proof": (["verify", TINY], "verify", "all-values proof: 1 Z3 query answered"),
    "verify-proof-verbose": (["verify", "--verbose", TINY], "verify", "prove: "),
    "verify-mlir": (["verify", "--engine", "explicit", "--scope", "bounded", TINY_MLIR], "verify", "valuation 1/1 (no parameters)"),
    "verify-hb": (["verify", "--scope", "bounded", "--param", "N=0..6", WIDE], "verify", "valuation 7/7"),
    "sync": (["sync", TINY], "sync", "syncing: threshold stage 'closed'"),
    "sync-barrier": (["sync", "--strategy", "barrier", TINY], "sync", "syncing: barrier region 1/1"),
    "simulate": (["simulate", TINY], "simulate", "simulating 9 instances"),
    "simulate-oracle": (["simulate", "--strategy", "oracle", TINY_MLIR], "simulate", "simulating"),
    "bench": (["bench", TINY], "bench", "tiny.sync tokens"),
    "search": (["search", "--examples", "3"], "search", "3 kernels tried"),
    "mutate": (["mutate", "--max-param", "1", TINY], "mutate", "1/24 threshold+1"),
}


@pytest.mark.parametrize("argv, command, expected", CASES.values(), ids=CASES.keys())
def test_progress_lines_appear_and_the_command_succeeds(argv, command, expected, capsys):
    status = main(argv)
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert "Traceback" not in captured.err
    lines = _progress(captured.err, command)
    assert any(expected in line for line in lines), captured.err


def test_default_interval_keeps_a_short_run_quiet(monkeypatch, capsys):
    monkeypatch.delenv(ENV_INTERVAL)
    assert main(["verify", "--scope", "bounded", TINY]) == 0
    assert _progress(capsys.readouterr().err, "verify") == []


def test_the_proof_announces_itself_and_its_budget_even_when_quiet(monkeypatch, capsys):
    monkeypatch.delenv(ENV_INTERVAL)
    assert main(["verify", "--proof-timeout", "7.5", TINY]) == 0
    err = capsys.readouterr().err
    lines = _progress(err, "verify")
    assert len(lines) == 1 and "budget 1,000,000,000 Z3 units" in lines[0] and "wall-clock cap 7.5 s" in lines[0], err
    assert "prove: " not in err  # per-obligation lines only with --verbose
