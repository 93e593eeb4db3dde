"""The proof's worker processes (verify/proof/jobs.py gives them their work): how they
start (forked from a server process started fresh, verify/proof/server.py), end, report
a failure, and die with their parent; and a single computation in a worker of its own
(`start_in_worker`: the 32-bit range statement)."""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import tempfile
import traceback
from multiprocessing.connection import wait

import attrs
import z3

from semantics.errors import LimitReached
from semantics.ir import Program

from verify.engines.deadline import Deadline, DeadlineReached
from verify.progress import slow_for_tests
from verify.proof.budget import RlimitReached
from verify.proof.counts import Unsupported
from verify.proof.obligations import Prover
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


def start(context, target, *args):
    """A worker process running target(channel, errors, *args): (the parent's end of the
    two-way channel, process, the file that takes its stderr)."""
    mine, theirs = context.Pipe(duplex=True)
    # The worker's stderr: what Z3 prints when it aborts (out of memory) names the
    # cause in the proof's reason instead of reaching the user's terminal.
    handle, errors = tempfile.mkstemp(prefix="syncproof-proof-worker-", suffix=".txt")
    os.close(handle)
    process = context.Process(target=target, daemon=True, args=(theirs, errors, *args))
    process.start()
    theirs.close()  # the worker holds the only other end: EOF when it dies
    return mine, process, errors


def end_workers(workers: list) -> None:
    """End the workers: an idle one reads the end of its channel and exits; a busy one,
    and one that does not exit at once, is terminated (a job's child dies with it)."""
    for receive, _, _ in workers:
        receive.close()
    for _, process, errors in workers:
        if process.pid is not None:
            process.join(ENDING)
            if process.is_alive():
                process.terminate()
                process.join()
        os.unlink(errors)


ENDING = 0.05  # seconds an idle worker has to exit before it is terminated


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
            if within is not None and not wait([receive for receive, _, _ in self.workers], max(0.0, within)):
                return None
            (kind, value), = collect(self.workers, self.options)
        finally:
            self.cancel()
        if kind != "done":
            raise failure(kind, value)
        return value

    def cancel(self) -> None:
        end_workers(self.workers)
        self.workers = []


def start_in_worker(program: Program, options, deadline: Deadline, compute) -> Started | None:
    """Start `compute(prover)` (the 32-bit range statement, verify/proof/int32.py) in a
    worker started like the proof's, or None when the proof runs in this process. The
    proof starts it beside its obligations: the statement is reported only when the proof
    succeeds, but it needs no answer of the proof, and after the proof it would add its own
    seconds to the wall time. In a worker its answers do not depend on what the calling
    process did before either (in the `verify` process they did)."""
    context = context_for(options)
    if context is None:
        return None
    return Started([start(context, range_worker, program, attrs.evolve(options, progress=None), deadline,
                           compute)], options)


def failure(kind: str, value) -> Exception:
    """What a worker's failure message means, as the exception the proof raises."""
    if kind == "unsupported":
        return Unsupported(value)
    if kind == "deadline":
        return DeadlineReached()
    if kind == "rlimit":
        return RlimitReached(value)
    if kind in ("lost", "memory"):
        return WorkerLost(value)
    return RuntimeError(f"an all-values proof worker failed:\n{value}")


def collect(workers: list, options) -> list:
    """(kind, value) per worker; progress lines are passed on as they come."""
    answers: list = [None] * len(workers)
    pending = {receive: k for k, (receive, _, _) in enumerate(workers)}
    while pending:
        for receive in wait(list(pending)):
            k = pending[receive]
            try:
                message = receive.recv()
            except (EOFError, OSError):  # the worker ended without an answer (killed, out of memory)
                message = ("lost", lost(workers[k]))
            if message[0] == "progress":
                if options.progress:
                    options.progress(message[1])
                continue
            answers[k] = message
            del pending[receive]
    return answers


def lost(worker) -> str:
    """Why a worker that ended without an answer is gone (its exit code, the end of what
    it printed)."""
    _, process, errors = worker
    process.join()
    return lost_reason(process.exitcode, errors)


def lost_reason(code: int | None, errors: str) -> str:
    with open(errors, "rb") as printed:
        said = " ".join(printed.read().decode(errors="replace").split())[-300:]
    return f"a proof worker process ended without an answer (exit code {code})" + (f": {said}" if said else "")


def range_worker(channel, errors, program: Program, options, deadline: Deadline, compute) -> None:
    """`start_in_worker`'s process: ("done", compute(prover)) or a failure, as `_worker`."""
    def work():
        fail_for_tests("proof-worker-memory")
        channel.send(("done", compute(Prover(program, options, deadline))))

    serve(channel, errors, options, work)


def die_with_parent() -> None:
    """Where the system has it (Linux), this process is killed when its parent ends: a
    job's child when its worker is terminated (the proof over, or given up). Elsewhere the
    child ends after its job, when its answer finds no reader."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:  # the worker ended before the call above
        os._exit(0)


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def serve(channel, errors: str, options, work) -> None:
    """A worker process's frame: its stderr to the file `errors`, Z3's memory limit; then
    `work()`, which sends its own answers; a failure is sent as (kind, detail), and the
    process ends."""
    with open(errors, "wb") as printed:
        os.dup2(printed.fileno(), 2)
    slow_for_tests("proof-worker")  # a test hook (verify/progress.py): the Ctrl-C tests find workers running
    if options.worker_memory_mb:
        # Z3's memory in this process only (a global setting, so never in the parent): a
        # non-linear query can grow a worker by gigabytes without reaching its resource
        # limit (the non-linear procedure stops counting). At the limit it ends unknown
        # and the proof goes on; should Z3 abort instead, the worker is lost: unknown.
        z3.set_param("memory_max_size", options.worker_memory_mb)
    answer_and_exit(channel, work)


def answer_and_exit(channel, work) -> None:
    """`work()`, then the process ends; a failure is sent as (kind, detail) first."""
    try:
        work()
    except EOFError:  # the parent closed the channel: no more jobs
        pass
    except MemoryError:
        channel.send(("memory", OUT_OF_MEMORY))
    except Unsupported as err:
        channel.send(("unsupported", str(err)))
    except DeadlineReached:
        channel.send(("deadline", None))
    except RlimitReached as err:
        channel.send(("rlimit", str(err)))
    except BaseException:  # noqa: BLE001 - reported by the parent, which raises it
        channel.send(("crash", traceback.format_exc()))
    finally:
        channel.close()
        os._exit(0)  # skip the parent's exit handlers (pytest's, the CLI's) in the forked copy
