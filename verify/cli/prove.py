"""`verify --scope auto`: after a bounded success, try the all-values proof
(verify/proof/prove.py) and say which scope the answer has."""

from __future__ import annotations

from semantics.ir import Program

from verify.cli.args import positive_seconds, proof_jobs
from verify.verdicts import CheckResult, ProofStatus

# The proof loads z3 and sympy: imported where it runs, so that `check` and `sync` start
# without them. verify/proof/obligations.py ProofOptions.timeout.
DEFAULT_PROOF_TIMEOUT = 60.0
# Worker processes of the proof (verify/proof/jobs.py). A fixed default, not the machine's
# core count: the proof's answers are deterministic for a given number of workers.
DEFAULT_PROOF_JOBS = 2


def add_arguments(p) -> None:
    p.add_argument("--scope", choices=["auto", "bounded"], default="auto",
                   help="auto (default): after a bounded success, also try to prove the property for every "
                        "parameter value (JSON scope 'all' when proved); bounded: skip that proof")
    p.add_argument("--proof-timeout", type=positive_seconds, default=DEFAULT_PROOF_TIMEOUT, metavar="SECONDS",
                   help="time limit of the all-values proof, > 0 (default %(default)s)")
    p.add_argument("--proof-jobs", type=proof_jobs, default=DEFAULT_PROOF_JOBS, metavar="N",
                   help="processes the all-values proof's obligations are shared among, 1..64 (default "
                        "%(default)s; the same N gives the same answers on any machine)")
    p.add_argument("--verbose", action="store_true",
                   help="print one line per proof obligation on stderr (default: a progress line now and then)")


def start_workers_early(args, program: Program) -> None:
    """Start the proof's worker server now (verify/proof/server.py): it loads
    its modules on another core while `verify` plans and checks, so the proof's workers
    fork at once. Only when a proof may run on workers."""
    if args.scope == "bounded" or args.proof_jobs <= 1 or not program.params or program.queues:
        return
    from verify.proof.server import start_workers  # without z3 and sympy: the server loads them

    start_workers()


def all_values(args, program: Program, result: CheckResult, progress, bounds=()):
    """(result to report, JSON for `all_values`, text lines). The result changes only
    when the proof finds a counterexample outside the bounds: then it is the explicit
    engine's result at that valuation."""
    if args.scope == "bounded":
        return result, {"status": ProofStatus.SKIPPED, "reason": "--scope bounded"}, []
    if result.holds is not True:
        why = "the bounded check did not succeed" if result.holds is False else "the bounded check is unknown"
        return result, {"status": ProofStatus.SKIPPED, "reason": why}, []
    if program.queues:  # refused, not attempted (docs/proofs.md): the bounded result stands
        why = ("the program has DMA queues (`queue`, `via`): the all-values proof does not cover triggers, counter "
               "increments or the signed 32-bit range")
        return result, {"status": ProofStatus.SKIPPED, "reason": why}, [f"all parameter values: not attempted ({why})."]
    if not program.params and result.complete:
        return result, {"status": ProofStatus.PROVED, "property": args.property, "domain": {}, "obligations": [],
                        "reason": "no parameters: the bounded check covered the only valuation"}, \
            ["all parameter values: the kernel has no parameters, so the check above covered its only run."]
    # Lower bounds given with --param restrict the proof too (K=1..3: every K >= 1).
    lower = tuple((name, lo) for name, lo, _ in bounds)
    progress.always(f"all-values proof of {args.property} for every parameter value "
                    f"(budget {args.proof_timeout:g} s: --proof-timeout; --scope bounded skips it)")
    answered = [0]

    def on_query(line: str) -> None:  # one line per answered query (`--verbose`), else a count
        if line.startswith(SECOND_ROUND):
            progress.always(line)
            return
        answered[0] += 1
        if args.verbose:
            progress.always(line)
        else:
            progress(f"all-values proof: {answered[0]} queries answered")

    from verify.proof.prove import SECOND_ROUND, ProofOptions, prove

    options = ProofOptions(property=args.property, timeout=args.proof_timeout, dump_smt=args.dump_smt,
                           progress=on_query, lower=lower, jobs=args.proof_jobs)
    proof = prove(program, options)
    data = proof.to_json()
    proved = sum(1 for o in proof.obligations if o.status == ProofStatus.PROVED)
    if proof.status == ProofStatus.PROVED:
        declared = {p.name: p.lower for p in program.params}
        narrowed = ", ".join(f"{name} >= {lo}" for name, lo in proof.lower if lo > declared.get(name, 0))
        which = "every parameter value"
        if proof.assumptions:
            which += f" under the kernel's assumptions ({', '.join(proof.assumptions)})"
        if narrowed:
            which += f" with {narrowed} (from --param)"
        lines = [f"all parameter values: proved ({proved} obligations, {proof.seconds:.1f} s): "
                 f"the {args.property} property holds for {which}, not only within the bounds."]
        return result, data, lines + ([proof.int32.text()] if proof.int32 is not None else [])
    if proof.status == ProofStatus.REFUTED:
        return proof.counterexample, data, [f"all parameter values: refuted outside the bounds: {proof.reason}; "
                                            "the counterexample below is at that valuation."]
    return result, data, [f"all parameter values: not proved ({proof.reason}); the result above is bounded."]
