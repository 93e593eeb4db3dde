"""File-based tests, expected output beside the input: `syncproof sync` of a kernel
in kernels/ must print exactly tests/data/golden/<kernel>.<strategy>.sync. A change to the
algorithm that changes an emitted wait shows up here as a diff to review; regenerate
with `syncproof sync kernels/K.sync --strategy S -o tests/data/golden/K.S.sync`."""


import pytest

from algorithm.registry import get_strategy
from semantics.parser import parse, parse_file
from semantics.printer import print_program
from semantics.sequential import unroll

from tests.support.corpus import ROOT
GOLDEN = sorted((ROOT / "tests" / "data" / "golden").glob("*.sync"))


@pytest.mark.parametrize("golden", GOLDEN, ids=lambda p: p.name)
def test_sync_output_matches_golden_file(golden):
    kernel, strategy = golden.name.split(".")[:2]
    program = parse_file(str(ROOT / "kernels" / f"{kernel}.sync"))
    assert print_program(get_strategy(strategy)(program).program) == golden.read_text()


def test_design_example_loop_waits_are_those_of_the_design():
    """docs/design.md section 5 states the exact minimal waits of its example loop (the
    waits written in kernels/design_example.sync). The threshold output may write them in
    another form (`count(LD)` for `i + 1`): at every loop instance, for every N, each
    engine's wait has the same value."""
    golden = (ROOT / "tests" / "data" / "golden" / "design_example.threshold.sync").read_text()
    assert "barrier" not in golden
    written = parse_file(str(ROOT / "kernels" / "design_example.sync"))
    synced = parse(golden)
    loop_ops = {"load", "mm", "act", "store"}
    for n in range(7):
        stated = [_waits(inst) for inst in unroll(written, {"N": n, "K": 0}).instances if inst.op.name in loop_ops]
        planned = [_waits(inst) for inst in unroll(synced, {"N": n, "K": 0}).instances if inst.op.name in loop_ops]
        assert planned == stated, f"N={n}"


def _waits(instance) -> tuple:
    """(op, its waits as engine -> value), values at or below 0 dropped (they always hold)."""
    return instance.op.name, tuple(sorted((engine, value) for engine, value in instance.waits if value > 0))
