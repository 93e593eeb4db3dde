"""The all-values proof's worker processes (verify/proof/jobs.py says what runs on them).

- `Pool`: `jobs` workers that take obligations from a queue, one at a time, whenever
  they are free; the caller gets each answer by its task's index.
- `start_in_worker`'s single computation (`Started`): the 32-bit statement beside the
  obligations.

Workers fork from a server process started fresh (verify/proof/server.py), so that what
the calling process did before does not reach them. A worker's stderr goes to a file of
its own (what Z3 prints when it aborts names the cause in the proof's reason), and Z3's
memory is limited in the worker only. A worker that ends without an answer (killed, out
of memory) is lost: its obligation is not decided, so the proof is unknown.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import tempfile
import traceback
from multiprocessing.connection import wait

import attrs
import z3

from semantics.errors import LimitReached

from verify.engines.deadline import DeadlineReached
from verify.progress import slow_for_tests
from verify.proof.budget import RlimitReached
from verify.proof.counts import Unsupported
from verify.proof.server import start_workers


class WorkerLost(LimitReached):
    """A worker process ended without an answer (killed, out of memory): its obligations
    are not decided, so the proof is unknown."""


# The reason of a proof whose worker raised MemoryError (the address space ran out:
# --max-memory, ulimit -v): unknown, like any worker lost; and of a proof in this
# process that did (--proof-jobs 1): unknown too, and the bounded verdict stands.
OUT_OF_MEMORY = "out of memory in a proof worker"
OUT_OF_MEMORY_HERE = "out of memory in the proof"

# Test hook: SYNCPROOF_TEST_FAIL=proof-worker-memory makes every proof worker raise
# MemoryError before its first obligation, and SYNCPROOF_TEST_FAIL=proof-memory a proof
# in this process (tests/verify/cli/test_memory_limits.py).
ENV_TEST_FAIL = "SYNCPROOF_TEST_FAIL"


def fail_for_tests(what: str) -> None:
    if what in os.environ.get(ENV_TEST_FAIL, "").replace(" ", "").split(","):
        raise MemoryError(f"test hook: {what}")


def context_for(options):
    """The multiprocessing context the workers start from, or None to stay in this process."""
    if options.jobs <= 1 or options.start_method not in multiprocessing.get_all_start_methods():
        return None
    method = options.start_method
    main = getattr(sys.modules.get("__main__"), "__file__", None)
    if method != "fork" and main is not None and not os.path.isfile(main):
        method = "fork"  # a forkserver child would run the main script again, and `python -` has none
    return start_workers(method)


def _start(context, target, *args):
    """A worker process running target(send, errors, *args): (receiving end, process, the
    file that takes its stderr)."""
    receive, send = context.Pipe(duplex=False)
    handle, errors = tempfile.mkstemp(prefix="syncproof-proof-worker-", suffix=".txt")
    os.close(handle)
    process = context.Process(target=target, daemon=True, args=(send, errors, *args))
    process.start()
    send.close()  # the worker holds the only sending end: EOF when it dies
    return receive, process, errors


def _end(workers: list) -> None:
    for receive, process, errors in workers:
        if process.is_alive():
            process.terminate()
        if process.pid is not None:
            process.join()
        receive.close()
        os.unlink(errors)


def _lost(worker) -> tuple:
    """The message of a worker that ended without an answer."""
    _, process, errors = worker
    process.join()
    with open(errors, "rb") as printed:
        said = " ".join(printed.read().decode(errors="replace").split())[-300:]
    return ("lost", f"a proof worker process ended without an answer (exit code {process.exitcode})"
            + (f": {said}" if said else ""), 0)


def raise_failure(kind: str, value):
    if kind == "unsupported":
        raise Unsupported(value)
    if kind == "deadline":
        raise DeadlineReached()
    if kind == "rlimit":
        raise RlimitReached(value)
    if kind in ("lost", "memory"):
        raise WorkerLost(value)
    raise RuntimeError(f"an all-values proof worker failed:\n{value}")


# ------------------------------------------------------------------ the queue


class Pool:
    """`jobs` workers, each running `answer(index, rlimit, left)` (a picklable callable:
    the obligation of task `index`) for the indices it is sent, one at a time."""

    def __init__(self, context, jobs: int, answer, options):
        self.options = options
        self.workers, self.inboxes = [], []
        try:
            for _ in range(jobs):
                inbox, post = context.Pipe(duplex=False)
                self.workers.append(_start(context, _queue_worker, inbox, answer, attrs.evolve(options, progress=None)))
                inbox.close()
                self.inboxes.append(post)
        except BaseException:
            self.close()
            raise

    def ask(self, indices: list[int], rlimit: int, left: int | None, over) -> dict:
        """The obligations of the tasks `indices`, asked in that order by whichever worker
        is free (`rlimit` units per query, at most `left` per obligation). `over(answers)`:
        the position in `indices` after which nothing need be asked (the budget ran out
        there), or None. A failure (an uncountable term, the deadline, an error) is raised
        once every task before it is answered: the first in task order, as in one process."""
        queue = list(indices)
        position = {n: k for k, n in enumerate(indices)}
        answers: dict = {}
        free = list(range(len(self.workers)))
        busy: dict = {}  # worker -> index
        failure = None  # (position, message)
        stop = len(indices)  # positions from here on are not asked
        while True:
            while free and queue and position[queue[0]] < stop:
                k = free.pop(0)
                n = busy[k] = queue.pop(0)
                try:
                    self.inboxes[k].send((n, rlimit, left))
                except OSError:
                    pass  # the worker has ended: its last message, or EOF, says why (below)
            if not busy:
                break
            receiving = {self.workers[k][0]: k for k in busy}
            for receive in wait(list(receiving)):
                k = receiving[receive]
                try:
                    message = receive.recv()
                except EOFError:
                    raise_failure(*_lost(self.workers[k])[:2])
                if message[0] == "progress":
                    if self.options.progress:
                        self.options.progress(message[1])
                    continue
                n = busy.pop(k)
                free.append(k)
                if message[0] == "done":
                    answers[n] = message[2]
                    ended = over(answers)
                    if ended is not None:
                        stop = min(stop, ended + 1)
                    continue
                if message[0] in ("lost", "memory", "crash"):
                    raise_failure(*message[:2])
                if failure is None or position[n] < failure[0]:
                    failure = (position[n], message)
                stop = min(stop, position[n])
        if failure is not None:
            raise_failure(*failure[1][:2])
        return answers

    def close(self) -> None:
        for post in self.inboxes:
            post.close()
        _end(self.workers)
        self.workers, self.inboxes = [], []


def _queue_worker(send, errors, inbox, answer, options) -> None:
    """A `Pool` worker: for each (index, rlimit, left) it receives, ("done", index,
    obligation), or (failure kind, detail, index) for a failure that leaves the worker
    able to go on; ends at EOF. Progress lines go back as ("progress", line)."""
    def work():
        fail_for_tests("proof-worker-memory")
        while True:
            try:
                n, rlimit, left = inbox.recv()
            except EOFError:
                return None
            at[0] = n
            try:
                send.send(("done", n, answer(n, rlimit, left, progress=lambda line: send.send(("progress", line)))))
            except Unsupported as err:
                send.send(("unsupported", str(err), n))
            except DeadlineReached:
                send.send(("deadline", None, n))
            except RlimitReached as err:
                send.send(("rlimit", str(err), n))

    at = [0]
    serve(send, errors, options, work, at)


# ------------------------------------------------------------------ one computation


class Started:
    """A computation started in a worker (`start_in_worker`): `result()` waits for it,
    `cancel()` ends it (and its files) if it is still running."""

    def __init__(self, workers: list, options):
        self.workers = workers
        self.options = options

    def result(self, within: float | None = None):
        """The computation's value; None when it has not answered `within` seconds from
        now (then it is ended)."""
        try:
            (receive, _, _), = self.workers
            if within is not None and not wait([receive], max(0.0, within)):
                return None
            while True:
                try:
                    message = receive.recv()
                except EOFError:
                    message = _lost(self.workers[0])
                if message[0] != "progress":
                    break
        finally:
            self.cancel()
        return raise_failure(*message[:2]) if message[0] != "done" else message[1]

    def cancel(self) -> None:
        _end(self.workers)
        self.workers = []


def start_one(context, compute, options) -> Started:
    """`compute()` (picklable) in a worker of its own."""
    return Started([_start(context, _one_worker, compute, options)], options)


def _one_worker(send, errors, compute, options) -> None:
    serve(send, errors, options, lambda: ("done", compute(), 0), [0])


def serve(send, errors: str, options, work, at: list) -> None:
    """A worker process's frame: its stderr to the file `errors`, Z3's memory limit; then
    `work()`'s message (if it returns one) or (failure kind, detail, at[0]: the task's
    position) is sent, and the process ends."""
    with open(errors, "wb") as printed:
        os.dup2(printed.fileno(), 2)
    slow_for_tests("proof-worker")  # a test hook (verify/progress.py): the Ctrl-C tests find workers running
    if options.worker_memory_mb:
        # Z3's memory in this process only (a global setting, so never in the parent): a
        # non-linear query can grow a worker by gigabytes without reaching its resource
        # limit (the non-linear procedure stops counting). At the limit it ends unknown
        # and the proof goes on; should Z3 abort instead, the worker is lost: unknown.
        z3.set_param("memory_max_size", options.worker_memory_mb)
    try:
        message = work()
        if message is not None:
            send.send(message)
    except MemoryError:
        send.send(("memory", OUT_OF_MEMORY, at[0]))
    except Unsupported as err:
        send.send(("unsupported", str(err), at[0]))
    except DeadlineReached:
        send.send(("deadline", None, at[0]))
    except RlimitReached as err:
        send.send(("rlimit", str(err), at[0]))
    except BaseException:  # noqa: BLE001 - reported by the parent, which raises it
        send.send(("crash", traceback.format_exc(), at[0]))
    finally:
        send.close()
        os._exit(0)  # skip the parent's exit handlers (pytest's, the CLI's) in the forked copy
