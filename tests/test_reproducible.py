"""The suite's examples do not depend on which modules happen to be loaded
(tests/conftest.py switches off Hypothesis's pool of local constants)."""

import sys
import types

from hypothesis import find, settings
from hypothesis import strategies as st


def test_examples_do_not_depend_on_loaded_modules(tmp_path):
    def first_example():
        seen = []
        find(st.lists(st.integers(), min_size=3), lambda xs: seen.append(tuple(xs)) or len(seen) >= 40,
             settings=settings(database=None, derandomize=True, max_examples=100))
        return seen[:40]

    before = first_example()
    # A new local module full of unusual constants: with the pool switched on, Hypothesis
    # would start drawing these.
    source = tmp_path / "many_constants.py"
    source.write_text("VALUES = [" + ", ".join(str(7919 * k + 12345) for k in range(300)) + "]\n")
    module = types.ModuleType("many_constants")
    module.__file__ = str(source)
    exec(compile(source.read_text(), str(source), "exec"), module.__dict__)
    sys.modules["many_constants"] = module
    try:
        after = first_example()
    finally:
        del sys.modules["many_constants"]
    assert before == after
