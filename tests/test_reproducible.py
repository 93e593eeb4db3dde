"""The suite's examples do not depend on which modules happen to be loaded
(tests/conftest.py switches off Hypothesis's pool of local constants)."""

import sys
import types

from hypothesis import Phase, given, settings
from hypothesis import strategies as st


def _first_examples() -> list:
    seen = []

    @settings(database=None, derandomize=True, max_examples=40, phases=(Phase.generate,))
    @given(st.lists(st.integers(), min_size=3))
    def record(xs):
        seen.append(tuple(xs))

    record()
    return seen


def test_examples_do_not_depend_on_loaded_modules(tmp_path):
    before = _first_examples()
    # A new local module full of unusual constants: with the pool switched on, Hypothesis
    # would start drawing these.
    source = tmp_path / "many_constants.py"
    source.write_text("VALUES = [" + ", ".join(str(7919 * k + 12345) for k in range(300)) + "]\n")
    module = types.ModuleType("many_constants")
    module.__file__ = str(source)
    exec(compile(source.read_text(), str(source), "exec"), module.__dict__)
    sys.modules["many_constants"] = module
    try:
        after = _first_examples()
    finally:
        del sys.modules["many_constants"]
    assert before == after
