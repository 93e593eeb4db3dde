"""DMA queues in the all-values proof (docs/proofs.md, "DMA queues").

A DMA op `E x via Q` is two instances (semantics/sequential.py): a *trigger* in E's
stream, which carries the op's waits and does not count on C[E], and a *transfer* on
Q's stream, which carries the op's accesses, runs after its trigger completed and
after Q's earlier transfers (FIFO per queue), and adds Q's increment to C[Q] when it
completes. So an op has two engines in the proof:

- its *home* (`home`): where its counted instance runs, the engine of the dependence
  relation (`depends_on` compares the transfer's engine) and of its local index: Q for
  a DMA op, E otherwise;
- its *issuer* (`op.engine`): the stream its waits are checked on. An earlier item of
  that stream has completed when the op's waits are checked; for a DMA item that is
  only its trigger, not its transfer.

Counters step by the increment (`semantics.ir.increments`): C[F] >= t holds iff at least
ceil(t / s) instances of F completed, so with in-order completion `C[F] >= s * l + 1`
means "F's instance with local index l has completed" and an instance with local index
l completed gives `C[F] >= s * (l + 1)`. With s = 1 these are the facts of a compute
engine, built as the same terms.
"""

from __future__ import annotations

from semantics.ir import Op, Program, increments


def home(op: Op) -> str:
    """The engine whose counter the op's counted instance steps: its queue for a DMA op."""
    return op.queue if op.queue is not None else op.engine


def is_dma(op: Op) -> bool:
    return op.queue is not None


def steps(program: Program) -> dict[str, int]:
    """Per engine or queue name: what one completion adds to its counter."""
    return dict(zip(program.engines, increments(program)))


def forces(threshold, step: int, local):
    """`C[F] >= threshold` with F stepping by `step` means the instance of F with local
    index `local` has completed."""
    return threshold >= local + 1 if step == 1 else threshold >= step * local + 1


def reaches(threshold, step: int, local):
    """The instance of F with local index `local` completed gives `C[F] >= threshold`."""
    return local + 1 >= threshold if step == 1 else step * (local + 1) >= threshold


def beyond(threshold, step: int, local):
    """`C[F] >= threshold` asks for an instance of F at or after local index `local`
    (the negation of `reaches(threshold, step, local - 1)`)."""
    return threshold > local if step == 1 else threshold > step * local


def needed(threshold, step: int):
    """The local index of F's instance whose completion makes `C[F] >= threshold`
    (with `threshold` >= 1): ceil(threshold / step) - 1."""
    return threshold - 1 if step == 1 else (threshold - 1) / step
