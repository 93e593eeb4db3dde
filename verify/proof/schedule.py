"""Which of an all-values proof's jobs run, in which order they are handed out, and what
their answers add up to: the deterministic budget and the failure rule (verify/proof/jobs.py
runs the jobs, in this process or on worker processes).

A job is one task (an obligation, by name) in one round: every task first with the small
per-query budget (`ProofOptions.first_query_rlimit`), then, when that did not prove it,
again with the full one (`query_rlimit`). Why two rounds: an obligation tries stages in
turn, and a stage that cannot prove it often spends its whole budget before the next
stage proves it at once; the queries that prove something are nearly always the fast
ones. A proof in the first round is a proof (unsat is unsat at any budget); the second
round is the proof with the full budget, so nothing provable within it is lost.

Every job is asked of a fresh `Prover` (its own Z3 context, jobs.py `answer`), so its
answer depends on the input and its round only: not on which jobs ran before it, nor
on which worker ran it, nor on how many workers there are. The jobs can therefore go to
whichever worker is free. What is still shared is decided here, from the answers in the
jobs' order (`key`: the first round in task order, then the second in task order: the
order a proof in one process asks them):

- the proof's deterministic budget (`ProofOptions.rlimit`): a job is answered when its
  own units and those of every job before it fit in the budget; the first that does not,
  and every job after it, leave their obligations unknown ("proof-rlimit"). A job after
  that point is never handed out once the answers in hand show it will not count;
- failures (a count the proof cannot build, the wall-clock cap, a lost worker): the
  proof fails with the failure of the earliest job; once one is seen, only earlier jobs
  are still handed out.
"""

from __future__ import annotations

import collections

import attrs

from verify.proof.options import Budget, rlimit_ran_out
from verify.verdicts import ProofStatus

# The progress line that announces the second round (not a query: the CLI does not count it).
SECOND_ROUND = "prove: second round: "


@attrs.frozen(order=True)
class Job:
    """Task `task` (its position in task order) in the second round, or in the first."""

    second: bool
    task: int


class Schedule:
    """The jobs of `tasks` tasks under `options` (rlimit, the two rounds' budgets, progress).
    `next_job()` hands out the next job still needed (None: none now); `answered(job,
    obligation)` and `failed(job, failure)` take what came back; `obligations(tasks)` is
    the result, one obligation per task in task order, or raises the failure.
    `eager_second_round`: a task's second round is handed out before the first-round jobs
    still waiting (workers: the expensive jobs start early and the last worker is not left
    alone with one); otherwise after them (one process: the rounds in turn)."""

    def __init__(self, tasks: int, options, eager_second_round: bool = False):
        self.options = options
        self.rounds = 2 if options.first_query_rlimit < options.query_rlimit else 1
        self.waiting = collections.deque(Job(self.rounds == 1, n) for n in range(tasks))
        self.eager = eager_second_round
        self.done: dict[Job, object] = {}
        self.failures: dict[Job, object] = {}
        self.tasks = tasks
        self.cut: Job | None = None  # `_cut()`, kept up to date by `answered`
        self.spent = 0  # the units of every job answered so far

    def rlimit(self, job: Job) -> int:
        """The per-query budget of the job's round."""
        return self.options.query_rlimit if job.second else self.options.first_query_rlimit

    def next_job(self) -> Job | None:
        while self.waiting:
            job = self.waiting.popleft()
            if self._needed(job):
                return job
        return None

    def answered(self, job: Job, obligation) -> None:
        self.done[job] = obligation
        self.spent += obligation.units
        if self.options.rlimit is not None and self.spent > self.options.rlimit:
            self.cut = self._cut()  # (under the budget in all, no job is past it)
        if not job.second and obligation.status != ProofStatus.PROVED:
            again = Job(True, job.task)
            self.waiting.appendleft(again) if self.eager else self.waiting.append(again)
        if not job.second and self.rounds == 2 and self._first_round_over():
            self._announce()

    def failed(self, job: Job, failure) -> None:
        """`failure`: what the proof raises if this is its earliest failed job."""
        self.failures[job] = failure

    def _first_round_over(self) -> bool:
        return sum(1 for job in self.done if not job.second) == self.tasks

    def _announce(self) -> None:
        again = sum(1 for job, o in self.done.items() if not job.second and o.status != ProofStatus.PROVED)
        if again and self.options.progress:
            self.options.progress(
                f"{SECOND_ROUND}{self.tasks - again} of {self.tasks} obligations proved with "
                f"{self.options.first_query_rlimit:,} Z3 units per query; the other {again} again with "
                f"{self.options.query_rlimit:,}")

    def _needed(self, job: Job) -> bool:
        if self.failures and job > min(self.failures):
            return False
        return self.cut is None or job < self.cut

    def _cut(self) -> Job | None:
        """The earliest job at which the answers in hand already exceed the budget (the
        budget's true end, once every earlier job has answered, is at or before it)."""
        if self.options.rlimit is None:
            return None
        spent = 0
        for job in sorted(self.done):
            spent += self.done[job].units
            if spent > self.options.rlimit:
                return job
        return None

    def obligations(self, tasks: list, unknown) -> list:
        """One obligation per task, in task order (raises the earliest failure).
        `unknown(task, reason)`: the obligation of a task the budget ended before it was
        answered."""
        if self.failures:
            raise min(self.failures.items())[1]
        out, spent, over = [], 0, False
        for job in sorted(self.done):
            spent += self.done[job].units
            over = over or (self.options.rlimit is not None and spent > self.options.rlimit)
            if over:
                self.done[job] = None
        for n, task in enumerate(tasks):
            first = self.done.get(Job(False, n)) if self.rounds == 2 else None
            last = self.done.get(Job(True, n))
            if first is not None and first.status == ProofStatus.PROVED:
                out.append(first)
                continue
            units = 0 if first is None else first.units
            if last is None:
                last = attrs.evolve(unknown(task, rlimit_ran_out(self.options.rlimit)), budget=Budget.PROOF_RLIMIT)
            out.append(attrs.evolve(last, units=units + last.units))
        return out
