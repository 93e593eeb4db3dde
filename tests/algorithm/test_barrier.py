"""The `barrier` baseline (algorithm/barrier.py).

Sound, not minimal: on every kernel (corpus and tests/data/threshold_cases/) its output
passes the soundness check (no unsound state, no deadlock) with every parameter over
0..3, and on a software-pipelined kernel it over-synchronizes: the barriers at
iteration boundaries keep the load of iteration i + 1 from overlapping the store of
iteration i.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from algorithm.registry import barrier, get_strategy
from semantics.ir import Barrier, For, Program, walk_stmts
from semantics.parser import parse, parse_file
from semantics.printer import print_program
from verify.engines.explicit import check
from verify.verdicts import CheckOptions, Verdict

from tests.support.corpus import ALL_KERNELS, HI, KERNELS_DIR, bounds_of, kernel_id

_PARAMS = [pytest.param(path, id=kernel_id(path)) for path in ALL_KERNELS]


@functools.lru_cache(maxsize=None)
def barrier_of(path: Path) -> Program:
    return barrier(parse_file(str(path)))


@pytest.mark.parametrize("path", _PARAMS)
def test_barrier_output_is_sound(path):
    out = barrier_of(path)
    assert parse(print_program(out)) == out
    result = check(out, bounds_of(out, HI), CheckOptions(property="soundness"))
    explanation = result.witness.explanation if result.witness else result.reason
    assert result.holds, f"{result.verdict.value}: {explanation}\n--- output:\n{print_program(out)}"
    assert result.verdict in (Verdict.BISIMILAR, Verdict.OVER_SYNCHRONIZED)


def test_barrier_over_synchronizes_software_pipeline():
    path = KERNELS_DIR / "pipeline_db.sync"
    out = barrier_of(path)
    loops = [s for s in walk_stmts(out.body) if isinstance(s, For)]
    assert loops and isinstance(loops[0].body[0], Barrier), "a barrier at the start of each iteration"
    result = check(out, bounds_of(out, HI))
    assert result.verdict == Verdict.OVER_SYNCHRONIZED, result.verdict
    # the same kernel under the threshold strategy is bisimilar: the difference is the barriers
    assert check(get_strategy("threshold")(parse_file(str(path))).program, bounds_of(out, HI)).verdict \
        == Verdict.BISIMILAR
