"""Counts in fewer pieces (verify/proof/pieces.py `coalesced`): a coalesced count equals
the count it replaces wherever the parameters are non-negative, checked point by point
(brute force, never by the code under test); small counts are left as built; the proof's
large counts of a kernel repeat no atom set; a guard that does not vanish is never dropped (teeth); the proof's counts of
generated kernels are the unrolled local indices. (The corpus comparison in
tests/verify/proof/test_prove.py catches a coalescing that drops every guard on
if_else_split.)"""

from __future__ import annotations

import itertools

import sympy as sp
import z3
from hypothesis import assume, given
from hypothesis import strategies as st

from algorithm.registry import get_strategy
from semantics.context import sites
from semantics.parser import parse_file
from semantics.sequential import unroll
from tests.support.budget import scaled
from tests.support.corpus import ROOT
from verify.engines.deadline import Deadline
from verify.proof import pieces as pieces_module
from verify.proof.counts import Counter, Unsupported, to_z3
from verify.proof.jobs import counts
from verify.proof.pieces import SMALL_COUNT, coalesced, sym
from verify.search.generators import programs

P, Q, J = sym("P"), sym("Q"), sym("j")  # P, Q: parameters (never negative); j: a loop index (any sign)
ATOMS = [("ge", P - 1), ("ge", Q - 1), ("ge", J - 1), ("ge", 1 - J), ("ge", J - 2), ("ge", P - J),
         ("eq", J - 1), ("ge", 2 * P - 1), ("ge", Q - P)]
VALUES = [sp.Integer(1), P, P * Q, Q * J, J, P * J - Q, P - 1, Q * Q - Q, sp.Integer(-2), P * Q * J]
BOX = list(itertools.product(range(4), range(4), range(-2, 4)))  # P, Q >= 0; j of either sign


def value_at(count, point) -> int:
    """The guarded sum at one point: the values of the pieces whose atoms hold, summed."""
    env = dict(zip((P, Q, J), point))
    total = 0
    for conds, value in count:
        if all(e.xreplace(env) >= 0 if kind == "ge" else e.xreplace(env) == 0 for kind, e in conds):
            total += value.xreplace(env)
    return total


counts_drawn = st.lists(st.tuples(st.lists(st.sampled_from(ATOMS), max_size=3).map(tuple), st.sampled_from(VALUES)),
                        max_size=8)


def _differs(count) -> list:
    fewer = coalesced(count, frozenset((P, Q)), small=0)
    return [point for point in BOX if value_at(fewer, point) != value_at(count, point)]


@scaled(2)
@given(counts_drawn)
def test_a_coalesced_count_equals_the_count_wherever_the_parameters_are_non_negative(count):
    assert _differs(count) == []
    assert len(coalesced(count, frozenset((P, Q)), small=0)) <= len(count)


def test_repeated_and_guarded_pieces_join():
    """`P * Q` under `P >= 1` beside `Q` (twice) under no guard: one piece, `P*Q + 2*Q`;
    `1` under `Q >= 1` keeps its guard (it does not vanish at Q = 0)."""
    count = (((("ge", P - 1),), P * Q), ((), Q), ((), Q), ((("ge", Q - 1),), sp.Integer(1)))
    fewer = coalesced(count, frozenset((P, Q)), small=0)
    assert sorted(map(str, fewer)) == sorted(map(str, (((), P * Q + 2 * Q), ((("ge", Q - 1),), sp.Integer(1)))))


def test_teeth_dropping_a_guard_that_does_not_vanish_is_caught(monkeypatch):
    monkeypatch.setattr(pieces_module, "redundant_guard", lambda atom, value, nonneg: atom[0] == "ge")
    assert _differs((((("ge", P - 1),), sp.Integer(1)), ((), Q)))


def test_small_counts_are_left_as_built():
    count = (((("ge", P - 1),), P * Q), ((), Q), ((), Q))
    assert coalesced(count, frozenset((P, Q))) == count


def test_the_proofs_large_counts_repeat_no_atom_set():
    """attention_cte_query_outer's counts of more than SMALL_COUNT pieces repeated atom sets
    before coalescing."""
    program = get_strategy("threshold")(parse_file(str(ROOT / "kernels" / "suite" / "attention_cte_query_outer.sync"))).program
    large = [count for count in counts(program, Deadline.after(None)).built() if len(count) > SMALL_COUNT]
    assert len(large) >= 5
    for count in large:
        sets = [frozenset(conds) for conds, _ in count]
        assert len(sets) == len(set(sets)), count


@scaled(0.5)
@given(programs(engines=(2, 4), max_depth=3, params=(1, 2), max_param=3, max_instances=40))
def test_the_proofs_counts_of_generated_kernels_are_the_unrolled_local_indices(program):
    """Every count of an op's engine instances before it, each coalesced however small,
    at every instance of every valuation in 0..3, is the number of that engine's
    instances before it in program order."""
    counter = Counter(program, small=0)
    found = sites(program)
    try:
        for site in found.values():
            for engine in program.engines:
                counter.before(site, ("engine", engine))
    except Unsupported:
        assume(False)  # no closed form: the proof says so and falls back
    names = [p.name for p in program.params]
    for values in itertools.product(range(4), repeat=len(names)):
        unrolled = unroll(program, dict(zip(names, values)))
        seen = [0] * len(program.engines)
        for instance in unrolled.instances:
            env = {k: z3.IntVal(v) for k, v in [*zip(names, values), *instance.env]}
            for number, engine in enumerate(program.engines):
                term = to_z3(counter.before(found[instance.op.name], ("engine", engine)), env, counter.atoms)
                assert z3.simplify(term).as_long() == seen[number], (instance.describe(), values, engine)
            seen[instance.engine] += 1
