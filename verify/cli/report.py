"""Rendering check results: a JSON object (docs/design.md section 6) and text for people."""

from __future__ import annotations

from semantics.errors import UsageError
from semantics.machines import Label
from semantics.sequential import Unrolled, valuation_text
from verify.verdicts import CheckResult, EngineName, Verdict


FORMATS = ("text", "json", "sarif")


def add_format_arguments(parser) -> None:
    """`--format text|json|sarif` and `--json` (the same as `--format json`)."""
    parser.add_argument("--format", choices=FORMATS, default=None,
                        help="text (default), json (docs/schemas/verify.schema.json) or sarif (SARIF 2.1.0)")
    parser.add_argument("--json", action="store_true", help="the same as --format json")


def output_format(args) -> str:
    """The format the arguments ask for; a UsageError when --json and --format disagree."""
    if args.json and args.format not in (None, "json"):
        raise UsageError(f"--json and --format {args.format} disagree: give one of them")
    return "json" if args.json else args.format or "text"


def label_json(unrolled: Unrolled, label: Label) -> dict:
    instance = unrolled.instances[label.instance]
    return {
        "kind": label.kind,
        "engine": unrolled.program.engines[instance.engine],
        "op": instance.op.name,
        "env": dict(instance.env),
    }


def bounds_text(bounds) -> str:
    return ", ".join(f"{name}={lo}..{hi}" for name, lo, hi in bounds) or "no parameters"


def result_json(result: CheckResult, strategy: str) -> dict:
    data = {
        "verdict": result.verdict.value,
        "holds": result.holds,
        "property": result.property,
        "scope": "bounded",
        "strategy": strategy,
        "engine": result.engine,
        "bounds": {name: [lo, hi] for name, lo, hi in result.bounds},
        "bounds_inclusive": True,
        "states": result.states,
        "valuations": result.valuations,
        "total_valuations": result.total_valuations,
        "complete": result.complete,
    }
    if result.reason:
        data["reason"] = result.reason
    witness = result.witness
    if witness is not None:
        unrolled = witness.unrolled
        data["witness_verdict"] = witness.verdict.value
        data["param"] = dict(unrolled.valuation)
        data["trace"] = [label_json(unrolled, l) for l in witness.trace]
        data["failing"] = [label_json(unrolled, l) for l in witness.failing]
        data["explanation"] = list(witness.explanation)
    return data


def _label_line(unrolled: Unrolled, label: Label) -> str:
    instance = unrolled.instances[label.instance]
    engine = unrolled.program.engines[instance.engine]
    return f"{label.kind:<8} {engine}.{instance.describe()}"


def result_text(result: CheckResult, strategy: str, filename: str, proved_all: bool = False,
                checked_bounds: tuple = ()) -> str:
    """The text answer. `checked_bounds`: the bounds the bounded check covered, when the
    result is instead at a counterexample the all-values proof found outside them."""
    if result.engine == EngineName.Z3:  # one symbolic query covers every valuation; `states` counts queries
        scope = (f"all {result.total_valuations} valuations covered symbolically" if result.complete
                 else f"{result.total_valuations} valuations, not all covered")
        explored = f"{scope}, {result.states} Z3 queries"
    elif result.engine == "happens-before":  # `states` counts the events of the happens-before order
        explored = (f"{result.valuations} of {result.total_valuations} valuations decided on the happens-before "
                    f"order, {result.states} events")
    else:
        explored = f"{result.valuations} of {result.total_valuations} valuations explored, {result.states} states"
    out = [
        f"{filename}: strategy {strategy}, engine {result.engine}, property {result.property}",
        f"bounds: {bounds_text(result.bounds)} (inclusive; {explored})"
        if not checked_bounds or tuple(checked_bounds) == tuple(result.bounds) else
        f"bounds: {bounds_text(result.bounds)}: the valuation of the counterexample that the all-values proof "
        f"found outside the checked bounds {bounds_text(checked_bounds)} (inclusive; {explored})",
    ]
    witness = result.witness
    if result.verdict == Verdict.UNKNOWN:
        out.append(f"verdict: unknown ({result.reason}); nothing is claimed")
        if witness is not None:
            out.append(f"(a {witness.verdict.value} state was found, which "
                       f"{'the soundness property allows' if result.property == 'soundness' else 'is shown below'})")
    elif result.holds:
        if result.verdict == Verdict.BISIMILAR:
            out.append("verdict: bisimilar to the reference for every valuation within the bounds")
        else:
            out.append(f"verdict: {result.verdict.value}, which the {result.property} property allows: sound "
                       "(no instance can issue before its producers complete) and deadlock-free within the bounds")
        if not proved_all:  # else the caller adds the all-values line
            out.append("This is a bounded result: it is not a proof for parameter values beyond the bounds.")
    else:
        out.append(f"verdict: {result.verdict.value} at {valuation_text(witness.unrolled.valuation)}")
        if not result.complete:
            out.append(f"(exploration incomplete: {result.reason}; a more severe verdict may exist)")
    if witness is not None and (not result.holds or result.verdict != Verdict.BISIMILAR):
        unrolled = witness.unrolled
        shortest = "trace" if result.engine == EngineName.Z3 else "shortest trace"  # z3 finds a trace, not the shortest
        out.append(f"{shortest} to the {witness.verdict.value} state "
                   f"({len(witness.trace)} steps, {valuation_text(unrolled.valuation)}):")
        width = len(str(len(witness.trace) + 1))
        for n, label in enumerate(witness.trace, 1):
            out.append(f"  {n:>{width}}. {_label_line(unrolled, label)}")
        marker = {"unsound": "  <-- allowed, but unsound", "deadlock": "  <-- blocked",
                  "over-synchronized": "  <-- blocked"}[witness.verdict.value]
        for label in witness.failing:
            prefix = "  " + " " * width + "  "
            out.append(f"{prefix}{_label_line(unrolled, label)}{marker}")
        for line in witness.explanation:
            out.append("  " + line)
    return "\n".join(out)
