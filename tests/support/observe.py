"""Watching calls of functions we do not own (z3's) without patching them: the
interpreter's profile hook (sys.setprofile) reports every call and return of a Python
function in this thread; those of the watched functions, matched by code object, go to
their handlers. Nothing of z3 changes, so what runs is what the code under test runs.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Callable, Iterator

Handler = Callable[[str, dict, object], None]  # (event "call" or "return", the frame's locals, return value)


@contextmanager
def observing(handlers: dict[Callable, Handler]) -> Iterator[None]:
    """Inside the block, `handlers[f]("call", locals, None)` at each call of f made in
    this thread, and `handlers[f]("return", locals, value)` at its return (value None
    when it raised)."""
    by_code = {function.__code__: handler for function, handler in handlers.items()}
    previous = sys.getprofile()

    def hook(frame, event, arg):
        if event == "call" or event == "return":
            handler = by_code.get(frame.f_code)
            if handler is not None:
                handler(event, frame.f_locals, arg)

    sys.setprofile(hook)
    try:
        yield
    finally:
        sys.setprofile(previous)


def calls_of(function: Callable, run: Callable[[], object]) -> tuple[object, list[dict]]:
    """(run(), the locals of every call of `function` that run made, at the call)."""
    seen: list[dict] = []

    def note(event, local, _):
        if event == "call":
            seen.append(dict(local))

    with observing({function: note}):
        result = run()
    return result, seen
