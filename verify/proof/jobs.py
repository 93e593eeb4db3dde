"""The obligations of an all-values proof as tasks, and how they run: in two rounds of
budgets, in this process or shared among worker processes (`ProofOptions.jobs`).

Why several processes: the obligations are independent Z3 queries (verification
conditions, as Boogie and Why3 discharge them in parallel), and one process answers
them on one core.

Why fixed shares (task n goes to worker n % jobs; each worker builds one `Prover` and
asks its share in task order), not shares balanced at run time: Z3's effort on a
non-linear query depends on the terms its context made before it, so an obligation's
answer can depend on which tasks its worker asked first. With fixed shares the answers
depend on the input and `jobs` only, not on which worker happened to be free. Workers
fork from a server process started fresh (`start_workers`, the default
`ProofOptions.start_method`), not from the caller, so what the caller did before (other
proofs) does not reach them; the program and options reach them pickled. Where the
start method is not available the proof runs in this process.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import tempfile
import traceback
from functools import partial
from multiprocessing.connection import wait

import attrs
import z3

from semantics.errors import LimitReached
from semantics.context import sites
from semantics.ir import Program
from semantics.registers import inline_registers
from semantics.symbolic import conflicting_pairs

from verify.engines.deadline import Deadline, DeadlineReached
from verify.progress import slow_for_tests
from verify.proof.counts import Unsupported
from verify.proof.queues import home
from verify.proof.server import start_workers
from verify.proof.budget import RlimitReached
from verify.proof.obligations import (
    PROVED, UNKNOWN, Budget, Obligation, Prover, bound_divisors, divisors, loop_sites,
)
from verify.verdicts import ObligationKind, Property


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


def _fail_for_tests(what: str) -> None:
    if what in os.environ.get(ENV_TEST_FAIL, "").replace(" ", "").split(","):
        raise MemoryError(f"test hook: {what}")


@attrs.frozen
class Task:
    """One obligation, by name: what a worker process needs to build it again."""

    kind: ObligationKind
    consumer: str  # an op name; for a loop's `defined`, the loop's position in loop_sites
    engine: str | None = None
    producer: str | None = None
    wait: int | None = None  # the consumer's wait, by position
    loop: int | None = None


def tasks(program: Program, property: str) -> list[Task]:
    """Every obligation of the proof, in the order the sequential proof asks them (of the
    program without loop registers, as the Prover reads it: the same ops and waits)."""
    program = inline_registers(program)
    found = [Task(ObligationKind.DEFINED, loop.op.var, loop=n)
             for n, loop in enumerate(loop_sites(program)) if bound_divisors(loop.op)]
    ops = sites(program)
    found += [Task(ObligationKind.DEFINED, name) for name, y in ops.items() if divisors(y.op)]
    for name, y in ops.items():
        for engine in program.engines:
            if engine == home(y.op):  # a DMA op's transfer runs on its queue
                continue
            found += [Task(ObligationKind.SOUND, name, engine, x_name) for x_name, x in ops.items()
                      if home(x.op) == engine and conflicting_pairs(x.op, y.op)]
        kind = ObligationKind.EXACT if property == Property.BISIMULATION else ObligationKind.LIVE
        found += [Task(kind, name, w.engine, wait=n) for n, w in enumerate(y.op.waits)]
    return found


def bind(prover: Prover, todo: list[Task]) -> list:
    """Each task as a callable that asks `prover` its obligation (the loops' sites made
    once for all)."""
    loops = loop_sites(prover.program)
    return [partial(run, prover, t, loops) for t in todo]


def run(prover: Prover, task: Task, loops: list) -> Obligation:
    """The task's obligation, asked of `prover` (`loops`: the program's loop_sites), with
    the Z3 units its queries spent and, when unknown, the budget that ended it: the
    proof's deterministic budget ends it at once (RlimitReached)."""
    before = prover.settle()
    prover.hit = None
    try:
        found = _ask(prover, task, loops)
    except RlimitReached as err:
        found = Obligation(task.kind, task.consumer, task.engine, task.producer, status=UNKNOWN, reason=str(err))
    prover.forget_contexts()
    hit = prover.hit if found.status == UNKNOWN else None
    if found.status == UNKNOWN and prover.deadline.passed():
        hit = Budget.WALL_CLOCK
    return attrs.evolve(found, units=prover.spent - before, budget=hit)


def _ask(prover: Prover, task: Task, loops: list) -> Obligation:
    ops = prover.terms.sites
    match task.kind:
        case ObligationKind.DEFINED if task.loop is not None:
            return prover.defined(loops[task.loop])
        case ObligationKind.DEFINED:
            return prover.defined(ops[task.consumer])
        case ObligationKind.SOUND:
            return prover.sound(ops[task.consumer], task.engine, ops[task.producer])
        case ObligationKind.EXACT:
            y = ops[task.consumer]
            return prover.exact(y, y.op.waits[task.wait])
        case ObligationKind.LIVE:
            y = ops[task.consumer]
            return prover.live(y, y.op.waits[task.wait])
    raise AssertionError(f"unknown obligation kind {task.kind}")


def in_two_rounds(prover: Prover, tasks: list, who: str = "") -> list[Obligation]:
    """Run every obligation with a small budget per query first, then again with the full
    budget those it did not prove. Why: an obligation tries stages in turn (the last
    producer, the consumer's own waits, chains), and a stage that cannot prove it often
    spends the whole budget before the next stage proves it at once; the queries that
    prove something are nearly always the fast ones. A proof in the first round is a proof
    (unsat is unsat at any budget); the second round is the proof as it was, so nothing
    provable within the full budget is lost, and what the first round did not prove
    costs its small queries once more. `tasks`: callables, each giving an obligation;
    `who`: names the worker in the progress line."""
    options = prover.options
    if options.first_query_rlimit >= options.query_rlimit:
        return [task() for task in tasks]
    prover.rlimit = options.first_query_rlimit
    first = [task() for task in tasks]
    prover.rlimit = options.query_rlimit
    again = {n for n, o in enumerate(first) if o.status != PROVED}
    if again and options.progress:
        options.progress(f"{SECOND_ROUND}{who}{len(first) - len(again)} of {len(first)} obligations proved with "
                         f"{options.first_query_rlimit:,} Z3 units per query; the other {len(again)} "
                         f"again with {options.query_rlimit:,}")
    return [_again(tasks[n], o) if n in again else o for n, o in enumerate(first)]


def _again(task, first: Obligation) -> Obligation:
    """The second round's answer, with the units of both rounds."""
    second = task()
    return attrs.evolve(second, units=first.units + second.units)


def share_rlimit(rlimit: int | None, size: int, total: int) -> int | None:
    """A worker's part of the proof's deterministic budget: in proportion to its share
    of the tasks (`size` of `total`), fixed before it starts, so that its answers depend
    on the input and the number of workers only."""
    return None if rlimit is None else rlimit * size // max(1, total)


# The progress line that announces the second round (not a query: the CLI does not count it).
SECOND_ROUND = "prove: second round: "


def _context(options):
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
    # The worker's stderr: what Z3 prints when it aborts (out of memory) names the
    # cause in the proof's reason instead of reaching the user's terminal.
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
            (kind, value, _), = _collect(self.workers, self.options)
        finally:
            self.cancel()
        return _raise_failure(kind, value) if kind != "done" else value

    def cancel(self) -> None:
        _end(self.workers)
        self.workers = []


def start_in_worker(program: Program, options, deadline: Deadline, compute) -> Started | None:
    """Start `compute(prover)` (the 32-bit range statement, verify/proof/int32.py) in a
    worker started like the proof's, or None when the proof runs in this process. The
    proof starts it beside its obligations: the statement is reported only when the proof
    succeeds, but it needs no answer of the proof, and after the proof it would add its own
    seconds to the wall time. In a worker its answers do not depend on what the calling
    process did before either (in the `verify` process they did)."""
    context = _context(options)
    if context is None:
        return None
    return Started([_start(context, _range_worker, program, attrs.evolve(options, progress=None), deadline,
                           compute)], options)


def _raise_failure(kind: str, value):
    if kind == "unsupported":
        raise Unsupported(value)
    if kind == "deadline":
        raise DeadlineReached()
    if kind == "rlimit":
        raise RlimitReached(value)
    if kind in ("lost", "memory"):
        raise WorkerLost(value)
    raise RuntimeError(f"an all-values proof worker failed:\n{value}")


def run_all(program: Program, options, deadline: Deadline, todo: list[Task]) -> list[Obligation]:
    """Every task's obligation, in task order: in this process, or on `options.jobs`
    worker processes (module docstring). Raises what the sequential proof raises:
    `Unsupported` (no closed-form counts), `DeadlineReached` (the budget ended while
    terms were built); `WorkerLost` when a worker ends without an answer, and
    RuntimeError (with the worker's traceback) when it raised anything else."""
    jobs = min(options.jobs, len(todo))
    context = _context(attrs.evolve(options, jobs=jobs))
    if context is None:
        try:
            _fail_for_tests("proof-memory")
            prover = Prover(program, options, deadline)
            return in_two_rounds(prover, bind(prover, todo))
        except MemoryError:
            raise WorkerLost(OUT_OF_MEMORY_HERE) from None
    workers = []
    try:
        for k in range(jobs):
            share = todo[k::jobs]
            part = share_rlimit(options.rlimit, len(share), len(todo))
            mine = attrs.evolve(options, progress=None, rlimit_part=part)
            workers.append(_start(context, _worker, program, mine, deadline, share, k, jobs))
        answers = _collect(workers, options)
    finally:
        _end(workers)
    # A worker's failure is the failure its first task in task order met.
    failures = sorted((k + jobs * at, kind, value) for k, (kind, value, at) in enumerate(answers) if kind != "done")
    if failures:
        _, kind, value = failures[0]
        _raise_failure(kind, value)
    out: list[Obligation | None] = [None] * len(todo)
    for k, (_, share, _) in enumerate(answers):
        out[k::jobs] = share
    return out


def _collect(workers: list, options) -> list:
    """(kind, value, position of the failing task) per worker; progress lines are passed on
    as they come."""
    answers: list = [None] * len(workers)
    pending = {receive: k for k, (receive, _, _) in enumerate(workers)}
    while pending:
        for receive in wait(list(pending)):
            k = pending[receive]
            try:
                message = receive.recv()
            except EOFError:  # the worker ended without an answer (killed, out of memory)
                _, process, errors = workers[k]
                process.join()
                with open(errors, "rb") as printed:
                    said = " ".join(printed.read().decode(errors="replace").split())[-300:]
                message = ("lost", f"a proof worker process ended without an answer (exit code {process.exitcode})"
                           + (f": {said}" if said else ""), 0)
            if message[0] == "progress":
                if options.progress:
                    options.progress(message[1])
                continue
            answers[k] = message
            del pending[receive]
    return answers


def _range_worker(send, errors, program: Program, options, deadline: Deadline, compute) -> None:
    """`start_in_worker`'s process: ("done", compute(prover), 0) or a failure, as `_worker`."""
    _serve(send, errors, options, lambda: compute(Prover(program, options, deadline)), [0])


def _worker(send, errors, program: Program, options, deadline: Deadline, share: list[Task], k: int,
            jobs: int) -> None:
    """Run one share in its own Prover (its own Z3 context) and send back
    ("done", obligations, 0) or (failure kind, detail, position of the task)."""
    at = [0]
    options = attrs.evolve(options, progress=lambda line: send.send(("progress", line)))

    def task(n: int, ask) -> Obligation:
        at[0] = n
        return ask()

    def work():
        prover = Prover(program, options, deadline, dump_prefix=f"prove-w{k}")
        asks = [partial(task, n, ask) for n, ask in enumerate(bind(prover, share))]
        return in_two_rounds(prover, asks, who=f"worker {k + 1} of {jobs}: ")

    _serve(send, errors, options, work, at)


def _serve(send, errors: str, options, work, at: list) -> None:
    """A worker process's frame: its stderr to the file `errors`, Z3's memory limit; then
    ("done", work(), 0) or (failure kind, detail, at[0]: the position of the task) is
    sent, and the process ends."""
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
        _fail_for_tests("proof-worker-memory")
        send.send(("done", work(), 0))
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
