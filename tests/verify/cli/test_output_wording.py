"""The text answer says what it shows, in order: a counterexample that the all-values
proof found outside the checked bounds is announced as such on the `bounds:` line, the
proof's line points back at it (it is printed before), and progress counts Z3 queries
by that name (an obligation takes one or more)."""

from __future__ import annotations

from verify.cli.main import main

# Exact up to i = 3; from i = 4 on, c waits for one instance of p too few.
LATE_BUG = """engines A B
param N
for i in 0..N {
  A p writes x[i]
  B c reads x[i] wait A >= (if i >= 4 then i else i + 1)
}
"""


def test_a_counterexample_outside_the_bounds_is_announced_and_referred_to_above(tmp_path, capsys):
    kernel = tmp_path / "late_bug.sync"
    kernel.write_text(LATE_BUG)
    status = main(["verify", "--strategy", "manual", "--proof-jobs", "1", str(kernel)])
    out = capsys.readouterr().out
    assert status == 1, out
    lines = out.splitlines()
    bounds = next(line for line in lines if line.startswith("bounds:"))
    assert "outside the checked bounds N=0..3" in bounds, out
    trace_at = next(i for i, line in enumerate(lines) if line.startswith("trace") or "trace" in line.lower())
    refuted_at = next(i for i, line in enumerate(lines) if "refuted outside the bounds" in line)
    assert trace_at < refuted_at and "counterexample above" in lines[refuted_at], out


def test_the_bounds_line_of_an_answer_within_the_bounds_is_plain(tmp_path, capsys):
    kernel = tmp_path / "late_bug.sync"
    kernel.write_text(LATE_BUG)
    status = main(["verify", "--strategy", "manual", "--param", "N=0..6", "--proof-jobs", "1", str(kernel)])
    out = capsys.readouterr().out
    assert status == 1
    bounds = next(line for line in out.splitlines() if line.startswith("bounds:"))
    assert bounds.startswith("bounds: N=0..6 (inclusive;"), out
