"""The NKI calls the importer reads, each with the engine that runs it (docs/nki.md has
the same table with the documentation page of each row).

Engines of the imported program: PE (Tensor Engine), ACT (Scalar Engine), DVE (Vector
Engine), POOL (GpSimd Engine), and two DMA queues modelled as engines of their own, as
kernels/suite does: DMA0 moves data into on-chip memory (nl.load, a dma_copy into SBUF
or PSUM), DMA1 moves it out to HBM (nl.store, a dma_copy into HBM).

Kinds:
- `result`: returns a new tile (or writes `dst=` when given); reads every tensor
  argument;
- `store`: `nl.store(dst, value)`: writes its first argument (or `dst=`), reads the rest;
- `alloc`: allocates a tensor (`nl.ndarray`, `nl.zeros`, ...); `fill` ones also write
  it (a memset on the listed engine).
"""

from __future__ import annotations

import re

import attrs

from semantics.errors import UsageError

ENGINE_ORDER = ("DMA0", "PE", "ACT", "DVE", "POOL", "DMA1")
DMA = "DMA"  # resolved by the destination's memory: DMA1 into HBM, DMA0 otherwise

ISA = "https://awsdocs-neuron.readthedocs-hosted.com/en/v2.26.1/nki/api/nki.isa.html"
LANG = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/nki.language.html"


@attrs.frozen
class Call:
    name: str
    engine: str
    kind: str = "result"  # result, store, alloc, fill
    memory: str = "sbuf"  # where a `result` tile lives (psum for the Tensor Engine)
    chosen_by_compiler: bool = False  # an nl.* call whose engine the compiler picks


def _table() -> dict[str, Call]:
    rows = [
        Call("nl.load", "DMA0"), Call("nl.store", "DMA1", "store"),
        Call("nl.load_transpose2d", "DMA0"), Call("nisa.dma_copy", DMA),
        Call("nl.matmul", "PE", memory="psum"), Call("nisa.nc_matmul", "PE", memory="psum"),
        Call("nisa.nc_transpose", "PE", memory="psum"),
        Call("nl.transpose", "PE", memory="psum", chosen_by_compiler=True),
        Call("nisa.activation", "ACT"), Call("nisa.activation_reduce", "ACT"),
        Call("nisa.tensor_reduce", "DVE"), Call("nisa.tensor_tensor", "DVE"),
        Call("nisa.tensor_tensor_scan", "DVE"), Call("nisa.tensor_scalar", "DVE"),
        Call("nisa.tensor_scalar_reduce", "DVE"), Call("nisa.scalar_tensor_tensor", "DVE"),
        Call("nisa.tensor_copy", "DVE"), Call("nisa.reciprocal", "DVE"),
        Call("nisa.bn_stats", "DVE"), Call("nisa.bn_aggr", "DVE"), Call("nisa.select_reduce", "DVE"),
        Call("nisa.memset", "DVE"), Call("nisa.iota", "POOL"), Call("nisa.affine_select", "POOL"),
        Call("nisa.tensor_partition_reduce", "POOL"),
    ]
    for name in ("exp", "log", "tanh", "sigmoid", "relu", "gelu", "silu", "sqrt", "rsqrt", "erf",
                 "softplus", "sin", "cos", "square"):
        rows.append(Call(f"nl.{name}", "ACT", chosen_by_compiler=True))
    for name in ("add", "subtract", "multiply", "divide", "maximum", "minimum", "negative", "abs",
                 "reciprocal", "power", "copy", "sum", "max", "min", "mean", "prod", "where", "softmax"):
        rows.append(Call(f"nl.{name}", "DVE", chosen_by_compiler=True))
    for name in ("zeros", "ones", "full", "zeros_like", "ones_like", "full_like"):
        rows.append(Call(f"nl.{name}", "DVE", "fill", chosen_by_compiler=True))
    for name in ("ndarray", "empty_like", "shared_constant"):
        rows.append(Call(f"nl.{name}", "", "alloc"))
    return {row.name: row for row in rows}


CALLS = _table()
# Python operators on tiles are the nl.* calls of the same meaning.
OPERATORS = {"Add": "nl.add", "Sub": "nl.subtract", "Mult": "nl.multiply", "Div": "nl.divide",
             "Pow": "nl.power", "USub": "nl.negative"}
# `engine=` arguments (nki.isa's engine constants, old and new spellings).
ENGINE_ARGS = {"vector": "DVE", "gpsimd": "POOL", "scalar": "ACT", "activation": "ACT", "tensor": "PE"}

_OVERRIDE = re.compile(r"^\s*(?P<call>[A-Za-z_][\w.]*)\s*=\s*(?P<engine>[A-Za-z_]\w*)\s*$")


def parse_overrides(specs) -> dict[str, str]:
    """`--nki-engine nl.exp=ACT` (repeatable): call name -> engine. The call must be one
    of the table's; the engine any kernel-language name (a new one is declared)."""
    out: dict[str, str] = {}
    for spec in specs or ():
        match = _OVERRIDE.match(spec)
        if not match:
            raise UsageError(f"bad --nki-engine '{spec}': expected CALL=ENGINE, e.g. nl.exp=ACT")
        call = match.group("call")
        if call not in CALLS or CALLS[call].kind == "alloc":
            raise UsageError(f"--nki-engine {call}: not an NKI call the importer runs on an engine "
                             "(docs/nki.md lists them)")
        out[call] = match.group("engine")
    return out
