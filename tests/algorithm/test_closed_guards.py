"""The closed stage on flat bodies with periodic guards (algorithm/threshold/guards.py,
forms.py): every threshold it plans is the brute-force T_min at every instance, the
output is bisimilar per the independent oracle, guards that are not periodic leave the
program to the later stages, and broken variants of the guarded counts are caught.
Expected values come from the definition (tests/support), never from the planner."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from algorithm.registry import sync_threshold
from algorithm.threshold import closed as closed_mod
from algorithm.threshold.concrete import Disagreement, check_and_reduce
from algorithm.threshold.flat import NotFlat, flat_shape
from algorithm.threshold.guards import GuardedBody, guard_of
from semantics.ir import Count, For, IfExpr, Op, walk_expr, walk_stmts
from semantics.parser import parse, parse_file

from tests.support.closed_plans import in_the_class, raw_thresholds, problems
from tests.support.corpus import ROOT

GUARDED = ["kernels/suite/transpose_parity_evac.sync", "tests/data/threshold_cases/guarded_masking.sync",
           "tests/data/threshold_cases/parity_engines.sync", "tests/data/threshold_cases/parity_mod3.sync"]
# Two ops of one engine under different guards, a guarded op before the loop's
# producers, and an op after the loop reading what a guarded op wrote.
SHARED_ENGINE = """engines LD ACT ST
param N >= 1
ST init writes o[0], o[1], o[2]
for i in 1..N {
  if i % 2 == 0 {
    ACT pre reads o[0] writes s
  }
  LD ld writes a[i % 2]
  if not i % 3 == 1 {
    ACT e reads a[i % 2] writes o[i % 3]
  } else {
    ST e1 reads s
  }
  ST st reads o[i % 3]
}
ST last reads s
"""


def _guarded(name):
    return parse(SHARED_ENGINE) if name == "shared_engine" else parse_file(str(ROOT / name))


@pytest.mark.parametrize("path", GUARDED + ["shared_engine"])
def test_guarded_kernels_are_planned_by_the_closed_stage_exactly(path):
    program = _guarded(path)
    assert flat_shape(program).guards
    assert closed_mod.sync_closed(program) is not None
    assert problems(program, hi=9) == []


def test_transpose_parity_evac_takes_small_thresholds():
    program = parse_file(str(ROOT / "kernels/suite/transpose_parity_evac.sync"))
    result = sync_threshold(program)
    waits = {(op.name, w.engine): w.threshold for op in walk_stmts(result.program.body) if isinstance(op, Op)
             for w in op.waits}
    assert len(waits) == 10
    for threshold in waits.values():  # at most one `if` on a residue, no nested one
        assert sum(isinstance(n, IfExpr) for n in walk_expr(threshold)) <= 1


def test_guards_are_residue_sets():
    cond = lambda text: next(s for s in parse(f"engines A\nparam N\nfor i in 0..N {{\n if {text} {{\n A a\n }}\n}}\n")
                             .body if isinstance(s, For)).body[0].cond
    g = guard_of(cond("i % 2 == 0 and not i % 3 == 1"), "i")
    assert (g.period, g.residues) == (6, frozenset({0, 2}))
    g = guard_of(cond("(i + 1) % 2 != 0 or i % 4 < 1"), "i")
    assert (g.period, g.residues) == (4, frozenset({0, 2}))
    for text in ["i < 3", "i % 2 == i", "N > 2", "i % 2 == N"]:
        with pytest.raises(NotFlat):
            guard_of(cond(text), "i")


@pytest.mark.parametrize("text", [
    "for i in 0..N {\n  if i < S {\n    A a writes x\n  }\n  B b reads x\n}\n",
    "for i in 0..N {\n  if i % 2 == 0 {\n    for j in 0..2 {\n      A a writes x\n    }\n  }\n  B b reads x\n}\n",
    "for i in 0..N {\n  if i % 2 == 0 {\n    A a writes x\n    barrier\n  }\n  B b reads x\n}\n",
])
def test_guards_outside_the_class_are_left_to_the_later_stages(text):
    program = parse("engines A B\nparam N, S\n" + text)
    assert closed_mod.sync_closed(program) is None
    for path in ["kernels/if_else_split.sync", "kernels/suite/rmsnorm.sync"]:
        with pytest.raises(NotFlat):
            flat_shape(parse_file(str(ROOT / path)))


# ---------------------------------------------------------------- generated guarded bodies

ENGINES = ["E0", "E1", "E2", "E3"]
# Per buffer, the indices of its accesses in the loop and outside it (buffer b: linear
# indices, which meet no constant one; the others periodic ones, constants and ranges).
LOOP_INDICES = {"a": ["i % 2", "(i + 1) % 2", "i % 3", "0", "1"], "b": ["i", "i + 1", "i - 2"],
                "c": ["i % 2", "i % 4", "0", "0..2", None]}
CONST_INDICES = {"a": ["0", "1"], "b": [], "c": ["0", "1", "0..2", None]}
CONDITIONS = ["i % 2 == 0", "i % 2 != 0", "i % 3 == 1", "i % 3 != 0", "(i + 1) % 2 == 0 and i % 3 != 2",
              "i % 2 == 1 or i % 3 == 0", "not i % 4 == 3", "i % 4 < 2"]


@st.composite
def guarded_programs(draw):
    engines = ENGINES[:draw(st.integers(2, 4))]
    lines = ["engines " + " ".join(engines), f"param N >= {draw(st.integers(0, 1))}"]
    n = 0

    def op(indices, pad):
        nonlocal n
        n += 1
        access = lambda: (lambda b, ix: b if ix is None else f"{b}[{ix}]")(
            b := draw(st.sampled_from([b for b in "abc" if indices[b]])), draw(st.sampled_from(indices[b])))
        reads = draw(st.lists(st.builds(access), max_size=2))
        writes = draw(st.lists(st.builds(access), min_size=0 if reads else 1, max_size=1))
        text = f"{pad}{draw(st.sampled_from(engines))} o{n}"
        text += (" reads " + ", ".join(reads)) if reads else ""
        return text + ((" writes " + ", ".join(writes)) if writes else "")

    def block(pad, depth):
        out = []
        for _ in range(draw(st.integers(1, 3))):
            if depth < 2 and draw(st.integers(0, 2)) == 0:
                out.append(f"{pad}if {draw(st.sampled_from(CONDITIONS))} {{")
                out += block(pad + "  ", depth + 1)
                if draw(st.booleans()):
                    out.append(f"{pad}}} else {{")
                    out += block(pad + "  ", depth + 1)
                out.append(f"{pad}}}")
            else:
                out.append(op(LOOP_INDICES, pad))
        return out

    lines += [op(CONST_INDICES, "") for _ in range(draw(st.integers(0, 2)))]
    lines.append(f"for i in {draw(st.integers(0, 1))}..N {{")
    lines += block("  ", 0)
    if not any(line.lstrip().startswith("if ") for line in lines):
        lines.append(f"  if {draw(st.sampled_from(CONDITIONS))} {{")
        lines.append(op(LOOP_INDICES, "    "))
        lines.append("  }")
    lines.append("}")
    lines += [op(CONST_INDICES, "") for _ in range(draw(st.integers(0, 2)))]
    text = "\n".join(lines) + "\n"
    for b in "abc":  # a dimension count per buffer: an index-less access must not meet an indexed one
        if f" {b}[" in text or f", {b}[" in text:
            text = text.replace(f" {b},", f" {b}[0],").replace(f" {b}\n", f" {b}[0]\n")
    return parse(text)


@settings(max_examples=150, deadline=None)
@given(program=guarded_programs())
def test_generated_guarded_bodies_are_planned_exactly(program):
    if not in_the_class(program):
        return  # outside the class (a linear index against a range, ...): the later stages plan it
    assert closed_mod.sync_closed(program) is not None, "the concrete check disagreed with the closed forms"
    assert problems(program, hi=13) == []


def test_generated_guarded_bodies_mostly_take_the_closed_stage():
    """The property above is not vacuous: most generated bodies are in the class."""
    examples = []

    @settings(max_examples=60, deadline=None, database=None)
    @given(program=guarded_programs())
    def collect(program):
        examples.append(in_the_class(program))

    collect()
    assert sum(examples) >= len(examples) // 2


# ---------------------------------------------------------------- broken variants


class _GuardAtTheNextIteration(GuardedBody):
    """Broken: the ops before x in the body are counted by their guards one iteration late."""

    def count_at(self, x, j):
        e = x.engine
        return self.planner.pre[e] + self.iterations(e, j) + self.before[x.name][e][(j + 1) % self.L] + 1


class _EveryOpRuns(GuardedBody):
    """Broken: the iterations before j are counted as if every op ran in each."""

    def iterations(self, e, j):
        return max(0, j - self.lo) * sum(op.engine == e for op in self.flat.body)


def _planner_with(guarded):
    class Broken(closed_mod.Planner):
        def __init__(self, *args):
            super().__init__(*args)
            self.guarded = guarded(self)

    Broken.__name__ = guarded.__name__
    return Broken


@pytest.mark.parametrize("guarded", [_GuardAtTheNextIteration, _EveryOpRuns])
def test_broken_guarded_counts_are_caught(guarded):
    """Brute force and the oracle catch each broken variant on the guarded kernels, and
    so does the closed stage's own concrete check (the program then goes to the general
    planner instead of being emitted)."""
    broken = _planner_with(guarded)
    caught = [path for path in GUARDED + ["shared_engine"] if problems(_guarded(path), broken, hi=9, reduce=False)]
    assert caught, f"{guarded.__name__} passed every check"
    program = _guarded(caught[0])
    flat, thresholds, distance = raw_thresholds(program, broken)
    with pytest.raises(Disagreement):
        check_and_reduce(program, flat, thresholds, distance)


def test_thresholds_may_read_the_engine_count_register():
    program = parse_file(str(ROOT / "tests/data/threshold_cases/parity_mod3.sync"))
    _, plan = closed_mod.plan_closed(program)
    assert all(any(isinstance(n, Count) for n in walk_expr(t)) for t in plan.thresholds.values())
