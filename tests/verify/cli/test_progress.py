"""The progress reporter (verify/progress.py) and the explicit engine's use of it."""

import io
from pathlib import Path

from semantics.parser import parse
from verify.engines.explicit import check
from verify.progress import DEFAULT_INTERVAL, ENV_INTERVAL, Progress, interval_from_env
from verify.verdicts import CheckOptions

REPRO = Path(__file__).parents[2] / "data" / "repro"


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_progress_is_throttled_to_one_line_per_interval():
    clock, out = Clock(), io.StringIO()
    progress = Progress("verify", interval=2.0, stream=out, clock=clock)
    assert not progress("too early")
    clock.now += 1.9
    assert not progress("still too early")
    clock.now += 0.2
    assert progress("shown")
    assert not progress("right after")
    clock.now += 2.0
    assert progress(lambda: "built lazily")
    lines = out.getvalue().splitlines()
    assert lines == ["syncproof verify: shown (2.1s)", "syncproof verify: built lazily (4.1s)"]


class Writes(io.StringIO):
    """A stream that records each write call."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def write(self, text):
        self.calls.append(text)
        return super().write(text)


def test_a_progress_line_and_its_newline_are_one_write():
    # Ctrl-C's handler prints its line between two writes of the interrupted thread; a
    # line written apart from its newline was joined to it ("... (0.1s)syncproof: interrupted").
    out = Writes()
    progress = Progress("verify", interval=0, stream=out, clock=Clock())
    progress.always("valuation 3/100001 (N=2)")
    assert [call for call in out.calls if call] == ["syncproof verify: valuation 3/100001 (N=2) (0.0s)\n"]


def test_progress_interval_zero_shows_every_message():
    out = io.StringIO()
    progress = Progress("bench", interval=0, stream=out, clock=Clock())
    for n in range(3):
        progress(f"m{n}")
    assert out.getvalue().count("\n") == 3


def test_progress_interval_comes_from_the_environment():
    assert interval_from_env({}) == DEFAULT_INTERVAL
    assert interval_from_env({ENV_INTERVAL: "0"}) == 0
    assert interval_from_env({ENV_INTERVAL: "0.5"}) == 0.5
    assert interval_from_env({ENV_INTERVAL: "-1"}) == DEFAULT_INTERVAL
    assert interval_from_env({ENV_INTERVAL: "soon"}) == DEFAULT_INTERVAL
    assert interval_from_env({ENV_INTERVAL: "nan"}) == DEFAULT_INTERVAL


def test_explicit_progress_names_the_valuation():
    """Regression: the progress line must name the valuation (iterating a dict as pairs
    crashed every explicit run long enough to print one)."""
    program = parse((REPRO / "wide_independent_loops.sync").read_text())
    lines = []
    name = program.params[0].name
    result = check(program, ((name, 0, 1),), CheckOptions(property="soundness", progress=lines.append))
    assert result.holds is not None
    assert any(f"({name}=0)" in line for line in lines), lines
    assert any(f"({name}=1)" in line for line in lines), lines
