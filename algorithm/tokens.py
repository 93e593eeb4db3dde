"""`tokens`: TVM VTA-style dependence-token queues.

Source. VTA's modules (load, compute, store) run their own instruction queues and
synchronize through dependence-token FIFOs between neighbouring modules: each
instruction carries four bits, `pop_prev` / `pop_next` (before it starts, take one
token from the queue from the previous / next module, blocking while it is empty)
and `push_prev` / `push_next` (when it finishes, put one token on the queue to that
module; a full queue stalls the pusher). TVM's compiler pushes after each producer
and pops before each consumer (RAW tokens flow downstream), and for buffer reuse
(WAR) pre-pushes tokens upstream before the loop so the first iterations do not wait
(one per buffer slot: two for double buffers) and pops the leftover tokens after
it. This module follows those rules on the shared plan of algorithm/peers.py with
any engine pair in place of neighbouring modules; the code is written from that
description, not copied.

Rule. Every sync point A -> B of the plan gets its own queue A -> B (ids 0..7 per
ordered pair; `push B` is queue 0):

    A, after item `after`:  push B:q
    B, before item `before`: pop A:q

and a carried point of distance D also pushes D tokens before the loop (A, prime)
and pops D after it (B, drain), so the queue is empty after the loop whatever its
trip count and B's pop in iteration k takes the token of iteration k - D. Points whose
runs may overlap never share a queue (tokens are counted, not named: they could
take each other's tokens); blocks that run one after the other reuse queues (each
run leaves its queues empty, and a pop is enabled exactly when the push it matches
in program order is done, however many later tokens arrive). Forward points need no acknowledgement: a
push onto a full queue (8 tokens) blocks the pusher, which bounds how far A runs
ahead. When a pair needs more than 8 queues, the whole program falls back to the
`barrier` strategy (VTA's compiler: explicit syncs), counted in the stats.

Sound and deadlock-free by construction: every pop's token is pushed earlier in
program order, every push onto a full queue waits for a pop earlier in program order
(at most D + 1 <= 3 tokens are in a queue at once in the program-order run), and a
push after item p covers every earlier instance of its engine.
"""

from __future__ import annotations

from semantics.errors import LimitReached
from semantics.ir import QUEUES, Const, Program, Sync
from algorithm.peers import Lowered, allocate, plan, rewrite, strip_sync


class OutOfQueues(LimitReached):
    """More than 8 queues on some engine pair (internal: triggers the fallback)."""


def lower_tokens(program: Program, implied: frozenset = frozenset()) -> Program:
    """The tokens program (raises OutOfQueues); `implied` as for `algorithm.peers.plan`."""
    program = strip_sync(program)
    plans = plan(program, implied)
    base, height = allocate(plans, lambda block, point: [("queue", point.source, point.target, 1)])
    for (_, source, target), count in height.items():
        if count > QUEUES:
            raise OutOfQueues(f"{source}->{target} needs more than {QUEUES} queues")

    def lower(block, point):
        a, b = point.source, point.target
        q = Const(base[(block.path, block.points.index(point), "queue")])
        signal, wait = (Sync("push", b, q),), (Sync("pop", a, q),)
        if not point.carried:
            return Lowered(signal, wait)
        return Lowered(signal, wait, signal * point.carried, wait * point.carried)

    return rewrite(program, plans, lower, {}, {})


def tokens(program: Program, implied: frozenset = frozenset()) -> tuple[Program, dict]:
    """The tokens strategy and its statistics."""
    from algorithm.barrier import barrier

    try:
        return lower_tokens(program, implied), {"fallback": 0, "notes": []}
    except OutOfQueues as why:
        return barrier(strip_sync(program)), {"fallback": 1, "notes": [f"{why}; fell back to the barrier strategy"]}
