"""The closed stage on accesses at parameter-dependent indices outside the loop: every
threshold it plans is the brute-force T_min at every instance for every parameter
valuation in the bounds, a program whose accesses alias for some parameter values only
is left to the later stages, and a broken planner that ignores such aliasing is caught.
Expected values come from the definition (tests/support), never from the planner."""

from __future__ import annotations

import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from algorithm.threshold import closed as closed_mod
from algorithm.threshold.flat import flat_shape
from semantics.parser import parse

from tests.support.closed_plans import in_the_class, problems
from tests.support.corpus import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import generate  # noqa: E402

ENGINES = ["E0", "E1", "E2"]
# Per buffer, the indices its static accesses mostly take (equal parameter terms), and
# now and then one from another buffer's list (aliasing for some parameter values).
STATIC_INDICES = {"a": ["P", "P + 1"], "b": ["P + Q", "P + Q + 1", "2 + Q + P"], "c": ["0", "1", "0..2"]}


@st.composite
def parameter_programs(draw):
    """Straight-line ops (and sometimes a loop of them over buffer c) over buffers a, b,
    c, the ops outside the loop indexed by affine expressions of parameters P and Q."""
    lines = ["engines " + " ".join(ENGINES), "param P, Q >= 1, N"]
    n = 0

    def access(loop):
        buffer = "c" if loop else draw(st.sampled_from("abc"))
        if loop:
            choices = ["i % 2", "0", "1"]
        elif draw(st.integers(0, 9)) == 0:
            choices = [ix for ixs in STATIC_INDICES.values() for ix in ixs]
        else:
            choices = STATIC_INDICES[buffer]
        return f"{buffer}[{draw(st.sampled_from(choices))}]"

    def op(loop=False):
        nonlocal n
        n += 1
        reads = draw(st.lists(st.builds(lambda: access(loop)), max_size=2))
        writes = draw(st.lists(st.builds(lambda: access(loop)), min_size=0 if reads else 1, max_size=1))
        text = f"{draw(st.sampled_from(ENGINES))} op{n}"
        text += (" reads " + ", ".join(reads)) if reads else ""
        return text + ((" writes " + ", ".join(writes)) if writes else "")

    lines += [op() for _ in range(draw(st.integers(1, 4)))]
    if draw(st.booleans()):
        lines.append("for i in 0..N {")
        lines += ["  " + op(loop=True) for _ in range(draw(st.integers(1, 2)))]
        lines.append("}")
        lines += [op() for _ in range(draw(st.integers(0, 2)))]
    return parse("\n".join(lines) + "\n")


@settings(max_examples=100, deadline=None)
@given(program=parameter_programs())
def test_parameter_indexed_programs_are_planned_exactly_for_every_parameter_value(program):
    if not in_the_class(program):
        return  # aliasing for some parameter values only: the later stages plan it
    assert closed_mod.sync_closed(program) is not None, "the concrete check disagreed with the closed forms"
    assert problems(program, hi=2) == []


def test_many_parameter_indices_without_dependences_take_the_closed_stage_with_no_wait():
    program = parse(generate.many_params_kernel(24, 12, engines=3))
    flat = flat_shape(program)
    assert flat.var is None and len(flat.prefix) == 24
    planned = closed_mod.sync_closed(program)
    assert planned is not None
    entries, pairs, dropped = planned
    assert entries == [] and pairs == 0 and dropped == 0
    small = parse(generate.many_params_kernel(6, 3, engines=3))
    assert closed_mod.sync_closed(small) is not None and problems(small, hi=1) == []


def test_equal_parameter_terms_conflict_and_constant_offsets_do_not():
    program = parse("engines A B C\nparam P, Q\n"
                    "A w reads x[Q] writes y[P + 1]\nA w2 writes y[P]\nB r reads y[P + 1]\nC s reads y[P]\n")
    entries, _, _ = closed_mod.sync_closed(program)
    assert {(e.op, e.engine, e.threshold.value) for e in entries} == {("r", "A", 1), ("s", "A", 2)}
    assert problems(program, hi=3) == []


def test_accesses_that_alias_for_some_parameter_values_are_left_to_the_later_stages():
    for text in ["A w writes x[P]\nB r reads x[Q]\n", "A w writes x[P]\nB r reads x[0]\n",
                 "A w writes x[0..2]\nB r reads x[P]\n",
                 "A w writes x[P]\nfor i in 0..N {\n  B r reads x[i]\n}\n"]:
        program = parse("engines A B\nparam P, Q, N\n" + text)
        assert closed_mod.sync_closed(program) is None, text


class _TrustsParameterIndices(closed_mod.Planner):
    """Broken: takes accesses at different parameter terms as disjoint."""

    def check_parameter_buffers(self):
        pass


def test_a_planner_that_ignores_aliasing_for_some_parameter_values_is_caught():
    program = parse("engines A B\nparam P, Q\nA w writes x[P]\nB r reads x[Q]\n")
    assert problems(program, _TrustsParameterIndices, hi=2, reduce=False) != []
