"""Import snax-mlir programs (MLIR, parsed with xdsl) into the kernel language.

Engines `DM` (the data-mover core) and `COMPUTE` (the compute core). Per MLIR op:

- `memref.copy` -> an op on DM reading its source, writing its target;
  streaming regions (`dart.operation`, `dart.generic`, `dart.schedule`,
  `stream.streaming_region`) -> COMPUTE, or DM when their `accelerator` names an XDMA;
  `linalg.generic` -> COMPUTE; both read their ins and write their outs;
- `snax.cluster_sync_op` -> `barrier`;
- `scf.for` -> `for` (bounds from constants, index arithmetic, or runtime
  parameters); a non-constant step cannot be divided out in the kernel language, so
  such a loop runs `trips_<var>` times, a fresh parameter (this forgets any relation
  between its bounds); `scf.if` -> `if` on the condition's expression;
- `memref.subview` is a range access of its source (`A[iv..iv + 16]`, in the source's
  coordinates; a strided view its bounding range); casts keep the window; other views
  (reshapes, transposes, reinterpret_cast) alias their source as a whole buffer; a buffer
  accessed both through windows and whole gets full-extent ranges for the whole accesses;
  `arith.select` between memrefs splits each op using it into an `if` on the select's
  condition (double buffering by `i mod 2` stays exact);
- any other op with memref operands (`memref.dealloc`, `test.op`, calls) is global:
  one op per engine (`dealloc_b_DM`, `dealloc_b_COMPUTE`), replicas of one logical op
  (`replica dealloc_b`: they never conflict with each other), reading and writing those
  memrefs; ops that define memrefs (allocs) or only read metadata are not ops;
- an integer, index or i1 value the import cannot compute (a function argument, the
  result of an unknown op) becomes a runtime parameter named after it.

Latencies (cycles, assumed; override with a `syncproof.lat = N` attribute): a copy
costs `DMA_SETUP + bytes / DMA_BYTES_PER_CYCLE`, a compute op `COMPUTE_SETUP` plus one
cycle per element of its largest operand, a global op 1.

Besides the Program, the import records what SNAX's insert-sync-barrier rule needs
(algorithm/snax_barrier.py: SSA uses and block structure) and where each statement
came from (`anchors`: op name / `for:VAR` / `if:...` -> the xdsl op).
"""

from __future__ import annotations

import itertools
import re

import attrs

from semantics.mlir.sites import COMPUTE, DM, Site, Sites, Slot, SnaxProgram
from semantics.errors import KernelError
from semantics.ir import Barrier, For, If, Loc, Op, Param, Var, index_exprs, walk_expr, walk_stmts
from semantics.validate import KEYWORDS, validate
from semantics.mlir import values as mv
from semantics.mlir.parse import Chunk, op_name, parse_chunk, prop, split_cases
from semantics.mlir.waits import WaitReader

DMA_SETUP, DMA_BYTES_PER_CYCLE, COMPUTE_SETUP = 24, 8, 16
STREAMING = ("dart.operation", "dart.generic", "dart.schedule", "stream.streaming_region")
@attrs.frozen
class Imported:
    program: SnaxProgram
    module: object  # the xdsl ModuleOp
    anchors: dict  # statement anchor -> xdsl op (see `anchor`)
    chunk: Chunk
    filename: str


def anchor(stmt) -> str | None:
    """A name for a statement that survives sync strategies (which add waits and
    barriers): the op name, `for:VAR`, or `if@LINE:COL` of its MLIR op (`if:` + its
    first anchor without a position). A global op split on a select gives two ifs
    with one position: both stand for the same MLIR op."""
    match stmt:
        case Op(name=name):
            return name
        case For(var=var):
            return f"for:{var}"
        case If(then=then, else_=else_):
            if stmt.loc is not None:  # the MLIR op's position (kept by strategies)
                return f"if@{stmt.loc}"
            first = next((a for a in map(anchor, then + else_) if a), None)
            return f"if:{first}" if first else None
        case Barrier():
            return None


def import_text(text: str, filename: str = "<input>") -> list[Imported]:
    chunks = split_cases(text)
    if not chunks:
        raise KernelError("no MLIR operation in the file", None, filename)
    return [import_chunk(chunk, filename) for chunk in chunks]


def import_file(path: str) -> list[Imported]:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as err:
        raise KernelError(f"cannot read {path}: {getattr(err, 'strerror', None) or err}", None, path) from None
    return import_text(text, path)


def import_chunk(chunk: Chunk, filename: str) -> Imported:
    from semantics.mlir.dialect import context

    module, locs = parse_chunk(chunk, filename, context())
    walker = _Importer(filename, locs)
    body = walker.block(module.regions[0].blocks[0], (), in_loop=False) if module.regions[0].blocks else ()
    walker.waits.finish(body)
    body = mv.whole_accesses_as_ranges(body, walker.values.shapes)
    name = walker.kernel_name or re.sub(r"\W", "_", filename.rsplit("/", 1)[-1].split(".")[0]) or None
    if name and (name in KEYWORDS or name[0].isdigit()):
        name = f"k_{name}"
    used = {n.name for s in walk_stmts(body) for n in _exprs(s) if isinstance(n, Var)}
    params = tuple(p for p in walker.params if p.name in used)  # e.g. the bounds of a loop run `trips_i` times
    program = SnaxProgram((DM, COMPUTE), params, body, name, sites=Sites(tuple(walker.sites)))
    try:
        validate(program)
    except KernelError as err:  # a bug in the import: report where the case starts
        raise KernelError(f"import produced an invalid kernel: {err.message}", Loc(chunk.first_line, 1),
                          filename) from None
    return Imported(program, module, walker.anchors, chunk, filename)


def _exprs(stmt):
    match stmt:
        case For(lo=lo, hi=hi):
            roots = [lo, hi]
        case If(cond=cond):
            roots = [cond]
        case Op():
            roots = [e for a in stmt.reads + stmt.writes for i in a.indices for e in index_exprs(i)] + \
                [w.threshold for w in stmt.waits]
        case Barrier():
            roots = []
    return [n for r in roots for n in walk_expr(r)]


class _Importer:
    def __init__(self, filename: str, locs: dict):
        self.filename, self.locs = filename, locs
        self.values = mv.Values(self._fresh, self._param, self._error)
        self.params: list[Param] = []
        self.names: set[str] = set(KEYWORDS) | {DM, COMPUTE}
        self.sites: list[Site] = []
        self.anchors: dict = {}
        self.kernel_name: str | None = None
        self.block_ids = itertools.count()
        self.counts: dict[str, int] = {}
        self.waits = WaitReader(self.values, lambda: [p.name for p in self.params], self._error)

    # -- naming
    def _fresh(self, base: str | None, default: str = "v") -> str:
        base = re.sub(r"\W", "_", base or "") or default
        if base[0].isdigit():
            base = f"{default}{base}"
        name, n = base, 1
        while name in self.names:
            n += 1
            name = f"{base}_{n}"
        self.names.add(name)
        return name

    def _param(self, hint: str | None) -> str:
        name = self._fresh(hint, "p")
        self.params.append(Param(name))
        return name

    def _error(self, message: str, op=None):
        raise KernelError(message, self.locs.get(op) if op is not None else None, self.filename)

    def _label(self, op) -> str:
        loc = self.locs.get(op)
        return f"{op_name(op)} at {loc}" if loc else op_name(op)

    # -- walking
    def block(self, block, path, in_loop: bool) -> tuple:
        block_id = next(self.block_ids)
        out: list = []
        for op in block.ops:
            self.op(op, out, path, block_id, in_loop)
        return tuple(out)

    def _site(self, kind, core, values, block_id, in_loop, slot, op):
        self.sites.append(Site(kind, core, tuple(self.values.vid(v) for v in values), block_id, in_loop, slot,
                               self._label(op)))

    def _emit(self, out: list, stmts, op) -> None:
        for stmt in stmts:
            key = anchor(stmt)
            if key:
                self.anchors[key] = op
            for inner in walk_stmts((stmt,)):
                if anchor(inner):
                    self.anchors.setdefault(anchor(inner), op)
            out.append(stmt)

    def op(self, op, out: list, path, block_id: int, in_loop: bool) -> None:
        name = op_name(op)
        if self.waits.take(op):  # the syncproof dialect: waits and signals (semantics/mlir/waits.py)
            return
        slot = Slot(path, len(out))
        core = self._core(op, name)
        if core is not None:
            self._site("dispatched", core, list(op.operands) + list(op.results), block_id, in_loop, slot, op)
            self._dispatched(op, name, core, out)
            for region in op.regions:  # the region runs inside the op: no place for a barrier
                for inner in region.walk():
                    self._site("global", None, inner.operands, -1, False, None, inner)
            return
        if name == "func.call" and "snax_cluster_hw_barrier" in str(prop(op, "callee")):
            name = "snax.cluster_sync_op"  # the barrier after snax-to-func
        if name.startswith("accfg."):
            self._error(f"'{name}': accelerator launches (accfg dialect) are not supported; import the program "
                        f"before convert-linalg-to-accfg", op)
        kind = {"snax.cluster_sync_op": "barrier", "memref.dealloc": "dealloc"}.get(name, "global")
        if name == "scf.yield" and in_loop:
            kind = "yield"
        self._site(kind, None, op.operands, block_id, in_loop, slot, op)
        if kind in ("barrier", "yield") or op.regions or name in ("scf.yield", "func.return"):
            self.waits.structure(op)  # no wait can guard it
        match name:
            case "snax.cluster_sync_op":
                self._emit(out, [Barrier(loc=self.locs.get(op))], op)
            case "builtin.module":
                for inner in op.regions[0].blocks[0].ops if op.regions[0].blocks else ():
                    self.op(inner, out, path, block_id, in_loop)
            case "func.func":
                self._func(op, out, path, block_id, in_loop)
            case "scf.for":
                self._for(op, out, path)
            case "scf.if":
                self._if(op, out, path)
            case _ if self.values.define(op, name):
                pass  # index arithmetic, conditions, views and selects: values, not ops
            case _:
                self._global(op, name, out)

    def _core(self, op, name: str) -> str | None:
        if name == "memref.copy":
            return DM
        if name == "linalg.generic":
            return COMPUTE
        if name in STREAMING:
            acc = prop(op, "accelerator")
            return DM if acc is not None and "xdma" in str(acc).lower() else COMPUTE
        return None

    def _func(self, op, out, path, block_id, in_loop) -> None:
        region = op.regions[0]
        if not region.blocks:
            return  # a declaration
        sym = prop(op, "sym_name")
        if sym is not None and self.kernel_name is None:
            self.kernel_name = self._fresh(sym.data, "k")
        self.values.function_args(region.blocks[0])
        for inner in region.blocks[0].ops:
            self.op(inner, out, path, block_id, in_loop)

    def _for(self, op, out: list, path) -> None:
        if len(op.operands) > 3 or op.results:
            self._error("scf.for with loop-carried values (iter_args) is not supported", op)
        body = op.regions[0].blocks[0]
        iv = body.args[0]
        var = self._fresh(iv.name_hint, "i")
        self.waits.loop(op, var)
        lo, hi, trips = self.values.loop_range(op, var)
        self.values.set_expr(iv, trips)
        index = len(out)
        inner = self.block(body, path + ((index, "body"),), in_loop=True)
        self._emit(out, [For(var, lo, hi, inner, loc=self.locs.get(op))], op)

    def _if(self, op, out: list, path) -> None:
        if op.results:
            self._error("scf.if with results is not supported", op)
        cond = self.values.cond(op.operands[0], op)
        index = len(out)
        then = self.block(op.regions[0].blocks[0], path + ((index, "then"),), False) if op.regions[0].blocks else ()
        else_ = (self.block(op.regions[1].blocks[0], path + ((index, "else"),), False)
                 if len(op.regions) > 1 and op.regions[1].blocks else ())
        self._emit(out, [If(cond, then, else_, loc=self.locs.get(op))], op)

    def _dispatched(self, op, name: str, core: str, out: list) -> None:
        if name == "memref.copy":
            reads, writes, base = [op.operands[0]], [op.operands[1]], "copy"
        else:
            ins = mv.segment(op, 0, len(op.operands))
            reads, writes = list(op.operands[:ins]), list(op.operands[ins:])
            base = "generic" if name == "linalg.generic" else "stream"
        reads = [v for v in reads if mv.is_memref(v)]
        writes = [v for v in writes if mv.is_memref(v)]
        lat = self._lat(op, name, reads + writes)
        waits = self.waits.waits_for(op, (core,))
        self._emit(out, self._ops(op, core, base, reads, writes, lat, split_names=True, waits=waits), op)

    def _global(self, op, name: str, out: list) -> None:
        memrefs = [v for v in op.operands if mv.is_memref(v)]
        if op.regions or op.successors:  # control flow the kernel language has no statement for
            self._error(f"unsupported op '{name}' (control flow or a region syncproof does not know)", op)
        if not memrefs:
            self.waits.structure(op)
            return
        dialect, _, short = name.partition(".")
        base = re.sub(r"\W", "_", short if dialect in ("memref", "func") else name)
        first = self.values.first_root(memrefs[0])
        stmts = []
        group = self._fresh(f"{base}_{first}", "op")  # the logical op; its replicas never conflict
        waits = self.waits.waits_for(op, (DM, COMPUTE))
        for engine in (DM, COMPUTE):
            stmts += self._ops(op, engine, f"{base}_{first}_{engine}", memrefs, memrefs, self._lat(op, name, []),
                               replica=group, waits=waits)
        self._emit(out, stmts, op)

    def _ops(self, op, engine, base, reads, writes, lat, split_names=False, replica=None, waits=None) -> list:
        """One op, or an `if` tree of variants when an operand is an arith.select."""
        trees = [self.values.mem(v) for v in reads + writes]
        loc = self.locs.get(op)
        if split_names:  # dispatched ops are numbered per kind: copy1, generic1, copy2, ...
            self.counts[base] = self.counts.get(base, 0) + 1
            base = f"{base}{self.counts[base]}"
        stem = self._fresh(base, "op")

        def decide(tree, decided):  # a condition already split on is known in each branch
            while isinstance(tree, mv.Choice) and tree.cond in decided:
                tree = tree.then if decided[tree.cond] else tree.else_
            return tree

        def build(trees, variant, decided):
            trees = [decide(t, decided) for t in trees]
            for tree in trees:
                if isinstance(tree, mv.Choice):
                    then = build(trees, variant + "t", {**decided, tree.cond: True})
                    else_ = build(trees, variant + "e", {**decided, tree.cond: False})
                    return [If(tree.cond, tuple(then), tuple(else_), loc=loc)]
            name = self._fresh(f"{stem}_{variant}") if variant else stem
            roots = list(trees)
            acc = lambda rs: tuple(dict.fromkeys(mv.access_of(r) for r in rs))  # noqa: E731 (subview windows: ranges)
            return [Op(engine, name, acc(roots[:len(reads)]), acc(roots[len(reads):]), lat, loc=loc,
                       replica=replica, waits=(waits or {}).get(engine, ()))]

        return build(trees, "", {})

    def _lat(self, op, name: str, memrefs) -> int:
        given = op.attributes.get("syncproof.lat")
        if given is not None:
            return int(given.value.data)
        sizes = [mv.size(v.type) for v in memrefs]
        if name == "memref.copy":
            nbytes = sizes[-1][1] if sizes and sizes[-1] else 0
            return DMA_SETUP + -(-nbytes // DMA_BYTES_PER_CYCLE)
        if memrefs:
            return COMPUTE_SETUP + max((s[0] for s in sizes if s), default=0)
        return 1
