"""A wall-clock deadline for pure-Python work that has no place to poll a clock.

The z3 engine spends most of a large check building its encoding (potential
instances, event-time terms) in loops over every potential instance, before Z3 sees
a query whose own timeout could stop it (issue 15 item 3: `--timeout 20` took 120 s).
`interrupt_at(deadline)` raises `DeadlineReached` in the calling thread when the
deadline passes while the block runs, by an asynchronous exception
(PyThreadState_SetAsyncExc), so those loops need no clock checks of their own.

The exception lands at a bytecode boundary of the calling thread: between two Python
operations, never inside a Z3 C call. Whatever the block was building is abandoned
(the caller reports `unknown`). The block never sees the exception after it ends: if
the timer fired just as the block finished, the exit waits for the pending exception
and raises it from inside the `with`, where the caller's handler catches it.
"""

from __future__ import annotations

import ctypes
import threading
import time
from contextlib import contextmanager


class DeadlineReached(Exception):
    """Raised in the thread running an `interrupt_at` block when its deadline passes."""


def _raise_in(thread_id: int) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(DeadlineReached))


@contextmanager
def interrupt_at(deadline: float | None, clock=time.monotonic):
    """Run the block; raise DeadlineReached in it once `clock()` passes `deadline`
    (None: no limit)."""
    if deadline is None:
        yield
        return
    if clock() >= deadline:
        raise DeadlineReached()
    target = threading.get_ident()
    lock = threading.Lock()
    state = {"active": True, "fired": False}

    def fire():
        with lock:
            if state["active"]:
                state["fired"] = True
                _raise_in(target)

    timer = threading.Timer(max(0.0, deadline - clock()), fire)
    timer.daemon = True
    timer.start()
    try:
        yield
    except DeadlineReached:
        with lock:
            state["active"] = False
        timer.cancel()
        raise
    with lock:
        state["active"] = False
        fired = state["fired"]
    timer.cancel()
    if fired:  # fired as the block ended: the exception is pending; take it here
        for _ in range(1_000_000):
            time.sleep(0)
        raise DeadlineReached()  # pragma: no cover (the pending exception came first)
