"""File-based tests, expected output beside the input: `syncproof sync` of a kernel
in kernels/ must print exactly tests/data/golden/<kernel>.<strategy>.sync. A change to the
algorithm that changes an emitted wait shows up here as a diff to review; regenerate
with `syncproof sync kernels/K.sync --strategy S -o tests/data/golden/K.S.sync`."""


import pytest

from algorithm.registry import get_strategy
from semantics.parser import parse, parse_file
from semantics.printer import print_program

from tests.support.corpus import ROOT
GOLDEN = sorted((ROOT / "tests" / "data" / "golden").glob("*.sync"))


@pytest.mark.parametrize("golden", GOLDEN, ids=lambda p: p.name)
def test_sync_output_matches_golden_file(golden):
    kernel, strategy = golden.name.split(".")[:2]
    program = parse_file(str(ROOT / "kernels" / f"{kernel}.sync"))
    assert print_program(get_strategy(strategy)(program).program) == golden.read_text()


def test_design_example_loop_waits_are_those_of_the_design():
    """docs/design.md section 5 states the exact minimal waits of its example loop."""
    golden = (ROOT / "tests" / "data" / "golden" / "design_example.threshold.sync").read_text()
    for line in ("wait PE >= i - 1", "wait LD >= i + 1, ACT >= i", "wait PE >= i + 1, ST >= i - 1",
                 "wait ACT >= i + 1"):
        assert line in golden
    assert "barrier" not in golden
    assert parse(golden) is not None
