"""`syncproof-opt` (verify/xdsl_passes/opt.py) and xDSL's plugin discovery: the passes
and the dialect are reachable from xdsl-opt's own command line; failures are one
message on stderr with an exit status, never a traceback."""

from __future__ import annotations

import shutil
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from tests.verify.xdsl.support import SNAX
from verify.xdsl_passes.opt import main

TILED = SNAX / "derived" / "tiled_loop.mlir"
GAP = SNAX / "derived" / "subview_alias_gap.mlir"


def test_syncproof_opt_inserts_waits_and_verifies_them(tmp_path, capsys):
    out = tmp_path / "out.mlir"
    assert main(["--allow-unregistered-dialect", "-p", "canonicalize,syncproof-insert-sync,syncproof-verify-sync",
                 str(TILED), "-o", str(out)]) == 0
    text = out.read_text()
    assert '"syncproof.wait"' in text and "snax.cluster_sync_op" not in text


def test_a_refuted_property_is_exit_1_with_the_trace_on_stderr(capsys):
    status = main(["--allow-unregistered-dialect", "-p",
                   "syncproof-insert-sync{strategy=snax-barrier},syncproof-verify-sync{property=soundness}", str(GAP)])
    err = capsys.readouterr().err
    assert status == 1
    assert "soundness fails: unsound" in err and "issued before its producer DM.copy1" in err
    assert "Traceback" not in err


def test_input_the_passes_cannot_take_is_exit_2(tmp_path, capsys):
    """SNAX's dispatch_regions case 7: a test.op with a region, which the importer refuses."""
    source = tmp_path / "region.mlir"
    source.write_text((SNAX / "peers" / "dispatch_regions.mlir").read_text().split("// -----")[6])
    status = main(["--allow-unregistered-dialect", "-p", "syncproof-insert-sync", str(source)])
    err = capsys.readouterr().err
    assert status == 2
    assert "<module>:" in err and "unsupported op 'test.op'" in err and "Traceback" not in err


@pytest.mark.parametrize("argv, message", [
    (["-p", "nope", str(TILED)], "Unrecognized passes: ['nope']"),
    (["-p", "syncproof-insert-sync{strategy=a b}", str(TILED)], "not found in expected arguments"),
    (["-p", "syncproof-insert-sync{strategy=1 2}", str(TILED)], "Error parsing pass pipeline specification"),
    (["-p", "syncproof-insert-sync", "/nonexistent/in.mlir"], "/nonexistent/in.mlir: No such file or directory"),
])
def test_usage_errors_are_exit_2_with_one_message(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("syncproof-opt: error: ") and message in err and "Traceback" not in err


def test_the_script_and_the_xdsl_universe_are_declared():
    scripts = {e.name: e.value for e in entry_points(group="console_scripts")}
    assert scripts.get("syncproof-opt") == "verify.xdsl_passes.opt:main"
    universes = {e.name: e.value for e in entry_points(group="xdsl.universe")}
    assert universes.get("syncproof") == "verify.xdsl_passes.universe:SYNCPROOF_UNIVERSE"


def test_plain_xdsl_opt_finds_the_passes_and_the_dialect(tmp_path):
    """Through the entry point alone: xdsl-opt knows nothing of syncproof otherwise."""
    xdsl_opt = shutil.which("xdsl-opt", path=str(Path(sys.executable).parent))
    if xdsl_opt is None:
        pytest.skip("xdsl-opt is not installed next to this Python")
    done = subprocess.run([xdsl_opt, "--allow-unregistered-dialect", "-p",
                           "syncproof-insert-sync{strategy=threshold},syncproof-verify-sync", str(TILED)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert '"syncproof.wait"' in done.stdout
