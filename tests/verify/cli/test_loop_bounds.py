"""Loop bounds follow Python's range everywhere (docs/language.md):
an upper bound at or below the lower bound runs zero times, and bounds (so loop
variables) may be negative, in every command alike."""

import re
from pathlib import Path

import pytest

from semantics.parser import parse_file
from semantics.sequential import unroll
from tests.support.oracle import unroll_program
from verify.cli.main import main

DATA = Path(__file__).parents[2] / "data" / "loop_bounds"
KERNELS = sorted(DATA.glob("*.sync"))


def _trips(path: Path) -> dict[int, int]:
    line = next(l for l in path.read_text().splitlines() if l.startswith("# trips:"))
    return {int(n): int(c) for n, c in re.findall(r"N=(\d+):(\d+)", line)}


@pytest.mark.parametrize("path", KERNELS, ids=lambda p: p.stem)
def test_unroll_runs_empty_ranges_zero_times(path):
    program = parse_file(str(path))
    for n, count in _trips(path).items():
        assert len(unroll(program, {"N": n}).instances) == count, n
        assert len(unroll_program(program, {"N": n}).instances) == count, n


@pytest.mark.parametrize("path", KERNELS, ids=lambda p: p.stem)
@pytest.mark.parametrize("engine", ["explicit", "z3"])
def test_every_command_takes_a_kernel_with_empty_or_negative_ranges(path, engine, capsys, tmp_path):
    assert main(["check", str(path)]) == 0
    assert main(["sync", str(path), "-o", str(tmp_path / "s.sync")]) == 0
    assert main(["verify", "--engine", engine, "--max-param", "7", "--json", str(path)]) == 0
    assert '"verdict": "bisimilar"' in capsys.readouterr().out
    for n in (0, 1, 8):
        assert main(["simulate", "--param", f"N={n}", str(path)]) == 0
    assert "error" not in capsys.readouterr().err


def test_all_values_proof_covers_the_empty_producer_loop(capsys):
    """The proof has no loop-bound obligation any more; it still proves the waits of a
    consumer whose producer loop is empty for N < 6."""
    path = DATA / "empty_range_with_dependences.sync"
    assert main(["verify", "--json", "--max-param", "7", str(path)]) == 0
    out = capsys.readouterr().out
    assert '"scope": "all"' in out
