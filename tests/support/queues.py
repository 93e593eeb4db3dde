"""Generated programs with DMA queues (docs/language.md, "DMA queues"), built from the
generators' ordinary programs: some engines' ops become DMA ops on queues, each queue
triggered by one engine (as validation requires)."""

from __future__ import annotations

import attrs
from hypothesis import strategies as st

from semantics.ir import Queue, map_ops
from semantics.validate import validate


def with_queue(program, increment: int, keep_waits: bool = False, second: int | None = None):
    """`program` with its last engine's ops turned into DMA ops triggered by its first
    engine on a queue; `keep_waits` keeps every wait (those of the moved ops become
    their triggers' waits, those on the last engine wait on the queue), else all
    waits are dropped. The queue is named `q` without `keep_waits`, else it keeps the
    last engine's name (so the waits stay valid). With `second` (an increment) and at
    least four engines, the second-to-last engine's ops likewise become DMA ops on a
    second queue triggered by the second engine."""
    engines = program.engines
    moved = {engines[-1]: (engines[0], engines[-1] if keep_waits else "q", increment)}
    if second is not None and len(engines) >= 4:
        moved[engines[-2]] = (engines[1], engines[-2] if keep_waits else "q2", second)

    def change(op):
        if op.engine in moved:
            trigger, queue, _ = moved[op.engine]
            op = attrs.evolve(op, engine=trigger, queue=queue)
        return op if keep_waits else attrs.evolve(op, waits=())

    rest = tuple(e for e in engines if e not in moved)
    queues = tuple(Queue(queue, step) for _, queue, step in reversed(moved.values()))
    result = attrs.evolve(program, engines=rest + tuple(q.name for q in queues), body=map_ops(program.body, change),
                          queues=queues)
    validate(result)
    return result


def queue_programs(programs, increments=(1, 2, 16), keep_waits: bool = True):
    """Programs of the strategy `programs`, with one or two queues of the given increments."""
    return st.builds(lambda p, a, b, two: with_queue(p, a, keep_waits, b if two else None),
                     programs, st.sampled_from(increments), st.sampled_from(increments), st.booleans())
