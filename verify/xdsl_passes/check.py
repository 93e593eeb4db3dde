"""`syncproof-verify-sync{property=bisimulation max_param=3 scope=bounded}`: check an
already synchronized module (its `snax.cluster_sync_op`s and syncproof waits, as
written) against the reference semantics, for every parameter valuation from each
parameter's lower bound to `max(max_param, lower bound)`, on the checkers of
verify/engines/ (the happens-before engine, or `engine=explicit`); with `scope=all`,
then for every parameter value by the all-values proof (verify/proof/prove.py).

The pass changes nothing. It fails (SyncCheckFailed, an xdsl PassFailedException) when
the property does not hold, with the verdict, the valuation and the shortest trace to
the failing state in its message, and when the answer is unknown (a state budget hit,
a proof left unproved): unknown is never success. `property=soundness` allows over-synchronization (SNAX's
barrier output passes) but not deadlock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.passes import ModulePass

from semantics.machines import describe_label
from semantics.sequential import valuation_text
from verify.engines import select as engine_select
from verify.verdicts import PROPERTIES, CheckOptions, CheckResult
from verify.xdsl_passes.errors import PassInputError, SyncCheckFailed
from verify.xdsl_passes.module import imported, input_errors

DEFAULT_MAX_STATES = CheckOptions().max_states
SCOPES = ("bounded", "all")


def check_module(module, prop: str = "bisimulation", max_param: int = 3, engine: str = engine_select.AUTO,
                 max_states: int = DEFAULT_MAX_STATES) -> CheckResult:
    """The module's program checked as written; PassInputError for bad options or input."""
    if prop not in PROPERTIES:
        raise PassInputError(f"error: unknown property '{prop}' (choose from {', '.join(PROPERTIES)})")
    if max_param < 0 or max_states < 1:
        raise PassInputError(f"error: max_param must be non-negative and max_states positive "
                             f"(got {max_param}, {max_states})")
    program = imported(module).program
    bounds = tuple((p.name, p.lower, max(max_param, p.lower)) for p in program.params)
    with input_errors():
        return engine_select.check(program, bounds, CheckOptions(property=prop, max_states=max_states), engine)


def proof_failure(module, prop: str) -> SyncCheckFailed | None:
    """None when the all-values proof proves `prop` of the module's program (or it has no
    parameters: the bounded check covered its only run), else the failure to raise: the
    counterexample's verdict and trace, or `unknown` and why."""
    from verify.proof.options import ProofOptions
    from verify.proof.prove import prove
    from verify.verdicts import ProofStatus

    program = imported(module).program
    if not program.params:
        return None
    with input_errors():
        proof = prove(program, ProofOptions(property=prop))
    if proof.status == ProofStatus.PROVED:
        return None
    found = proof.counterexample
    if proof.status == ProofStatus.REFUTED and found is not None:
        return SyncCheckFailed(failure_text(found) + "\n(found by the all-values proof, outside the bounds)",
                               found.verdict.value)
    return SyncCheckFailed(f"syncproof-verify-sync: the all-values proof of {prop} is {proof.status.value} "
                           f"({proof.reason}); unknown is never success", "unknown")


def failure_text(result: CheckResult) -> str:
    """The verdict in words, with the counterexample trace when there is one."""
    bounds = ", ".join(f"{name}={lo}..{hi}" for name, lo, hi in result.bounds) or "no parameters"
    witness = result.witness
    if witness is None:
        why = f" ({result.reason})" if result.reason else ""
        return f"syncproof-verify-sync: {result.property} is {result.verdict.value}{why}; bounds {bounds}"
    unrolled = witness.unrolled
    lines = [f"syncproof-verify-sync: {result.property} fails: {result.verdict.value} at "
             f"{valuation_text(unrolled.valuation)} (bounds {bounds})",
             f"shortest trace to the {witness.verdict.value} state ({len(witness.trace)} steps):"]
    lines += [f"  {n}. {describe_label(unrolled, label)}" for n, label in enumerate(witness.trace, 1)]
    lines += [f"  then: {describe_label(unrolled, label)}" for label in witness.failing]
    lines += [f"  {line}" for line in witness.explanation]
    return "\n".join(lines)


@dataclass(frozen=True)
class VerifySync(ModulePass):
    """Fail unless the module's synchronization has `property` within the bounds."""

    name: ClassVar[str] = "syncproof-verify-sync"
    property: str = "bisimulation"
    max_param: int = 3
    engine: str = engine_select.AUTO
    max_states: int = DEFAULT_MAX_STATES
    scope: str = "bounded"

    def apply(self, ctx, op) -> None:
        if self.scope not in SCOPES:
            raise PassInputError(f"error: unknown scope '{self.scope}' (choose from {', '.join(SCOPES)})")
        result = check_module(op, self.property, self.max_param, self.engine, self.max_states)
        if result.holds is not True:
            raise SyncCheckFailed(failure_text(result), result.verdict.value)
        if self.scope == "all":
            failure = proof_failure(op, self.property)
            if failure is not None:
                raise failure
