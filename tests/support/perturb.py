"""Synchronized programs for the checkers' property tests: exact waits from the
independent oracle, then mutated (a threshold lowered, raised or delayed, a wait dropped,
a barrier added), so every verdict occurs. Shared by the engine and proof tests."""

from __future__ import annotations

import attrs
from hypothesis import strategies as st

from semantics.ir import Barrier, For, If, Program
from verify.search.generators import param_bounds, programs
from tests.support import oracle

HI = 2  # parameters range over 0..HI (the size bound of programs() assumes max_param=2)


def bounds_of(program: Program):
    return param_bounds(program, HI)


def fails(prop, *args) -> bool:
    """Does the property (a function that asserts) fail on these arguments?"""
    try:
        prop(*args)
    except AssertionError:
        return True
    return False


def _blocks(body, path=()):
    """Every statement block, as a path of (statement index, branch) steps."""
    yield path, body
    for n, stmt in enumerate(body):
        if isinstance(stmt, For):
            yield from _blocks(stmt.body, path + ((n, "body"),))
        elif isinstance(stmt, If):
            yield from _blocks(stmt.then, path + ((n, "then"),))
            yield from _blocks(stmt.else_, path + ((n, "else_"),))


def _insert(body, path, position, new):
    if not path:
        return body[:position] + (new,) + body[position:]
    (n, branch), rest = path[0], path[1:]
    stmt = body[n]
    inner = _insert(getattr(stmt, branch), rest, position, new)
    return body[:n] + (attrs.evolve(stmt, **{branch: inner}),) + body[n + 1:]


def _preceding(program: Program):
    """(op, F) -> {key: number of F-instances before the op's instance in program order}."""
    out: dict = {}
    for values in oracle.all_valuations(bounds_of(program)):
        run = oracle.unroll_program(program, values)
        for y in run.instances:
            for f in program.engines:
                if f != y.engine:
                    count = sum(1 for x in run.instances[: y.id] if x.engine == f)
                    out.setdefault((y.op, f), {})[y.key] = count
    return out


@st.composite
def perturbed_exact_programs(draw, ranges: bool = False):
    """Exact waits, then up to three mutations: a positive threshold lowered by 1 or 2
    for one instance, a threshold raised by 1..3 for one instance, a threshold raised
    to wait for a later F-instance that still precedes the op, a wait dropped, a
    barrier added. `ranges`: the programs have range accesses `a[lo..hi]` too."""
    program = draw(programs(ranges=ranges))
    table = oracle.exact_table(program, bounds_of(program))
    before = _preceding(program)
    entries = sorted((op, f, key) for (op, f), d in table.items() for key in d)
    waits = sorted(table)
    dropped = set()
    for _ in range(draw(st.sampled_from([0, 1, 1, 1, 2, 3]))):  # shrinks to 0: exact
        kind = draw(st.sampled_from(["lower", "lower", "raise", "delay", "drop", "barrier"]))
        positive = [(op, f, key) for op, f, key in entries if table[(op, f)][key] > 0]
        delayable = [(op, f, key) for op, f, key in entries if table[(op, f)][key] < before[(op, f)][key]]
        if kind == "delay" and delayable:
            # wait for a later instance of F that still precedes the op: over-synchronized
            op, f, key = delayable[draw(st.integers(0, len(delayable) - 1))]
            table[(op, f)][key] = draw(st.integers(table[(op, f)][key] + 1, before[(op, f)][key]))
        elif kind == "lower" and positive:
            op, f, key = positive[draw(st.integers(0, len(positive) - 1))]
            table[(op, f)][key] -= draw(st.sampled_from([1, 2]))
        elif kind == "raise" and entries:
            op, f, key = entries[draw(st.integers(0, len(entries) - 1))]
            table[(op, f)][key] += draw(st.sampled_from([1, 2, 3]))
        elif kind == "drop" and waits:
            dropped.add(waits[draw(st.integers(0, len(waits) - 1))])
        elif kind == "barrier":
            blocks = list(_blocks(program.body))
            path, body = blocks[draw(st.integers(0, len(blocks) - 1))]
            program = attrs.evolve(program, body=_insert(program.body, path, draw(st.integers(0, len(body))),
                                                         Barrier()))
    for wait in dropped:
        table[wait] = {}
    return oracle.waits_from_table(program, table)
