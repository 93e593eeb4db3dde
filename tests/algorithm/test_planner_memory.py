"""The planner frees each solver session's Z3 context when the session goes: no
reference cycle holds a context until the cyclic collector runs (which runs rarely
while a strategy runs, semantics/collector.py), so planning by statement keeps one
slice's context alive at a time, not every slice shape's."""

from __future__ import annotations

import gc
import sys
import weakref

import z3

from algorithm.threshold import facts as facts_mod
from algorithm.threshold.compose import plan_by_statement
from semantics.parser import parse
from semantics.symbolic import conflicting_pairs

from tests.support.corpus import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import generate  # noqa: E402


def _freed_without_the_collector(make) -> bool:
    enabled = gc.isenabled()
    gc.disable()
    try:
        session = make()
        session.var("N")  # the name views in use
        session.z(parse("engines A\nparam N\nA a reads x[N]\n").body[0].reads[0].indices[0])
        gone = weakref.ref(session)
        del session
        return gone() is None
    finally:
        if enabled:
            gc.enable()


def test_a_session_is_freed_by_reference_counting():
    assert _freed_without_the_collector(lambda: facts_mod.Session(1000))


class _StrongNames(facts_mod._Names):
    """Broken: holds the session's method strongly (a reference cycle)."""

    def __init__(self, make):
        dict.__init__(self)
        self._strong = make

    def __missing__(self, name):
        return self._strong(name)


def test_teeth_a_session_held_by_its_own_name_views_is_caught(monkeypatch):
    monkeypatch.setattr(facts_mod, "_Names", _StrongNames)
    assert not _freed_without_the_collector(lambda: facts_mod.Session(1000))


def test_planning_by_statement_leaves_no_slice_context_alive():
    program = parse(generate.chain_kernel(12))
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        before = sum(isinstance(o, z3.Context) for o in gc.get_objects())
        composed = plan_by_statement(program, conflicting_pairs)
        assert composed is not None and composed.shapes >= 3
        after = sum(isinstance(o, z3.Context) for o in gc.get_objects())
    finally:
        if enabled:
            gc.enable()
    assert after - before <= 1  # at most the gap counts' session, none per slice shape


def _z3_objects_in_cycles(plan) -> list[str]:
    """The Z3 objects that `plan()` leaves in reference cycles (freed only by the cyclic
    collector, which is off while a strategy runs), by type name."""
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        plan()
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        found = [type(o).__name__ for o in gc.garbage
                 if isinstance(o, (z3.AstRef, z3.Context, z3.Solver, facts_mod.Facts, facts_mod.Session))]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if enabled:
            gc.enable()
    return found


def _plan(path):
    from algorithm.registry import get_strategy
    from syncproof import load

    program = load(str(ROOT / path))
    return lambda: get_strategy("threshold")(program)


def test_planning_leaves_no_z3_term_in_a_reference_cycle():
    """Recursive closures are reference cycles; one that holds facts (Z3 terms) kept a
    solver context alive until the collector ran, and the planner paid a collection per
    slice shape to free them. Now every Z3 object goes when its last reference does."""
    for path in ("tests/data/threshold_cases/varying_count_war.sync", "tests/data/threshold_cases/clamped_triangular.sync",
                 "tests/data/threshold_cases/triangular_both.sync", "tests/data/threshold_cases/else_of_disjunction.sync"):  # (general stage: Z3)
        assert _z3_objects_in_cycles(_plan(path)) == [], path


def test_teeth_a_closure_cycle_holding_the_facts_is_caught(monkeypatch):
    from algorithm.threshold import plan

    real = plan.counted_form
    called = []

    def cyclic(ctx, y, engine, targets, facts, threshold):
        def again():
            return again, facts  # a recursive closure over the facts: a reference cycle
        called.append(1)
        return real(ctx, y, engine, targets, facts, threshold)

    monkeypatch.setattr(plan, "counted_form", cyclic)
    found = _z3_objects_in_cycles(_plan("tests/data/threshold_cases/varying_count_war.sync"))
    assert called and found
