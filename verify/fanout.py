"""Fan-out: map a picklable function over tasks, serially, on a local process pool
(`--workers N`) or on an existing Dask distributed cluster (`--cluster ADDRESS`).

Results come back in task order whatever order the workers finish in, so a caller
that stops at the first counterexample reports the same one as a serial run. At most
a window of tasks is in flight; once the caller stops (closes the iterator), nothing
more is submitted and what is pending is cancelled.
"""

from __future__ import annotations

from typing import Callable, Iterable, Iterator

import attrs

from semantics.errors import UsageError


@attrs.frozen
class FanOut:
    """Where tasks run: serially (the default), on `workers` local processes, or on the
    Dask scheduler at `cluster` (an address such as tcp://10.0.0.5:8786)."""

    workers: int = 1
    cluster: str | None = None

    def __attrs_post_init__(self):
        if self.workers < 1:
            raise UsageError("--workers must be at least 1")

    @property
    def serial(self) -> bool:
        return self.cluster is None and self.workers == 1


SERIAL = FanOut()


def ordered_map(fn: Callable, tasks: Iterable, fan_out: FanOut = SERIAL, window: int | None = None) -> Iterator:
    """fn(task) for every task, yielded in task order. `fn` and the tasks must pickle
    (a module-level function, or functools.partial of one) unless the run is serial."""
    if fan_out.serial:
        return (fn(task) for task in tasks)
    if fan_out.cluster is not None:
        return _on_cluster(fn, tasks, fan_out.cluster, window)
    return _on_pool(fn, tasks, fan_out.workers, window or 2 * fan_out.workers)


def _windowed(submit, result_of, cancel, tasks: Iterable, window: int) -> Iterator:
    pending: list = []
    source = iter(tasks)
    try:
        while True:
            while len(pending) < window:
                task = next(source, _END)
                if task is _END:
                    break
                pending.append(submit(task))
            if not pending:
                return
            yield result_of(pending.pop(0))
    finally:
        for future in pending:
            cancel(future)


_END = object()


def _on_pool(fn, tasks, workers: int, window: int) -> Iterator:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
    try:
        yield from _windowed(lambda task: pool.submit(fn, task), lambda f: f.result(), lambda f: f.cancel(),
                             tasks, window)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _on_cluster(fn, tasks, address: str, window: int | None) -> Iterator:
    try:
        from distributed import Client
    except ImportError:  # pragma: no cover - a dependency of the package
        raise UsageError("--cluster needs the 'distributed' package (pip install 'dask[distributed]')") from None
    try:
        client = Client(address, timeout="10s", set_as_default=False)
    except (OSError, TimeoutError) as err:
        raise UsageError(f"--cluster {address}: cannot reach a Dask scheduler ({err})") from None
    try:
        size = window or 2 * max(1, sum(client.nthreads().values()))
        yield from _windowed(lambda task: client.submit(fn, task, pure=False), lambda f: f.result(),
                             lambda f: f.cancel(), tasks, size)
    finally:
        client.close()
