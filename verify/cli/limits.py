"""`verify --timeout`: one time limit for the whole command, counted from its start
(docs/cli.md, "Time limits"), honoured by every phase before the all-values proof
(which has its own budget).

- The sync phase: the threshold planner calls a checkpoint before each of its stages
  and before each op of its general stage (algorithm/threshold/pipeline.py, plan.py),
  which reports where it is and raises DeadlineReached once the limit has passed; and
  once it has passed, a watchdog thread interrupts the Z3 contexts made since the
  command started (`Context.interrupt`, every 50 ms) until the command gets to that
  checkpoint, so that a long query does not
  hold it up (an interrupted query answers unknown: whatever the planner makes of it
  is never shown, because the limit has passed).
- The bounded check: every progress message of the check (`verify.progress.Progress`,
  which each engine calls before each valuation and during long ones) checks the limit.

It also keeps the sync phases from being silent, whatever the strategy: while the
command syncs, a heartbeat (verify/cli/display.py) repeats the phase on the progress
reporter whenever nothing else was shown for a progress interval.

The command turns DeadlineReached into `unknown` (exit 3), never into a verdict.
"""

from __future__ import annotations

import threading
import weakref

from verify.engines.deadline import Deadline, DeadlineReached
from verify.progress import slow_for_tests

_INTERRUPT_EVERY = 0.05  # seconds between interruptions of Z3 once the limit has passed


class CommandLimit:
    """The time limit of one command: `seconds` from `began` (time.monotonic), or none.
    Used as a context manager around the command; `disarm()` ends it early (before a
    phase with a budget of its own)."""

    def __init__(self, seconds: float | None, began: float, progress=None):
        self.deadline = Deadline(None if seconds is None else began + seconds)
        self.seconds = seconds
        self.progress = progress
        self.armed = seconds is not None
        self.where = "starting"
        self._in_phase = False
        self.interrupted = False  # the watchdog has interrupted Z3
        self._stop = threading.Event()
        self._watchdog: threading.Thread | None = None
        self._contexts = TrackedContexts()
        self._heartbeat = None

    def check(self) -> None:
        """Raise DeadlineReached once the limit has passed (while armed)."""
        if self.armed and self.deadline.passed():
            raise DeadlineReached(self.reason())

    @property
    def syncing(self) -> bool:
        return self.where.startswith("syncing")

    def phase(self, where: str) -> None:
        """Enter a sync phase: remember it (for the reason), report it, check the limit."""
        self.where = where
        self._in_phase = True
        try:
            if self.progress is not None:
                self.progress(where)
        finally:
            self._in_phase = False
        self.check()
        slow_for_tests("sync", self.check)

    def during_check(self) -> None:
        """A progress message of the bounded check (Progress.poll): check the limit."""
        if not self._in_phase:
            self.where = "running the bounded check"
        self.check()

    def reason(self) -> str:
        return f"time limit reached: --timeout {self.seconds:g} s ran out while {self.where}"

    def __enter__(self) -> "CommandLimit":
        from algorithm.threshold import pipeline

        self._previous = pipeline.checkpoint[0]
        pipeline.checkpoint[0] = lambda where: self.phase(f"syncing: {where}")
        if self.progress is not None:
            from verify.cli.display import Heartbeat

            self._heartbeat = Heartbeat(self.progress, lambda: self.where, lambda: self.syncing)
            self._heartbeat.start()
        if self.armed:
            self._contexts.install()
            self._watchdog = threading.Thread(target=self._watch, name="syncproof-timeout", daemon=True)
            self._watchdog.start()
        return self

    def __exit__(self, *exc) -> bool:
        from algorithm.threshold import pipeline

        pipeline.checkpoint[0] = self._previous
        self.disarm()
        return False

    def disarm(self) -> None:
        """No limit from now on (the proof, with its own budget, follows)."""
        self.armed = False
        if self._heartbeat is not None:
            self._heartbeat.stop()
            self._heartbeat = None
        self._stop.set()
        if self._watchdog is not None:
            self._watchdog.join()
            self._watchdog = None
        self._contexts.uninstall()

    def _watch(self) -> None:
        self._stop.wait(max(0.0, self.deadline.left()))
        while not self._stop.is_set():
            self.interrupted = True
            self._contexts.interrupt()
            self._stop.wait(_INTERRUPT_EVERY)


class TrackedContexts:
    """The Z3 contexts made while a limit runs: `z3.Context` is swapped for a subclass
    that registers each new one (the planner makes its own, and a fresh one for a
    retry), so that the watchdog can interrupt them. (Looking them up among the
    collector's objects instead would expose half-built tuples of the running thread.)"""

    def __init__(self):
        # Reentrant: a context whose last reference the watchdog held is finalized in the
        # watchdog's thread, inside `interrupt`, and forgets itself there.
        self._lock = threading.RLock()
        self._refs: list = []
        self._original = None

    def install(self) -> None:
        import z3

        contexts, original = self, z3.Context

        class Tracked(original):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                contexts.track(self)

            def __del__(self):
                # Forgotten before Z3 deletes it: a weak reference still answers while
                # __del__ runs, and an interrupt of a deleted context crashes the process.
                contexts.forget(self)
                super().__del__()

        self._original, z3.Context = original, Tracked

    def track(self, context) -> None:
        """Interrupt `context` too (a weak reference: a context that is gone is skipped)."""
        with self._lock:
            self._refs.append(weakref.ref(context))

    def forget(self, context) -> None:
        """Interrupt `context` no more (it is being deleted); waits for an interrupt under way."""
        with self._lock:
            self._refs = [ref for ref in self._refs if ref() is not None and ref() is not context]

    def uninstall(self) -> None:
        import z3

        if self._original is not None:
            z3.Context, self._original = self._original, None

    def interrupt(self) -> None:
        """Interrupt whatever each live context is solving (Z3_interrupt is thread-safe; a
        context that is not solving fails its next push, `push canceled`). z3's Python
        layer checks the context's error code after every call, Z3_interrupt included, and
        that code may be the error of the sync's own last call on its thread (its push
        that the previous interruption cancelled): that error is the sync's to raise, not
        the watchdog's, which would die of it (a traceback, and no more interruptions)."""
        import z3

        with self._lock:  # (held while interrupting: a context cannot be deleted meanwhile)
            self._refs = [ref for ref in self._refs if ref() is not None]
            for ref in self._refs:
                context = ref()
                if context is not None:
                    try:
                        context.interrupt()
                    except z3.Z3Exception:
                        pass
                del context
