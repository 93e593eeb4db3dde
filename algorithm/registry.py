"""The strategies by name. A strategy is a pure function Program -> Program whose
output carries explicit waits and barriers; `sync` also returns its statistics."""

from __future__ import annotations

from typing import Callable

import attrs

from semantics.errors import UsageError
from semantics.ir import Barrier, Op, Program, map_ops, walk_stmts
from semantics.registers import inline_registers

from semantics.collector import collections_off
from algorithm.queues import implied_pairs, semaphores, with_queues


def _optional_tuple(value):
    return None if value is None else tuple(value)


@attrs.frozen(kw_only=True)
class SyncStats:
    """What a strategy reports about its output. A field that is None is one this
    strategy does not report (absent from `as_dict`, the `verify --json` "sync" object),
    except `fallback`, which the threshold strategy always reports (None: it did not fall
    back). Fields are in `as_dict`'s order."""

    strategy: str
    dependence_pairs: int | None = None  # producer-consumer op pairs with a cross-engine dependence
    waits: int
    barriers: int
    semaphores: int  # counters, flags and token queues the output uses (algorithm/queues.py)
    syncs: tuple[tuple[str, int], ...] = ()  # peer clauses by kind, in order of first appearance
    sync_only_ops: int | None = None  # ops with peer clauses and no access (when there are syncs)
    dropped_redundant: int | None = None  # waits dropped as implied by others
    conservative: int | None = None  # waits that are sound but not exact
    fallback: str | int | None = None  # threshold: None or "barrier"; flags, tokens: 0 or 1
    forward_rings: int | None = None  # flags: rings per same-iteration point (0: fell back)
    compact: bool | None = None  # flags: ids allocated compactly
    local_barriers: int | None = None  # barriers before ops whose waits cannot be counted
    notes: tuple[str, ...] | None = attrs.field(default=None, converter=_optional_tuple)
    slices: int | None = None  # threshold planned by statement: top-level statements with ops
    slice_shapes: int | None = None  # ... and the distinct shapes among them

    def sync_count(self, kind: str) -> int:
        """How many peer clauses of `kind` (semantics.ir.SYNC_KINDS) the output has."""
        return dict(self.syncs).get(kind, 0)

    def as_dict(self) -> dict:
        """The statistics as JSON-ready data: the reported fields, each peer clause kind
        under its own name (`setflag`, `push`, ...), notes as a list."""
        out: dict = {}
        for field in attrs.fields(SyncStats):
            value = getattr(self, field.name)
            if field.name == "syncs":
                out.update(value)
            elif field.name == "notes" and value is not None:
                out["notes"] = list(value)
            elif value is not None or (field.name == "fallback" and self.strategy == "threshold"):
                out[field.name] = value
        return out


@attrs.frozen
class SyncResult:
    program: Program
    stats: SyncStats


def manual(program: Program) -> Program:
    """The waits and barriers written in the kernel file, unchanged."""
    return program


def _counts(program: Program) -> dict:
    """The SyncStats fields every strategy reports, counted on its output."""
    stmts = list(walk_stmts(program.body))
    counts = {
        "waits": sum(len(s.waits) for s in stmts if isinstance(s, Op)),
        "barriers": sum(1 for s in stmts if isinstance(s, Barrier)),
    }
    counts["semaphores"] = semaphores(program)
    syncs = [c.kind for s in stmts if isinstance(s, Op) for c in s.syncs]
    counts["syncs"] = tuple((kind, syncs.count(kind)) for kind in dict.fromkeys(syncs))
    if syncs:
        counts["sync_only_ops"] = sum(1 for s in stmts if isinstance(s, Op) and s.syncs and not (s.reads or s.writes))
    return counts


def _sync_manual(program: Program) -> SyncResult:
    return SyncResult(program, SyncStats(strategy="manual", **_counts(program)))


def _without_peer_clauses(program: Program) -> Program:
    """A strategy replaces the input's synchronization, peer clauses and loop registers
    included (registers only feed waits; their reads are replaced by their values)."""
    program = inline_registers(program)
    if not any(op.syncs for op in walk_stmts(program.body) if isinstance(op, Op)):
        return program
    return attrs.evolve(program, body=map_ops(program.body, lambda op: attrs.evolve(op, syncs=())))


def _on_queues(strategy, program: Program) -> SyncResult:
    """`strategy` on a program with DMA queues (algorithm/queues.py), its counts redone
    on the restored program."""
    result = with_queues(strategy, program)
    stats = attrs.evolve(result.stats, **_counts(result.program))
    if stats.notes:
        # A transfer's wait on its triggering engine is implied by the trigger's place in
        # that engine's stream, and `restore` drops it: so are its notes, and it is not
        # counted as a conservative wait of the output.
        implied = [f"{op.name} waits on {op.engine} " for op in walk_stmts(program.body)
                   if isinstance(op, Op) and op.queue is not None]
        dropped = [n for n in stats.notes if n.startswith(tuple(implied))]
        if dropped:
            conservative = stats.conservative
            if conservative is not None:
                conservative -= sum(1 for n in dropped if " conservatively: " in n)
            stats = attrs.evolve(stats, notes=[n for n in stats.notes if n not in dropped], conservative=conservative)
    return attrs.evolve(result, stats=stats)


@collections_off()
def sync_threshold(program: Program, conflicts=None, options=None) -> SyncResult:
    """The `threshold` strategy: the stages of algorithm/threshold/pipeline.py under one
    options object (algorithm/threshold/options.py). `conflicts` replaces the dependence
    relation's access-pair test; only tests pass one, to build deliberately broken
    strategies that the checkers must catch."""
    from algorithm.threshold.options import PlannerOptions
    from algorithm.threshold.pipeline import plan

    options = options or PlannerOptions()
    if conflicts is not None:
        options = attrs.evolve(options, conflicts=conflicts)
    from algorithm.threshold.registers import with_loop_registers

    program = _without_peer_clauses(program)
    if program.queues:  # DMA queues: plan the transfer view (algorithm/queues.py)
        result = _on_queues(lambda view: sync_threshold(view, options=attrs.evolve(options, loop_registers=False)),
                            program)
    else:
        def stats(synced, **fields) -> SyncResult:
            return SyncResult(synced, SyncStats(strategy="threshold", **_counts(synced), **fields))

        result = plan(program, options, stats)
    if options.loop_registers and not result.stats.slices:
        # Not on a plan composed by statement: a long program is planned from a few
        # statement shapes in linear time, and the pass over each of its waits would cost
        # twice the plan (docs/planner.md, "Loop registers").
        result = attrs.evolve(result, program=with_loop_registers(result.program))
    return result


@collections_off()
def _sync_barrier(program: Program) -> SyncResult:
    from algorithm.barrier import barrier_layout

    program = _without_peer_clauses(program)
    if program.queues:  # DMA queues: plan the transfer view (algorithm/queues.py)
        return _on_queues(_sync_barrier, program)
    layout = barrier_layout(program)
    notes = [f"a local barrier before {name}: its waits cannot be counted" for name in sorted(layout.local)]
    return SyncResult(layout.program, SyncStats(strategy="barrier", dependence_pairs=layout.dependence_pairs,
                                                **_counts(layout.program), dropped_redundant=layout.dropped_redundant,
                                                local_barriers=len(layout.local), notes=notes + list(layout.notes)))


@collections_off()
def _sync_snax_barrier(program: Program) -> SyncResult:
    from algorithm.snax_barrier import snax_barrier

    if program.queues:
        # SNAX has no triggered DMA: the rule runs on the transfer view, where each
        # transfer is dispatched to its queue as an op to its core, and the barriers it
        # places stay where they are (a barrier waits for the queues to drain).
        return _on_queues(_sync_snax_barrier, program)
    synced = snax_barrier(program)
    return SyncResult(synced, SyncStats(strategy="snax-barrier", **_counts(synced)))


@collections_off()
def _sync_flags(program: Program, implied: frozenset = frozenset()) -> SyncResult:
    from algorithm.flags import flags

    if program.queues:  # DMA queues: plan the transfer view (algorithm/queues.py, docs/peers.md "DMA ops")
        return _on_queues(lambda view: _sync_flags(view, implied_pairs(program)), program)
    synced, stats = flags(program, implied)  # stats: its SyncStats fields
    return SyncResult(synced, SyncStats(strategy="flags", **_counts(synced), **stats))


@collections_off()
def _sync_tokens(program: Program, implied: frozenset = frozenset()) -> SyncResult:
    from algorithm.tokens import tokens

    if program.queues:  # DMA queues: plan the transfer view (algorithm/queues.py, docs/peers.md "DMA ops")
        return _on_queues(lambda view: _sync_tokens(view, implied_pairs(program)), program)
    synced, stats = tokens(program, implied)  # stats: its SyncStats fields
    return SyncResult(synced, SyncStats(strategy="tokens", **_counts(synced), **stats))


def threshold(program: Program) -> Program:
    """The barrier-free algorithm with redundant waits dropped (algorithm/threshold/plan.py,
    algorithm/threshold/irredundant.py)."""
    return sync_threshold(program).program


def barrier(program: Program) -> Program:
    """The barrier baseline (algorithm/barrier.py)."""
    from algorithm.barrier import barrier as run

    return _sync_barrier(program).program if program.queues else run(_without_peer_clauses(program))


STRATEGIES: dict[str, Callable[[Program], SyncResult]] = {
    "threshold": sync_threshold,
    "barrier": _sync_barrier,
    "flags": _sync_flags,
    "tokens": _sync_tokens,
    "manual": _sync_manual,
    "snax-barrier": _sync_snax_barrier,  # SNAX's insert-sync-barrier; MLIR-imported programs only
}

# Named in docs/design.md but built by a later issue.
PLANNED: dict[str, str] = {}


def get_strategy(name: str) -> Callable[[Program], SyncResult]:
    if name in STRATEGIES:
        return STRATEGIES[name]
    if name in PLANNED:
        raise UsageError(f"strategy '{name}' is not yet available (planned in {PLANNED[name]})")
    raise UsageError(f"unknown strategy '{name}' (available: {', '.join(STRATEGIES)})")


def stats_line(stats: SyncStats) -> str:
    parts = [f"sync: strategy {stats.strategy}"]
    if stats.dependence_pairs is not None:
        parts.append(f"{stats.dependence_pairs} dependence edges (op pairs)")
    parts.append(f"{stats.waits} waits")
    if stats.dropped_redundant is not None:
        parts.append(f"{stats.dropped_redundant} dropped as redundant")
    parts.append(f"{stats.barriers} barriers")
    for kind in ("setflag", "waitflag", "push", "pop"):
        if stats.sync_count(kind):
            parts.append(f"{stats.sync_count(kind)} {kind}")
    if stats.fallback:
        parts.append(f"fell back to {stats.fallback if isinstance(stats.fallback, str) else 'barrier'}")
    if stats.local_barriers:
        parts.append(f"{stats.local_barriers} local barriers")
    if stats.conservative:
        parts.append(f"{stats.conservative} conservative (not exact)")
    return ", ".join(parts)
