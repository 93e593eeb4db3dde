"""The timing model's honest cost of `count(F)` (verify/timing/scheduler.py): tracking it
costs `iteration_cycles` per execution of a statement body that directly holds an
F-op (a loop iteration, a taken `if` branch, the top level), on every engine, and only
for engines some threshold counts; the threshold `count(F)` itself is no arithmetic.
Expected overheads are counted by hand from the kernels below."""

from __future__ import annotations

import pytest

from semantics.parser import parse
from semantics.sequential import unroll
from verify.timing.scheduler import Profile, arithmetic_ops, simulate

TRACKING = Profile("tracking", iteration_cycles=5)

# Per iteration the loop body holds PE ops a and b: one execution, whatever the number of
# PE ops in it; the `then` branch (i = 0, 2) is a second body holding a PE op, and the
# top-level op a third (executed once).
KERNEL = """\
engines PE DVE
param N = 3
PE first writes z
for i in 0..N {
  PE a writes x[i]
  PE b writes y[i]
  if i % 2 == 0 {
    PE c writes w[i]
  }
  DVE d reads x[i], w[i] wait PE >= {threshold}
}
"""


def _overhead(text: str, profile: Profile = TRACKING) -> tuple[float, ...]:
    return simulate(unroll(parse(text), {"N": 3}), profile).overhead


def test_count_tracking_is_charged_per_body_execution_on_every_engine():
    # 1 (top level) + 3 (loop body) + 2 (then branch at i = 0, 2) executions, 5 cycles each.
    assert _overhead(KERNEL.replace("{threshold}", "count(PE)")) == (30.0, 30.0)


def test_an_untracked_engine_and_a_threshold_without_count_cost_nothing():
    assert _overhead(KERNEL.replace("{threshold}", "i + 1")) == (0.0, 0.0)
    # count(DVE): DVE's only op sits directly in the loop body, 3 executions; an engine
    # pays before its next instance, and PE has none after the last DVE op.
    assert _overhead(KERNEL.replace("{threshold}", "count(DVE) - count(DVE) + i + 1")) == (10.0, 15.0)


def test_a_dma_queue_count_is_charged_at_the_trigger_on_the_compute_engines_not_on_the_queue():
    text = ("engines PE DVE\nqueue Q\nparam N = 3\nfor i in 0..N {\n  PE load writes t[i] via Q\n"
            "  DVE use reads t[i] wait Q >= count(Q)\n}\n")
    assert _overhead(text) == (15.0, 15.0, 0.0)


@pytest.mark.parametrize("threshold, ops", [("count(PE)", 0), ("count(PE) - 1", 1), ("2 * count(PE) + i", 2)])
def test_count_is_an_atom_of_the_threshold_arithmetic(threshold, ops):
    (wait,) = parse(KERNEL.replace("{threshold}", threshold)).body[1].body[3].waits
    assert arithmetic_ops(wait.threshold) == ops



def test_an_inner_loop_starts_an_iteration_wherever_an_enclosing_index_moves():
    """Regression: tracking `iters(j)` of a one-iteration inner loop with no other op
    between its instances charged one started iteration in all (every instance has j =
    0, so j's value never changed from the previous instance's); each outer iteration
    starts one: 3, paid on every engine, as count(A) (the same body executions) is."""
    text = ("engines A B\nparam N = 3\nfor i in 0..N {\n  for j in 0..1 {\n    A a writes x[i]\n  }\n}\n"
            "B b reads x wait A >= {threshold}\n")
    assert _overhead(text.replace("{threshold}", "iters(j)")) == (15.0, 15.0)
    assert _overhead(text.replace("{threshold}", "count(A)")) == (15.0, 15.0)
