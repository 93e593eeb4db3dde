"""Fewer garbage collections while a strategy runs (algorithm/registry.py), a kernel
is parsed (semantics/parser.py) or a program printed (semantics/printer.py): speed.

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

The thresholds are restored on exit (nested uses restore in order), so a library caller
sees its own settings again.
"""

from __future__ import annotations

import functools
import gc

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
