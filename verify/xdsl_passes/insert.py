"""`syncproof-insert-sync{strategy=threshold}`: SNAX's `insert-sync-barrier`, replaced.

The module is imported (one program: every function with a body, in order), the
strategy synchronizes it (algorithm/registry.py: `threshold`, the default, `barrier`,
`snax-barrier`, `manual`: the waits and barriers already there), and the module
becomes the synchronized program as `sync --emit mlir` writes it: its
`snax.cluster_sync_op`s, waits and signals are replaced by the strategy's barriers
(`snax.cluster_sync_op`) and waits (`syncproof.wait`, `syncproof.signal`). Strategies
whose clauses have no op here (flags, tokens) are refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.passes import ModulePass

from verify.xdsl_passes.module import imported, input_errors, replace_body
from verify.xdsl_passes.errors import PassInputError


def synchronized_text(module, strategy: str) -> str:
    """The module synchronized by `strategy`, as generic MLIR text."""
    from algorithm.registry import get_strategy
    from semantics.mlir.emit import emit

    with input_errors():
        run = get_strategy(strategy)
    case = imported(module)
    with input_errors():
        result = run(case.program)
        if result.stats.syncs:
            kinds = ", ".join(kind for kind, _ in result.stats.syncs)
            raise PassInputError(f"error: strategy {strategy} synchronizes with {kinds}, which have no MLIR op "
                                 "(syncproof-insert-sync writes waits and barriers)")
        return emit(case, result.program)


@dataclass(frozen=True)
class InsertSync(ModulePass):
    """Replace the module's synchronization by the strategy's (default `threshold`)."""

    name: ClassVar[str] = "syncproof-insert-sync"
    strategy: str = "threshold"

    def apply(self, ctx, op) -> None:
        replace_body(op, synchronized_text(op, self.strategy), ctx)
