"""One progress reporter for every long-running command (docs/cli.md, "Progress").

A `Progress` is a callable taking one message (a string, or a function returning
one, so that a caller does not build text that is never shown). It writes
`syncproof COMMAND: MESSAGE (Ns)` as one plain line on stderr, at most once per
`interval` seconds and never before `interval` seconds have passed, so a short run
prints nothing and a long one prints a line now and then.

The interval comes from the environment variable SYNCPROOF_PROGRESS_INTERVAL
(seconds, default 3); 0 shows every message, which is what the tests use to run
the progress code of every command. `Progress.always()` ignores the throttle for a
message that must be shown (e.g. "the proof runs, budget 60 s").

`start` makes times count from the start of the command (the command line passes
it, so a line after a long sync does not read "(0.0s)"); `poll`, called at every
message, lets a command's time limit stop the work that reports (verify/cli/limits.py).

Engines and searches take a plain `Callable[[str], None]` and call it freely (they
do not throttle themselves); the command line passes a `Progress`.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Callable, TextIO

ENV_INTERVAL = "SYNCPROOF_PROGRESS_INTERVAL"
DEFAULT_INTERVAL = 3.0

_silenced = [False]

# Test hook: only the tests set it (tests/verify/cli/test_interruption.py, test_time_limits.py).
ENV_TEST_SLOW = "SYNCPROOF_TEST_SLOW"
_paused: set[str] = set()


def slow_for_tests(phase: str, poll: Callable[[], None] | None = None) -> None:
    """Test hook. When the environment variable SYNCPROOF_TEST_SLOW names `phase`
    (`PHASE` or `PHASE:SECONDS`, default 60 s; several separated by commas), the first
    time it is reached in the process print
    `syncproof: test hook: PHASE slowed` on stderr and sleep that long in steps of
    50 ms, calling `poll()` between them (a time limit's check may raise). The phases:
    `sync` (the threshold planner's stages, verify/cli/limits.py) and `proof-worker`
    (each all-values proof worker process, verify/proof/jobs.py). Unset: nothing."""
    spec = os.environ.get(ENV_TEST_SLOW)
    if not spec:
        return
    for item in spec.split(","):
        name, _, seconds = item.strip().partition(":")
        if name == phase and phase not in _paused:
            _paused.add(phase)  # once per process
            print(f"syncproof: test hook: {phase} slowed", file=sys.stderr, flush=True)
            until = time.monotonic() + (float(seconds) if seconds else 60.0)
            while time.monotonic() < until:
                if poll is not None:
                    poll()
                time.sleep(0.05)
            return


def silence() -> None:
    """No progress line from now on (after Ctrl-C: the interruption's line is the last)."""
    _silenced[0] = True

def interval_from_env(environ: dict | None = None) -> float:
    """The interval in seconds from SYNCPROOF_PROGRESS_INTERVAL; the default when it is
    unset; a value that is not a non-negative number is a usage error of the caller's
    environment, reported by falling back to the default (progress is never worth a
    failed run)."""
    env = os.environ if environ is None else environ
    text = env.get(ENV_INTERVAL)
    if text is None or not text.strip():
        return DEFAULT_INTERVAL
    try:
        value = float(text)
    except ValueError:
        return DEFAULT_INTERVAL
    return value if value >= 0 and value == value else DEFAULT_INTERVAL


class Progress:
    """Throttled progress lines on stderr for one command."""

    def __init__(self, command: str, interval: float | None = None, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic, start: float | None = None,
                 poll: Callable[[], None] | None = None):
        self.command = command
        self.interval = interval_from_env() if interval is None else interval
        self._stream = stream
        self._clock = clock
        self.start = clock() if start is None else start  # times count from the command's start
        self.poll = poll  # called at every message, shown or not: a time limit's check may raise
        self._last = self.start
        self.lines = 0

    def elapsed(self) -> float:
        return self._clock() - self.start

    def due(self) -> bool:
        """Whether a message given now would be shown."""
        return self.interval == 0 or self._clock() - self._last >= self.interval

    def __call__(self, message) -> bool:
        """Show `message` if the interval has passed since the last line (or the start);
        returns whether it was shown."""
        if self.poll is not None:
            self.poll()
        if not self.due():
            return False
        self._emit(message)
        return True

    def always(self, message) -> None:
        """Show `message` now, whatever the interval."""
        if self.poll is not None:
            self.poll()
        self._emit(message)

    def _emit(self, message) -> None:
        if _silenced[0]:
            return
        text = message() if callable(message) else message
        now = self._clock()
        self._last = now
        self.lines += 1
        stream = self._stream if self._stream is not None else sys.stderr
        # One write with its newline: a signal handler that prints between the text and its
        # newline (print writes them apart) would otherwise join its line to this one.
        stream.write(f"syncproof {self.command}: {text} ({now - self.start:.1f}s)\n")
        stream.flush()
