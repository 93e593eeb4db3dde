"""docs/schemas/verify.schema.json describes `verify --json`: the output validates for
every kernel of kernels/, each verdict (the manual strategy on kernels/bugs/), unknown
by a state limit and by the time limit, --engine both, --property soundness, and the
all-values proof; and a broken output does not."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from verify.cli.main import main

jsonschema = pytest.importorskip("jsonschema")

ROOT = Path(__file__).parents[3]
SCHEMA = json.loads((ROOT / "docs" / "schemas" / "verify.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
KERNELS = sorted(p.name for p in (ROOT / "kernels").glob("*.sync"))
BUGS = sorted(p.name for p in (ROOT / "kernels" / "bugs").glob("*.sync"))


def verify_json(capsys, *argv) -> tuple[int, dict]:
    status = main(["verify", *argv, "--json"])
    return status, json.loads(capsys.readouterr().out)


def valid(data: dict) -> dict:
    errors = sorted(VALIDATOR.iter_errors(data), key=str)
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors]
    return data


def test_the_schema_is_a_valid_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("kernel", KERNELS)
def test_every_kernel_s_output_validates(capsys, kernel):
    status, data = verify_json(capsys, str(ROOT / "kernels" / kernel), "--scope", "bounded", "--max-param", "2")
    valid(data)
    assert status == {"bisimilar": 0, "unknown": 3}.get(data["verdict"], 0 if data["holds"] else 1)


@pytest.mark.parametrize("kernel", BUGS)
def test_every_failing_verdict_validates_with_its_counterexample(capsys, kernel):
    status, data = verify_json(capsys, str(ROOT / "kernels" / "bugs" / kernel), "--strategy", "manual",
                               "--scope", "bounded")
    valid(data)
    assert status == 1 and data["verdict"] in ("unsound", "deadlock", "over-synchronized")
    assert data["trace"] and data["failing"] and data["param"]


EACH_VERDICT = [  # argv (paths from the repository root), the verdict it gives
    (["kernels/pipeline_db.sync", "--scope", "bounded", "--param", "N=0..1"], "bisimilar"),
    (["kernels/bugs/ring_off_by_one.sync", "--strategy", "manual", "--scope", "bounded"], "unsound"),
    (["kernels/bugs/cyclic_wait_deadlock.sync", "--strategy", "manual", "--scope", "bounded"], "deadlock"),
    (["kernels/bugs/pipeline_overwait.sync", "--strategy", "manual", "--scope", "bounded"], "over-synchronized"),
    (["kernels/pipeline_db.sync", "--engine", "explicit", "--max-states", "5", "--scope", "bounded"], "unknown"),
]


def test_each_of_the_five_verdicts_validates(capsys):
    seen = []
    for argv, verdict in EACH_VERDICT:
        _, data = verify_json(capsys, str(ROOT / argv[0]), *argv[1:])
        seen.append(valid(data)["verdict"])
    assert seen == [verdict for _, verdict in EACH_VERDICT]
    assert set(seen) == set(SCHEMA["$defs"]["verdict"]["enum"])


OTHER_RUNS = {  # name: argv, the verdict it gives
    "over-synchronized allowed by soundness": (["kernels/bugs/pipeline_overwait.sync", "--strategy", "manual",
                                                "--property", "soundness", "--scope", "bounded"], "over-synchronized"),
    "unknown at the state limit": (["kernels/pipeline_db.sync", "--engine", "explicit", "--max-states", "5",
                                    "--scope", "bounded", "--param", "N=3..3"], "unknown"),
    "unknown at the time limit": (["kernels/pipeline_db.sync", "--timeout", "0.000001"], "unknown"),
    "both engines": (["kernels/pipeline_db.sync", "--engine", "both", "--scope", "bounded", "--param", "N=0..1"],
                     "bisimilar"),
    "both engines, unknown": (["kernels/pipeline_db.sync", "--engine", "both", "--max-states", "5", "--scope",
                               "bounded", "--param", "N=2..2"], "unknown"),
    "the all-values proof": (["kernels/pipeline_db.sync", "--param", "N=0..2"], "bisimilar"),
    "z3": (["kernels/bugs/ring_off_by_one.sync", "--strategy", "manual", "--engine", "z3", "--scope", "bounded"],
           "unsound"),
}


@pytest.mark.parametrize("name", OTHER_RUNS)
def test_other_outputs_validate(capsys, name):
    argv, verdict = OTHER_RUNS[name]
    status, data = verify_json(capsys, *(str(ROOT / a) if a.endswith(".sync") else a for a in argv))
    valid(data)
    assert data["verdict"] == verdict, data
    if name == "the all-values proof":
        assert data["all_values"]["status"] in ("proved", "unknown") and data["all_values"].get("obligations")
    if name == "both engines, unknown":
        assert "explicit" in data and "z3" in data
    if name == "unknown at the time limit":
        assert status == 3


def test_broken_outputs_are_refused(capsys):
    """Teeth: a field removed, a field of the wrong type, a field the schema does not
    know, and a counterexample without its trace each fail validation."""
    _, data = verify_json(capsys, str(ROOT / "kernels" / "bugs" / "ring_off_by_one.sync"), "--strategy", "manual",
                          "--scope", "bounded")
    valid(data)
    broken = []
    for change in (lambda d: d.pop("holds"), lambda d: d.update(states="many"), lambda d: d.update(extra=1),
                   lambda d: d.pop("trace"), lambda d: d["trace"][0].update(kind="start"),
                   lambda d: d["all_values"].update(status="maybe")):
        copied = copy.deepcopy(data)
        change(copied)
        broken.append(copied)
    for data in broken:
        assert list(VALIDATOR.iter_errors(data)), data
