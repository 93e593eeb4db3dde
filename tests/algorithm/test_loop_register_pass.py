"""The planner's loop-register pass (algorithm/threshold/registers.py): it keeps every
threshold's value at every instance (checked with the independent oracle, which keeps
registers the way a machine does: set on loop entry, advanced at back-edges), writes
valid kernel text, never adds arithmetic under the one cost function, and a broken
variant of it (a register made for a value that changes inside its loop) is caught."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, assume, given, settings

from algorithm.registry import sync_threshold
from algorithm.threshold import registers as pass_mod
from algorithm.threshold.options import PlannerOptions
from semantics.ir import For, Iters, walk_stmts
from semantics.parser import parse, parse_file
from semantics.printer import print_program
from semantics.errors import EvalError
from semantics.evaluate import arithmetic_ops
from verify.cost import arithmetic, cost_of
from verify.search.generators import programs

from tests.support.corpus import ALL_KERNELS, ROOT, kernel_id
from tests.support.oracle import unroll_program

NESTED = ["kernels/suite/matmul_fully_optimized.sync", "kernels/suite/tiled_matmul.sync",
          "kernels/nested_dynamic.sync", "kernels/suite/conv2d_implicit_gemm.sync",
          "kernels/tile_transpose_2d.sync"]
MAX_INSTANCES = 3_000


def _plans(path, stages=PlannerOptions().stages):
    program = parse_file(str(path))
    plain = sync_threshold(program, options=PlannerOptions(loop_registers=False, stages=stages)).program
    return plain, pass_mod.with_loop_registers(plain)


def _valuations(program):
    """The diagonal 0..3, then every mix of 1 and 2 (at most 64), each at least the lower bounds."""
    names = [p.name for p in program.params]
    lows = [p.lower for p in program.params]
    combos = [(v,) * len(names) for v in range(4)]
    combos += itertools.islice(itertools.product((1, 2), repeat=len(names)), 64)
    for combo in combos:
        yield {n: max(v, lo) for n, v, lo in zip(names, combo, lows)}


def _wait_values(program, values):
    run = unroll_program(program, values)
    return [(inst.op, inst.env, inst.waits) for inst in run.instances]


def _same_thresholds(plain, registered) -> list:
    """Valuations (within the instance budget) where some instance's threshold values differ."""
    differ = []
    for values in _valuations(plain):
        before = _wait_values(plain, values)
        if len(before) > MAX_INSTANCES:
            continue
        if _wait_values(registered, values) != before:
            differ.append(values)
    return differ


@pytest.mark.parametrize("path", [ROOT / k for k in NESTED], ids=lambda p: kernel_id(p))
def test_the_pass_keeps_every_threshold_value_at_every_instance(path):
    plain, registered = _plans(path)
    assert any(isinstance(s, For) and s.registers for s in walk_stmts(registered.body)), "nothing was moved"
    assert _same_thresholds(plain, registered) == []


@pytest.mark.parametrize("path", ALL_KERNELS, ids=lambda p: kernel_id(p))
def test_registered_output_is_valid_text_and_no_more_arithmetic(path):
    plain, registered = _plans(path)
    text = print_program(registered)
    assert parse(text) == registered  # the static checks accept every register it makes
    assert cost_of(registered).arithmetic <= cost_of(plain).arithmetic
    assert _same_thresholds(plain, registered) == []


def test_the_pass_moves_the_invariant_part_of_matmul_waits():
    _, registered = _plans(ROOT / "kernels/suite/matmul_fully_optimized.sync")
    mm = next(s for s in walk_stmts(registered.body) if getattr(s, "name", None) == "mm")
    # `bk + iters(bkr) - TK + 1` becomes one addition to a register of an outer loop
    assert [arithmetic_ops(w.threshold) for w in mm.waits] == [1, 1, 0]
    assert cost_of(registered).arithmetic < cost_of(_plans(ROOT / "kernels/suite/matmul_fully_optimized.sync")[0]).arithmetic


def test_the_pass_is_deterministic():
    path = ROOT / "kernels/suite/matmul_fully_optimized.sync"
    assert print_program(_plans(path)[1]) == print_program(_plans(path)[1])


def test_a_register_for_a_value_that_changes_in_its_loop_is_caught(monkeypatch):
    """Broken variant: `iters(w)` taken as fixed in every loop, also where w runs inside
    the loop. The register then holds the value at loop entry, and the oracle sees it differ."""
    original = pass_mod._Rewriter.dep

    def broken(self, node):
        return -1 if isinstance(node, Iters) else original(self, node)

    monkeypatch.setattr(pass_mod._Rewriter, "dep", broken)
    # (the general stage's output: its thresholds read `iters` of inner loops)
    plain, registered = _plans(ROOT / "kernels/suite/matmul_fully_optimized.sync", ("general",))
    assert _same_thresholds(plain, registered) != []


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(synced=True, max_depth=3, max_waits=3, max_instances=40))
def test_the_pass_keeps_every_threshold_value_on_generated_kernels(program):
    """Generated kernels with random wait thresholds (`if`, `min`, `max`, `//`, `%`, `iters`,
    `count`): the pass keeps every instance's values (a threshold that divides by zero is
    left out), writes valid text and adds no arithmetic."""
    registered = pass_mod.with_loop_registers(program)
    assert parse(print_program(registered)) == registered
    assert arithmetic(registered) <= arithmetic(program)
    for values in _valuations(program):
        try:
            before = _wait_values(program, values)
            after = _wait_values(registered, values)
        except (EvalError, ZeroDivisionError):
            assume(False)
        assert after == before
