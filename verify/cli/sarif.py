"""`verify --format sarif`: the verdict as a SARIF 2.1.0 log (docs/cli.md, "SARIF"),
for CI systems that show findings on the source.

One run. Each op the counterexample fails at (allowed but unsound, or blocked in a
deadlock or by over-synchronization) is a result at the source position of its wait (of
the op itself when its waits were inserted by a strategy and have no position), with the
shortest trace as its code flow: one thread-flow location per step, at the line of that
step's op. A bisimilar verdict has no results; an unknown one has a tool execution
notification saying why, and the invocation is not successful.
"""

from __future__ import annotations

from importlib import metadata
from urllib.parse import quote

from semantics.ir import Loc
from semantics.machines import Label
from semantics.sequential import Unrolled, valuation_text
from verify.cli.mlir import file_of
from verify.cli.report import bounds_text
from verify.verdicts import CheckResult, Verdict, is_failure

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"

# One rule per failing verdict; its default level when the property fails by it.
RULES = {
    Verdict.UNSOUND: ("an instance may issue before a producer it depends on has completed", "error"),
    Verdict.DEADLOCK: ("no engine can take a step, and not every engine has finished", "error"),
    Verdict.OVER_SYNCHRONIZED: ("a wait blocks an instance the reference may issue", "warning"),
}
_MARKER = {Verdict.UNSOUND: "allowed, but unsound", Verdict.DEADLOCK: "blocked",
           Verdict.OVER_SYNCHRONIZED: "blocked"}


def _version() -> str:
    try:
        return metadata.version("syncproof")
    except metadata.PackageNotFoundError:  # run from a checkout that is not installed
        return "0+unknown"


def _physical(uri: str, loc: Loc | None) -> dict:
    place = {"artifactLocation": {"uri": uri}}
    if loc is not None:
        place["region"] = {"startLine": loc.line, "startColumn": loc.col}
    return place


def _label_text(unrolled: Unrolled, label: Label) -> str:
    instance = unrolled.instances[label.instance]
    return f"{label.kind} {unrolled.program.engines[instance.engine]}.{instance.describe()}"


def fault_loc(unrolled: Unrolled, label: Label) -> Loc | None:
    """Where a failing step is at fault: its op's first wait with a source position
    (the wait that let it issue, or that blocks it), else the op."""
    op = unrolled.instances[label.instance].op
    return next((w.loc for w in op.waits if w.loc is not None), op.loc)


def _code_flow(uri: str, unrolled: Unrolled, result: CheckResult) -> dict:
    witness = result.witness
    steps = [{"location": {"physicalLocation": _physical(uri, unrolled.instances[label.instance].op.loc),
                           "message": {"text": _label_text(unrolled, label)}},
              "executionOrder": number}
             for number, label in enumerate(witness.trace, 1)]
    steps += [{"location": {"physicalLocation": _physical(uri, fault_loc(unrolled, label)),
                            "message": {"text": f"{_label_text(unrolled, label)}: {_MARKER[witness.verdict]}"}},
               "executionOrder": len(witness.trace) + 1, "importance": "essential"}
              for label in witness.failing]
    shortest = "a trace" if result.engine == "z3" else "the shortest trace"
    return {"message": {"text": f"{shortest} to the {witness.verdict.value} state "
                                f"({len(witness.trace)} steps, {valuation_text(unrolled.valuation)})"},
            "threadFlows": [{"locations": steps}]}


def _results(uri: str, result: CheckResult) -> list[dict]:
    witness = result.witness
    if witness is None or witness.verdict not in RULES:
        return []
    unrolled = witness.unrolled
    level = RULES[witness.verdict][1] if is_failure(witness.verdict, result.property) else "note"  # allowed
    flow = _code_flow(uri, unrolled, result)
    where = valuation_text(unrolled.valuation)
    results = []
    for label in witness.failing or witness.trace[-1:]:
        text = [f"{witness.verdict.value} at {where}: {_label_text(unrolled, label)} is "
                f"{_MARKER[witness.verdict]}", *witness.explanation]
        results.append({
            "ruleId": witness.verdict.value,
            "level": level,
            "message": {"text": "\n".join(text)},
            "locations": [{"physicalLocation": _physical(uri, fault_loc(unrolled, label))}],
            "codeFlows": [flow],
            "properties": {"valuation": dict(unrolled.valuation)},
        })
    return results


def sarif_log(result: CheckResult, filename: str, strategy: str, all_values: dict | None = None) -> dict:
    """The SARIF 2.1.0 log of one verify result on `filename` (a .sync or .mlir file,
    or FILE.mlir:N)."""
    uri = _uri(filename)
    properties = {"verdict": result.verdict.value, "holds": result.holds, "property": result.property,
                  "strategy": strategy, "engine": result.engine, "bounds": bounds_text(result.bounds),
                  "valuations": result.valuations, "total_valuations": result.total_valuations}
    if all_values is not None:
        properties["all_values"] = all_values
    unknown = result.reason if result.verdict == Verdict.UNKNOWN else None
    return _log(uri, _results(uri, result), unknown, properties)


def unknown_log(filename: str, strategy: str, engine: str, property: str, reason: str) -> dict:
    """The SARIF log of a verify that ended unknown before any check answered."""
    properties = {"verdict": Verdict.UNKNOWN.value, "holds": None, "property": property,
                  "strategy": strategy, "engine": engine}
    return _log(_uri(filename), [], reason, properties)


def _uri(filename: str) -> str:
    return quote(file_of(filename).replace("\\", "/"))


def _log(uri: str, results: list[dict], unknown: str | None, properties: dict) -> dict:
    invocation = {"executionSuccessful": unknown is None}
    if unknown is not None:
        invocation["toolExecutionNotifications"] = [{
            "level": "warning",
            "message": {"text": f"verdict unknown ({unknown}); nothing is claimed"},
            "descriptor": {"id": "unknown"},
        }]
    run = {
        "tool": {"driver": {
            "name": "syncproof",
            "version": _version(),
            "rules": [{"id": verdict.value, "shortDescription": {"text": text},
                       "defaultConfiguration": {"level": level}}
                      for verdict, (text, level) in RULES.items()],
        }},
        "invocations": [invocation],
        "artifacts": [{"location": {"uri": uri}}],
        "results": results,
        "properties": properties,
    }
    return {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}
