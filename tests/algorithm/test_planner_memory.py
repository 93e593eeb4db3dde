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
