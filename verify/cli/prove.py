"""`verify --scope auto|bounded` and the all-values proof's part of `verify`'s output:
the proof itself runs in the API (verify/api/checking.py), which says which scope the
answer has; here its flags, and its JSON (`all_values`) and text lines."""

from __future__ import annotations

import argparse

from verify.api.checking import (  # noqa: F401 (the flags' defaults; tests read them here too)
    DEFAULT_PROOF_JOBS, DEFAULT_PROOF_RLIMIT, DEFAULT_PROOF_TIMEOUT, Report, Scope,
)
from verify.cli.args import positive_seconds, proof_jobs
from verify.verdicts import ProofStatus


def add_arguments(p) -> None:
    p.add_argument("--scope", choices=["auto", "bounded"], default="auto",
                   help="auto (default): after a bounded success, also try to prove the property for every "
                        "parameter value (JSON scope 'all' when proved); bounded: skip that proof")
    p.add_argument("--proof-rlimit", type=proof_rlimit, default=DEFAULT_PROOF_RLIMIT, metavar="UNITS",
                   help="the all-values proof's budget in Z3 resource units, summed over its queries, > 0 "
                        "(default %(default)s): deterministic, so the verdict is the same on a busy machine "
                        "and an idle one; running out gives 'not proved' (JSON all_values.budget.hit)")
    p.add_argument("--proof-timeout", type=positive_seconds, default=DEFAULT_PROOF_TIMEOUT, metavar="SECONDS",
                   help="wall-clock cap of the all-values proof, > 0 (default: none); reaching it gives 'not "
                        "proved', naming the cap: unlike --proof-rlimit, what it cuts off depends on the load")
    p.add_argument("--proof-jobs", type=proof_jobs, default=DEFAULT_PROOF_JOBS, metavar="N",
                   help="processes the all-values proof's obligations are shared among, 1..64 (default "
                        "%(default)s; the same N gives the same answers on any machine)")
    p.add_argument("--verbose", action="store_true",
                   help="print one line per proof obligation on stderr (default: a progress line now and then)")


def proof_rlimit(text: str) -> int:
    """An argparse type: a whole number of Z3 resource units > 0 (`--proof-rlimit`)."""
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number of Z3 units") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text}: the proof's budget must be > 0 Z3 units")
    return value


def all_values(report: Report, property: str) -> tuple[dict, list[str]]:
    """The JSON `all_values` of a report, and the text lines that follow its verdict."""
    proof = report.proof
    if proof is None and report.proof_skipped is None:  # no parameters: the check covered the only run
        return ({"status": ProofStatus.PROVED, "property": property, "domain": {}, "obligations": [],
                 "reason": "no parameters: the bounded check covered the only valuation"},
                ["all parameter values: the kernel has no parameters, so the check above covered its only run."])
    if proof is None:
        return {"status": ProofStatus.SKIPPED, "reason": report.proof_skipped}, []
    data = proof.to_json()
    if proof.status == ProofStatus.PROVED:
        proved = sum(1 for o in proof.obligations if o.status == ProofStatus.PROVED)
        declared = {p.name: p.lower for p in report.program.params}
        narrowed = ", ".join(f"{name} >= {lo}" for name, lo in proof.lower if lo > declared.get(name, 0))
        which = "every parameter value"
        if proof.assumptions:
            which += f" under the kernel's assumptions ({', '.join(proof.assumptions)})"
        if narrowed:
            which += f" with {narrowed} (from --param)"
        lines = [f"all parameter values: proved ({proved} obligations, {proof.seconds:.1f} s): "
                 f"the {property} property holds for {which}, not only within the bounds."]
        return data, lines + ([proof.int32.text()] if proof.int32 is not None else [])
    if proof.status == ProofStatus.REFUTED:
        return data, [f"all parameter values: refuted outside the bounds: {proof.reason}; "
                      "the counterexample above is at that valuation."]
    return data, [f"all parameter values: not proved ({proof.reason}); the result above is bounded."]


def scope_option(choice: str) -> Scope:
    """`--scope auto` (try the proof) or `bounded` (skip it), as the API's Scope."""
    return Scope.BOUNDED if choice == "bounded" else Scope.ALL
