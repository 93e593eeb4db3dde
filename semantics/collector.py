"""Fewer garbage collections while a kernel is parsed (semantics/parser.py) or a
program printed (semantics/printer.py): speed. None at all while a strategy runs
(algorithm/registry.py): determinism.

Why. Planning allocates millions of small, acyclic, immutable IR nodes and Z3 wrappers,
most of them short-lived, and keeps a few hundred thousand alive in the memos of pure
functions (semantics/simplify.py's caches). CPython's default collector (thresholds
700/10/10) then runs a young collection every 700 net allocations and, every so often, a
full one over everything alive, hundreds of thousands of objects after a few large
kernels. Raising the young threshold for the duration of a strategy makes collections
rare; what a cycle holds (a planning session's Z3 context) is still freed, by the
collections that do run and after the strategy returns. The same practice as mypy's
(`gc.set_threshold(200 * 1000, 30, 30)` in its build). Only around these steps, the
ones that allocate most.

Why none while a strategy runs. A plan's Z3 terms that a reference cycle holds are
freed when the collector runs, and Z3 gives a freed term's id to the next term it
makes; the ids order Z3's search. An automatic collection runs after a count of
allocations that includes everything the process did before the plan (the imports it
happened to make, other kernels), so the same kernel asked Z3 the same queries with
other ids in another process: the nested-`if` reproducer
(tests/data/repro/threshold_slow_nested_ifs.sync) planned in 10 s or in 70 s of CPU by
what the process had imported first. With automatic collection off, cycles are freed
only where the planner collects (algorithm/threshold/compose.py, once per statement
shape), at the same points of every run.

The settings are restored on exit (nested uses restore in order), so a library caller
sees its own settings again.
"""

from __future__ import annotations

import functools
import gc

YOUNG_THRESHOLD = 100_000  # net allocations between young collections (CPython default: 700)


class _Setting:
    """A collector setting as a context manager and a decorator (each call of the
    decorated function enters a fresh one, so nested calls restore in order)."""

    def __call__(self, fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            with type(self)():
                return fn(*args, **kwargs)

        return run


class fewer_collections(_Setting):
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


class collections_off(_Setting):
    """Context manager and decorator: no automatic collection until exit (explicit
    `gc.collect` calls still collect); the caller's setting is restored."""

    def __enter__(self):
        self._was = gc.isenabled()
        gc.disable()
        return self

    def __exit__(self, *exc):
        if self._was:
            gc.enable()
        return False
