"""Progress for the command line (docs/cli.md, "Progress"): plain lines, or a live
display when stderr is a terminal.

`progress_for(command, start)` gives the `verify.progress.Progress` a command reports to:

- Plain lines (`PlainProgress`) when stderr is not a terminal, when TERM is `dumb`, or
  when SYNCPROOF_PROGRESS is `plain`: `syncproof COMMAND: WHAT (ELAPSEDs)`, throttled
  as `verify/progress.py` says (the tests parse these lines).
- On a terminal, `LiveProgress`: one line at the bottom of the terminal, drawn on stderr
  with rich: a spinner, the time since the command started and `syncproof COMMAND: WHAT`,
  redrawn several times a second, so a phase that sends no message for a while still
  shows its time passing. It appears once min(interval, 1 s) has passed (a short run
  shows nothing). Whatever else the command writes to stdout or stderr while it is
  shown (the verdict, a statistics line) first takes it off the screen, line and
  cursor restored, so the output reads as without it; the next message brings it back.
  A message shown whatever the throttle (`always`) stays as a plain line above it.

Both take `beat(message)`: a message from another thread (the heartbeat of a long sync
phase, `Heartbeat`), which neither polls the time limit nor builds lazy text.
`stop_all()` takes every live display off the screen (the end of the command, Ctrl-C).
"""

from __future__ import annotations

import io
import os
import sys
import threading
import time
import weakref
from typing import Callable

from verify.progress import Progress

ENV_MODE = "SYNCPROOF_PROGRESS"  # `plain`: plain lines even on a terminal
LIVE_DELAY = 1.0  # seconds before the live display appears (less when the interval is less)
_REFRESH = 8  # redraws per second
_UPDATE = 0.1  # seconds between text updates of the live display (lazy text is built this often)


def live_wanted(stream=None) -> bool:
    """Whether progress goes to a live display: stderr is a terminal that can draw one."""
    stream = sys.stderr if stream is None else stream
    if os.environ.get(ENV_MODE, "").strip().lower() == "plain" or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def progress_for(command: str, start: float | None = None) -> Progress:
    """The progress reporter of `command`: live on a terminal, plain lines otherwise."""
    return LiveProgress(command, start=start) if live_wanted() else PlainProgress(command, start=start)


class PlainProgress(Progress):
    """Plain lines, safe to call from several threads."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._lock = threading.Lock()
        self.beat_every = self.interval or 1.0  # a line per interval (at most one a second at 0)

    def _emit(self, message) -> None:
        with self._lock:
            super()._emit(message)

    def beat(self, message: str) -> None:
        """Show `message` if the interval has passed (from any thread; no poll)."""
        if self.due():
            self._emit(message)


_displays: "weakref.WeakSet[LiveProgress]" = weakref.WeakSet()
_closed = [False]  # after Ctrl-C: no display starts again


def stop_all(wait: float = 1.0, final: bool = False) -> None:
    """Take every live display off the screen (cursor shown again); waits at most about
    `wait` seconds for each (Ctrl-C must not hang on a display that is mid-redraw).
    `final`: none comes back (the process is ending)."""
    if final:
        _closed[0] = True
    for display in list(_displays):
        display.stop(wait)


class LiveProgress(Progress):
    """The live line on a terminal (module docstring)."""

    def __init__(self, command: str, interval: float | None = None, stream=None,
                 clock: Callable[[], float] = time.monotonic, start: float | None = None, poll=None):
        super().__init__(command, interval=interval, stream=stream, clock=clock, start=start, poll=poll)
        self.delay = min(self.interval, LIVE_DELAY)
        self.beat_every = 0.25
        out = stream if stream is not None else sys.stderr
        self._out = out.stream if isinstance(out, _Pausing) else out  # the terminal itself
        self._lock = threading.RLock()
        self._live = None
        self._text = ""
        self._updated = -1e9
        _displays.add(self)

    def due(self) -> bool:
        now = self._clock()
        return now - self.start >= self.delay and now - self._updated >= _UPDATE

    def __call__(self, message) -> bool:
        if self.poll is not None:
            self.poll()
        if not self.due():
            return False
        self._show(message)
        return True

    def always(self, message) -> None:
        """A plain line above the live display (shown now, whatever the throttle), which
        then shows it too, with its time running, until the next message."""
        if self.poll is not None:
            self.poll()
        if _closed[0]:
            return
        text = message() if callable(message) else message
        with self._lock:
            if self._live is None:
                super()._emit(text)  # the plain line (silenced after Ctrl-C)
            else:
                from rich.text import Text

                self._live.console.print(Text(f"syncproof {self.command}: {text} ({self.elapsed():.1f}s)"))
                self.lines += 1
        if self.elapsed() >= self.delay:
            self._show(text)

    def beat(self, message: str) -> None:
        if self.due():
            self._show(message)

    def _emit(self, message) -> None:  # Progress's path, for callers of the base class's API
        self._show(message)

    def _show(self, message) -> None:
        if _closed[0]:
            return
        text = message() if callable(message) else message
        with self._lock:
            if _closed[0]:
                return
            self._text = text
            self._updated = self._clock()
            self.lines += 1
            if self._live is None:
                self._start()

    # -- the rich display ------------------------------------------------------------

    def _start(self) -> None:
        from rich.console import Console
        from rich.live import Live

        console = Console(file=self._out, force_terminal=True, highlight=False, soft_wrap=False)
        self._live = Live(_Line(self), console=console, transient=True, auto_refresh=True,
                          refresh_per_second=_REFRESH, redirect_stdout=False, redirect_stderr=False)
        self._live.start(refresh=True)
        _install_pausing()

    def stop(self, wait: float = 1.0) -> None:
        """Take the display off the screen (it comes back with the next message)."""
        if not self._lock.acquire(timeout=wait):
            self._abandon()
            return
        try:
            live, self._live = self._live, None
            if live is None:
                return
            thread = getattr(live, "_refresh_thread", None)
            if thread is not None:
                thread.stop()  # no redraw after this one
            if live._lock.acquire(timeout=wait):
                try:
                    live.stop()
                finally:
                    live._lock.release()
            else:
                self._abandon()
        finally:
            self._lock.release()

    def _abandon(self) -> None:
        """The display is busy and will not be waited for: clear the line, show the cursor."""
        try:
            self._out.write("\r\x1b[2K\x1b[?25h")
            self._out.flush()
        except (OSError, ValueError):
            pass

    def render(self, spinner, width: int):
        """The spinner, the time since the command started and the latest message, cut
        to `width` columns (one line: a wrapped line would leave its start behind)."""
        from rich.text import Text

        line = Text.assemble(spinner, " ", (f"{self.elapsed():.1f}s", "dim"), " ",
                             (f"syncproof {self.command}: ", "bold"), self._text, no_wrap=True)
        line.truncate(max(1, width - 1), overflow="ellipsis")
        return line


class _Line:
    """The live display's renderable: the spinner and the reporter's latest line."""

    def __init__(self, progress: LiveProgress):
        from rich.spinner import Spinner

        self.progress = progress
        self.spinner = Spinner("dots")

    def __rich_console__(self, console, options):
        yield self.progress.render(self.spinner.render(console.get_time()), options.max_width)


def _install_pausing() -> None:
    """Make sys.stdout and sys.stderr `_Pausing` streams, once per process. They stay for
    the life of the process: `print` holds only a borrowed reference to sys.stdout while
    it writes, so a stream must never be swapped out from under a write."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if not isinstance(stream, _Pausing):
            proxy = _Pausing(stream)
            _kept.append(proxy)
            setattr(sys, name, proxy)


_kept: list = []


class _Pausing(io.TextIOBase):
    """A stream that takes every live display off the screen before anything is written
    to it (and then writes to the stream it stands for)."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> int:
        if text:
            for display in list(_displays):
                if display._live is not None:
                    display.stop()
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()

    def fileno(self) -> int:
        return self.stream.fileno()

    def isatty(self) -> bool:
        return self.stream.isatty()

    @property
    def encoding(self):
        return self.stream.encoding

    @property
    def buffer(self):
        stop_all()
        return self.stream.buffer

    def writable(self) -> bool:
        return True


class Heartbeat:
    """While `active()` holds, show `message()` whenever the reporter is due (from a
    thread of its own, looking every `progress.beat_every` seconds): a long step that
    sends no message (a strategy's planner, one long Z3 query) is not silent."""

    def __init__(self, progress, message: Callable[[], str], active: Callable[[], bool]):
        self.progress, self.message, self.active = progress, message, active
        self.period = getattr(progress, "beat_every", 1.0)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if getattr(self.progress, "beat", None) is None:
            return
        self._thread = threading.Thread(target=self._run, name="syncproof-heartbeat", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self._thread = None

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            if self.active():
                self.progress.beat(self.message())
