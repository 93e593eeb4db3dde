"""The happens-before engine against the explicit engine (docs/happens-before.md).

On generated programs with waits and barriers (random waits, and threshold/barrier
outputs perturbed by the mutation operators, so that every verdict occurs), the two
engines must give the same verdict, failing valuation and trace length; every
happens-before trace must replay on both machines to a state where they disagree.
Two deliberately broken variants (tests/support/broken_engines.py) must be caught.
"""

from __future__ import annotations

import collections

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attrs
from semantics.ir import Barrier, For, If
from semantics.machines import Counter, Reference
from semantics.parser import parse
from verify.engines import happens_before
from verify.engines.valuations import check_valuations
from verify.explicit import InternalError
from verify.explicit import check as explicit_check
from verify.mutate import mutants
from verify.strategies import param_bounds, programs
from verify.verdicts import CheckOptions, Verdict

from tests.oracle import exact_waits
from tests.support.broken_engines import BROKEN

MAX_PARAM = 2


@st.composite
def with_barriers(draw, body):
    """`body` with barriers drawn in front of some statements (also inside loops and ifs)."""
    out = []
    for stmt in body:
        if draw(st.integers(0, 3)) == 0:
            out.append(Barrier())
        if isinstance(stmt, For):
            stmt = attrs.evolve(stmt, body=draw(with_barriers(stmt.body)))
        elif isinstance(stmt, If):
            stmt = attrs.evolve(stmt, then=draw(with_barriers(stmt.then)), else_=draw(with_barriers(stmt.else_)))
        out.append(stmt)
    return tuple(out)


@st.composite
def variants(draw):
    """A program with waits and barriers: random waits, or exact waits (counted since
    the last barrier, tests/oracle.py) around randomly placed barriers, with up to three
    mutations (a threshold off by one, a dropped or retargeted wait, a dropped or moved
    barrier...)."""
    if draw(st.integers(0, 2)) == 0:
        return draw(programs(synced=True, engines=(2, 4), max_instances=10))
    program = draw(programs(engines=(2, 4), max_instances=10))
    program = attrs.evolve(program, body=draw(with_barriers(program.body)))
    synced = exact_waits(program, param_bounds(program, MAX_PARAM))
    for _ in range(draw(st.integers(0, 3))):
        options = mutants(synced)
        if not options:
            break
        synced = draw(st.sampled_from(options)).program
    return synced


def outcome(result):
    witness = result.witness
    return (result.verdict, result.holds, result.complete,
            witness and witness.verdict, witness and witness.unrolled.valuation, witness and len(witness.trace))


def replays(witness) -> bool:
    """The trace is a run of both machines, ending where they disagree on `failing`."""
    ref, ctr = Reference(witness.unrolled), Counter(witness.unrolled)
    r, c = ref.initial(), ctr.initial()
    for label in witness.trace:
        if label not in ref.enabled(r) or label not in ctr.enabled(c):
            return False
        r, c = ref.step(r, label), ctr.step(c, label)
    if witness.verdict == Verdict.UNSOUND:
        return all(l in ctr.enabled(c) and l not in ref.enabled(r) for l in witness.failing)
    return all(l in ref.enabled(r) and l not in ctr.enabled(c) for l in witness.failing)


def differ(program, decide=happens_before.decide_valuation):
    """None when the engine under test agrees with the explicit engine, else both outcomes."""
    bounds = param_bounds(program, MAX_PARAM)
    expected = explicit_check(program, bounds)
    try:
        got = check_valuations(program, bounds, CheckOptions(), decide, happens_before.ENGINE)
    except InternalError as err:  # the engine's own cross-check of its witness state
        return outcome(expected), f"internal error: {err}"
    if outcome(expected) != outcome(got):
        return outcome(expected), outcome(got)
    if got.witness is not None and not replays(got.witness):
        return outcome(expected), "the trace does not replay"
    return None


def run_differential(examples: int, decide=happens_before.decide_valuation) -> tuple[collections.Counter, list]:
    seen: collections.Counter = collections.Counter()
    mismatches: list = []

    @settings(max_examples=examples, database=None)
    @given(variants())
    def one(program):
        found = differ(program, decide)
        if found is not None:
            mismatches.append((program, found))
        else:
            seen[explicit_check(program, param_bounds(program, MAX_PARAM)).verdict] += 1

    one()
    return seen, mismatches


def test_agrees_with_the_explicit_engine_on_every_verdict():
    seen, mismatches = run_differential(400)
    assert not mismatches, mismatches[0]
    # Not vacuous: every verdict occurs.
    for verdict in (Verdict.BISIMILAR, Verdict.UNSOUND, Verdict.DEADLOCK, Verdict.OVER_SYNCHRONIZED):
        assert seen[verdict] >= 5, seen


@pytest.mark.slow
def test_agrees_with_the_explicit_engine_at_length():
    seen, mismatches = run_differential(1500)
    assert not mismatches, mismatches[0]
    assert min(seen[v] for v in (Verdict.BISIMILAR, Verdict.UNSOUND, Verdict.DEADLOCK,
                                 Verdict.OVER_SYNCHRONIZED)) >= 20, seen


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_engine_is_caught(name):
    _, mismatches = run_differential(400, BROKEN[name])
    assert mismatches, f"the differential test does not catch the engine {name}"


# Bisimilar: c overwrites everything B read before the barrier, so the barrier holds
# c back no longer than the reference does; d's wait counts c since the barrier.
BARRIER_THEN_FREE = """
engines A B
param N
for i in 0..N {
  A a writes x[i]
  B b reads x[i] wait A >= i + 1
}
barrier
A c writes x[0], x[1], x[2]
B d reads x[0], x[1], x[2] wait A >= 1
"""


def test_thresholds_count_from_the_last_barrier_and_barriers_pass_eagerly():
    program = parse(BARRIER_THEN_FREE)
    bounds = (("N", 3, 3),)  # below 3, c would overwrite what no b read
    assert explicit_check(program, bounds).verdict == Verdict.BISIMILAR
    result = happens_before.check(program, bounds)
    assert result.verdict == Verdict.BISIMILAR and result.holds and result.engine == "happens-before"
    for name, decide in BROKEN.items():  # wrong, or caught by the engine's own cross-check of its witness
        try:
            broken = check_valuations(program, bounds, CheckOptions(), decide, "broken")
        except InternalError:
            continue
        assert broken.verdict != Verdict.BISIMILAR, name


def test_peer_clauses_are_refused():
    program = parse("engines A B\nA a writes x setflag B:0\nB b reads x waitflag A:0\n")
    with pytest.raises(Exception, match="happens-before engine does not handle"):
        happens_before.check(program, ())
