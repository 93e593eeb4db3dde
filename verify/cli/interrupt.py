"""Ctrl-C for every command (docs/cli.md, "Ctrl-C"): exit 130, one line on stderr, no
traceback, no process left behind, in every phase.

The command runs in a worker thread (`verify.cli.main.main`); the main thread only
waits. SIGINT is blocked in every thread of the process before the worker starts, and
the main thread takes it with `sigtimedwait`. Blocking rather than a Python handler,
because a handler can be bypassed: Z3 installs its own C-level SIGINT handler while it
solves (the signal then only cancels the query and the run goes on), and pure-Python
handlers run only when the main thread executes bytecode. A blocked signal stays pending
whatever handler a library installs, and `sigtimedwait` takes it.

The child processes (process pools, the all-values proof's workers and their fork
server, a local Dask cluster's processes) inherit the blocked mask and the ignored
disposition, so a Ctrl-C sent to
the terminal's whole process group does not make each of them print a traceback; the
main thread ends them all: it stops every descendant (so none forks another while they
are collected), kills them, and leaves with `os._exit(130)` without waiting for the
worker thread (which may be inside a long C call).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Callable

EXIT_INTERRUPTED = 130
MESSAGE = "syncproof: interrupted"
# Seconds between looks at the worker thread: from _FIRST_POLL, doubling up to _POLL, so
# that a quick command is not held back by a look that is not yet due.
_FIRST_POLL = 0.005
_POLL = 0.2


def run_interruptibly(target: Callable[[], None], stack_size: int) -> int | None:
    """Run `target` in a new thread with `stack_size` bytes of stack and wait for it.
    Returns None when it finished; on SIGINT ends the process (exit 130) and does not
    return. In a thread other than the main one (an embedding program), signals are not
    this function's to take: it only runs and joins."""
    guard = threading.current_thread() is threading.main_thread() and hasattr(signal, "sigtimedwait")
    previous_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if guard else None
    # Ignored as well as blocked: a child started by exec (multiprocessing's spawn, Dask's
    # processes) keeps an ignored disposition, and a Ctrl-C sent to the whole group while
    # it is still starting then leaves it alone (a blocked signal still reaches
    # sigtimedwait here: Linux keeps a blocked signal pending even while it is ignored).
    previous_handler = signal.signal(signal.SIGINT, signal.SIG_IGN) if guard else None
    if guard:
        keep_signal_masks_of_resource_tracker_starts()
    try:
        thread = _start(target, stack_size)
        if not guard:
            thread.join()
            return None
        poll = _FIRST_POLL
        while thread.is_alive():
            if signal.sigtimedwait({signal.SIGINT}, poll) is not None:
                interrupted()
            poll = min(2 * poll, _POLL)
        # A Ctrl-C that came as the command finished: still an interruption.
        if signal.sigtimedwait({signal.SIGINT}, 0) is not None:
            interrupted()
        return None
    finally:
        if previous_handler is not None:
            signal.signal(signal.SIGINT, previous_handler)
        if previous_mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous_mask)


def keep_signal_masks_of_resource_tracker_starts() -> None:
    """multiprocessing starts its resource tracker (with the first process pool) with
    SIGINT blocked and then unblocks it in the starting thread, rather than restoring
    that thread's mask: the thread would then take a Ctrl-C sent to the process and, the
    signal being ignored, drop it, so that the main thread never sees it. Make the start
    restore the thread's mask."""
    from multiprocessing import resource_tracker

    original = resource_tracker.ResourceTracker.ensure_running
    if getattr(original, "keeps_mask", False):
        return

    def ensure_running(self):
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, ())
        try:
            return original(self)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)

    ensure_running.keeps_mask = True
    resource_tracker.ResourceTracker.ensure_running = ensure_running
    resource_tracker.ensure_running = resource_tracker._resource_tracker.ensure_running  # the module's alias


def _start(target: Callable[[], None], stack_size: int) -> threading.Thread:
    # The stack size applies to threads created after it is set: restore it at once, so
    # other threads of the process (timers, pools) keep the default.
    previous = threading.stack_size(stack_size)
    try:
        thread = threading.Thread(target=target, daemon=True)
        thread.start()
    finally:
        threading.stack_size(previous)
    return thread


def interrupted(code: int = EXIT_INTERRUPTED) -> None:
    """Print the one line, end every descendant process, and leave with `code`."""
    from verify import progress

    progress.silence()  # no progress line after ours
    display = sys.modules.get("verify.cli.display")
    if display is not None:  # a live display leaves the terminal as it found it
        try:
            display.stop_all(0.5, final=True)
        except Exception:  # noqa: BLE001 - the interruption's line matters more
            pass
    try:
        # Standard error goes to /dev/null first and the line to a copy of it: a line
        # another thread writes from now on (a library's complaint about its killed
        # workers, a progress line) stays unseen, and ours is the last.
        terminal = os.dup(2)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 2)
        os.dup2(null, 1)
        os.write(terminal, (MESSAGE + "\n").encode())
    except OSError:
        pass
    end_descendants()
    os._exit(code)


def descendants() -> list:
    """The live descendant processes of this one (psutil)."""
    import psutil

    try:
        return psutil.Process().children(recursive=True)
    except psutil.Error:
        return []


def end_descendants() -> None:
    """SIGSTOP every descendant until no new one appears (a stopped process forks no
    other), then SIGKILL them all and wait (at most 5 s) until they have exited."""
    import psutil

    seen: dict[int, object] = {}
    for _ in range(10):
        fresh = [p for p in descendants() if p.pid not in seen]
        if not fresh:
            break
        for process in fresh:
            seen[process.pid] = process
            try:
                process.suspend()
            except psutil.Error:
                pass
    for process in seen.values():
        try:
            process.kill()
        except psutil.Error:
            pass
    # Gone before the command is: a killed process still takes a moment to exit (on a
    # loaded machine, longer), and a caller that looks at once must find none left.
    try:
        psutil.wait_procs(list(seen.values()), timeout=5.0)
    except psutil.Error:
        pass
