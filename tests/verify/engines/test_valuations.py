"""The valuations of a bounded check are made one at a time, in the order the engines
promise (smallest sum first, then lexicographic): four parameters in 0..40 are 2.8
million, and sorting them all first would take seconds that no time limit stops."""

import itertools

from hypothesis import given, strategies as st

from verify.engines.valuations import valuations


def _brute_force(bounds):
    ranges = [range(lo, hi + 1) for _, lo, hi in bounds]
    combos = sorted(itertools.product(*ranges), key=lambda v: (sum(v), v))
    return [dict(zip([n for n, _, _ in bounds], c)) for c in combos]


bounds_lists = st.lists(st.tuples(st.integers(-3, 4), st.integers(-1, 4)), max_size=4).map(
    lambda pairs: tuple((f"P{n}", lo, lo + span) for n, (lo, span) in enumerate(pairs)))


@given(bounds_lists)
def test_valuations_are_the_sorted_product_of_the_ranges(bounds):
    expected = _brute_force(bounds)
    made = valuations(bounds)
    assert list(made) == expected
    assert made.size == len(expected) == len(made)


def test_valuations_of_wide_bounds_are_counted_and_begun_at_once():
    bounds = tuple((name, 0, 40) for name in ("JT", "QT", "NK", "TP"))
    made = valuations(bounds)
    first = list(itertools.islice(made, 3))
    assert made.size == 41 ** 4
    assert first == [dict(JT=0, QT=0, NK=0, TP=0), dict(JT=0, QT=0, NK=0, TP=1), dict(JT=0, QT=0, NK=1, TP=0)]


def test_valuations_count_beyond_a_machine_word():
    """10^36 valuations: only a lazy enumeration answers at all."""
    made = valuations(tuple((f"P{n}", 0, 10 ** 9) for n in range(4)))
    assert made.size == (10 ** 9 + 1) ** 4
    assert next(iter(made)) == {f"P{n}": 0 for n in range(4)}
