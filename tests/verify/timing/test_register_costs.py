"""The timing model's cost of loop registers (verify/timing/scheduler.py) and the cost
function's arithmetic (verify/cost.py): a threshold is charged as written (a register
is an atom); a register costs `wait_op_cycles * max(1, ops(init))` per entry of its
loop and `wait_op_cycles * (1 + ops(step))` per back-edge when stepped, on the engines
that read it only. Expected overheads are counted by hand from the kernels below (the
profile charges only `wait_op_cycles`, 1 cycle, unless a test says otherwise)."""

from __future__ import annotations

import pytest

from semantics.ir import Op, walk_stmts
from semantics.parser import parse
from semantics.registers import inline_registers
from semantics.sequential import unroll
from verify.cost import cost_of
from verify.timing.scheduler import Profile, arithmetic_ops, register_readers, simulate

OPS = Profile("ops", wait_op_cycles=1)


def _overhead(text: str, values: dict, profile: Profile = OPS, inline: bool = False) -> dict[str, float]:
    program = parse(text)
    if inline:
        program = inline_registers(program)
    return dict(zip(program.engines, simulate(unroll(program, values), profile).overhead))


# B's ops come first in each i-iteration, so B has an instance after every entry of the
# j-loop but the last: an engine charged for a register it does not read would pay there.
INNER = """\
engines A B
param N = 3, M = 2
for k in 0..8 {
  B b writes y[k]
}
for i in 0..N {
  B c writes z[i]
  for j in 0..M with r = i * M {
    A a writes x[i, j] wait B >= r + j
  }
}
"""


def test_a_register_read_costs_one_operation_and_its_init_is_charged_per_entry_on_its_reader_only():
    # A: 6 waits `r + j` of 1 operation, and 3 entries of the j-loop setting r = i * M (1).
    # B reads no register: nothing (charged on every engine, it would pay 2 at c[1], c[2]).
    assert _overhead(INNER, {"N": 3, "M": 2}) == {"A": 6 + 3, "B": 0}
    # inlined, each wait evaluates `i * M + j`: 2 operations
    assert _overhead(INNER, {"N": 3, "M": 2}, inline=True) == {"A": 12, "B": 0}


def test_an_outer_loops_register_is_set_once_per_entry_not_per_instance():
    text = """\
engines A B
param N = 3, M = 2
for k in 0..8 {
  B b writes y[k]
}
for i in 0..N with r = M + 1 {
  for j in 0..M {
    A a writes x[i, j] wait B >= r + j
  }
}
"""
    # 6 waits of 1 operation, one entry of the i-loop (r = M + 1: 1); per instance it would be 6
    assert _overhead(text, {"N": 3, "M": 2}) == {"A": 6 + 1, "B": 0}


def test_a_register_is_kept_by_the_engines_reading_it_through_another_registers_header():
    # The example of the language: A reads r, whose init reads s; q is read by nobody.
    text = """\
engines A B
param N = 2, M = 3
for k in 0..32 {
  B b writes y[k]
}
for i in 0..N with s = 2 * M step M {
  B c writes z[i]
  for j in 0..M with r = s + 1, q = iters(i) step 2 {
    A a writes x[i, j] wait B >= r + j
  }
}
"""
    assert register_readers(parse(text)) == {"r": frozenset({"A"}), "s": frozenset({"A"})}
    # A: 6 waits `r + j` (1 each); s: 1 entry (2 * M: 1) and 1 back-edge (step M: the add);
    # r: 2 entries (s + 1: 1); q: kept by no engine, free.
    assert _overhead(text, {"N": 2, "M": 3}) == {"A": 6 + 2 + 2, "B": 0}


STEPPED = """\
engines A B
param N = 3, M = 4
for k in 0..16 {
  B b writes y[k]
}
for i in 0..N {
  for j in 0..M with r = i * M step {step} {
    A a writes x[i, j] wait B >= r
  }
}
"""


@pytest.mark.parametrize("step, back_edge", [("1", 1), ("M - 3", 2)])
def test_a_stepped_register_costs_its_add_per_back_edge(step, back_edge):
    # 3 entries (i * M: 1 each), 3 back-edges per entry; the waits read r alone (0 operations)
    assert _overhead(STEPPED.replace("{step}", step), {"N": 3, "M": 4}) == {"A": 3 + 9 * back_edge, "B": 0}


def test_a_zero_trip_entry_is_not_charged():
    text = """\
engines A B
param N = 3
for k in 0..16 {
  B b writes y[k]
}
for i in 0..N {
  for j in 0..i with r = N step 1 {
    A a writes x[i, j] wait B >= r
  }
}
"""
    # the j-loop runs 0, 1 and 2 times: 2 entries charged (N: at least 1) and 1 back-edge
    assert _overhead(text, {"N": 3}) == {"A": 2 + 1, "B": 0}


GUARDED = """\
engines A B
param N = 2
for k in 0..16 {
  B b writes y[k]
}
for i in 0..N {
  for j in i..i + 4 with r = N step 1 {
    if {guard} {
      A a writes x[i, j] wait B >= r
    }
  }
}
"""


def test_back_edges_before_an_entrys_first_instance_are_charged_from_lo_and_after_its_last_are_not():
    # j = i+2, i+3 hold instances: the entry, then back-edges from lo = i (evaluated per
    # entry): 2 up to the first instance, 1 more to the second; 2 entries
    assert _overhead(GUARDED.replace("{guard}", "j >= i + 2"), {"N": 2}) == {"A": 2 * (1 + 3), "B": 0}
    # j = i, i+1 hold instances: the 2 back-edges after the last are not charged (documented)
    assert _overhead(GUARDED.replace("{guard}", "j < i + 2"), {"N": 2}) == {"A": 2 * (1 + 1), "B": 0}


def test_a_dma_ops_registers_are_kept_by_its_triggering_engine_not_by_the_queue():
    text = """\
engines PE DVE
queue Q
param N = 3
for k in 0..8 {
  DVE d writes y[k]
}
for i in 0..N with r = N - 2 step 1 {
  PE load writes t[i] via Q wait DVE >= r + 1
}
"""
    # PE: 3 waits of 1 operation, 1 entry (N - 2: 1), 2 back-edges (1 each)
    assert _overhead(text, {"N": 3}) == {"PE": 3 + 1 + 2, "DVE": 0, "Q": 0}


def test_iters_read_by_a_registers_header_is_tracked_when_the_register_is_read():
    text = """\
engines A B
param N = 3
for k in 0..8 {
  B b writes y[k]
}
for i in 0..N {
  for j in 0..2 with q = iters(i) {
    A a writes x[i, j] wait B >= {threshold}
  }
}
"""
    tracking = Profile("tracking", iteration_cycles=5)
    # q read: iters(i) tracked, 3 started iterations on every engine (B has no instance
    # after the loop starts); q unread: nothing tracked
    assert _overhead(text.replace("{threshold}", "q"), {"N": 3}, tracking) == {"A": 15, "B": 0}
    assert _overhead(text.replace("{threshold}", "1"), {"N": 3}, tracking) == {"A": 0, "B": 0}


def test_a_register_costs_an_engine_only_when_it_reads_it():
    """The 'charged on every engine' mistake, found by comparing two programs that differ
    only in whether a B op's threshold (1 operation either way) reads r: B pays r's
    entries only where it does (charged on every engine, B would pay them in both)."""
    with_b = INNER.replace("    A a writes", "    B e writes u[i, j] wait A >= min({atom}, 0)\n    A a writes")
    reads, ignores = with_b.replace("{atom}", "r"), with_b.replace("{atom}", "j")
    assert register_readers(parse(reads))["r"] == frozenset({"A", "B"})
    assert register_readers(parse(ignores))["r"] == frozenset({"A"})
    values = {"N": 3, "M": 2}
    # B's 6 waits of 1 operation; r's 3 entries where B reads r; A's cost is unchanged
    assert _overhead(ignores, values) == {"A": 6 + 3, "B": 6}
    assert _overhead(reads, values) == {"A": 6 + 3, "B": 6 + 3}


# A loop-invariant sub-expression of the inner threshold, in a register of the inner loop
# (set per entry) or of the outer loop (stepped per back-edge).
INVARIANT = [
    ("inner", "for i in 0..N {\n  for j in 0..M with r = 2 * i + 1 {", "r + j"),
    ("inner, shared", "for i in 0..N {\n  for j in 0..M with r = i * M + 1 {", "min(r + j, r + 1)"),
    ("outer, stepped", "for i in 0..N with r = 1 step M {\n  for j in 0..M {", "r + j"),
    ("outer, nested", "for i in 0..N with s = M + 1 step 2 {\n  for j in 0..M with r = s * 2 {", "r + j"),
]


@pytest.mark.parametrize("shape", INVARIANT, ids=lambda s: s[0])
@pytest.mark.parametrize("n, m", [(0, 2), (1, 0), (1, 1), (2, 1), (3, 2), (2, 4)])
def test_a_register_holding_an_invariant_part_is_never_charged_more_than_the_inlined_threshold(shape, n, m):
    _, loops, threshold = shape
    text = (f"engines A B\nparam N = 3, M = 2\nfor k in 0..64 {{\n  B b writes y[k]\n}}\n{loops}\n"
            f"    A a writes x[i, j] wait B >= {threshold}\n  }}\n}}\n")
    profile = Profile("costs", wait_cycles=2, wait_op_cycles=3, iteration_cycles=1)
    values = {"N": n, "M": m}
    registers = _overhead(text, values, profile)
    inlined = _overhead(text, values, profile, inline=True)
    assert sum(registers.values()) <= sum(inlined.values())
    if n >= 1 and m >= 2:  # the register pays for itself once its entry's value is read twice
        assert sum(registers.values()) < sum(inlined.values())


ARITHMETIC = """\
engines A B
param N = 2, M = 3
for k in 0..32 {
  B b writes y[k]
}
for i in 0..N with s = 2 * M step M {
  for j in 0..M with r = s + 1, q = iters(i) step 2, z = 0 step 0 {
    A a writes x[i, j] wait B >= r + j
    A c writes w[i, j] wait B >= min(r, q) + z
  }
}
"""


def test_cost_of_counts_the_thresholds_as_written_plus_each_registers_operations():
    program = parse(ARITHMETIC)
    # thresholds: r + j (1), min(r, q) + z (2); registers: s = 2 * M step M: 1 + (1 + 0);
    # r = s + 1: 1; q = iters(i) step 2: max(1, 0) + (1 + 0); z = 0 step 0: 1 (no step)
    assert cost_of(program).arithmetic == (1 + 2) + 2 + 1 + 2 + 1
    inlined = inline_registers(program)
    old = sum(arithmetic_ops(w.threshold) for s in walk_stmts(inlined.body) if isinstance(s, Op) for w in s.waits)
    assert cost_of(inlined).arithmetic == old
    assert old > cost_of(program).arithmetic  # r, s and q are shared by the two waits


def test_moving_a_sub_expression_into_a_registers_init_costs_the_same_and_sharing_it_less():
    # r + j (1) and r = i * M (1), against i * M + j (2)
    assert cost_of(parse(INNER)).arithmetic == cost_of(inline_registers(parse(INNER))).arithmetic == 2
    shared = INNER.replace("wait B >= r + j", "wait B >= r + j\n    A a2 writes x2[i, j] wait B >= r + 1")
    assert cost_of(parse(shared)).arithmetic == 1 + 1 + 1
    assert cost_of(inline_registers(parse(shared))).arithmetic == 2 + 2


def test_cost_of_simulates_with_the_registers():
    """`cycles` times the program as given (on the default profile, at the defaults): A is
    the critical engine here, and its waits cost less with the register."""
    text = """\
engines A B
param N = 3, M = 4
B b writes y
for i in 0..N {
  for j in 0..M with r = i * M + 1 {
    A a writes x[i, j] wait B >= min(r + j, 1)
  }
}
"""
    program = parse(text)
    with_registers, inlined = cost_of(program), cost_of(inline_registers(program))
    assert (with_registers.arithmetic, inlined.arithmetic) == (2 + 2, 4)
    # trainium: wait_op_cycles 2; per wait 2 operations instead of 4 (12 waits), and 3
    # entries of 2 operations: 48 - 12 cycles less on A, which runs its ops back to back
    assert inlined.cycles - with_registers.cycles == 2 * (12 * 2 - 3 * 2)
