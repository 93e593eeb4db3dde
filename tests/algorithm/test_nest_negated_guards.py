"""The nest stage on guards written negated (`not i == 0`, `i != N - 1`): each is the
plain guard with its branches swapped. Expected values come from brute force."""

from __future__ import annotations

from algorithm.registry import get_strategy
from algorithm.threshold import nest_guards
from syncproof import load

from tests.support.corpus import ROOT
from tests.support.nest_plans import problems

KERNEL = "tests/data/nest/negated_guards.sync"


def test_negated_guards_are_planned_exactly_by_the_nest_stage(monkeypatch):
    import algorithm.threshold.pipeline as pipeline

    program = load(str(ROOT / KERNEL))
    assert problems(program) == []

    def refuse(*_):
        raise AssertionError("the general stage ran")

    monkeypatch.setitem(pipeline.STAGES, "general", refuse)
    assert not get_strategy("threshold")(program).stats.conservative


def test_teeth_a_negation_read_as_the_guard_itself_is_caught(monkeypatch):
    """Broken: `not c` (and `a != b`) taken read as c (`a == b`) taken."""
    from algorithm.threshold import nest, nest_counts
    from algorithm.threshold.reasoning import settled
    from semantics.ir import Compare, Not

    real = nest_guards.guard_of

    def ignores_negation(cond, branch, loop_vars):
        c = settled(cond)
        c = c.operand if isinstance(c, Not) else c
        c = Compare("==", c.left, c.right) if isinstance(c, Compare) and c.op == "!=" else c
        return real(c, branch, loop_vars)

    for module in (nest_guards, nest, nest_counts):
        monkeypatch.setattr(module, "guard_of", ignores_negation)
    assert problems(load(str(ROOT / KERNEL))) != []
