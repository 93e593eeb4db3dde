"""Timing of DMA ops (docs/design.md, "DMA triggered by a compute engine"): the trigger
keeps its engine busy `dma_trigger_cycles`, the transfer keeps its queue busy its `lat`,
FIFO per queue, and the issuing engine goes on while the transfer runs."""

from __future__ import annotations

import attrs

from algorithm.registry import get_strategy
from semantics.parser import parse
from semantics.sequential import unroll
from verify.timing.scheduler import ZERO, simulate

KERNEL = """engines A B
queue q
param N
for i in 0..N {
  A t via q writes x[i] lat 100
  A c writes z[i] lat 30
  B r reads x[i] lat 5
}
"""


def test_a_trigger_costs_its_engine_the_trigger_time_and_the_transfer_its_queue_the_latency():
    program = get_strategy("threshold")(parse(KERNEL)).program
    profile = attrs.evolve(ZERO, dma_trigger_cycles=10)
    timeline = simulate(unroll(program, {"N": 2}), profile)
    a, b, q = (program.engines.index(e) for e in ("A", "B", "q"))
    assert timeline.busy[a] == 2 * (10 + 30)  # two triggers and two c's, not the transfers
    assert timeline.busy[q] == 2 * 100
    # A triggers at 0 and 40; the transfers run back to back on q from 10 (FIFO): 10..110,
    # 110..210; B reads after each: the last r ends at 215.
    assert timeline.cycles == 215
    ops = sorted((s.start, s.end, s.name) for s in timeline.slices if s.kind == "op" and s.engine == q)
    assert [(s, e) for s, e, _ in ops] == [(10, 110), (110, 210)]


def test_the_oracle_pays_the_trigger_time_too():
    profile = attrs.evolve(ZERO, dma_trigger_cycles=10)
    timeline = simulate(unroll(parse(KERNEL), {"N": 1}), profile, oracle=True)
    assert timeline.cycles == 10 + 100 + 5
