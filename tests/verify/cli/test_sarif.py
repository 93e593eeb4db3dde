"""`verify --format sarif` (verify/cli/sarif.py): every log validates against the official
SARIF 2.1.0 schema (tests/data/schemas/sarif-schema-2.1.0.json), findings sit at the
source line of the wait at fault, and the code flow walks the shortest trace op by op."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from verify.cli.main import main

jsonschema = pytest.importorskip("jsonschema")

ROOT = Path(__file__).parents[3]
BUGS = ROOT / "kernels" / "bugs"
SCHEMA = json.loads((ROOT / "tests" / "data" / "schemas" / "sarif-schema-2.1.0.json").read_text())
VALIDATOR = jsonschema.Draft4Validator(SCHEMA)


def sarif(capsys, *argv) -> tuple[int, dict]:
    status = main(["verify", *argv, "--format", "sarif"])
    return status, json.loads(capsys.readouterr().out)


def line_of_op(source: str, engine_op: str) -> int:
    """The line declaring op `ENGINE.name`, found in the text (not through the parser)."""
    engine, name = engine_op.split(".")
    name = name.split("[")[0].removesuffix(".trigger")
    lines = source.splitlines()
    return next(n for n, line in enumerate(lines, 1) if re.match(rf"\s*{engine}\s+{name}\b", line))


def check_trace_lines(log: dict, source: str) -> None:
    """Every thread-flow step points at the line of the op its message names."""
    (result, *_) = log["runs"][0]["results"]
    steps = result["codeFlows"][0]["threadFlows"][0]["locations"]
    for step in steps:
        label = step["location"]["message"]["text"].split(":")[0].split()[1]
        assert step["location"]["physicalLocation"]["region"]["startLine"] == line_of_op(source, label), step


CASES = [  # kernel, its verdict with the manual strategy, the SARIF level of its result
    ("ring_off_by_one.sync", "unsound", "error"),
    ("cyclic_wait_deadlock.sync", "deadlock", "error"),
    ("pipeline_overwait.sync", "over-synchronized", "warning"),
]


@pytest.mark.parametrize("kernel, verdict, level", CASES)
def test_a_finding_is_a_result_at_the_wait_at_fault_with_the_trace(capsys, kernel, verdict, level):
    path = BUGS / kernel
    source = path.read_text()
    status, log = sarif(capsys, str(path), "--strategy", "manual", "--scope", "bounded")
    VALIDATOR.validate(log)
    assert status == 1
    run = log["runs"][0]
    assert run["properties"]["verdict"] == verdict and run["invocations"][0]["executionSuccessful"] is True
    (result, *more) = run["results"]
    assert result["ruleId"] == verdict and result["level"] == level
    region = result["locations"][0]["physicalLocation"]["region"]
    line = source.splitlines()[region["startLine"] - 1]
    before, at = line[:region["startColumn"] - 1], line[region["startColumn"] - 1:]
    assert before.rstrip().endswith("wait") and re.match(r"\w+\s*>=", at), line  # the wait clause itself
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == str(path)
    check_trace_lines(log, source)
    steps = result["codeFlows"][0]["threadFlows"][0]["locations"]
    assert [s["executionOrder"] for s in steps] == sorted(s["executionOrder"] for s in steps)


def test_a_bisimilar_verdict_is_a_run_without_results(capsys):
    status, log = sarif(capsys, str(ROOT / "kernels" / "pipeline_db.sync"), "--scope", "bounded",
                        "--param", "N=0..2")
    VALIDATOR.validate(log)
    assert status == 0 and log["runs"][0]["results"] == []
    assert log["runs"][0]["properties"]["verdict"] == "bisimilar"


def test_an_unknown_verdict_is_a_notification_and_exit_3(capsys):
    status, log = sarif(capsys, str(ROOT / "kernels" / "pipeline_db.sync"), "--scope", "bounded",
                        "--engine", "explicit", "--max-states", "5", "--param", "N=3..3")
    VALIDATOR.validate(log)
    invocation = log["runs"][0]["invocations"][0]
    assert status == 3 and invocation["executionSuccessful"] is False
    assert "unknown" in invocation["toolExecutionNotifications"][0]["message"]["text"]


def test_json_and_format_json_agree_and_conflicting_formats_are_refused(capsys):
    path = str(BUGS / "ring_off_by_one.sync")
    argv = ["verify", path, "--strategy", "manual", "--scope", "bounded"]
    assert main([*argv, "--json"]) == 1
    plain = json.loads(capsys.readouterr().out)
    assert main([*argv, "--format", "json"]) == 1
    assert json.loads(capsys.readouterr().out) == plain
    assert main([*argv, "--json", "--format", "sarif"]) == 2
    assert "disagree" in capsys.readouterr().err


def test_broken_logs_are_caught(capsys):
    """Teeth: the schema refuses a result without a message and a region at line 0, and
    the trace check refuses a step moved to another line."""
    path = BUGS / "ring_off_by_one.sync"
    _, log = sarif(capsys, str(path), "--strategy", "manual", "--scope", "bounded")
    no_message = copy.deepcopy(log)
    del no_message["runs"][0]["results"][0]["message"]
    line_zero = copy.deepcopy(log)
    line_zero["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
    for broken in (no_message, line_zero):
        with pytest.raises(jsonschema.ValidationError):
            VALIDATOR.validate(broken)
    moved = copy.deepcopy(log)
    step = moved["runs"][0]["results"][0]["codeFlows"][0]["threadFlows"][0]["locations"][0]
    step["location"]["physicalLocation"]["region"]["startLine"] += 1
    with pytest.raises(AssertionError):
        check_trace_lines(moved, path.read_text())


def test_a_finding_without_a_wait_in_the_source_is_at_its_op(capsys):
    """The barrier strategy blocks with barriers it inserted (no source position): the
    result sits at the blocked op's own line."""
    path = ROOT / "kernels" / "pipeline_db.sync"
    status, log = sarif(capsys, str(path), "--strategy", "barrier", "--scope", "bounded", "--param", "N=0..2")
    VALIDATOR.validate(log)
    (result,) = log["runs"][0]["results"]
    assert status == 1 and result["ruleId"] == "over-synchronized"
    blocked = result["message"]["text"].split(": issue ")[1].split()[0]  # ENGINE.op
    region = result["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] == line_of_op(path.read_text(), blocked)


def test_a_failure_the_property_allows_is_a_note(capsys):
    status, log = sarif(capsys, str(BUGS / "pipeline_overwait.sync"), "--strategy", "manual", "--scope", "bounded",
                        "--property", "soundness")
    VALIDATOR.validate(log)
    (result,) = log["runs"][0]["results"]
    assert status == 0 and result["ruleId"] == "over-synchronized" and result["level"] == "note"
