"""`export_lean`: write a Lake project with a kernel, its semantics and its theorems
(lean_export/ does the work), what `syncproof lean` writes.

`plan_instances` decides which bounded instances the export may claim
(lean_export/export.py's planner): the explicit checker decides, so the export never
states what syncproof itself does not believe. Here, in verify/, because lean_export
must not import the checker."""

from __future__ import annotations

import os
from pathlib import Path

from lean_export.export import (
    MAX_INSTANCE_STATES, MAX_INSTANCES, MAX_STATES, TRACE_SHOWN, Plan, comment_safe,
)
from semantics.errors import EvalError, UsageError
from semantics.ir import Program
from semantics.machines import describe_label
from semantics.sequential import UnrollLimit, unroll, valuation_text
from verify.engines.explicit import explore, valuations
from verify.engines.witness import range_check
from verify.verdicts import CheckOptions, Verdict


MANIFEST = ".syncproof-export"  # the files of the last export into a folder


def plan_instances(program: Program, max_param: int) -> Plan:
    """The claims of the export of the synchronized `program`: up to MAX_INSTANCES
    valuations within 0..max_param the explicit checker found bisimilar (and small
    enough for Lean to replay), the first failing one, and those it left unknown."""
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
        # a semaphore or threshold outside the signed 32-bit range is unsound (as `check`)
        result = range_check(unrolled) or explore(unrolled, options)
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


def remove_stale(out: Path, files: dict) -> None:
    """Files of an earlier export into `out` that this one does not write: those the
    earlier export's manifest lists, and any module under Kernels/ (a folder only the
    export writes). Nothing else in the folder is touched."""
    stale = set()
    try:
        stale.update(line.strip() for line in (out / MANIFEST).read_text().splitlines() if line.strip())
    except OSError:
        pass
    if (out / "Kernels").is_dir():
        stale.update(p.relative_to(out).as_posix() for p in (out / "Kernels").rglob("*.lean"))
    for rel in sorted(stale - set(files)):
        target = out / rel
        if ".." in Path(rel).parts or not target.is_file():
            continue
        try:
            target.unlink()
        except OSError as exc:
            raise UsageError(f"cannot remove the stale {target}: {exc.strerror}") from None


def export_lean(program: Program, out_dir: str | os.PathLike, strategy: str = "threshold", max_param: int = 2,
                source: str | None = None) -> dict[str, str]:
    """Write a Lean 4 (Lake) project to `out_dir`: the fixed Syncproof library, and a
    module for `program` synchronized by `strategy` with its bounded instances (every
    valuation within 0..max_param the explicit checker decided, as `native_decide`
    theorems) and the all-valuations statement (docs/proofs.md). `source` names the
    kernel file in the module's header (default: the kernel's name). Files of an
    earlier export into `out_dir` that this one does not write are removed. Returns the
    files written, by path relative to `out_dir`. A program with peer clauses (flags or
    tokens), which the Lean semantics does not have, raises UsageError (docs/lean.md)."""
    from lean_export.export import export_files, write_project

    if max_param < 0:
        raise UsageError("--max-param must be non-negative")
    source = source or f"{program.name or 'kernel'}.sync"
    files = export_files(program, source, strategy, max_param, planner=plan_instances)
    out = Path(out_dir)
    remove_stale(out, files)
    write_project({**files, MANIFEST: "".join(f"{rel}\n" for rel in sorted(files))}, str(out))
    return files
