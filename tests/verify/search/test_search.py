"""Quality tests of the counterexample search (verify/search/search.py): it must find known
failures quickly and shrink them to small witnesses, find nothing on the exact
strategy, and write reproducers that replay the failure."""

from __future__ import annotations

import importlib.util

import pytest

from semantics.ir import ops
from semantics.parser import parse
from verify.search.search import SearchOptions, search, write_reproducer
from verify.verdicts import Verdict

from tests.support.broken_strategies import ignore_war


def test_search_finds_barrier_over_synchronization_shrinks_it_and_its_reproducer_replays_it(tmp_path):
    options = SearchOptions(strategy="barrier", examples=100, seed=1)
    result = search(options)
    assert result.finding is not None, "the barrier baseline is over-synchronized on pipelined loops"
    assert result.finding.result.verdict == Verdict.OVER_SYNCHRONIZED
    assert len(ops(result.finding.program)) <= 4
    # The reproducer written for the finding (one search for both checks).
    kernel, test_file = write_reproducer(result.finding, options, tmp_path)
    assert parse(kernel.read_text()) == result.finding.program
    spec = importlib.util.spec_from_file_location("reproducer", test_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tests = [getattr(module, name) for name in dir(module) if name.startswith("test_")]
    assert len(tests) == 1
    with pytest.raises(AssertionError):  # the barrier strategy is still over-synchronized
        tests[0]()
    # Soundness holds for the barrier baseline: the same search finds nothing then.
    sound = search(SearchOptions(strategy="barrier", examples=15, seed=1, property="soundness"))
    assert sound.finding is None and sound.examples >= 15


def test_search_finds_a_strategy_that_ignores_war_and_shrinks_it():
    result = search(SearchOptions(strategy="ignore-war", sync=ignore_war, examples=100, seed=1))
    assert result.finding is not None
    assert result.finding.result.verdict == Verdict.UNSOUND
    program = result.finding.program
    # The minimal witness: one op reads an element, another engine then writes it.
    assert len(ops(program)) == 2
    reader, writer = ops(program)
    assert reader.engine != writer.engine
    assert {a.buffer for a in reader.reads} & {a.buffer for a in writer.writes}


def test_search_finds_nothing_on_the_threshold_strategy():
    result = search(SearchOptions(strategy="threshold", examples=40, seed=1))
    assert result.finding is None, result.finding
    assert result.examples >= 40 and result.largest_ops >= 3


def test_search_is_reproducible_with_a_seed():
    one = search(SearchOptions(strategy="ignore-war", sync=ignore_war, examples=30, seed=7))
    two = search(SearchOptions(strategy="ignore-war", sync=ignore_war, examples=30, seed=7))
    assert one.finding is not None and one.finding.program == two.finding.program
    assert one.examples == two.examples
