"""What the SNAX rule needs of an imported MLIR program, beyond its kernel-language form.

The insert-sync-barrier rule (algorithm/snax_barrier.py) works on SSA uses and MLIR block
structure, which the kernel language does not carry. The importer records them here: one
`Site` per MLIR op in pre-order, with the SSA values it uses and the insertion point
(`Slot`) in the imported program's body where "right before this op" lands. A
`SnaxProgram` is an imported Program carrying its `Sites`.
"""

from __future__ import annotations

import attrs

from semantics.ir import Program

DM, COMPUTE = "DM", "COMPUTE"


@attrs.frozen
class Slot:
    """An insertion point in a program body: `path` leads from the top-level body to a
    nested body (steps are (statement index, "body" | "then" | "else")), and a barrier
    inserted at `index` goes before the statement now at that index."""

    path: tuple[tuple[int, str], ...]
    index: int


@attrs.frozen
class Site:
    """One MLIR op of the walk. `kind`: dispatched (runs on `core`), global, barrier
    (snax.cluster_sync_op), dealloc (memref.dealloc), yield (an scf.for body's
    scf.yield). `values`: the SSA values (opaque ids) of its operands, plus its
    results for a dispatched op. `block`: id of the block it sits directly in;
    `in_loop_body`: that block is an scf.for body. `slot`: where "right before it"
    lands in the program, None inside a dispatched op's region."""

    kind: str
    core: str | None
    values: tuple[int, ...]
    block: int
    in_loop_body: bool
    slot: Slot | None
    label: str  # "memref.copy at 12:5", for messages


@attrs.frozen
class Sites:
    sites: tuple[Site, ...]


@attrs.frozen(cache_hash=True)
class SnaxProgram(Program):
    """A Program imported from MLIR, with the facts of the SNAX rule (not part of its
    structure: excluded from equality, never printed)."""

    sites: Sites | None = attrs.field(default=None, eq=False, repr=False, kw_only=True)
