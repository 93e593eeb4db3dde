"""`snax-barrier`: SNAX's `insert-sync-barrier` pass, reproduced on an imported program.

Source: snax-mlir (Python package `snaxc`), pass `insert-sync-barrier`, pinned by its
filecheck tests (tests/semantics/test_snax.py, inputs in tests/data/snax/). The rule,
in the words of the pass:

- ops are *dispatched* to the DM core (memref.copy, XDMA streaming regions) or to the
  compute core (linalg.generic, other streaming regions); every other op is *global*
  (every core runs it);
- walk the module in pre-order with a set of ops *owed* a barrier;
- if the current op is owed one, insert `snax.cluster_sync_op` right before it and
  clear the set; an existing `snax.cluster_sync_op` clears it too;
- for every use Y of an operand or result of a dispatched op X: if Y does not run on
  X's core (a global op never does), Y is owed a barrier, and if X and Y sit directly
  in the same `scf.for` body, so is that body's `scf.yield`;
- a `memref.dealloc` user is always owed one.

Conflicts are "same SSA value": there is no read/write distinction and no alias
tracking (a copy into a subview of A and a generic reading A are unrelated), and a use
that comes before X in the walk is owed a barrier that is never placed (the walk does
not come back to it: loop-carried dependences through nested regions go unsynced).
Those are the gaps `syncproof verify` finds.

The rule works on SSA uses and on MLIR block structure, which the kernel language
does not carry (a kernel names buffers after alias resolution, and has no ops for
index arithmetic or `scf.yield`). So the importer (semantics/mlir/importer.py) records
the facts the rule needs in a small neutral structure, `Sites` (semantics/mlir/sites.py): one `Site` per MLIR op
in pre-order, with the SSA values it uses and the insertion point (`Slot`) in the
imported program's body where "right before this op" lands. A `SnaxProgram` is an
imported Program carrying its `Sites`; the strategy reads them and inserts `Barrier`
statements at the owed slots. A kernel written in the kernel language gets the same
rule over `kernel_sites` (one SSA value per buffer, ops dispatched to their engines).
Waits in the input are dropped (SNAX synchronizes with barriers only); existing
barriers are kept. This module never imports xdsl.
"""

from __future__ import annotations

import attrs

from semantics.errors import UsageError
from semantics.ir import Barrier, For, If, Op, Program, Stmt, map_ops
from semantics.registers import inline_registers
from semantics.mlir.sites import COMPUTE, DM, Site, Sites, Slot, SnaxProgram  # noqa: F401 (the rule's input types)

def owed_barriers(sites: Sites) -> list[int]:
    """Indices of the sites a barrier is placed before, in walk order."""
    ops = sites.sites
    users: dict[int, list[int]] = {}
    for n, site in enumerate(ops):
        # a dispatched op's results are among its `values`, not uses: only operands
        # of other ops count as uses, and a dispatched op's own values are its operands
        # and results, so record uses from every site's operand values
        for value in site.values:
            users.setdefault(value, []).append(n)
    yields = {site.block: n for n, site in enumerate(ops) if site.kind == "yield"}
    owed: set[int] = set()
    placed: list[int] = []
    for n, x in enumerate(ops):
        if n in owed:
            placed.append(n)
            owed.clear()
        if x.kind == "barrier":
            owed.clear()
        if x.kind != "dispatched":
            continue
        for value in x.values:
            for m in users.get(value, ()):
                y = ops[m]
                if m == n:
                    continue
                if y.kind == "dealloc" or y.core != x.core:
                    owed.add(m)
                    if y.block == x.block and x.in_loop_body and x.block in yields:
                        owed.add(yields[x.block])
    return placed


def insert_barriers(body: tuple[Stmt, ...], slots: list[Slot], path=()) -> tuple[Stmt, ...]:
    """`body` with a Barrier at every slot (slots index the body as given)."""
    here = sorted((s.index for s in slots if s.path == path), reverse=True)
    out: list[Stmt] = []
    for n, stmt in enumerate(body):
        match stmt:
            case For():
                stmt = attrs.evolve(stmt, body=insert_barriers(stmt.body, slots, path + ((n, "body"),)))
            case If():
                stmt = attrs.evolve(stmt, then=insert_barriers(stmt.then, slots, path + ((n, "then"),)),
                                    else_=insert_barriers(stmt.else_, slots, path + ((n, "else"),)))
            case _:
                pass
        out.append(stmt)
    for index in here:  # from the end, so earlier indices stay valid
        out.insert(index, Barrier())
    return tuple(out)


def kernel_sites(program: Program) -> Sites:
    """The rule's facts for a kernel written in the kernel language (not imported):
    every op is dispatched to its engine and uses one SSA value per buffer name (a
    kernel has no views), and each loop body ends with its `scf.yield`."""
    names: dict[str, int] = {}
    blocks = iter(range(1, 1 << 30))
    out: list[Site] = []

    def walk(body, path, block, in_loop):
        for n, stmt in enumerate(body):
            slot = Slot(path, n)
            match stmt:
                case Op():
                    values = tuple(names.setdefault(a.buffer, len(names)) for a in stmt.reads + stmt.writes)
                    out.append(Site("dispatched", stmt.engine, values, block, in_loop, slot, stmt.name))
                case Barrier():
                    out.append(Site("barrier", None, (), block, in_loop, slot, "barrier"))
                case For():
                    out.append(Site("global", None, (), block, in_loop, slot, f"for {stmt.var}"))
                    inner = next(blocks)
                    walk(stmt.body, path + ((n, "body"),), inner, True)
                    out.append(Site("yield", None, (), inner, True, Slot(path + ((n, "body"),), len(stmt.body)),
                                    f"end of for {stmt.var}"))
                case If():
                    out.append(Site("global", None, (), block, in_loop, slot, "if"))
                    walk(stmt.then, path + ((n, "then"),), next(blocks), False)
                    walk(stmt.else_, path + ((n, "else"),), next(blocks), False)

    walk(program.body, (), 0, False)
    return Sites(tuple(out))


def snax_barrier(program: Program) -> Program:
    """The program with SNAX's barriers added (existing barriers kept, no waits, so no
    loop registers either: they feed only waits). An imported program carries the MLIR
    facts; a written kernel gets `kernel_sites`."""
    sites = program.sites if isinstance(program, SnaxProgram) and program.sites is not None \
        else kernel_sites(program)
    placed = owed_barriers(sites)
    slots = []
    for n in placed:
        site = sites.sites[n]
        if site.slot is None:
            raise UsageError(f"snax-barrier: a barrier is owed inside a dispatched op's region ({site.label}); "
                             f"the kernel language cannot place it")
        slots.append(site.slot)
    bare = map_ops(inline_registers(program).body, lambda op: attrs.evolve(op, waits=()))
    return Program(program.engines, program.params, insert_barriers(bare, slots), program.name,
                   loc=program.loc, name_loc=program.name_loc)
