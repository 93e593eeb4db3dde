"""`count_instances` counts what `unroll` makes without making it, and refuses a
runaway size at once, before making any instance."""

import pytest
from hypothesis import given, settings, strategies as st

from semantics.parser import parse
from semantics.sequential import UnrollLimit, count_instances, unroll
from verify.search.generators import programs, valuations


@settings(max_examples=150)
@given(programs().flatmap(lambda p: st.tuples(st.just(p), valuations(p, 3))))
def test_count_instances_equals_the_unrolled_count(case):
    program, values = case
    try:
        expected = len(unroll(program, values).instances)
    except UnrollLimit:
        return
    except Exception:  # an error of the kernel at these values, which unroll reports: the
        count_instances(program, values, 10 ** 9)  # count only has to end cleanly (any number, or None)
        return
    assert count_instances(program, values, 10 ** 9) == expected
    for limit in range(max(0, expected - 2), expected + 2):  # refused exactly where unroll refuses
        try:
            unroll(program, values, limit=limit)
        except UnrollLimit:
            with pytest.raises(UnrollLimit):
                count_instances(program, values, limit)
        else:
            assert count_instances(program, values, limit) == expected


_TRIANGLE = """engines A B
param N
for i in 0..N {
  for j in 0..i {
    if j % 2 == 0 {
      A a writes x[j]
    }
    B b reads x[j]
  }
}
"""


def test_count_instances_of_a_triangle_with_guards():
    program = parse(_TRIANGLE)
    for n in range(8):
        assert count_instances(program, {"N": n}, 10 ** 6) == len(unroll(program, {"N": n}).instances)


def test_a_runaway_size_is_refused_without_counting_every_instance():
    program = parse("engines A B\nparam N\nfor i in 0..N {\n  A a writes x\n  B b reads x\n}\n")
    assert count_instances(program, {"N": 10 ** 15}, 10 ** 30) == 2 * 10 ** 15  # multiplied, not iterated
    with pytest.raises(UnrollLimit):
        count_instances(program, {"N": 10 ** 8}, 2_000_000)
    with pytest.raises(UnrollLimit):  # a triangle: stops once past the limit
        count_instances(parse(_TRIANGLE), {"N": 10 ** 8}, 2_000_000)


_EDGES = """engines A B
param N
for i in 0..N {
  barrier
  for j in 0..N - i {
  }
  if i % 3 == 0 {
    A a writes x[i]
  }
}
"""


_EMPTY_LOOP = """engines A B
param N
for k in 0..3 * N {
}
A a writes x
"""


@pytest.mark.parametrize("text", [_EDGES, _EMPTY_LOOP], ids=["barriers", "empty-loop"])
@pytest.mark.parametrize("n", range(7))
def test_count_instances_refuses_barrier_passes_and_long_empty_loops_as_unroll_does(text, n):
    program = parse(text)
    expected = len(unroll(program, {"N": n}).instances)
    for limit in range(0, 3 * n + 3):
        try:
            unroll(program, {"N": n}, limit=limit)
        except UnrollLimit:
            with pytest.raises(UnrollLimit):
                count_instances(program, {"N": n}, limit)
        else:
            assert count_instances(program, {"N": n}, limit) == expected
