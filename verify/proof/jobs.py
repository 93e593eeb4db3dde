"""The obligations of an all-values proof as tasks, and how they run: in this process or
on worker processes (`ProofOptions.jobs`; verify/proof/workers.py starts and ends them),
one job (an obligation in a round) at a time (verify/proof/schedule.py: which jobs run,
in which order, and what their answers add up to).

Why several processes: the obligations are independent Z3 queries (verification
conditions, as Boogie and Why3 discharge them in parallel), and one process answers
them on one core. A free worker takes the next job, so the workers stay busy to the end
however uneven the obligations' costs are (they are heavy-tailed: a few take seconds,
most milliseconds). Every job on a worker starts from the same state (`_worker`), so the
proof's answers are the same with any number of workers and in any order. Where the
start method is not available, or with one job at a time, the proof runs in this
process, each job asked of a fresh `Prover`.
"""

from __future__ import annotations

import os
from multiprocessing.connection import wait

import attrs

from semantics.context import sites
from semantics.ir import Program
from semantics.registers import inline_registers
from semantics.symbolic import conflicting_pairs

from verify.engines.deadline import Deadline, DeadlineReached
from verify.proof.budget import RlimitReached
from verify.proof.counts import Counter, Unsupported
from verify.proof.obligations import (
    UNKNOWN, Budget, Obligation, Prover, bound_divisors, divisors, loop_sites, query_line,
)
from verify.proof.queues import home
from verify.proof.schedule import SECOND_ROUND, Schedule  # noqa: F401 (SECOND_ROUND: public here too)
from verify.proof.workers import (  # noqa: F401 (WorkerLost, start_in_worker, OUT_OF_MEMORY*: public here too)
    OUT_OF_MEMORY, OUT_OF_MEMORY_HERE, WorkerLost, answer_and_exit, context_for, die_with_parent, end_workers,
    fail_for_tests, failure, lost, lost_reason, serve, start, start_in_worker,
)
from verify.verdicts import ObligationKind, Property


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


def answer(program: Program, options, deadline: Deadline, task: Task, rlimit: int, loops: list | None = None,
           dump_prefix: str = "prove", counter: Counter | None = None) -> Obligation:
    """The task's obligation, asked of a fresh Prover (its own Z3 context) with `rlimit`
    Z3 units per query. `loops`: the program's loop_sites, `counter`: its counts
    (`counts`), when the caller has them."""
    prover = Prover(program, options, deadline, dump_prefix=dump_prefix, counter=counter)
    prover.rlimit = rlimit
    return run(prover, task, loop_sites(prover.program) if loops is None else loops)


def counts(program: Program, deadline: Deadline) -> Counter:
    """The program's counts, built before the jobs (each would build them again: for a
    kernel like flash attention that is most of a job's time)."""
    program = inline_registers(program)
    counter = Counter(program, deadline)
    counter.warm(sites(program).values())
    return counter


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


def run_all(program: Program, options, deadline: Deadline, todo: list[Task]) -> list[Obligation]:
    """Every task's obligation, in task order: in this process, or on `options.jobs`
    worker processes (module docstring). Raises what the earliest failed job met:
    `Unsupported` (no closed-form counts), `DeadlineReached` (the budget ended while
    terms were built); `WorkerLost` when a worker ends without an answer, and
    RuntimeError (with the worker's traceback) when it raised anything else."""
    jobs = min(options.jobs, len(todo))
    context = context_for(attrs.evolve(options, jobs=jobs))
    schedule = Schedule(len(todo), options, eager_second_round=context is not None)
    if context is None:
        _here(program, options, deadline, todo, schedule)
    else:
        workers = []
        try:
            quiet = attrs.evolve(options, progress=None)
            report = options.progress is not None
            workers = [start(context, _worker, program, quiet, deadline, report) for _ in range(jobs)]
            _hand_out(workers, todo, schedule)
        finally:
            end_workers(workers)
    return schedule.obligations(todo, _unknown)


def _here(program: Program, options, deadline: Deadline, todo: list[Task], schedule: Schedule) -> None:
    loops = loop_sites(inline_registers(program))
    try:
        fail_for_tests("proof-memory")
        counter = counts(program, deadline)
        while (job := schedule.next_job()) is not None:
            try:
                found = answer(program, options, deadline, todo[job.task], schedule.rlimit(job), loops,
                               dump_prefix=f"prove-t{job.task}", counter=counter)
            except (Unsupported, DeadlineReached, RlimitReached) as err:
                schedule.failed(job, err)
                continue
            schedule.answered(job, found)
    except MemoryError:
        raise WorkerLost(OUT_OF_MEMORY_HERE) from None


def _hand_out(workers: list, todo: list[Task], schedule: Schedule) -> None:
    """Give each free worker the next job until none is needed; take the answers and
    progress lines as they come. A worker that failed or was lost gets no more jobs."""
    free, busy = list(range(len(workers))), {}
    while True:
        while free and (job := schedule.next_job()) is not None:
            k = free.pop(0)
            busy[k] = job
            try:
                workers[k][0].send((job, todo[job.task], schedule.rlimit(job)))
            except OSError:  # the worker is gone: it failed before its first job, or was killed
                schedule.failed(busy.pop(k), _gone(workers[k]))
        if not busy:
            return
        ready = wait([workers[k][0] for k in busy])
        for k in sorted(k for k in busy if workers[k][0] in ready):
            receive = workers[k][0]
            try:
                message = receive.recv()
            except (EOFError, OSError):  # the worker ended without an answer (killed, out of memory)
                schedule.failed(busy.pop(k), WorkerLost(lost(workers[k])))
                continue
            if message[0] == "progress":
                if schedule.options.progress:
                    schedule.options.progress(message[1])
                continue
            job = busy.pop(k)
            if message[0] == "done":
                if schedule.options.progress:
                    for text, seconds in message[2]:
                        schedule.options.progress(query_line(text, seconds))
                schedule.answered(job, message[1])
                free.append(k)
            else:
                schedule.failed(job, failure(message[0], message[1]))


def _gone(worker) -> Exception:
    """Why a worker that took no job is gone: the failure it sent before it ended (the
    budget ran out while it built its prover), else lost."""
    try:
        while worker[0].poll():
            message = worker[0].recv()
            if message[0] not in ("progress", "done"):
                return failure(message[0], message[1])
    except (EOFError, OSError):
        pass
    return WorkerLost(lost(worker))


def _unknown(task: Task, reason: str) -> Obligation:
    return Obligation(task.kind, task.consumer, task.engine, task.producer, status=UNKNOWN, reason=reason)


def _worker(channel, errors, program: Program, options, deadline: Deadline, report: bool) -> None:
    """A proof worker: answers each (job, task, rlimit) it receives with ("done",
    obligation) or (failure kind, detail), passing progress lines on (`report`), until it
    fails or is ended.

    The worker builds one Prover and the Z3 terms of the program's counts in its
    context, then forks a child, which reads the next job, asks it of its copy of that
    prover and ends; then the next child. The worker itself reads nothing between two
    forks, so every job starts from the same state, to the addresses its objects get:
    whichever jobs ran before, and however many workers there are. (Z3's effort on a
    query moves with its context's term ids, with state it keeps outside its contexts,
    and with where its objects land in memory, which orders some of its tables.) The
    copies also save each job building the counts' terms again (a fork costs
    milliseconds)."""
    if report:  # the caller reads progress lines (a query's: `_answer_next`)
        options = attrs.evolve(options, progress=lambda line: channel.send(("progress", line)))

    def work():
        prover = Prover(program, options, deadline, counter=counts(program, deadline))
        prover.terms.warm()
        loops = loop_sites(prover.program)
        while True:
            child = os.fork()
            if child == 0:
                die_with_parent()
                answer_and_exit(channel, lambda: _answer_next(channel, prover, loops))
            _, status = os.waitpid(child, 0)
            code = os.waitstatus_to_exitcode(status)
            if code == NO_MORE_JOBS:
                return
            if code != 0:  # the child ended without an answer (killed, out of memory)
                channel.send(("lost", lost_reason(code, errors)))
                return

    serve(channel, errors, options, work)


def _answer_next(channel, prover: Prover, loops: list) -> None:
    """In a worker's child: the next job's answer, sent with its queries' progress lines;
    the child ends NO_MORE_JOBS at the end of the channel."""
    try:
        job, task, rlimit = channel.recv()
    except EOFError:
        os._exit(NO_MORE_JOBS)
    fail_for_tests("proof-worker-memory")
    prover.rlimit, prover.dump_prefix = rlimit, f"prove-t{job.task}"
    # The job's progress lines (each query's text and seconds) go with its answer, not
    # as they come: a job that sent them as they came spent other Z3 units from run to
    # run on the same queries (flash attention's proof), never with them held back.
    lines: list = []
    prover.report = lambda text, seconds: lines.append((text, seconds))
    found = run(prover, task, loops)
    channel.send(("done", found, lines))


NO_MORE_JOBS = 3  # a worker's child's exit status: the parent closed the channel


