"""One validation decides for every command: a latency expression that is negative for
some valuation the kernel allows (`lat 2 - N` with N unbounded above) is the same located
error, exit 2, from check, sync, verify, simulate, bench and lean, and never a verdict."""

from __future__ import annotations

import pytest

from verify.cli.main import main

KERNEL = """\
engines A B
param N = 1
A op1 writes x lat 2 - N
B op2 reads x
"""

COMMANDS = [["check"], ["sync"], ["verify"], ["verify", "--strategy", "manual"], ["simulate"], ["bench"],
            ["lean"]]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: "-".join(c))
def test_a_latency_negative_for_an_allowed_valuation_is_an_error_for_every_command(command, tmp_path, capsys):
    path = tmp_path / "neg.sync"
    path.write_text(KERNEL)
    out_dir = tmp_path / "lean"
    extra = ["-o", str(out_dir)] if command == ["lean"] else []
    assert main([*command, str(path), *extra]) == 2
    err = capsys.readouterr().err
    assert f"{path}:3:20: error: the latency `2 - N` of op 'op1' is negative (-1) at N = 3" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: "-".join(c))
def test_a_latency_non_negative_for_every_allowed_valuation_is_accepted(command, tmp_path, capsys):
    """Teeth: the same kernel with a latency non-negative for every N (`lat 2 + N`) is no error."""
    path = tmp_path / "pos.sync"
    path.write_text(KERNEL.replace("lat 2 - N", "lat 2 + N"))
    out_dir = tmp_path / "lean"
    extra = ["-o", str(out_dir)] if command == ["lean"] else []
    assert main([*command, str(path), *extra]) != 2, capsys.readouterr().err


NO_DEFAULT = """\
engines A B
param N
for i in 0..N {
  A op1 writes x[i] lat 64
  B op2 reads x[i] lat 64
}
"""


def test_bench_takes_the_parameter_value_its_error_asks_for(tmp_path, capsys):
    """`bench` on a parameter without a default says to give --param, and --param works."""
    path = tmp_path / "nodef.sync"
    path.write_text(NO_DEFAULT)
    assert main(["bench", str(path)]) == 2
    assert "parameter N has no default: give --param N=VALUE" in capsys.readouterr().err
    assert main(["bench", str(path), "--param", "N=2"]) == 0
    assert "nodef" in capsys.readouterr().out
