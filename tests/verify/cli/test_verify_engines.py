"""`verify --engine auto|hb|explicit` and `--workers`: the same answer in the same JSON
fields, the engine named; flags and tokens go to the explicit engine."""

from __future__ import annotations

import json

import pytest

from tests.support.corpus import ROOT
from verify.cli.main import main

KERNEL = str(ROOT / "kernels" / "bugs" / "ring_off_by_one.sync")
SAME = ("verdict", "holds", "param", "trace", "failing", "explanation", "valuations", "total_valuations")


def run(capsys, *args):
    code = main(["verify", "--strategy", "manual", "--scope", "bounded", "--json", *args])
    return code, json.loads(capsys.readouterr().out)


def test_the_default_engine_is_happens_before_and_agrees_with_explicit(capsys):
    code, auto = run(capsys, KERNEL)
    _, hb = run(capsys, KERNEL, "--engine", "hb")
    explicit_code, explicit = run(capsys, KERNEL, "--engine", "explicit")
    assert auto["engine"] == hb["engine"] == "happens-before" and explicit["engine"] == "explicit"
    assert code == explicit_code == 1 and auto["verdict"] == "unsound"
    assert {k: auto[k] for k in SAME} == {k: explicit[k] for k in SAME} == {k: hb[k] for k in SAME}


def test_workers_give_the_serial_answer(capsys):
    _, serial = run(capsys, KERNEL, "--max-param", "4")
    _, pooled = run(capsys, KERNEL, "--max-param", "4", "--workers", "2")
    assert {k: pooled[k] for k in SAME} == {k: serial[k] for k in SAME}


def test_flags_go_to_the_explicit_engine_and_hb_refuses_them(capsys, tmp_path):
    kernel = tmp_path / "flags.sync"
    kernel.write_text("engines A B\nA a writes x setflag B:0\nB b reads x waitflag A:0\n")
    code, auto = run(capsys, str(kernel))
    assert code == 0 and auto["engine"] == "explicit" and auto["verdict"] == "bisimilar"
    assert main(["verify", "--strategy", "manual", "--engine", "hb", str(kernel)]) == 2
    assert "does not handle" in capsys.readouterr().err


@pytest.mark.parametrize("bad", [["--workers", "0"], ["--engine", "fast"]])
def test_bad_fan_out_or_engine_is_a_usage_error(capsys, bad):
    assert main(["verify", KERNEL, *bad]) == 2
