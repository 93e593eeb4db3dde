"""Fan-out: map a picklable function over tasks, serially, on a local process pool
(`--workers N`) or on an existing Dask distributed cluster (`--cluster ADDRESS`).

Results come back in task order whatever order the workers finish in, so a caller
that stops at the first counterexample reports the same one as a serial run. At most
a window of tasks is in flight; once the caller stops (closes the iterator), nothing
more is submitted and what is pending is cancelled.

What every task needs (a program, its options) travels once per worker, not once per
task: `shared` goes to each pool process through its initializer and to each Dask
worker by a broadcast scatter, and the function is called as fn(shared, task). Tasks
that the caller wants to size by the number of workers (batches: `batched`) come as
`PerWorkers(make)`, made once that number is known (a cluster's, on connecting).

`progress`, when given, hears what happens before the first result can come (starting
the pool, connecting to the cluster, sending the shared data), so a long start is not
silent; it is called in the caller's thread, and may raise to stop the run.
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


@attrs.frozen
class PerWorkers:
    """Tasks that depend on how many workers there are: `make(workers)`."""

    make: Callable[[int], Iterable]


_NOTHING = object()


def ordered_map(fn: Callable, tasks: Iterable | PerWorkers, fan_out: FanOut = SERIAL, window: int | None = None,
                shared=_NOTHING, progress: Callable[[str], object] | None = None) -> Iterator:
    """fn(task), or fn(shared, task) when `shared` is given, for every task, yielded in
    task order. `fn`, `shared` and the tasks must pickle (module-level functions, or
    functools.partial of one) unless the run is serial."""
    call = fn if shared is _NOTHING else _Bound(fn, shared)
    say = progress or _quiet
    if fan_out.serial:
        return (call(task) for task in _tasks(tasks, 1))
    if fan_out.cluster is not None:
        return _on_cluster(fn, shared, tasks, fan_out.cluster, window, say)
    return _on_pool(fn, shared, _tasks(tasks, fan_out.workers), fan_out.workers, window or 2 * fan_out.workers,
                    say)


def _quiet(message) -> None:
    return None


def _tasks(tasks: Iterable | PerWorkers, workers: int) -> Iterable:
    return tasks.make(workers) if isinstance(tasks, PerWorkers) else tasks


def batched(items: Iterable, weight: Callable[[object], int], target: int) -> Iterator[tuple]:
    """Consecutive runs of `items`, in order, each as long as its total weight stays
    within `target`: light items share a batch, an item heavier than `target` goes alone."""
    batch: list = []
    total = 0
    for item in items:
        heft = weight(item)
        if batch and total + heft > target:
            yield tuple(batch)
            batch, total = [], 0
        batch.append(item)
        total += heft
    if batch:
        yield tuple(batch)


@attrs.frozen
class _Bound:
    fn: Callable
    shared: object

    def __call__(self, task):
        return self.fn(self.shared, task)


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

# How pool processes start: "spawn" (each a fresh interpreter) or "forkserver" (forked
# from a server that imported the main module and fn's module once). They measured the
# same on 16 CPUs (docs/benchmarks.md); the fork server is one per process and shared
# with the all-values proof's workers (verify/proof/server.py preloads the proof's
# modules into it), so the pool does not start it by default.
POOL_METHOD = "spawn"

# What the pool's initializer installed in this worker process: fn(_SHARED, task).
_SHARED = None


def _install(shared) -> None:
    global _SHARED
    _SHARED = shared


def _call_installed(fn: Callable, task):
    return fn(_SHARED, task)


def _on_pool(fn, shared, tasks, workers: int, window: int, say: Callable) -> Iterator:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context(POOL_METHOD)
    if POOL_METHOD == "forkserver":
        context.set_forkserver_preload(["__main__", fn.__module__])
    if shared is _NOTHING:
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=context)
        submit = lambda task: pool.submit(fn, task)  # noqa: E731
    else:
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_install, initargs=(shared,))
        submit = lambda task: pool.submit(_call_installed, fn, task)  # noqa: E731
    try:
        say(f"starting {workers} worker process{'' if workers == 1 else 'es'}")
        yield from _windowed(submit, lambda f: f.result(),
                             lambda f: f.cancel(), tasks, window)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _on_cluster(fn, shared, tasks, address: str, window: int | None, say: Callable) -> Iterator:
    say(f"connecting to the Dask scheduler at {address}")
    try:
        from distributed import Client
    except ImportError:  # pragma: no cover - a dependency of the package
        raise UsageError("--cluster needs the 'distributed' package (pip install 'dask[distributed]')") from None
    try:
        client = Client(address, timeout="10s", set_as_default=False)
    except (OSError, TimeoutError) as err:
        raise UsageError(f"--cluster {address}: cannot reach a Dask scheduler ({err})") from None
    try:
        threads = max(1, sum(client.nthreads().values()))
        say(f"connected to {address}: {threads} worker thread{'' if threads == 1 else 's'}")
        if shared is _NOTHING:
            submit = lambda task: client.submit(fn, task, pure=False)  # noqa: E731
        else:
            say("sending the program to the workers")
            on_workers = client.scatter([shared], broadcast=True, hash=False)[0]  # a list: one future
            submit = lambda task: client.submit(fn, on_workers, task, pure=False)  # noqa: E731
        yield from _windowed(submit, lambda f: f.result(), lambda f: f.cancel(), _tasks(tasks, threads),
                             window or 2 * threads)
    finally:
        client.close()
