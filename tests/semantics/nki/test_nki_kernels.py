"""The NKI front end on the project's own NKI-style kernels (tests/data/nki/*.py): each
imports to the program of the hand-written .sync beside it, syncs with the threshold
strategy, and verifies bisimilar within small bounds; the command line reads .py files
everywhere a kernel is read, and --nki-engine moves a call to another engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import syncproof
from semantics.parser import parse_file
from syncproof import Scope, Verdict, VerifyOptions
from verify.cli.main import main

DATA = Path(__file__).resolve().parents[2] / "data" / "nki"
KERNELS = sorted(p.stem for p in DATA.glob("*.py"))


def test_every_kernel_has_its_expected_program():
    assert len(KERNELS) >= 12
    assert all((DATA / f"{name}.sync").exists() for name in KERNELS)


@pytest.mark.parametrize("name", KERNELS)
def test_imported_program_equals_the_hand_written_one(name):
    # Programs compare by structure (locations are not part of equality).
    assert syncproof.load(DATA / f"{name}.py") == parse_file(str(DATA / f"{name}.sync"))


@pytest.mark.parametrize("name", KERNELS)
def test_imported_kernel_syncs_and_verifies_bisimilar(name):
    program = syncproof.load(DATA / f"{name}.py")
    synced = syncproof.sync(program, "threshold")
    assert synced.stats.waits > 0  # every kernel moves data between engines
    report = syncproof.verify(program, VerifyOptions(strategy="threshold", scope=Scope.BOUNDED, max_param=2))
    assert report.verdict == Verdict.BISIMILAR and report.holds


def test_unsynchronized_import_is_caught_racing():
    # Teeth for the test above: the imported matmul as written (no waits) is not
    # bisimilar, so a passing verdict is the strategy's doing.
    program = syncproof.load(DATA / "tiled_matmul.py")
    report = syncproof.verify(program, VerifyOptions(strategy="manual", scope=Scope.BOUNDED, max_param=1))
    assert not report.holds


def test_import_nki_prints_a_program_that_parses_back(tmp_path, capsys):
    assert main(["import-nki", str(DATA / "tiled_matmul.py")]) == 0
    text = capsys.readouterr().out
    assert "# shape parameter: K = 128 * K_tiles" in text
    out = tmp_path / "mm.sync"
    out.write_text(text)
    assert parse_file(str(out)) == parse_file(str(DATA / "tiled_matmul.sync"))
    assert main(["import-nki", str(DATA / "softmax.py"), "-o", str(out)]) == 0
    assert parse_file(str(out)) == parse_file(str(DATA / "softmax.sync"))


def test_every_command_reads_a_py_kernel(tmp_path, capsys):
    kernel = str(DATA / "softmax.py")
    assert main(["check", kernel]) == 0
    assert main(["sync", kernel]) == 0
    assert "wait" in capsys.readouterr().out
    assert main(["verify", kernel, "--max-param", "2", "--scope", "bounded", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verdict"] == "bisimilar"
    assert main(["simulate", kernel, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cycles"] > 0
    assert main(["bench", "--json", kernel]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["strategy"] for r in rows} >= {"threshold", "barrier"}
    assert main(["check", f"{DATA / 'softmax.py'}:softmax"]) == 0


def test_nki_engine_moves_a_call_and_is_checked(capsys):
    kernel = str(DATA / "engines.py")
    assert main(["check", kernel, "--nki-engine", "nl.exp=POOL"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "POOL exp_L22 reads r writes e" in [line.strip() for line in lines]
    assert main(["check", kernel, "--nki-engine", "nl.nothing=POOL"]) == 2
    assert "--nki-engine nl.nothing" in capsys.readouterr().err
    assert main(["check", kernel, "--nki-engine", "exp"]) == 2
    # explicit engine= in the source wins over an override of the default
    assert syncproof.load(kernel, nki_engines=["nisa.tensor_tensor=ACT"]).engines == (
        "DMA0", "PE", "ACT", "DVE", "POOL", "DMA1")


def test_a_file_with_several_kernels_needs_a_function(tmp_path, capsys):
    two = tmp_path / "two.py"
    two.write_text((DATA / "softmax.py").read_text() + "\n\n@nki.jit\ndef other(x):\n"
                   "    t = nl.load(x)\n    nl.store(x, value=t)\n")
    assert main(["check", str(two)]) == 2
    assert "2 NKI kernels (softmax, other)" in capsys.readouterr().err
    assert main(["check", f"{two}:other"]) == 0
    assert main(["check", f"{two}:missing"]) == 2


def test_corpus_bench_reports_each_kernel_of_a_directory(tmp_path):
    import subprocess
    import sys

    for name in ("softmax", "tiled_matmul"):
        (tmp_path / f"{name}.py").write_text((DATA / f"{name}.py").read_text())
    (tmp_path / "bad.py").write_text("import nki\n\n@nki.jit\ndef bad(a):\n    while True:\n        pass\n")
    root = DATA.parents[2]
    run = subprocess.run([sys.executable, "bench/nki_corpus.py", str(tmp_path), "--json"], cwd=root,
                         capture_output=True, text=True, check=True)
    report = json.loads(run.stdout)
    status = {r["kernel"]: r["status"] for r in report["rows"]}
    assert status == {"softmax": "imported", "tiled_matmul": "imported", "bad": "refused"}
    assert report["kernels"] == 3 and report["imported"] == 2
    assert report["refusals"] == {"unsupported NKI construct 'while'": 1}


def test_kernels_are_found_under_every_decorator_style():
    from semantics.nki import kernel_names

    source = (
        "import neuronxcc.nki as nki\nfrom neuronxcc.nki import baremetal, jit\nimport nki as nki2\n\n"
        "@nki.jit\ndef a(x): pass\n\n@nki.jit(mode='trace')\ndef b(x): pass\n\n"
        "@baremetal\ndef c(x): pass\n\n@jit\ndef d(x): pass\n\n"
        "@nki.compiler.skip_middle_end_transformations\n@nki.jit\ndef e(x): pass\n\n"
        "@nki2.baremetal(save_neff_name='f.neff')\ndef f(x): pass\n\n"
        "def helper(x): pass\n\n@staticmethod\ndef g(x): pass\n")
    assert kernel_names(source) == ["a", "b", "c", "d", "e", "f"]
