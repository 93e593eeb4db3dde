"""The suite's examples do not depend on which tests ran before (docs/testing.md,
"Suite time, hangs and reproducibility"). Hypothesis draws some values from a pool of
constants it collects from the local modules loaded so far; tests/conftest.py imports
every module of the project before the first test, so that pool is complete from the
start and the same for every test. Nothing of Hypothesis is patched."""

from __future__ import annotations

import subprocess
import sys

from tests.support.corpus import ROOT
from tests.support.project import load_all, modules, packages

# The first examples of a derandomized property over integers (which the pool's
# constants can replace), printed by a child process. `{before}` runs first.
_CHILD = """
import sys
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
{before}
seen = []

@settings(database=None, derandomize=True, max_examples=40, phases=(Phase.generate,))
@given(st.lists(st.integers(), min_size=3))
def record(xs):
    seen.append(tuple(xs))

record()
print(seen)
{after}
"""
_CONFTEST = "import tests.conftest"
_WORK = """
from algorithm.registry import get_strategy
from semantics.parser import parse_file
from verify.engines.explicit import check
program = get_strategy("threshold")(parse_file("kernels/pipeline_db.sync")).program
check(program, (("N", 0, 2),))
"""


def _first_examples(before: str = "", after: str = "") -> list[str]:
    run = subprocess.run([sys.executable, "-c", _CHILD.format(before=before, after=after)], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    return run.stdout.splitlines()


def test_every_module_of_the_project_is_loaded_before_the_first_test():
    """What a test could import later would add to the pool (test modules and
    tests/support are not local modules to Hypothesis)."""
    assert {"semantics", "algorithm", "verify", "lean_export"} <= set(packages())
    missing = [name for name in modules() if name not in sys.modules]
    assert not missing, f"not imported by tests/conftest.py: {missing} ({load_all()})"


def test_examples_are_the_same_before_and_after_other_work():
    """In one process: examples drawn at once after the conftest, and again after a
    strategy and a check ran, are the same; so are those of a process that did the
    work first."""
    alone, again = _first_examples(_CONFTEST, after=_WORK + "\nrecord()\nprint(seen[40:])")
    assert alone == again
    assert _first_examples(_CONFTEST + "\n" + _WORK) == [alone]


def test_teeth_without_the_conftest_the_pool_changes_the_examples():
    """The pool is real: a process that loads the project between two draws (as tests
    did before the conftest loaded it all) draws other examples the second time."""
    first, second = _first_examples(after="from tests.support.project import load_all\nload_all()\n"
                                           "seen.clear()\nrecord()\nprint(seen)")
    assert first != second
