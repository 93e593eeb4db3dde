"""The all-values proof's deterministic budget: the Z3 resource units its queries spend,
counted per Z3 context, against `ProofOptions.rlimit`; and which budget ended a query.

Why resource units, not seconds: Z3's "rlimit count" is the same for the same query on
any load, so a proof's verdict does not depend on how busy the machine is. Every query's
solver (`Prover._solver`) gets at most what is left; once nothing is left, the next query
raises `RlimitReached` before it starts (never inside Z3), and its obligation is unknown.
The count is read from each context's statistics (cumulative per context), so the
queries of case splits and retries in contexts of their own are counted too.
"""

from __future__ import annotations

import z3

from semantics.errors import LimitReached

from verify.proof.options import Budget, rlimit_ran_out


class RlimitReached(LimitReached):
    """The proof's deterministic budget (ProofOptions.rlimit) is spent: raised before a
    query, never inside Z3; the obligation it ends is unknown (jobs.py `run`)."""


def units_of(solver: z3.Solver) -> int:
    """The Z3 resource units the context of `solver`, a solver that has answered a
    query, has spent so far (its "rlimit count", cumulative per context). Read from the
    query's own solver: a fresh solver made only to read it slowed later queries of the
    context severalfold."""
    stats = solver.statistics()
    return int(stats.get_key_value("rlimit count")) if "rlimit count" in stats.keys() else 0


class Budgeted:
    """The budget bookkeeping of a Prover (`options`, `deadline`, `ctx`, `spent`,
    `contexts`, `hit`)."""

    def allowance(self) -> int:
        """The resource limit of the next query: the per-query one, at most what is left
        of the proof's budget; RlimitReached when nothing is left."""
        left = self.units_left()
        if left is not None and left <= 0:
            self.hit = Budget.PROOF_RLIMIT
            raise RlimitReached(rlimit_ran_out(self.options.rlimit))
        return self.rlimit if left is None else min(self.rlimit, left)

    def _left_ms(self) -> int | None:
        left = self.deadline.left()
        return None if left is None else max(1, int(left * 1000))

    def track(self, ctx: z3.Context, solver: z3.Solver) -> None:
        """`solver` asks the next query in `ctx`: the context's count is read from it from
        now on (a new context counts from 0: what it spent before its first query, on
        case-split pruning, counts too)."""
        # The entry holds the context, so that its id is not given to another context
        # while the entry lives (a freed context's id would be, and its count misread).
        self.contexts[id(ctx)] = [solver, self.contexts.get(id(ctx), [None, 0])[1], ctx]

    def settle(self) -> int:
        """Count what the queries spent since the last reading; the total spent."""
        for entry in self.contexts.values():
            now = units_of(entry[0])
            self.spent += now - entry[1]
            entry[1] = now
        return self.spent

    def forget_contexts(self) -> None:
        """Settle, then drop every context but the prover's own (an obligation's end)."""
        self.settle()
        self.contexts = {id(self.ctx): self.contexts[id(self.ctx)]} if id(self.ctx) in self.contexts else {}

    def units_left(self) -> int | None:
        """What is left of the proof's deterministic budget (None: no budget)."""
        budget = self.options.rlimit
        return None if budget is None else budget - self.settle()

    def note_unknown(self, solver: z3.Solver) -> None:
        """Which budget, if any, ended a query Z3 left unknown (`self.hit`)."""
        left = self.units_left()
        if self.deadline.passed():
            self.hit = Budget.WALL_CLOCK
        elif left is not None and left <= 0:
            self.hit = Budget.PROOF_RLIMIT
        elif solver.reason_unknown() == "canceled":  # Z3's word for a resource limit's stop
            self.hit = Budget.QUERY_RLIMIT
        else:
            self.hit = None

