"""DMA queues for the strategies (docs/design.md, "DMA triggered by a compute
engine"; "Counter increments").

A DMA op `E name via Q ...` is a trigger on E (it does not count on C[E]) and a transfer
on Q (it counts on C[Q]); its waits are the trigger's, the only place a transfer can be
synchronized. So a strategy plans the *transfer view* of the program, where every DMA op
runs on its queue, unchanged: local indices on Q count transfers, local indices on E
skip triggers, and a wait planned for the op is what its trigger must check. With one
triggering engine per queue (semantics/validate.py), the queue's FIFO order is the
trigger order on E, so every implication the strategy draws from Q's in-order
execution also holds on E.

`restore` then puts each DMA op back on its engine and
- drops the op's waits on its own triggering engine E: every E-instance before it in
  program order precedes the trigger on E's stream, so such a wait always holds;
- keeps its peer clauses (`flags`, `tokens`): their channels' endpoints are the view's
  engines, so a DMA op's own end is its queue Q: its `waitflag F:id` / `pop F:q` wait on
  channel F -> Q at the trigger's issue, its `setflag G:id` / `push G:q` signal on
  Q -> G when the transfer completes (docs/peers.md, "DMA ops"). The peers plan no
  point from E to a queue E triggers (`implied_pairs`), the channels' analogue of the
  dropped waits; a sync-only op a peer put on Q becomes an access-free DMA op via Q;
- multiplies every threshold on a counter with increment k by k (C[F] grows by k per
  completion; `F >= t` in completions is `F >= k * t` on the semaphore). This is the one
  place thresholds are scaled, for every strategy, after the strategy emitted them.
"""

from __future__ import annotations

import attrs

from semantics.errors import UsageError
from semantics.ir import BinOp, Const, Program, Wait, increments, map_ops, ops


def transfer_view(program: Program) -> Program:
    """Every DMA op moved onto its queue (what a strategy plans)."""
    # `queues=()`: the view is an ordinary program whose engines include the queues'
    # counters (the increments are applied by `restore`).
    return attrs.evolve(program, queues=(), body=map_ops(
        program.body, lambda op: attrs.evolve(op, engine=op.queue, queue=None) if op.queue is not None else op))


def scale(wait: Wait, step: int) -> Wait:
    """`F >= t` in completions as a semaphore threshold: `F >= step * t`."""
    if step == 1:
        return wait
    match wait.threshold:
        case Const(value=v):
            return attrs.evolve(wait, threshold=Const(step * v))
        case threshold:
            return attrs.evolve(wait, threshold=BinOp("*", Const(step), threshold))


def triggering_engines(program: Program) -> dict[str, str]:
    """Queue -> the one engine that triggers its transfers (queues without DMA ops left out)."""
    return {op.queue: op.engine for op in ops(program) if op.queue is not None}


def implied_pairs(program: Program) -> frozenset[tuple[str, str]]:
    """Ordered pairs (E, Q) of the transfer view whose every dependence is implied once the
    ops are restored: E triggers Q's transfers, so every E-instance before a transfer in
    program order precedes its trigger on E's stream, hence the transfer. A peer plans no
    sync point on them (like the waits on E that `restore` drops)."""
    return frozenset((engine, queue) for queue, engine in triggering_engines(program).items())


def restore(original: Program, synced: Program) -> Program:
    """The strategy's output for the transfer view, back on the original engines, with
    thresholds scaled by the counters' increments. Peer clauses stay as planned (their
    channels' endpoints are the view's engines: a DMA op's own end is its queue). An op
    the strategy added on a queue (a peer's sync-only op) becomes a DMA op without
    accesses, triggered by the queue's triggering engine: its waits and `waitflag`/`pop`
    are the trigger's, its `setflag`/`push` act when its empty transfer completes, after
    the queue's earlier transfers (FIFO)."""
    trigger = {op.name: op for op in ops(original) if op.queue is not None}
    by_queue = triggering_engines(original)
    queue_names = {q.name for q in original.queues}
    step = dict(zip(original.engines, increments(original)))

    def back(op):
        source = trigger.get(op.name)
        if source is None and op.engine in by_queue:  # a sync-only op on a queue
            source = attrs.evolve(op, engine=by_queue[op.engine], queue=op.engine)
        if source is None and op.engine in queue_names:
            raise UsageError(f"internal: the strategy placed op '{op.name}' on queue {op.engine}, "
                             "which no op triggers")
        waits = tuple(scale(w, step[w.engine]) for w in op.waits
                      if source is None or w.engine != source.engine)
        if source is not None:
            return attrs.evolve(op, engine=source.engine, queue=source.queue, waits=waits)
        return attrs.evolve(op, waits=waits)

    return attrs.evolve(synced, queues=original.queues, body=map_ops(synced.body, back))


def with_queues(strategy, program: Program):
    """Run `strategy` (Program -> SyncResult) on the transfer view, then restore."""
    if not program.queues:
        return strategy(program)
    result = strategy(transfer_view(program))
    return attrs.evolve(result, program=restore(program, result.program))


def semaphores(program: Program) -> int:
    """Semaphores the synchronized program uses: one per counter (engine or queue) that
    some wait reads, one per flag (engine pair, id) and per token queue its peer clauses
    use. Barriers are not counted (how a barrier is built is the machine's choice)."""
    counters = {w.engine for op in ops(program) for w in op.waits}
    peers = set()
    for op in ops(program):
        for sync in op.syncs:
            kind = "flag" if sync.kind in ("setflag", "waitflag") else "token"
            own = op.queue or op.engine  # a DMA op's channels end at its queue
            pair = (own, sync.engine) if sync.kind in ("setflag", "push") else (sync.engine, own)
            peers.add((kind, pair, sync.id))
    return len(counters) + len(peers)
