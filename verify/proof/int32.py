"""The signed 32-bit range in the all-values proof (docs/proofs.md, "The 32-bit range").

The proof's obligations are about counters that never overflow. On the hardware a
semaphore is a signed 32-bit register, so the proof also states the largest parameter
value P such that, for every valuation with every parameter in [its lower bound, P]
(the kernel's assumptions), no counter and no evaluated threshold leaves
[-2^31, 2^31 - 1]:

- a counter: the program is barrier-free (the proof refuses barriers), so C[F] reaches
  s * (k + 1) after the instance with local index k on F, s its increment (1 for a
  compute engine, the queue's for a DMA queue; triggers do not count); it leaves the
  range iff some instance of F has s * (k + 1) > 2^31 - 1 (k >= 2^31 - 1 when s = 1);
- a threshold: some wait's value at some instance is outside the range.

A violation is a disjunction of cases, one per op and kind (its counter, each of its
waits); "no violation within some bounds" is asked case by case (a disjunction of many
non-linear cases is far slower for Z3 than the cases one at a time). First, with no
upper bound: proved means
the range holds for every parameter value. Otherwise two proposals for the limit, each
confirmed by proving that the range holds up to it: the diagonal's (`_diagonal`: the
first v where the valuation with every parameter v violates, found by doubling and
bisection over such points, each a query with the parameters fixed, which Z3 answers in
milliseconds where the counts are non-linear), then Z3's optimizer's smallest
largest-parameter m of a violation (linear counts; a short budget). Failing both, a binary
search over P (each step asking whether the range holds with every parameter <= P)
finds the largest P, and a query Z3 cannot answer stops the search with the largest P
proved so far ("at least"). The binary search runs first with the first round's budget
per query, taking an undecided P as "holds" for the moment; one full-budget query then
proves the P it found (and only if that does not decide does the full-budget search
run). The answer does not depend on the proposals or on the first search: they only
save queries; "up to P" is stated only when P is proved and a violation at P + 1 was
found. Counts come from verify/proof/counts.py, as for
the other obligations.
"""

from __future__ import annotations

import attrs
import z3

from semantics.ir import INT32_MAX, INT32_MIN

from verify.proof.queues import home

from verify.verdicts import ProofStatus

OPTIMIZER_RLIMIT = 2_000_000  # Z3 units for the optimizer's proposal (`_optimum`)

ALL, UP_TO, AT_LEAST, NONE, UNKNOWN = "all", "up-to", "at-least", "none", "unknown"


@attrs.frozen
class RangeLimit:
    status: str  # ALL, UP_TO (exactly max_param), AT_LEAST (max_param proved, larger undecided), NONE, UNKNOWN
    max_param: int | None = None
    reason: str | None = None

    def to_json(self) -> dict:
        return {"status": self.status, "max_param": self.max_param, "reason": self.reason}

    def text(self) -> str:
        head = "signed 32-bit range (semaphores and thresholds): "
        match self.status:
            case "all":
                return head + "holds for every parameter value."
            case "up-to":
                return head + (f"holds while every parameter is at most {self.max_param}; "
                               f"{self.reason}.")
            case "at-least":
                return head + f"holds while every parameter is at most {self.max_param}; above, {self.reason}."
            case "none":
                return head + f"fails at the smallest parameter values: {self.reason}."
            case _:
                return head + f"not decided ({self.reason})."


def violations(prover) -> list[z3.BoolRef]:
    """In the proof's own Z3 context (prover.ctx), one case per op and kind: some
    instance of the op brings its counter (its engine's, a DMA op's queue's) above
    2^31 - 1, or one of its waits
    has a value outside the signed 32-bit range. A violation is any of them."""
    terms = prover.terms
    cases = []
    for y in terms.sites.values():
        env = terms.env(y, "r")
        domain = prover.domain(y, env)
        engine = home(y.op)
        step = terms.steps[engine]
        local = terms.local(y, engine, env)
        cases.append(z3.And(*domain, local >= INT32_MAX if step == 1 else step * (local + 1) > INT32_MAX))
        for wait in y.op.waits:
            value = terms.wait_term(y, wait, env)
            cases.append(z3.And(*domain, prover.either(value < INT32_MIN, value > INT32_MAX)))
    return cases


def _violated(prover, cases: list, bounds: list, name: str):
    """prover.query for "some case holds within `bounds`", asked case by case: PROVED when
    every case is, FAILED with the first violation found, else UNKNOWN (the first reason).
    One small query per case is much cheaper for Z3 than one disjunction of them all."""
    undecided = None
    for case in cases:
        status, extra = prover.query([case, *bounds], name)
        if status == ProofStatus.FAILED:
            return status, extra
        if status != ProofStatus.PROVED and undecided is None:
            undecided = (status, extra)
    return undecided or (ProofStatus.PROVED, None)


def _optimum(prover, cases, params) -> tuple[int | None, dict]:
    """The smallest largest-parameter of a violation, if Z3's optimizer finds it within
    a short budget (it gives up on non-linear counts; the binary search then decides)."""
    top = z3.Int("int32_top", prover.ctx)
    optimizer = z3.Optimize(ctx=prover.ctx)
    left = prover.deadline.left()  # a C call: the deadline's polls cannot stop it
    optimizer.set("timeout", 3000 if left is None else max(1, min(3000, int(left * 1000))))
    # A deterministic budget under the wall-clock one: where the counts are non-linear
    # the optimizer would spend its whole wall-clock budget and give up, and then the
    # binary search decides anyway.
    optimizer.set("rlimit", OPTIMIZER_RLIMIT)
    optimizer.add(*prover.nonneg, prover.either(*cases), *[top >= p for p in params])
    optimizer.minimize(top)
    if optimizer.check() != z3.sat:
        return None, {}
    model = optimizer.model()
    return model[top].as_long(), {n: model.eval(p, model_completion=True).as_long()
                                  for n, p in prover.terms.params.items()}


def _diagonal(prover, cases, params, good: int, high: int) -> tuple[int, dict] | None:
    """A proposal for the limit: the v in (good, high] where the valuation with every
    parameter equal to v first violates (doubling from `good`, then bisection), and that
    violation; None when no such point up to `high` violates or a point query is
    undecided. Each query fixes every parameter, so the counts are polynomials in the
    loop indices alone: milliseconds each, where Z3's optimizer gives up on non-linear
    counts and the binary search's "holds up to P" queries take seconds each. The stated limit
    never rests on it: `range_limit` proves "holds up to v - 1", and the violation at
    v has every parameter equal to v, so v - 1 is exactly the limit."""
    full = prover.rlimit
    prover.rlimit = min(full, prover.options.first_query_rlimit)

    def point(v: int):
        # First one query over every case: with the parameters fixed it is usually fast,
        # faster than one query per case; case by case when
        # it is undecided.
        fixed = [p == v for p in params]
        answer = prover.query([prover.either(*cases), *fixed], f"int32@{v}")
        return answer if answer[0] != ProofStatus.UNKNOWN else _violated(prover, cases, fixed, f"int32@{v}")

    try:
        # `below`: a point taken to hold, from the lower bounds' largest (not asked: the
        # result is a proposal, proved or dropped by `range_limit`).
        below, step = good, 1
        while True:
            v = min(below + step, high)
            status, extra = point(v)
            if status == ProofStatus.FAILED:
                break
            if status != ProofStatus.PROVED or v >= high:
                return None
            below, step = v, 2 * step
        above, witness = v, extra
        while above - below > 1:
            middle = (below + above) // 2
            status, extra = point(middle)
            if status == ProofStatus.FAILED:
                above, witness = middle, extra
            elif status == ProofStatus.PROVED:
                below = middle
            else:
                return None
        return above, witness
    finally:
        prover.rlimit = full


def range_limit(prover, lower: dict[str, int]) -> RangeLimit:
    """The largest parameter value for which the range holds (see the module docstring)."""
    cases = violations(prover)
    params = list(prover.terms.params.values())
    status, extra = _violated(prover, cases, [], "int32")
    if status == ProofStatus.PROVED:
        return RangeLimit(ALL)
    if status != ProofStatus.FAILED:
        return RangeLimit(UNKNOWN, reason=str(extra))

    def text(valuation: dict) -> str:
        return ", ".join(f"{k}={v}" for k, v in sorted(valuation.items())) or "the kernel's only valuation"

    def at_most(cap: int):
        return _violated(prover, cases, [p <= cap for p in params], f"int32-{cap}")

    first = extra
    good = max(lower.values(), default=0)
    # Two proposals for the limit, each proved below or dropped: the diagonal's (point
    # queries, milliseconds each), then the optimizer's (exact and quick where the
    # counts are linear, seconds where they are not, and then often no answer).
    diagonal = _diagonal(prover, cases, params, good, max(first.values(), default=good))
    if diagonal is not None and diagonal[0] - 1 >= good:
        status, extra = at_most(diagonal[0] - 1)
        if status == ProofStatus.PROVED:
            return RangeLimit(UP_TO, diagonal[0] - 1, f"at {text(diagonal[1])} a counter or threshold leaves it")
    guess, witness = _optimum(prover, cases, params)
    if guess is not None and guess - 1 >= good and (diagonal is None or guess != diagonal[0]):
        status, extra = at_most(guess - 1)
        if status == ProofStatus.PROVED:
            return RangeLimit(UP_TO, guess - 1, f"at {text(witness)} a counter or threshold leaves it")
    status, extra = at_most(good)
    if status == ProofStatus.FAILED:
        return RangeLimit(NONE, reason=f"a counter or threshold leaves the range at {text(extra)}")
    if status != ProofStatus.PROVED:
        return RangeLimit(UNKNOWN, reason=str(extra))
    worst = first  # a violating valuation: the limit is below its largest parameter
    high = max(first.values()) - 1
    # First a search with the first round's budget per query (cheap: a violation is found
    # in milliseconds, while proving none up to P near the limit takes seconds at the
    # full budget): a query it leaves undecided counts as "holds" for now.
    # Then one full-budget query proves the limit it found; only if that fails to decide
    # does the full-budget search below run (from what was proved).
    hopeful, probe = good, high
    full = prover.rlimit
    prover.rlimit = min(full, prover.options.first_query_rlimit)
    try:
        while hopeful < probe:
            middle = (hopeful + probe + 1) // 2
            status, extra = at_most(middle)
            if status == ProofStatus.FAILED:
                worst = extra
                probe = min(middle, max(extra.values())) - 1
            else:
                hopeful = middle
                if status == ProofStatus.PROVED:
                    good = middle
    finally:
        prover.rlimit = full
    high = probe
    undecided = None  # (P, Z3's reason) when the full budget did not decide P either
    if good < hopeful:
        status, extra = at_most(hopeful)
        if status == ProofStatus.PROVED:
            good = hopeful
        elif status == ProofStatus.FAILED:  # the small budget's "holds" was wrong: search below it
            worst = extra
            high = min(hopeful, max(extra.values())) - 1
        else:  # search below it with the full budget; the answer can only be "at least"
            undecided = (hopeful, extra)
            high = hopeful - 1
    while good < high:
        middle = (good + high + 1) // 2
        status, extra = at_most(middle)
        if status == ProofStatus.PROVED:
            good = middle
        elif status == ProofStatus.FAILED:
            worst = extra
            high = min(middle, max(extra.values())) - 1
        else:
            return RangeLimit(AT_LEAST, good, f"Z3 did not decide whether it holds up to {middle} ({extra})")
    if undecided is not None and good == undecided[0] - 1:
        return RangeLimit(AT_LEAST, good, f"Z3 did not decide whether it holds up to {undecided[0]} ({undecided[1]})")
    return RangeLimit(UP_TO, good, f"at {text(worst)} a counter or threshold leaves it")
