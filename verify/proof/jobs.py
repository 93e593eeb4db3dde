"""The obligations of an all-values proof as tasks, and how they run: in two rounds of
budgets, in this process or on worker processes (`ProofOptions.jobs`).

Each obligation is asked of a `Prover` of its own, in a fresh Z3 context (`answer`). Z3's
effort on a non-linear query depends on the terms its context made before it, so an
obligation asked after others could be answered differently; asked alone, its answer
depends on the program, the options and the round's budget only. That makes the
proof's answers the same in this process and on any number of workers, and lets the
workers take the next obligation whenever they are free (a queue, not fixed shares):
the wall time is the work's, divided among the workers, not that of the largest share.

Why several processes: the obligations are independent Z3 queries (verification
conditions, as Boogie and Why3 discharge them in parallel), and one process answers
them on one core. Workers fork from a server process started fresh (`start_workers`,
the default `ProofOptions.start_method`), not from the caller, so what the caller did
before does not reach them; the program and options reach them pickled. Where the start
method is not available the proof runs in this process.

The proof's deterministic budget (`ProofOptions.rlimit`) is spent in task order: the
first round's obligations in order, then the second round's. An obligation whose units
take the running total past the budget is unknown, naming the budget, and so is every
obligation after it; the next round gets what the earlier one left.
"""

from __future__ import annotations

from functools import partial

import attrs

from semantics.context import sites
from semantics.ir import Program
from semantics.symbolic import conflicting_pairs

from verify.engines.deadline import Deadline
from verify.proof.budget import RlimitReached
from verify.proof.options import rlimit_ran_out
from verify.proof.pool import (  # noqa: F401 (WorkerLost and the memory reasons: public here too)
    OUT_OF_MEMORY, OUT_OF_MEMORY_HERE, Pool, Started, WorkerLost, context_for, fail_for_tests, start_one,
)
from verify.proof.queues import home
from verify.proof.obligations import (
    PROVED, UNKNOWN, Budget, Obligation, Prover, bound_divisors, divisors, loop_sites,
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
    """Every obligation of the proof, in the order the sequential proof asks them."""
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


def answer(program: Program, options, deadline: Deadline, todo: list[Task], n: int, rlimit: int,
           left: int | None, progress=None) -> Obligation:
    """Task n's obligation, asked of a Prover of its own (a fresh Z3 context): `rlimit`
    units per query, at most `left` in all (None: no limit); progress lines to
    `progress` (default: the options')."""
    if progress is not None:
        options = attrs.evolve(options, progress=progress)
    prover = Prover(program, attrs.evolve(options, rlimit_part=left), deadline, dump_prefix=f"prove-t{n + 1}")
    prover.rlimit = rlimit
    return run(prover, todo[n], loop_sites(program))


def in_two_rounds(ask, todo: list[Task], options) -> list[Obligation]:
    """Every obligation with a small budget per query first, then again with the full
    budget those it did not prove. Why: an obligation tries stages in turn (the last
    producer, the consumer's own waits, chains), and a stage that cannot prove it often
    spends the whole budget before the next stage proves it at once; the queries that
    prove something are nearly always the fast ones. A proof in the first round is a proof
    (unsat is unsat at any budget); the second round is the proof as it was, so nothing
    provable within the full budget is lost, and what the first round did not prove
    costs its small queries once more.

    `ask(indices, rlimit, left, over)`: the obligations of those tasks (a dict by index),
    `rlimit` units per query and at most `left` each; it need not ask the tasks after
    the position `over(answers)` names. The proof's budget (`options.rlimit`) is spent in
    task order, round by round (module docstring)."""
    rounds = [options.query_rlimit]
    if options.first_query_rlimit < options.query_rlimit:
        rounds.insert(0, options.first_query_rlimit)
    done: dict[int, Obligation] = {}
    left = options.rlimit
    indices = list(range(len(todo)))
    for number, rlimit in enumerate(rounds):
        if number:
            proved = len(indices) - sum(1 for n in indices if done[n].status != PROVED)
            indices = [n for n in indices if done[n].status != PROVED]
            if not indices:
                break
            if options.progress:
                options.progress(f"{SECOND_ROUND}{proved} of {len(todo)} obligations proved with "
                                 f"{options.first_query_rlimit:,} Z3 units per query; the other {len(indices)} "
                                 f"again with {options.query_rlimit:,}")
        answers = ask(indices, rlimit, left, partial(_ran_out, indices, left))
        ended = _ran_out(indices, left, answers)
        for k, n in enumerate(indices):
            if ended is not None and k > ended:
                found = _unasked(todo[n], options)
            elif ended is not None and k == ended:
                found = attrs.evolve(answers[n], status=UNKNOWN, model=None, budget=Budget.PROOF_RLIMIT,
                                     reason=rlimit_ran_out(options.rlimit))
            else:
                found = answers[n]
            if left is not None and (ended is None or k <= ended):
                left -= found.units
            done[n] = attrs.evolve(found, units=found.units + done[n].units) if n in done else found
        if ended is not None:
            break
    return [done[n] for n in range(len(todo))]


def _ran_out(indices: list[int], left: int | None, answers: dict) -> int | None:
    """The position in `indices` of the obligation whose units take the running total
    past `left`, or that the budget ended itself, among the answers so far in order;
    None if none (yet)."""
    if left is None:
        return None
    spent = 0
    for k, n in enumerate(indices):
        found = answers.get(n)
        if found is None:
            return None
        spent += found.units
        if spent > left or found.budget == Budget.PROOF_RLIMIT:
            return k
    return None


def _unasked(task: Task, options) -> Obligation:
    """A task not asked because the proof's budget ran out before it."""
    return Obligation(task.kind, task.consumer, task.engine, task.producer, status=UNKNOWN,
                      reason=rlimit_ran_out(options.rlimit), budget=Budget.PROOF_RLIMIT)


# The progress line that announces the second round (not a query: the CLI does not count it).
SECOND_ROUND = "prove: second round: "


def run_all(program: Program, options, deadline: Deadline, todo: list[Task]) -> list[Obligation]:
    """Every task's obligation, in task order: in this process, or on `options.jobs`
    worker processes taking them from a queue (module docstring); the same answers
    either way. Raises what the sequential proof raises: `Unsupported` (no closed-form
    counts), `DeadlineReached` (the budget ended while terms were built); `WorkerLost`
    when a worker ends without an answer, and RuntimeError (with the worker's traceback)
    when it raised anything else."""
    jobs = min(options.jobs, len(todo))
    context = context_for(attrs.evolve(options, jobs=jobs))
    one = partial(answer, program, attrs.evolve(options, progress=None), deadline, todo)
    if context is None:
        def here(indices, rlimit, left, over):
            answers: dict = {}
            for n in indices:
                answers[n] = answer(program, options, deadline, todo, n, rlimit, left)
                if over(answers) is not None:
                    break
            return answers

        try:
            fail_for_tests("proof-memory")
            return in_two_rounds(here, todo, options)
        except MemoryError:
            raise WorkerLost(OUT_OF_MEMORY_HERE) from None
    pool = Pool(context, jobs, one, options)
    try:
        return in_two_rounds(pool.ask, todo, options)
    finally:
        pool.close()


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
    quiet = attrs.evolve(options, progress=None)
    return start_one(context, partial(_with_prover, compute, program, quiet, deadline), quiet)


def _with_prover(compute, program: Program, options, deadline: Deadline):
    return compute(Prover(program, options, deadline))
