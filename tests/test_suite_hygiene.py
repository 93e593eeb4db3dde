"""The suite never reads the clock and never patches what it does not own
(docs/testing.md, "Clocks and patches"): no assertion bounds elapsed time (load moves
it: `seconds < 0.5` saw 0.509 on a loaded machine), no test reads the wall clock, and
nothing of z3 or Hypothesis is patched or imported from Hypothesis's internals (their
internals move under us; a patched solver tests something other than what runs).
Time budgets are tested with fake clocks (tests/support/clock.py, through the options'
`clock` fields) or with deterministic budgets (Z3's rlimit). Each scan is also shown
to fail on a snippet that breaks its rule (tests/support/hygiene.py)."""

from __future__ import annotations

import pytest

from tests.support import hygiene
from tests.support.corpus import ROOT

SOURCES = list(hygiene.test_sources(ROOT))


def _everywhere(scan) -> list[str]:
    return [found for path, text in SOURCES for found in scan(path, text)]


def test_no_assertion_bounds_elapsed_time():
    found = _everywhere(hygiene.clock_assertions)
    assert not found, "assertions on elapsed time (use a fake clock or an rlimit):\n" + "\n".join(found)


def test_no_test_reads_the_clock():
    found = _everywhere(hygiene.clock_reads)
    assert not found, "clock readings in tests (use tests/support/clock.py):\n" + "\n".join(found)


def test_nothing_of_z3_or_hypothesis_is_patched():
    found = _everywhere(hygiene.foreign_patches) + _everywhere(hygiene.hypothesis_internals)
    assert not found, "patches of z3 or Hypothesis (inject through our options instead):\n" + "\n".join(found)


# ------------------------------------------------------------------ the scans can fail

@pytest.mark.parametrize("source", [
    "def test(p):\n    assert p.seconds < 0.5\n",
    "def test(d):\n    assert d['seconds'] <= 3\n",
    "import time\ndef test():\n    began = time.monotonic()\n    assert time.monotonic() - began < 30\n",
    "from time import perf_counter\ndef test():\n    t = perf_counter()\n    alone = perf_counter() - t\n"
    "    assert alone < 10, alone\n",
    "def test(elapsed):\n    assert 2.0 > elapsed\n",
    "def test(wall_time):\n    assert 0.1 < wall_time < 5\n",
])
def test_teeth_the_assertion_scan_finds_a_bound_on_elapsed_time(source):
    assert len(hygiene.clock_assertions("t.py", source)) == 1


@pytest.mark.parametrize("source", [
    "def test(r):\n    assert r['cpu_seconds'] >= 0\n",  # holds on any load
    "def test(r):\n    assert r.cycles < 100\n",
    "def test(clock):\n    assert clock.late == 1\n",
    "def test(seconds):\n    assert seconds == 0.5\n",
])
def test_the_assertion_scan_leaves_load_independent_assertions(source):
    assert hygiene.clock_assertions("t.py", source) == []


@pytest.mark.parametrize("source, reads", [
    ("import time\ntime.monotonic()\ntime.sleep(1)\n", 1),
    ("from time import perf_counter as pc\npc()\n", 1),
    ("import datetime\ndatetime.datetime.now()\n", 1),
    ("from datetime import datetime\ndatetime.now()\n", 1),
    ("import time as t\nt.time()\nt.process_time()\n", 2),
    ("def f(clock):\n    return clock()\n", 0),
])
def test_teeth_the_clock_scan_finds_clock_readings(source, reads):
    assert len(hygiene.clock_reads("t.py", source)) == reads


@pytest.mark.parametrize("source, category", [
    ("import z3\ndef test(monkeypatch):\n    monkeypatch.setattr(z3.Solver, 'check', None)\n", "z3"),
    ("import z3\ndef test(monkeypatch):\n    monkeypatch.setattr(z3.z3, 'main_ctx', None)\n", "z3"),
    ("from z3 import Solver\ndef test(monkeypatch):\n    monkeypatch.setattr(Solver, 'check', None)\n", "z3"),
    ("def test(monkeypatch):\n    monkeypatch.setattr('z3.Solver.check', None)\n", "z3"),
    ("import z3\nsetattr(z3, 'Context', None)\n", "z3"),
    ("import z3\nz3.Solver.check = None\n", "z3"),
    ("from hypothesis.internal.conjecture import providers\nproviders._get_local_constants = None\n",
     "hypothesis"),
    ("import hypothesis\ndef test(monkeypatch):\n    monkeypatch.setattr(hypothesis, 'seed', None)\n", "hypothesis"),
    ("from unittest import mock\nimport z3\nmock.patch.object(z3.Solver, 'check')\n", "z3"),
    ("from verify.proof import prove as m\ndef test(monkeypatch):\n    monkeypatch.setattr(m, 'range_limit', None)\n",
     "ours"),
    ("def test(monkeypatch):\n    monkeypatch.setenv('X', '0')\n", "env"),
    ("import os\ndef test(monkeypatch):\n    monkeypatch.setitem(os.environ, 'X', '0')\n", "env"),
])
def test_teeth_the_patch_scan_sorts_patches_by_target(source, category):
    assert [c for c, _ in hygiene.patches("t.py", source)] == [category]


def test_teeth_the_patch_scan_finds_an_import_of_hypothesis_internals():
    assert len(hygiene.hypothesis_internals("t.py", "from hypothesis.internal.conjecture import providers\n")) == 1
    assert hygiene.hypothesis_internals("t.py", "from hypothesis import strategies as st\n") == []


def test_an_assignment_to_a_local_object_is_not_a_patch():
    assert hygiene.patches("t.py", "from verify.api import VerifyOptions\nVerifyOptions().strategy = 'x'\n"
                                   "def f(self):\n    self.x = 1\n") == []
