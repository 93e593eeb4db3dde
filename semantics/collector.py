"""Fewer garbage collections while a strategy runs (algorithm/registry.py), a kernel
is parsed (semantics/parser.py) or a program printed (semantics/printer.py). Not around
whole CLI commands: that made `verify` slower, since the all-values proof's Z3 work
moves with when Python frees its terms (docs/planner.md, "Deterministic answers").

Why. Planning allocates millions of small, acyclic, immutable IR nodes and Z3 wrappers,
most of them short-lived, and keeps a few hundred thousand alive in the memos of pure
functions (semantics/simplify.py's caches). CPython's default collector (thresholds
700/10/10) then runs a young collection every 700 net allocations and, every so often, a
full one over everything alive, hundreds of thousands of objects after a few large
kernels. Which kernel pays a full collection then depends on what ran before it, not
on its own work. Raising the young threshold
for the duration of a strategy makes collections rare; what a cycle holds (a planning
session's Z3 context) is still freed, by the collections that do run and after the
strategy returns. The same practice as mypy's (`gc.set_threshold(200 * 1000, 30, 30)`
in its build). Answers do not move with it (measured: the Z3 checks and resource units
of all 43 kernels/ kernels and the 150 recorded outputs are the same): the planner's Z3
terms are freed by reference counting as before; what waits for the collector is a
finished session, whose Z3 context goes whole. (Timing matters there: Z3 reuses a freed
term's id and ids order its search, docs/planner.md.)

The thresholds are restored on exit (nested uses restore in order), so a library caller
sees its own settings again. `collector_paused` goes further, for the all-values proof:
no collection at all while it runs (its docstring says why).
"""

from __future__ import annotations

import functools
import gc
from contextlib import contextmanager

YOUNG_THRESHOLD = 100_000  # net allocations between young collections (CPython default: 700)


class fewer_collections:
    """Context manager and decorator: the collector's young threshold raised to at least
    YOUNG_THRESHOLD (the older generations' thresholds kept) until exit."""

    def __enter__(self):
        self._saved = gc.get_threshold()
        young, *older = self._saved
        gc.set_threshold(max(young, YOUNG_THRESHOLD), *older)
        return self

    def __exit__(self, *exc):
        gc.set_threshold(*self._saved)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            with fewer_collections():
                return fn(*args, **kwargs)

        return run


@contextmanager
def collector_paused():
    """Python's cyclic garbage collector off, on again after: around the all-values proof
    (verify/proof/prove.py). Why: Z3 gives a freed term's id to the next new term, and
    its effort on a non-linear query depends on the ids (verify/proof/jobs.py). The collector frees z3 term wrappers caught in
    reference cycles at moments set by the count of Python allocations, so any change to
    the Python code around the queries (one list more) moved an id, and re-rolled
    answers: the same queries (same SMT-LIB text) took another effort. Without the
    collector, terms are freed when their last
    reference goes, at the same point of every run; the proof's cyclic garbage waits
    (a few per cent more peak memory)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
