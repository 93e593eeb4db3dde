"""Which bounded instances a Lean export may claim (lean_export/export.py's planner):
the explicit checker decides, so the export never states what syncproof itself does
not believe. Here, in verify/, because lean_export must not import the checker."""

from __future__ import annotations

from lean_export.export import (
    MAX_INSTANCE_STATES, MAX_INSTANCES, MAX_STATES, TRACE_SHOWN, Plan, comment_safe,
)
from semantics.errors import EvalError
from semantics.ir import Program
from semantics.machines import describe_label
from semantics.sequential import UnrollLimit, unroll, valuation_text
from verify.engines.explicit import explore, valuations
from verify.verdicts import CheckOptions, Verdict


def plan_instances(program: Program, max_param: int) -> Plan:
    bounds = tuple((p.name, p.lower, max(max_param, p.lower)) for p in program.params)
    options = CheckOptions(max_states=MAX_STATES)
    bisimilar, unknown = [], []
    failing, failure_lines, failing_small = None, (), False
    for values in valuations(bounds):
        valuation = tuple((p.name, values[p.name]) for p in program.params)
        try:
            unrolled = unroll(program, values, limit=MAX_STATES)
        except (EvalError, UnrollLimit):
            continue  # not a valid valuation for this kernel (or too large): no claim
        result = explore(unrolled, options)
        if result.verdict == Verdict.BISIMILAR:
            if result.states <= MAX_INSTANCE_STATES:
                bisimilar.append(valuation)
        elif result.verdict == Verdict.UNKNOWN:
            unknown.append(valuation_text(valuation))
        elif failing is None:
            failing, failing_small = valuation, result.states <= MAX_INSTANCE_STATES
            witness = result.witness
            trace = [describe_label(unrolled, label) for label in witness.trace]
            shown = trace[:TRACE_SHOWN] + (["..."] if len(trace) > TRACE_SHOWN else [])
            failure_lines = (f"verdict {result.verdict.value} at {valuation_text(valuation)}",
                             f"trace: {'; '.join(shown) or '(empty)'}", *witness.explanation)
            failure_lines = tuple(comment_safe(line) for line in failure_lines)
    # The largest qualifying valuations say the most; keep their order stable.
    proved = tuple(bisimilar[-MAX_INSTANCES:])
    text = ", ".join(f"{name} in {lo}..{hi}" for name, lo, hi in bounds) or "no parameters"
    return Plan(proved, failing, failing_small, tuple(failure_lines), tuple(unknown), text)
