"""The differential check of the happens-before engine against the explicit engine,
shared by its tests and bench/hb_bench.py: generated programs with waits and barriers,
and a comparison of verdict, failing valuation and trace length (plus a replay of every
happens-before trace on both machines)."""

from __future__ import annotations

import collections

import attrs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from semantics.ir import Barrier, For, If
from semantics.machines import Counter, Reference
from tests.support.oracle import exact_waits
from tests.support.perturb import perturbed_exact_programs
from verify.engines import happens_before
from verify.engines.explicit import InternalError
from verify.engines.explicit import check as explicit_check
from verify.engines.valuations import check_valuations
from verify.search.generators import param_bounds, programs
from verify.search.mutate import mutants
from verify.verdicts import CheckOptions, Verdict

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
    """A program with waits and barriers: random waits, perturbed exact waits
    (tests/support/perturb.py), or exact waits (counted since
    the last barrier, tests/support/oracle.py) around randomly placed barriers, with up to three
    mutations (a threshold off by one, a dropped or retargeted wait, a dropped or moved
    barrier...)."""
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return draw(programs(synced=True, engines=(2, 4), max_instances=10))
    if kind == 1:
        return draw(perturbed_exact_programs())
    program = draw(programs(engines=(2, 4), max_instances=10))
    program = attrs.evolve(program, body=draw(with_barriers(program.body)))
    synced = exact_waits(program, param_bounds(program, MAX_PARAM))
    for _ in range(draw(st.integers(0, 3))):
        options = mutants(synced)
        if not options:
            break
        synced = draw(st.sampled_from(options)).program
    return synced


@st.composite
def queue_variants(draw):
    """A program with DMA queues (tests/support/queues.py: one or two, increments 1, 2,
    16), with waits and barriers: random waits (on queues and triggering engines too), or
    the threshold or barrier strategy's waits, with up to three mutations."""
    from algorithm.registry import get_strategy

    from tests.support.queues import queue_programs, with_queue

    kind = draw(st.integers(-1, 2))  # random waits half of the time: the strategies cost most of a run
    if kind <= 0:
        return draw(queue_programs(programs(synced=True, engines=(3, 5), max_instances=10)))
    program = draw(programs(engines=(3, 5), max_instances=10))
    program = with_queue(program, draw(st.sampled_from([1, 2, 16])), second=draw(st.sampled_from([None, 1, 16])))
    synced = get_strategy("threshold" if kind == 1 else "barrier")(program).program
    for _ in range(draw(st.integers(0, 3 if kind == 1 else 1))):
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


def run_differential(examples: int, decide=happens_before.decide_valuation,
                     queues: bool = False) -> tuple[collections.Counter, list]:
    """Compare on `examples` generated programs (`queue_variants` with `queues`)."""
    seen: collections.Counter = collections.Counter()
    mismatches: list = []

    @settings(max_examples=examples, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(queue_variants() if queues else variants())
    def one(program):
        found = differ(program, decide)
        if found is not None:
            mismatches.append((program, found))
        else:
            seen[explicit_check(program, param_bounds(program, MAX_PARAM)).verdict] += 1

    one()
    return seen, mismatches
