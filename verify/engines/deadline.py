"""A wall-clock deadline for pure-Python work that has no place to poll a clock.

The z3 engine spends most of a large check building its encoding (potential
instances, event-time terms) in loops over every potential instance, before Z3 sees
a query whose own timeout could stop it (issue 15 item 3: `--timeout 20` took 120 s).
`interrupt_at(deadline)` raises `DeadlineReached` in the calling thread when the
deadline passes while the block runs, by an asynchronous exception
(PyThreadState_SetAsyncExc), so those loops need no clock checks of their own.

The exception lands at a bytecode boundary of the calling thread: between two Python
operations, never inside a Z3 C call. Whatever the block was building is abandoned
(the caller reports `unknown`). An exception that lands in a finalizer (`__del__`,
where Python ignores exceptions) is lost: the timer fires again every 50 ms until one
lands, and such ignored ones are not printed. When the block ends, a pending exception
is cleared under the timer's lock, so none arrives after the block.
"""

from __future__ import annotations

import ctypes
import sys
import threading
import time
from contextlib import contextmanager


class DeadlineReached(Exception):
    """Raised in the thread running an `interrupt_at` block when its deadline passes."""


def _raise_in(thread_id: int) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(DeadlineReached))


def _clear(thread_id: int) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), None)


@contextmanager
def interrupt_at(deadline: float | None, clock=time.monotonic, retry: float = 0.05):
    """Run the block; raise DeadlineReached in it once `clock()` passes `deadline`
    (None: no limit)."""
    if deadline is None:
        yield
        return
    if clock() >= deadline:
        raise DeadlineReached()
    target = threading.get_ident()
    lock = threading.Lock()
    state = {"active": True, "timer": None}

    def fire():
        with lock:
            if state["active"]:
                _raise_in(target)
                state["timer"] = _start(retry, fire)  # again, in case a finalizer swallowed it

    def quiet(unraisable, previous=sys.unraisablehook):
        if unraisable.exc_type is not DeadlineReached:
            previous(unraisable)

    hook, sys.unraisablehook = sys.unraisablehook, quiet
    state["timer"] = _start(max(0.0, deadline - clock()), fire)
    try:
        yield
    finally:
        while True:  # the pending exception may land here too: retry until it is cleared
            try:
                with lock:
                    state["active"] = False
                    _clear(target)
                    state["timer"].cancel()
                break
            except DeadlineReached:
                continue
        sys.unraisablehook = hook


def _start(delay: float, fn) -> threading.Timer:
    timer = threading.Timer(delay, fn)
    timer.daemon = True
    timer.start()
    return timer
